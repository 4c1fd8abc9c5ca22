package spool_test

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/spoolmq/spool/protocol-spec/wire/compress"
	spool "github.com/spoolmq/spool/sdk-go"
)

// TestProduceSplicedBatchesIntact produces batches large enough to be written from their own
// buffers (writev) rather than copied into the request, several per request, with every acks
// setting and with and without compression, and reads every record back byte for byte.
func TestProduceSplicedBatchesIntact(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		for _, acks := range []spool.Acks{spool.AcksNone, spool.AcksLeader, spool.AcksAll} {
			for _, codec := range []compress.Codec{compress.None, compress.LZ4} {
				t.Run(fmt.Sprintf("%v/%v", acks, codec), func(t *testing.T) {
					cl := newClient(t, addr, spool.RequiredAcks(acks), spool.Compression(codec), spool.Linger(0),
						spool.WithPartitioner(spool.RoundRobin()))
					topic := createTopic(t, cl, 3)
					const n = 600
					value := func(i int) []byte {
						v := bytes.Repeat([]byte{byte(i)}, 2000+i)
						copy(v, fmt.Sprintf("record-%d-", i))
						return v
					}
					ctx := testCtx(t)
					var (
						mu    sync.Mutex
						first error
					)
					for i := range n {
						cl.Produce(ctx, &spool.Record{Topic: topic, Key: []byte(fmt.Sprint(i)), Value: value(i)}, func(_ *spool.Record, err error) {
							if err != nil {
								mu.Lock()
								if first == nil {
									first = err
								}
								mu.Unlock()
							}
						})
					}
					if err := cl.Flush(ctx); err != nil {
						t.Fatal(err)
					}
					if first != nil {
						t.Fatal(first)
					}
					seen := map[string]bool{}
					for _, r := range consumeN(t, newClient(t, addr), topic, n) {
						var i int
						if _, err := fmt.Sscan(string(r.Key), &i); err != nil {
							t.Fatalf("key %q: %v", r.Key, err)
						}
						if !bytes.Equal(r.Value, value(i)) {
							t.Fatalf("record %d: value of %d bytes starting %q differs", i, len(r.Value), r.Value[:min(len(r.Value), 16)])
						}
						seen[string(r.Key)] = true
					}
					if len(seen) != n {
						t.Fatalf("%d distinct records, want %d", len(seen), n)
					}
				})
			}
		}
	})
}

package spool_test

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire/compress"
	spool "github.com/spoolmq/spool/sdk-go"
)

// TestProduceTrackedCopiesOnce produces records whose key, value and headers live in a
// scratch record and buffer the caller overwrites right after each call (as C memory is),
// with and without compression, null, empty and long keys and values, with headers and
// interleaved with Produce's records in the same batches. It checks that the deliveries
// hand every record back once, in produce order per partition, with its own bytes, headers,
// timestamp and the offset the topic holds it at, that a delivery kept unreleased still
// reads right after later batches, and that a record failing at once is delivered too.
func TestProduceTrackedCopiesOnce(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		for _, codec := range []compress.Codec{compress.None, compress.LZ4} {
			t.Run(codec.String(), func(t *testing.T) {
				const n = 400
				var (
					mu     sync.Mutex
					errs   []error
					got    = map[uint64]spool.Record{} // token → what its delivery said, copied
					last   = map[int32]int64{}         // partition → last offset delivered
					kept   []*spool.Delivery           // not released: their bytes must stay
					failed []*spool.Delivery
				)
				key := func(i int) []byte {
					switch i % 4 {
					case 0:
						return nil
					case 1:
						return []byte{}
					}
					return fmt.Appendf(nil, "key-%d", i)
				}
				value := func(i int) []byte {
					switch i % 5 {
					case 0:
						return nil
					case 1:
						return []byte{}
					}
					return bytes.Repeat([]byte{byte(i)}, 100+i*13)
				}
				headers := func(i int) []spool.Header {
					if i%3 != 0 {
						return nil
					}
					return []spool.Header{{Key: []byte("h"), Value: fmt.Appendf(nil, "hv-%d", i)}, {Key: []byte("null")}}
				}
				ts := time.UnixMilli(1_700_000_000_000)
				second := bytes.Repeat([]byte("2"), 100) // the value of the second round's records
				same := func(i int, r *spool.Record) error {
					switch {
					case (r.Key == nil) != (key(i) == nil) || !bytes.Equal(r.Key, key(i)):
						return fmt.Errorf("record %d: key %q, want %q", i, r.Key, key(i))
					case (r.Value == nil) != (value(i) == nil) || !bytes.Equal(r.Value, value(i)):
						return fmt.Errorf("record %d: value of %d bytes differs from the %d produced", i, len(r.Value), len(value(i)))
					case fmt.Sprint(r.Headers) != fmt.Sprint(headers(i)) || (r.Headers == nil) != (headers(i) == nil):
						return fmt.Errorf("record %d: headers %q, want %q", i, r.Headers, headers(i))
					case !r.Timestamp.Equal(ts.Add(time.Duration(i) * time.Millisecond)):
						return fmt.Errorf("record %d: timestamp %v", i, r.Timestamp)
					}
					return nil
				}
				handler := func(d *spool.Delivery) {
					mu.Lock()
					defer mu.Unlock()
					if d.Err() != nil {
						failed = append(failed, d)
						return
					}
					var r spool.Record
					for i := range d.Len() {
						d.Record(i, &r)
						tok := d.Token(i)
						if tok >= n {
							if r.Key != nil || !bytes.Equal(r.Value, second) || r.Headers != nil {
								errs = append(errs, fmt.Errorf("record %d: key %q, value %q", tok, r.Key, r.Value))
							}
						} else if err := same(int(tok), &r); err != nil {
							errs = append(errs, err)
						}
						if r.Topic != d.Topic() || r.Partition != d.Partition() || r.Offset <= last[r.Partition]-1 && last[r.Partition] > 0 {
							errs = append(errs, fmt.Errorf("record %d: %s[%d]@%d after offset %d", tok, r.Topic, r.Partition, r.Offset, last[r.Partition]))
						}
						last[r.Partition] = r.Offset + 1
						if _, dup := got[tok]; dup {
							errs = append(errs, fmt.Errorf("record %d delivered twice", tok))
						}
						got[tok] = spool.Record{Partition: r.Partition, Offset: r.Offset}
					}
					// Every other delivery is kept, so that batch buffers are reused while the
					// kept ones still point into theirs.
					if len(kept)%2 == 0 {
						kept = append(kept, d)
					} else {
						kept = append(kept, nil)
						d.Release()
					}
				}
				cl := newClient(t, addr, spool.Compression(codec), spool.Linger(2*time.Millisecond),
					spool.WithPartitioner(spool.RoundRobin()), spool.MaxBatchBytes(64<<10), spool.WithDeliveryHandler(handler))
				topic := createTopic(t, cl, 3)
				ctx := testCtx(t)
				scratch := make([]byte, 64<<10)
				var rec spool.Record
				var produced []*spool.Record // Produce's records, interleaved
				for i := range n {
					// Key, value and headers in the caller's scratch, overwritten after the call.
					k, v := key(i), value(i)
					rec = spool.Record{Topic: topic, Timestamp: ts.Add(time.Duration(i) * time.Millisecond)}
					if k != nil {
						rec.Key = scratch[:copy(scratch, k):len(k)]
					}
					if v != nil {
						rec.Value = scratch[len(k) : len(k)+copy(scratch[len(k):], v)]
					}
					for _, h := range headers(i) {
						rec.Headers = append(rec.Headers, spool.Header{Key: bytes.Clone(h.Key), Value: bytes.Clone(h.Value)})
					}
					cl.ProduceTracked(ctx, &rec, uint64(i))
					for j := range scratch[:len(k)+len(v)] {
						scratch[j] = 0xEE
					}
					for _, h := range rec.Headers {
						clear(h.Key)
						clear(h.Value)
					}
					rec = spool.Record{Topic: "overwritten", Partition: 7}
					if i%7 == 0 {
						r := spool.StringRecord(topic, fmt.Sprintf("produced-%d", i))
						produced = append(produced, r)
						cl.Produce(ctx, r, func(_ *spool.Record, err error) {
							if err != nil {
								t.Errorf("Produce's record: %v", err)
							}
						})
					}
				}
				// A record too large fails at once, and is delivered with its bytes.
				big := make([]byte, 128<<10)
				cl.ProduceTracked(ctx, &spool.Record{Topic: topic, Key: []byte("big"), Value: big}, 1e6)
				if err := cl.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				// More batches, all released, so that later ones reuse their buffers.
				for i := range 4 * n {
					copy(scratch, second)
					cl.ProduceTracked(ctx, &spool.Record{Topic: topic, Value: scratch[:100]}, uint64(10*n+i))
					clear(scratch[:100])
				}
				if err := cl.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				mu.Lock()
				defer mu.Unlock()
				var r spool.Record
				for _, d := range kept {
					if d == nil {
						continue
					}
					for i := range d.Len() {
						if d.Token(i) >= n {
							continue
						}
						d.Record(i, &r)
						if err := same(int(d.Token(i)), &r); err != nil {
							errs = append(errs, fmt.Errorf("kept: %w", err))
						}
					}
					d.Release()
				}
				if len(errs) > 0 {
					t.Fatal(errors.Join(errs...))
				}
				if len(got) != 5*n {
					t.Fatalf("%d records delivered, want %d", len(got), 5*n)
				}
				if len(failed) != 1 || failed[0].Len() != 1 || failed[0].Token(0) != 1e6 || !errors.Is(failed[0].Err(), spool.ErrRecordTooLarge) {
					t.Fatalf("failed deliveries: %v", failed)
				}
				failed[0].Record(0, &r)
				if string(r.Key) != "big" || len(r.Value) != len(big) || r.Offset != -1 || r.Topic != topic {
					t.Fatalf("the failed record reads back as %s[%d]@%d key %q, %d bytes", r.Topic, r.Partition, r.Offset, r.Key, len(r.Value))
				}
				failed[0].Release()
				// Every record is where its delivery (or callback) said.
				all := consumeN(t, newClient(t, addr), topic, 5*n+len(produced))
				at := map[[2]int64][]byte{}
				for _, c := range all {
					at[[2]int64{int64(c.Partition), c.Offset}] = c.Value
				}
				for tok, g := range got {
					v, ok := at[[2]int64{int64(g.Partition), g.Offset}]
					want := second
					if tok < n {
						want = value(int(tok))
					}
					if !ok || !bytes.Equal(v, want) {
						t.Fatalf("record %d delivered at %d@%d, which holds %d bytes (found %v)", tok, g.Partition, g.Offset, len(v), ok)
					}
				}
				for _, p := range produced {
					if v := at[[2]int64{int64(p.Partition), p.Offset}]; !bytes.Equal(v, p.Value) {
						t.Fatalf("Produce's record %q at %d@%d reads %q", p.Value, p.Partition, p.Offset, v)
					}
				}
			})
		}
	})
}

// TestMaxBufferedBytes fills the byte bound with records that linger, sees the next one
// refused (ErrBufferFull), and a record larger than the bound accepted once nothing else is
// buffered.
func TestMaxBufferedBytes(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		const bound = 4096
		cl := newClient(t, addr, spool.Linger(time.Hour), spool.MaxBufferedBytes(bound), spool.BlockOnFullBuffer(false))
		topic := createTopic(t, cl, 1)
		ctx := testCtx(t)
		var (
			mu   sync.Mutex
			errs []error
		)
		cb := func(_ *spool.Record, err error) {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
		value := make([]byte, 1000) // 1021 bytes against the bound: four fit
		for range 5 {
			cl.Produce(ctx, &spool.Record{Topic: topic, Value: value}, cb)
		}
		mu.Lock()
		if len(errs) != 1 || !errors.Is(errs[0], spool.ErrBufferFull) {
			t.Fatalf("callbacks before flush: %v, want one ErrBufferFull", errs)
		}
		errs = nil
		mu.Unlock()
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		cl.Produce(ctx, &spool.Record{Topic: topic, Value: make([]byte, 2*bound)}, cb)
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(errs) != 5 || errors.Join(errs...) != nil {
			t.Fatalf("callbacks after flush: %v, want 5 without error", errs)
		}
	})
}

// TestSendBufferedSkipsLinger produces into a batch that would linger for an hour and sees
// SendBuffered send it: the record is acknowledged without Flush.
func TestSendBufferedSkipsLinger(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		cl := newClient(t, addr, spool.Linger(time.Hour))
		topic := createTopic(t, cl, 1)
		ctx := testCtx(t)
		done := make(chan error, 1)
		cl.Produce(ctx, spool.StringRecord(topic, "v"), func(_ *spool.Record, err error) { done <- err })
		cl.SendBuffered()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatalf("not acknowledged after SendBuffered: %v", ctx.Err())
		}
	})
}

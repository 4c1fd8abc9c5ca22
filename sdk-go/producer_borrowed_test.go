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

// TestProduceBorrowedCopiesOnce produces records whose key and value live in one buffer the
// caller overwrites right after each call (as C memory is), with and without compression,
// null, empty and long keys and values and with headers, and checks that each callback sees
// the record's own bytes and that the topic holds them.
func TestProduceBorrowedCopiesOnce(t *testing.T) {
	eachTarget(t, func(t *testing.T, addr string) {
		for _, codec := range []compress.Codec{compress.None, compress.LZ4} {
			t.Run(codec.String(), func(t *testing.T) {
				cl := newClient(t, addr, spool.Compression(codec), spool.Linger(2*time.Millisecond),
					spool.WithPartitioner(spool.RoundRobin()))
				topic := createTopic(t, cl, 3)
				const n = 400
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
				ctx := testCtx(t)
				scratch := make([]byte, 64<<10)
				var (
					mu   sync.Mutex
					errs []error
					got  = map[int]bool{}
					kept = map[int]*spool.Record{} // not released: their bytes must stay
				)
				same := func(i int, r *spool.Record) error {
					switch {
					case (r.Key == nil) != (key(i) == nil) || !bytes.Equal(r.Key, key(i)):
						return fmt.Errorf("record %d: key %q, want %q", i, r.Key, key(i))
					case (r.Value == nil) != (value(i) == nil) || !bytes.Equal(r.Value, value(i)):
						return fmt.Errorf("record %d: value of %d bytes differs from the %d produced", i, len(r.Value), len(value(i)))
					}
					return nil
				}
				check := func(i int) func(*spool.Record, error, *spool.Lent) {
					return func(r *spool.Record, err error, l *spool.Lent) {
						mu.Lock()
						defer mu.Unlock()
						if err == nil {
							err = same(i, r)
						}
						if err != nil {
							errs = append(errs, err)
						}
						got[i] = true
						// Every other record is released at once, so that batch buffers are
						// reused while the others still point into theirs.
						if i%2 == 0 {
							l.Release()
						} else {
							kept[i] = r
						}
					}
				}
				for i := range n {
					// Key and value in the caller's scratch buffer, overwritten after the call.
					k, v := key(i), value(i)
					r := &spool.Record{Topic: topic, Headers: headers(i)}
					if k != nil {
						r.Key = scratch[:copy(scratch, k):len(k)]
					}
					if v != nil {
						r.Value = scratch[len(k) : len(k)+copy(scratch[len(k):], v)]
					}
					cl.ProduceBorrowed(ctx, r, check(i)) // r is the producer's until its callback
					for j := range scratch[:len(k)+len(v)] {
						scratch[j] = 0xEE
					}
				}
				if err := cl.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				// More batches, all released, so that later ones reuse their buffers; the kept
				// records' buffers are not reused.
				want := bytes.Clone(scratch[:100])
				for i := range 4 * n {
					cl.ProduceBorrowed(ctx, &spool.Record{Topic: topic, Value: scratch[:100]}, func(r *spool.Record, err error, l *spool.Lent) {
						if err == nil && !bytes.Equal(r.Value, want) {
							err = fmt.Errorf("value %q", r.Value[:min(len(r.Value), 8)])
						}
						if err != nil {
							t.Errorf("record %d of the second round: %v", i, err)
						}
						l.Release()
					})
					if i%n == 0 {
						if err := cl.Flush(ctx); err != nil {
							t.Fatal(err)
						}
					}
				}
				if err := cl.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				mu.Lock()
				for i, r := range kept {
					if err := same(i, r); err != nil {
						errs = append(errs, fmt.Errorf("kept %w", err))
					}
				}
				if len(errs) > 0 || len(got) != n {
					t.Fatalf("%d callbacks of %d; errors: %v", len(got), n, errors.Join(errs...))
				}
				mu.Unlock()
				// The records with headers say which they are: check those byte for byte.
				withHeaders := 0
				for _, r := range consumeN(t, newClient(t, addr), topic, n) {
					if len(r.Headers) == 0 {
						continue
					}
					withHeaders++
					var i int
					if _, err := fmt.Sscanf(string(r.Headers[0].Value), "hv-%d", &i); err != nil {
						t.Fatalf("header %q: %v", r.Headers[0].Value, err)
					}
					if (r.Key == nil) != (key(i) == nil) || !bytes.Equal(r.Key, key(i)) || !bytes.Equal(r.Value, value(i)) {
						t.Fatalf("record %d read back: key %q, value of %d bytes", i, r.Key, len(r.Value))
					}
				}
				if withHeaders != (n+2)/3 {
					t.Fatalf("read %d records with headers, want %d", withHeaders, (n+2)/3)
				}
			})
		}
	})
}

// TestMaxBufferedBytes fills the byte bound with records that linger, sees the next one
// refused (ErrBufferFull), and a record larger than the bound accepted once nothing else is
// buffered.
func TestMaxBufferedBytes(t *testing.T) {
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

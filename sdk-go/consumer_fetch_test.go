package spool_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/protocol-spec/wire/batch"

	"github.com/spoolmq/spool/protocol-spec/wire/compress"
	spool "github.com/spoolmq/spool/sdk-go"
)

// produceBatches produces each group of records with its own ProduceSync, so that each group
// is a batch of its own on partition 0, and returns every record in offset order.
func produceBatches(t *testing.T, cl *spool.Client, groups [][]*spool.Record) []*spool.Record {
	t.Helper()
	var all []*spool.Record
	for _, g := range groups {
		if err := cl.ProduceSync(testCtx(t), g...); err != nil {
			t.Fatal(err)
		}
		all = append(all, g...)
	}
	return all
}

// sameRecord fails unless got is want as consumed: same offset, key, value, headers, null-ness.
func sameRecord(t *testing.T, got, want *spool.Record) {
	t.Helper()
	if got.Offset != want.Offset || got.Partition != want.Partition || got.Topic != want.Topic ||
		!bytes.Equal(got.Key, want.Key) || (got.Key == nil) != (want.Key == nil) ||
		!bytes.Equal(got.Value, want.Value) || (got.Value == nil) != (want.Value == nil) ||
		len(got.Headers) != len(want.Headers) {
		t.Fatalf("got %s[%d]@%d %q=%q %d headers, want %s[%d]@%d %q=%q %d headers", got.Topic, got.Partition, got.Offset, got.Key, got.Value, len(got.Headers),
			want.Topic, want.Partition, want.Offset, want.Key, want.Value, len(want.Headers))
	}
	for i, h := range got.Headers {
		w := want.Headers[i]
		if !bytes.Equal(h.Key, w.Key) || !bytes.Equal(h.Value, w.Value) || (h.Value == nil) != (w.Value == nil) {
			t.Fatalf("offset %d header %d: %q=%q, want %q=%q", got.Offset, i, h.Key, h.Value, w.Key, w.Value)
		}
	}
}

// TestConsumeCompressedBatchesKeepTheirBytes reads several compressed batches of the same size
// in one fetch: each must keep its own decompressed bytes, as records alias them (a reused
// decompression buffer would show the values of the last batch in every earlier one).
func TestConsumeCompressedBatchesKeepTheirBytes(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		cl := newClient(t, addr, spool.Compression(compress.LZ4), spool.WithPartitioner(spool.ManualPartitioner()))
		topic := createTopic(t, cl, 1)
		var groups [][]*spool.Record
		for b := range 4 {
			var g []*spool.Record
			for i := range 50 {
				g = append(g, &spool.Record{Topic: topic, Value: []byte(fmt.Sprintf("batch %d record %02d %s", b, i, strings.Repeat("x", 40)))})
			}
			groups = append(groups, g)
		}
		want := produceBatches(t, cl, groups)
		got := consumeN(t, newClient(t, addr), topic, len(want))
		if len(got) != len(want) {
			t.Fatalf("consumed %d records, want %d", len(got), len(want))
		}
		for i := range want {
			sameRecord(t, got[i], want[i])
		}
	})
}

// mixedRecords are records of partition 0 with null, empty and set keys and values, and
// headers on some, in batches of different sizes.
func mixedRecords(topic string) [][]*spool.Record {
	var groups [][]*spool.Record
	for b := range 5 {
		var g []*spool.Record
		for i := range 3 + b*7 {
			r := &spool.Record{Topic: topic}
			switch i % 5 {
			case 0:
				r.Key, r.Value = []byte(fmt.Sprintf("k%d-%d", b, i)), []byte(fmt.Sprintf("v%d-%d", b, i))
			case 1:
				r.Value = []byte{} // empty, not null
			case 2:
				r.Key = []byte{} // a tombstone with an empty key
			case 3:
				r.Value = []byte(fmt.Sprintf("with headers %d-%d", b, i))
				r.Headers = []spool.Header{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("null")}}
			case 4:
				r.Key, r.Value = []byte("k"), bytes.Repeat([]byte{byte(i)}, 300)
			}
			g = append(g, r)
		}
		groups = append(groups, g)
	}
	return groups
}

// TestPollFuncMatchesPoll reads the same records with Poll and with PollFunc, compressed and
// not: PollFunc must hand the same records in the same order, and a copy of its *Record must
// stay intact after later records reuse it.
func TestPollFuncMatchesPoll(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		for _, codec := range []compress.Codec{compress.None, compress.Snappy} {
			t.Run(codec.String(), func(t *testing.T) {
				cl := newClient(t, addr, spool.Compression(codec), spool.WithPartitioner(spool.ManualPartitioner()))
				topic := createTopic(t, cl, 1)
				want := produceBatches(t, cl, mixedRecords(topic))
				polled := consumeN(t, newClient(t, addr), topic, len(want))

				c := newClient(t, addr)
				ctx := testCtx(t)
				if err := c.AssignTopic(ctx, topic, spool.OffsetStart()); err != nil {
					t.Fatal(err)
				}
				var kept []spool.Record
				var last *spool.Record
				for len(kept) < len(want) {
					n, err := c.PollFunc(ctx, func(r *spool.Record) {
						if last != nil && r != last {
							t.Errorf("PollFunc passed a new *Record; its documentation says it reuses one")
						}
						last = r
						kept = append(kept, *r)
					})
					if err != nil {
						t.Fatal(err)
					}
					if n == 0 {
						t.Fatal("PollFunc returned no record and no error")
					}
				}
				if len(kept) != len(want) || len(polled) != len(want) {
					t.Fatalf("PollFunc read %d, Poll %d, produced %d", len(kept), len(polled), len(want))
				}
				for i := range want {
					sameRecord(t, polled[i], want[i])
					sameRecord(t, &kept[i], want[i])
					if !kept[i].Timestamp.Equal(polled[i].Timestamp) || kept[i].LeaderEpoch != polled[i].LeaderEpoch {
						t.Fatalf("offset %d: PollFunc timestamp %v epoch %d, Poll %v %d", kept[i].Offset,
							kept[i].Timestamp, kept[i].LeaderEpoch, polled[i].Timestamp, polled[i].LeaderEpoch)
					}
				}
			})
		}
	})
}

// TestConsumeInOrderAcrossManyFetches reads partitions through many small fetches: the next
// fetch goes out while the last one decodes, yet each partition's records must arrive once
// each, in offset order.
func TestConsumeInOrderAcrossManyFetches(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		cl := newClient(t, addr, spool.WithPartitioner(spool.RoundRobin()), spool.Linger(0), spool.MaxBatchBytes(2048))
		topic := createTopic(t, cl, 3)
		ctx := testCtx(t)
		const n = 6000
		recs := make([]*spool.Record, n)
		for i := range recs {
			recs[i] = spool.StringRecord(topic, fmt.Sprintf("%06d%s", i, strings.Repeat("v", 94)))
		}
		if err := cl.ProduceSync(ctx, recs...); err != nil {
			t.Fatal(err)
		}
		c := newClient(t, addr, spool.FetchMaxBytes(16<<10, 4<<10))
		if err := c.AssignTopic(ctx, topic, spool.OffsetStart()); err != nil {
			t.Fatal(err)
		}
		next := map[int32]int64{}
		for seen := 0; seen < n; {
			_, err := c.PollFunc(ctx, func(r *spool.Record) {
				if r.Offset != next[r.Partition] {
					t.Fatalf("partition %d: offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
				}
				next[r.Partition]++
				seen++
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		for p, o := range next {
			if o != n/3 {
				t.Fatalf("partition %d: read %d records, want %d", p, o, n/3)
			}
		}
	})
}

// TestPollFuncStopsWithContext: PollFunc returns the context's error, and no record, when
// nothing arrives before the context ends; without a function it returns an error.
func TestPollFuncStopsWithContext(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		cl := newClient(t, addr)
		topic := createTopic(t, cl, 1)
		if err := cl.AssignTopic(testCtx(t), topic, spool.OffsetStart()); err != nil {
			t.Fatal(err)
		}
		if n, err := cl.PollFunc(testCtx(t), nil); n != 0 || err == nil {
			t.Fatalf("PollFunc(nil): %d records, %v; want an error", n, err)
		}
		ctx, cancel := context.WithCancel(testCtx(t))
		cancel()
		n, err := cl.PollFunc(ctx, func(*spool.Record) { t.Error("record from an empty topic") })
		if n != 0 || err != context.Canceled {
			t.Fatalf("PollFunc on a cancelled context: %d records, %v", n, err)
		}
	})
}

// TestCorruptBatchStopsThePartition corrupts the middle one of three batches on the broker's
// disk. The consumer must hand out the records before it with an error wrapping
// batch.ErrCorrupt and stay at the bad batch, as the Java client does, however far the
// batch headers let it fetch ahead: every later Poll fails again and nothing past the bad
// batch is ever returned. Only our broker: the corruption is written into its log segment.
func TestCorruptBatchStopsThePartition(t *testing.T) {
	t.Parallel()
	br := brokertest.Start(t, brokertest.Options{})
	cl := newClient(t, br.Addr, spool.WithPartitioner(spool.ManualPartitioner()))
	topic := createTopic(t, cl, 1)
	var groups [][]*spool.Record
	for b := range 3 {
		var g []*spool.Record
		for i := range 3 {
			g = append(g, &spool.Record{Topic: topic, Value: []byte(fmt.Sprintf("batch %d record %d", b, i))})
		}
		groups = append(groups, g)
	}
	want := produceBatches(t, cl, groups)

	seg := filepath.Join(br.DataDir, topic+"-0", fmt.Sprintf("%020d.log", 0))
	log, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	sc := batch.NewScanner(log)
	for i := 0; i < 2; i++ {
		if !sc.Next() {
			t.Fatalf("segment holds fewer than 2 batches: %v", sc.Err())
		}
	}
	if got := batch.Raw(sc.Batch()).BaseOffset(); got != 3 {
		t.Fatalf("second batch at offset %d, want 3", got)
	}
	bad := sc.Position() + len(sc.Batch()) - 1 // last byte of the second batch's last value
	f, err := os.OpenFile(seg, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{log[bad] ^ 0xff}, int64(bad)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	c := newClient(t, br.Addr)
	ctx := testCtx(t)
	if err := c.AssignTopic(ctx, topic, spool.OffsetStart()); err != nil {
		t.Fatal(err)
	}
	var got []*spool.Record
	for failures := 0; failures < 3; {
		rs, err := c.Poll(ctx)
		got = append(got, rs...)
		if err == nil {
			continue
		}
		if !errors.Is(err, batch.ErrCorrupt) {
			t.Fatalf("Poll: %v, want an error wrapping batch.ErrCorrupt", err)
		}
		if pos := c.Position(topic, 0); pos != 3 {
			t.Fatalf("after %v the position is %d, want 3 (the corrupt batch)", err, pos)
		}
		failures++
	}
	// The records of the first batch, maybe more than once (each failing fetch returns
	// them again when it started before the corrupt batch), and none after.
	for _, r := range got {
		if r.Offset > 2 {
			t.Fatalf("record at offset %d, past the corrupt batch at 3", r.Offset)
		}
		sameRecord(t, r, want[r.Offset])
	}
	if len(got) < 3 {
		t.Fatalf("%d records before the corrupt batch, want 3", len(got))
	}
}

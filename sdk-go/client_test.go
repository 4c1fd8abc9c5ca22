package spool_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
	"github.com/spoolmq/spool/protocol-spec/wire/compress"
	spool "github.com/spoolmq/spool/sdk-go"
)

func TestOptionsValidated(t *testing.T) {
	cases := []struct {
		name string
		opts []spool.Opt
		want string
	}{
		{"no seeds", []spool.Opt{spool.SeedBrokers()}, "at least one"},
		{"bad seed", []spool.Opt{spool.SeedBrokers("nohostport")}, "seed broker"},
		{"bad acks", []spool.Opt{spool.RequiredAcks(5)}, "RequiredAcks"},
		{"idempotence needs acks all", []spool.Opt{spool.RequiredAcks(spool.AcksLeader), spool.Idempotence(true)}, "requires"},
		{"negative linger", []spool.Opt{spool.Linger(-1)}, "Linger"},
		{"tiny batch", []spool.Opt{spool.MaxBatchBytes(10)}, "MaxBatchBytes"},
		{"zero buffer", []spool.Opt{spool.MaxBufferedRecords(0)}, "MaxBufferedRecords"},
		{"bad codec", []spool.Opt{spool.Compression(9)}, "codec"},
		{"bad backoff", []spool.Opt{spool.RetryBackoff(time.Second, time.Millisecond)}, "RetryBackoff"},
		{"fetch bytes", []spool.Opt{spool.FetchMaxBytes(10, 20)}, "FetchMaxBytes"},
	}
	for _, c := range cases {
		_, err := spool.NewClient(c.opts...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one containing %q", c.name, err, c.want)
		}
	}
	// acks=1 without an explicit idempotence choice turns idempotence off rather than failing.
	cl, err := spool.NewClient(spool.RequiredAcks(spool.AcksLeader))
	if err != nil {
		t.Fatal(err)
	}
	cl.Close()
}

func TestBrokerDown(t *testing.T) {
	t.Parallel()
	cl := newClient(t, "127.0.0.1:1", spool.DialTimeout(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := cl.Admin().ListTopics(ctx)
	if err == nil {
		t.Fatal("listing topics with no broker succeeded")
	}
}

func TestProduceConsumeRoundTrip(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		for _, codec := range []compress.Codec{compress.None, compress.Gzip, compress.Snappy, compress.LZ4, compress.Zstd} {
			t.Run(codec.String(), func(t *testing.T) {
				cl := newClient(t, addr, spool.Compression(codec))
				topic := createTopic(t, cl, 3)
				ctx := testCtx(t)
				const n = 300
				var recs []*spool.Record
				for i := range n {
					r := spool.KeyStringRecord(topic, fmt.Sprintf("k%d", i%7), strings.Repeat(fmt.Sprintf("v%d-", i), 10))
					r.Headers = []spool.Header{{Key: []byte("h"), Value: []byte(fmt.Sprint(i))}}
					recs = append(recs, r)
				}
				if err := cl.ProduceSync(ctx, recs...); err != nil {
					t.Fatal(err)
				}
				for _, r := range recs {
					if want := int32(spool.KafkaPartition(r.Key, 3)); r.Partition != want {
						t.Fatalf("key %s on partition %d, want %d", r.Key, r.Partition, want)
					}
				}
				got := consumeN(t, newClient(t, addr), topic, n)
				if len(got) != n {
					t.Fatalf("consumed %d, want %d", len(got), n)
				}
				// Per partition: offsets increasing and values in produce order.
				byPart := map[int32][]*spool.Record{}
				for _, r := range got {
					byPart[r.Partition] = append(byPart[r.Partition], r)
				}
				wantPart := map[int32][]*spool.Record{}
				for _, r := range recs {
					wantPart[r.Partition] = append(wantPart[r.Partition], r)
				}
				for p, rs := range byPart {
					for i, r := range rs {
						w := wantPart[p][i]
						if string(r.Value) != string(w.Value) || string(r.Key) != string(w.Key) || r.Offset != w.Offset {
							t.Fatalf("partition %d #%d: got %s=%s@%d, want %s=%s@%d", p, i, r.Key, r.Value, r.Offset, w.Key, w.Value, w.Offset)
						}
						if len(r.Headers) != 1 || string(r.Headers[0].Value) != string(w.Headers[0].Value) {
							t.Fatalf("headers %v", r.Headers)
						}
					}
				}
			})
		}
	})
}

func TestAcks(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		for _, acks := range []spool.Acks{spool.AcksNone, spool.AcksLeader, spool.AcksAll} {
			t.Run(fmt.Sprint(acks), func(t *testing.T) {
				cl := newClient(t, addr, spool.RequiredAcks(acks))
				topic := createTopic(t, cl, 1)
				ctx := testCtx(t)
				var recs []*spool.Record
				for i := range 50 {
					recs = append(recs, spool.StringRecord(topic, fmt.Sprint(i)))
				}
				if err := cl.ProduceSync(ctx, recs...); err != nil {
					t.Fatal(err)
				}
				if acks == spool.AcksNone {
					if recs[0].Offset != -1 {
						t.Fatalf("acks=0 offset %d, want -1", recs[0].Offset)
					}
				} else if recs[49].Offset != 49 {
					t.Fatalf("last offset %d, want 49", recs[49].Offset)
				}
				got := consumeN(t, newClient(t, addr), topic, 50)
				for i, r := range got {
					if string(r.Value) != fmt.Sprint(i) {
						t.Fatalf("#%d = %s", i, r.Value)
					}
				}
			})
		}
	})
}

func TestAsyncProduceFlush(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		cl := newClient(t, addr, spool.Linger(20*time.Millisecond), spool.MaxBufferedRecords(100))
		topic := createTopic(t, cl, 3)
		ctx := testCtx(t)
		var mu sync.Mutex
		done := 0
		var firstErr error
		for i := range 2000 {
			cl.Produce(ctx, spool.StringRecord(topic, fmt.Sprint(i)), func(r *spool.Record, err error) {
				mu.Lock()
				done++
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			})
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if done != 2000 || firstErr != nil {
			t.Fatalf("done %d, err %v", done, firstErr)
		}
		if cl.BufferedRecords() != 0 {
			t.Fatalf("buffered %d after flush", cl.BufferedRecords())
		}
	})
}

func TestBufferFullErrors(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		cl := newClient(t, addr, spool.Linger(time.Hour), spool.MaxBufferedRecords(3), spool.BlockOnFullBuffer(false))
		topic := createTopic(t, cl, 1)
		ctx := testCtx(t)
		var errs []error
		var mu sync.Mutex
		for i := range 5 {
			cl.Produce(ctx, spool.StringRecord(topic, fmt.Sprint(i)), func(_ *spool.Record, err error) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			})
		}
		mu.Lock()
		if len(errs) != 2 || !errors.Is(errs[0], spool.ErrBufferFull) {
			t.Fatalf("errors before flush: %v", errs)
		}
		mu.Unlock()
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

func TestProduceBlocksUntilContextEnds(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		cl := newClient(t, addr, spool.Linger(time.Hour), spool.MaxBufferedRecords(1))
		topic := createTopic(t, cl, 1)
		cl.Produce(testCtx(t), spool.StringRecord(topic, "a"), nil)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var got error
		cl.Produce(ctx, spool.StringRecord(topic, "b"), func(_ *spool.Record, err error) { got = err })
		if !errors.Is(got, context.Canceled) {
			t.Fatalf("err %v, want context.Canceled", got)
		}
	})
}

func TestUnknownTopic(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		cl := newClient(t, addr, spool.AllowAutoTopicCreation(false), spool.DeliveryTimeout(time.Second))
		err := cl.ProduceSync(testCtx(t), spool.StringRecord("no-such-topic", "x"))
		if !errors.Is(err, wire.ErrUnknownTopicOrPartition) {
			t.Fatalf("err %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
		}
	})
}

func TestRecordTooLarge(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		cl := newClient(t, addr, spool.MaxBatchBytes(2048))
		topic := createTopic(t, cl, 1)
		err := cl.ProduceSync(testCtx(t), &spool.Record{Topic: topic, Value: make([]byte, 4096)})
		if !errors.Is(err, spool.ErrRecordTooLarge) {
			t.Fatalf("err %v", err)
		}
	})
}

func TestPartitioners(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		for _, tc := range []struct {
			name string
			p    spool.Partitioner
			key  bool
			want func(counts map[int32]int) error
		}{
			{"roundrobin", spool.RoundRobin(), true, func(c map[int32]int) error {
				for p := int32(0); p < 4; p++ {
					if c[p] != 25 {
						return fmt.Errorf("partition %d got %d, want 25", p, c[p])
					}
				}
				return nil
			}},
			{"sticky", spool.Sticky(50, false), false, func(c map[int32]int) error {
				if len(c) != 2 {
					return fmt.Errorf("sticky(50) used %d partitions for 100 records: %v", len(c), c)
				}
				return nil
			}},
			{"manual", spool.ManualPartitioner(), false, func(c map[int32]int) error {
				if c[2] != 100 {
					return fmt.Errorf("manual: %v", c)
				}
				return nil
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				cl := newClient(t, addr, spool.WithPartitioner(tc.p))
				topic := createTopic(t, cl, 4)
				var recs []*spool.Record
				for range 100 {
					r := spool.StringRecord(topic, "v")
					if tc.key {
						r.Key = []byte("same")
					}
					r.Partition = 2
					recs = append(recs, r)
				}
				if err := cl.ProduceSync(testCtx(t), recs...); err != nil {
					t.Fatal(err)
				}
				counts := map[int32]int{}
				for _, r := range recs {
					counts[r.Partition]++
				}
				if err := tc.want(counts); err != nil {
					t.Fatal(err)
				}
			})
		}
	})
}

func TestConsumerSeekPauseReset(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		cl := newClient(t, addr, spool.WithPartitioner(spool.ManualPartitioner()))
		topic := createTopic(t, cl, 2)
		ctx := testCtx(t)
		base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
		var recs []*spool.Record
		for i := range 20 {
			recs = append(recs, &spool.Record{Topic: topic, Partition: 0, Value: []byte(fmt.Sprint(i)), Timestamp: base.Add(time.Duration(i) * time.Second)})
		}
		if err := cl.ProduceSync(ctx, recs...); err != nil {
			t.Fatal(err)
		}
		c := newClient(t, addr)
		pollUntil := func(pred func(*spool.Record) bool) *spool.Record {
			t.Helper()
			for {
				rs, err := c.Poll(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range rs {
					if pred(r) {
						return r
					}
				}
			}
		}
		c.Assign(map[string]map[int32]spool.Offset{topic: {0: spool.OffsetAt(5)}})
		if r := pollUntil(func(*spool.Record) bool { return true }); r.Offset != 5 {
			t.Fatalf("first record at %d, want 5", r.Offset)
		}
		if err := c.Seek(topic, 0, spool.OffsetTime(base.Add(12*time.Second))); err != nil {
			t.Fatal(err)
		}
		if r := pollUntil(func(*spool.Record) bool { return true }); r.Offset != 12 {
			t.Fatalf("after time seek at %d, want 12", r.Offset)
		}
		c.Seek(topic, 0, spool.OffsetStart())
		if r := pollUntil(func(*spool.Record) bool { return true }); r.Offset != 0 {
			t.Fatalf("after start seek at %d, want 0", r.Offset)
		}
		// End: only new records.
		c.Seek(topic, 0, spool.OffsetEnd())
		for c.Position(topic, 0) != 20 {
			if err := c.Seek(topic, 0, spool.OffsetEnd()); err != nil {
				t.Fatal(err)
			}
			waitCond(t, func() bool { return c.Position(topic, 0) >= 0 })
		}
		if err := cl.ProduceSync(ctx, &spool.Record{Topic: topic, Partition: 0, Value: []byte("new")}); err != nil {
			t.Fatal(err)
		}
		if r := pollUntil(func(*spool.Record) bool { return true }); string(r.Value) != "new" || r.Offset != 20 {
			t.Fatalf("after end seek got %s@%d", r.Value, r.Offset)
		}
		// Pause: nothing arrives while paused, everything after resume.
		c.Pause(topic, 0)
		if err := cl.ProduceSync(ctx, &spool.Record{Topic: topic, Partition: 0, Value: []byte("later")}); err != nil {
			t.Fatal(err)
		}
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		rs, err := c.Poll(short)
		cancel()
		if len(rs) != 0 || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("while paused: %d records, %v", len(rs), err)
		}
		c.Resume(topic, 0)
		if r := pollUntil(func(*spool.Record) bool { return true }); string(r.Value) != "later" {
			t.Fatalf("after resume got %s", r.Value)
		}

		// Out of range with reset none surfaces the error; latest skips to the end.
		none := newClient(t, addr, spool.AutoOffsetReset(spool.ResetNone))
		none.Assign(map[string]map[int32]spool.Offset{topic: {0: spool.OffsetAt(1000)}})
		if _, err := none.Poll(ctx); !errors.Is(err, spool.ErrOffsetOutOfRange) {
			t.Fatalf("reset none: %v", err)
		}
		latest := newClient(t, addr, spool.AutoOffsetReset(spool.ResetLatest))
		latest.Assign(map[string]map[int32]spool.Offset{topic: {0: spool.OffsetAt(1000)}})
		waitCond(t, func() bool { return latest.Position(topic, 0) == 22 })
		earliest := newClient(t, addr)
		earliest.Assign(map[string]map[int32]spool.Offset{topic: {0: spool.OffsetAt(1000)}})
		rs, err = earliest.Poll(ctx)
		if err != nil || len(rs) == 0 || rs[0].Offset != 0 {
			t.Fatalf("reset earliest: %v %v", rs, err)
		}
	})
}

func TestRecordsIterator(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		cl := newClient(t, addr)
		topic := createTopic(t, cl, 1)
		ctx, cancel := context.WithCancel(testCtx(t))
		defer cancel()
		for i := range 10 {
			cl.Produce(ctx, spool.StringRecord(topic, fmt.Sprint(i)), nil)
		}
		if err := cl.AssignTopic(ctx, topic, spool.OffsetStart()); err != nil {
			t.Fatal(err)
		}
		n := 0
		for r, err := range cl.Records(ctx) {
			if errors.Is(err, context.Canceled) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(r.Value) != fmt.Sprint(n) {
				t.Fatalf("#%d = %s", n, r.Value)
			}
			n++
			if n == 10 {
				cancel()
			}
		}
		if n != 10 {
			t.Fatalf("iterated %d", n)
		}
	})
}

func TestAdmin(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		cl := newClient(t, addr)
		ad := cl.Admin()
		ctx := testCtx(t)
		topic := createTopic(t, cl, 2)
		if err := ad.CreateTopic(ctx, topic, 2, 1, nil); !errors.Is(err, wire.ErrTopicAlreadyExists) {
			t.Fatalf("creating twice: %v", err)
		}
		names, err := ad.ListTopics(ctx)
		if err != nil || !contains(names, topic) {
			t.Fatalf("list: %v %v", names, err)
		}
		ds, err := ad.DescribeTopics(ctx, topic)
		if err != nil || len(ds) != 1 || len(ds[0].Partitions) != 2 {
			t.Fatalf("describe: %+v %v", ds, err)
		}
		if err := ad.CreatePartitions(ctx, topic, 4); err != nil {
			t.Fatal(err)
		}
		ds, _ = ad.DescribeTopics(ctx, topic)
		if len(ds[0].Partitions) != 4 {
			t.Fatalf("after create partitions: %d", len(ds[0].Partitions))
		}
		v := "3600000"
		if err := ad.AlterTopicConfigs(ctx, topic, map[string]*string{"retention.ms": &v}); err != nil {
			t.Fatal(err)
		}
		cfgs, err := ad.DescribeTopicConfigs(ctx, topic, "retention.ms")
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, c := range cfgs {
			if c.Name == "retention.ms" && c.Value != nil && *c.Value == v {
				found = true
			}
		}
		if !found {
			t.Fatalf("retention.ms not set: %+v", cfgs)
		}
		var recs []*spool.Record
		for i := range 5 {
			recs = append(recs, &spool.Record{Topic: topic, Value: []byte{byte(i)}})
		}
		p := newClient(t, addr, spool.WithPartitioner(spool.ManualPartitioner()))
		if err := p.ProduceSync(ctx, recs...); err != nil {
			t.Fatal(err)
		}
		ends, err := ad.ListOffsets(ctx, topic, spool.OffsetLatest)
		if err != nil || ends[0] != 5 || ends[1] != 0 {
			t.Fatalf("end offsets %v %v", ends, err)
		}
		starts, err := ad.ListOffsets(ctx, topic, spool.OffsetEarliest)
		if err != nil || starts[0] != 0 {
			t.Fatalf("start offsets %v %v", starts, err)
		}
		ci, err := ad.Cluster(ctx)
		if err != nil || len(ci.Brokers) != 1 {
			t.Fatalf("cluster %+v %v", ci, err)
		}
		if err := ad.DeleteTopics(ctx, topic); err != nil {
			t.Fatal(err)
		}
		names, _ = ad.ListTopics(ctx)
		if contains(names, topic) {
			t.Fatalf("%s still listed after delete", topic)
		}
		if err := ad.DeleteTopics(ctx, topic); !errors.Is(err, wire.ErrUnknownTopicOrPartition) {
			t.Fatalf("deleting twice: %v", err)
		}
	})
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// waitCond polls cond until it holds or 30s pass.
func waitCond(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 30s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

package server_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spoolmq/spool/broker/brokertest"
)

// acked is what a producer was told: this value is at this partition and offset.
type acked struct {
	partition int32
	offset    int64
	value     string
}

// TestKillNineLosesNothingAcknowledged kills the broker process with SIGKILL while several
// producers send with acks=all, restarts it on the same data, and checks that every
// acknowledged record is present exactly where its acknowledgement said.
func TestKillNineLosesNothingAcknowledged(t *testing.T) {
	heavy(t)
	dataDir := t.TempDir()
	b := brokertest.StartProcess(t, brokertest.Options{DataDir: dataDir})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	createTopicKadm(t, ctx, b.Addr, "crash", 4)

	var mu sync.Mutex
	var acks []acked
	enough := make(chan struct{}) // closed when enough acknowledgements have arrived
	var enoughOnce sync.Once
	// Producers run until the crash; a blocked Produce ends with pctx.
	pctx, pcancel := context.WithCancel(ctx)
	defer pcancel()
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic("crash"), kgo.RequiredAcks(kgo.AllISRAcks()),
				kgo.RecordRetries(1), kgo.RequestRetries(1), kgo.ProduceRequestTimeout(2*time.Second), kgo.RecordDeliveryTimeout(3*time.Second))
			if err != nil {
				t.Error(err)
				return
			}
			defer cl.Close()
			for i := 0; pctx.Err() == nil; i++ {
				rec := &kgo.Record{Key: []byte(fmt.Sprint(w)), Value: []byte(fmt.Sprintf("w%d-%06d", w, i))}
				cl.Produce(pctx, rec, func(r *kgo.Record, err error) {
					if err != nil {
						return
					}
					mu.Lock()
					acks = append(acks, acked{r.Partition, r.Offset, string(r.Value)})
					if len(acks) >= 3000 {
						enoughOnce.Do(func() { close(enough) })
					}
					mu.Unlock()
				})
			}
		}()
	}
	// Let acknowledgements accumulate, then crash the broker mid-stream.
	select {
	case <-enough:
	case <-ctx.Done():
		t.Fatal("too few acknowledgements before the deadline")
	}
	b.Kill(t)
	pcancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d records acknowledged before kill -9", len(acks))

	b2 := brokertest.StartProcess(t, brokertest.Options{DataDir: dataDir})
	stored := consumeAll(t, ctx, b2.Addr, "crash")
	for _, a := range acks {
		got, ok := stored[[2]int64{int64(a.partition), a.offset}]
		if !ok {
			t.Fatalf("acknowledged %s at %d/%d is missing after restart", a.value, a.partition, a.offset)
		}
		if got != a.value {
			t.Fatalf("at %d/%d: stored %s, acknowledged %s", a.partition, a.offset, got, a.value)
		}
	}
}

// TestRestartKeepsEverything stops the broker cleanly (SIGTERM) and restarts it.
func TestRestartKeepsEverything(t *testing.T) {
	heavy(t)
	dataDir := t.TempDir()
	b := brokertest.StartProcess(t, brokertest.Options{DataDir: dataDir})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	createTopicKadm(t, ctx, b.Addr, "restart", 2)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic("restart"))
	if err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := 0; i < 1000; i++ {
		recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("r%04d", i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	b.Stop(t)
	b2 := brokertest.StartProcess(t, brokertest.Options{DataDir: dataDir})
	stored := consumeAll(t, ctx, b2.Addr, "restart")
	if len(stored) != 1000 {
		t.Fatalf("%d records after restart, want 1000", len(stored))
	}
	for _, r := range recs {
		if stored[[2]int64{int64(r.Partition), r.Offset}] != string(r.Value) {
			t.Fatalf("record %s at %d/%d changed", r.Value, r.Partition, r.Offset)
		}
	}
}

func createTopicKadm(t testing.TB, ctx context.Context, addr, topic string, partitions int32) {
	t.Helper()
	createTopicWith(t, ctx, []kgo.Opt{kgo.SeedBrokers(addr)}, topic, partitions)
}

// createTopicWith creates a topic through a client made with opts (TLS, ...).
func createTopicWith(t testing.TB, ctx context.Context, opts []kgo.Opt, topic string, partitions int32) {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating %s: %v", topic, err)
	}
}

// consumeAll reads a topic from the start up to its end offsets, keyed by partition/offset.
func consumeAll(t *testing.T, ctx context.Context, addr, topic string) map[[2]int64]string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	remaining := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			remaining[o.Partition] = o.Offset
		}
	})
	out := map[[2]int64]string{}
	for len(remaining) > 0 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("consuming %s: %v (partitions left: %v)", topic, err, remaining)
		}
		fs.EachRecord(func(r *kgo.Record) {
			out[[2]int64{int64(r.Partition), r.Offset}] = string(r.Value)
			if end, ok := remaining[r.Partition]; ok && r.Offset+1 >= end {
				delete(remaining, r.Partition)
			}
		})
	}
	return out
}

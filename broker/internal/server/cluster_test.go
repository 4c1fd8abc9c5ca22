package server_test

// Cluster mode against a real ZooKeeper and three spoold processes: replication, failover
// under load, and the history checker (no acknowledged record lost or moved, no duplicates).

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spoolmq/spool/broker/brokertest"
)

// clusterProps keep failure detection at its defaults except where a test says otherwise.
var clusterProps = map[string]string{"num.partitions": "1", "replica.lag.time.max.ms": "2000", "broker.session.timeout.ms": "2000"}

func startCluster(t *testing.T) *brokertest.Cluster {
	t.Helper()
	zk := brokertest.StartZooKeeper(t)
	return brokertest.StartCluster(t, 3, zk, clusterProps)
}

func admin(t *testing.T, addrs []string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// waitMetadata waits until cond holds for the topic's metadata as the cluster reports it.
func waitMetadata(t *testing.T, adm *kadm.Client, topic string, what string, cond func(kadm.TopicDetail) bool) kadm.TopicDetail {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		md, err := adm.Metadata(ctx, topic)
		cancel()
		if err == nil {
			if td, ok := md.Topics[topic]; ok && td.Err == nil && cond(td) {
				return td
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("metadata of %s: %s did not happen within 30s (last: %+v, %v)", topic, what, md.Topics[topic], err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func createReplicated(t *testing.T, adm *kadm.Client, topic string, partitions int32) kadm.TopicDetail {
	t.Helper()
	minISR := "2"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := adm.CreateTopic(ctx, partitions, 3, map[string]*string{"min.insync.replicas": &minISR}, topic)
	if err != nil || res.Err != nil {
		t.Fatalf("creating %s: %v %v", topic, err, res.Err)
	}
	return waitMetadata(t, adm, topic, "every partition led with a full ISR", func(td kadm.TopicDetail) bool {
		if len(td.Partitions) != int(partitions) {
			return false
		}
		for _, p := range td.Partitions {
			if p.Leader < 0 || len(p.ISR) != 3 || len(p.Replicas) != 3 {
				return false
			}
		}
		return true
	})
}

// loadGen produces acks=all idempotent records to every partition until stopped, recording
// every acknowledgement in the history.
type loadGen struct {
	cl      *kgo.Client
	hist    *brokertest.History
	stop    chan struct{}
	done    sync.WaitGroup
	seq     atomic.Int64
	errs    atomic.Int64
	lastErr atomic.Value
}

func startLoad(t *testing.T, addrs []string, topic string, partitions int32, producers int, hist *brokertest.History) *loadGen {
	t.Helper()
	g := &loadGen{hist: hist, stop: make(chan struct{})}
	for w := 0; w < producers; w++ {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0), kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }),
			kgo.MetadataMinAge(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		g.done.Add(1)
		go func(w int) {
			defer g.done.Done()
			inflight := make(chan struct{}, 64)
			for i := 0; ; i++ {
				select {
				case <-g.stop:
					cl.Flush(context.Background())
					return
				case inflight <- struct{}{}:
				}
				value := fmt.Sprintf("w%d-%d", w, i)
				rec := &kgo.Record{Partition: int32(i) % partitions, Value: []byte(value)}
				cl.Produce(context.Background(), rec, func(r *kgo.Record, err error) {
					<-inflight
					if err != nil {
						g.errs.Add(1)
						g.lastErr.Store(err.Error())
						return
					}
					g.hist.Acked(r.Partition, r.Offset, string(r.Value))
				})
			}
		}(w)
	}
	return g
}

func (g *loadGen) Stop() {
	close(g.stop)
	g.done.Wait()
}

// waitAcks waits until the history holds n more acknowledgements than from.
func waitAcks(t *testing.T, h *brokertest.History, from, n int, what string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for h.Count() < from+n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: only %d of %d acknowledgements within 60s", what, h.Count()-from, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readAll consumes every partition from the start up to its high watermark.
func readAll(t *testing.T, addrs []string, topic string, adm *kadm.Client) []brokertest.Read {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { want[o.Partition] = o.Offset })
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var reads []brokertest.Read
	next := map[int32]int64{}
	done := func() bool {
		for p, end := range want {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading back: %v (have %v, want %v)", ctx.Err(), next, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			reads = append(reads, brokertest.Read{Partition: r.Partition, Offset: r.Offset, Value: string(r.Value)})
			next[r.Partition] = r.Offset + 1
		})
	}
	sort.SliceStable(reads, func(i, j int) bool { return reads[i].Partition < reads[j].Partition })
	return reads
}

func leaderOf(td kadm.TopicDetail, p int32) int32 { return td.Partitions[p].Leader }

func TestClusterReplicatesAndFailsOverWithoutLoss(t *testing.T) {
	c := startCluster(t)
	adm := admin(t, c.Addrs())
	const topic, partitions = "orders", 6
	td := createReplicated(t, adm, topic, partitions)

	hist := brokertest.NewHistory()
	load := startLoad(t, c.Addrs(), topic, partitions, 2, hist)
	waitAcks(t, hist, 0, 2000, "before the kill")

	victim := leaderOf(td, 0)
	var led []int32
	for _, p := range td.Partitions {
		if p.Leader == victim {
			led = append(led, p.Partition)
		}
	}
	killedAt := time.Now()
	c.Brokers[victim].Kill(t)
	before := hist.Count()
	after := waitMetadata(t, adm, topic, "new leaders for the killed broker's partitions", func(td kadm.TopicDetail) bool {
		for _, p := range td.Partitions {
			if p.Leader == victim || p.Leader < 0 || slices.Contains(p.ISR, victim) {
				return false
			}
		}
		return true
	})
	waitAcks(t, hist, before, 2000, "after the kill")
	var gaps []time.Duration
	for _, p := range led {
		gaps = append(gaps, hist.FirstAckAfter(p, killedAt))
	}
	slices.Sort(gaps)
	t.Logf("kill -9 of leader %d: partitions %v moved to %v; unavailability p50 %v, max %v", victim, led, leadersOf(after), gaps[len(gaps)/2], gaps[len(gaps)-1])

	// The killed broker comes back (before its ZooKeeper session expired), catches up and
	// rejoins every ISR.
	c.Restart(t, victim)
	waitMetadata(t, adm, topic, "the restarted broker back in every ISR", func(td kadm.TopicDetail) bool {
		for _, p := range td.Partitions {
			if !slices.Contains(p.ISR, victim) {
				return false
			}
		}
		return true
	})
	waitAcks(t, hist, hist.Count(), 1000, "after the restart")
	load.Stop()
	t.Logf("producer errors (retried by the client, never acknowledged): %d", load.errs.Load())
	t.Log("history: " + hist.Check(t, readAll(t, c.Addrs(), topic, adm)))
}

func leadersOf(td kadm.TopicDetail) map[int32]int32 {
	out := map[int32]int32{}
	for _, p := range td.Partitions {
		out[p.Partition] = p.Leader
	}
	return out
}

func TestClusterRefusesAcksAllBelowMinISR(t *testing.T) {
	c := startCluster(t)
	adm := admin(t, c.Addrs())
	const topic = "strict"
	td := createReplicated(t, adm, topic, 1)
	leader := leaderOf(td, 0)
	var others []int32
	for id := range c.Brokers {
		if id != leader {
			others = append(others, id)
		}
	}
	// Two of three down: the survivor may not acknowledge acks=all writes.
	c.Brokers[others[0]].Kill(t)
	c.Brokers[others[1]].Signal(t, syscall.SIGSTOP)
	t.Cleanup(func() { c.Brokers[others[1]].Signal(t, syscall.SIGCONT) })
	waitMetadata(t, adm, topic, "ISR down to the leader", func(td kadm.TopicDetail) bool {
		return len(td.Partitions[0].ISR) == 1
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers[leader].Addr), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordRetries(0), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = cl.ProduceSync(ctx, &kgo.Record{Value: []byte("refused")}).FirstErr()
	if err == nil {
		t.Fatal("acks=all write acknowledged with an ISR of 1 and min.insync.replicas=2")
	}
	t.Logf("acks=all with ISR below the minimum: %v", err)
	// One follower comes back: producing resumes.
	c.Brokers[others[1]].Signal(t, syscall.SIGCONT)
	waitMetadata(t, adm, topic, "ISR back to two", func(td kadm.TopicDetail) bool {
		return len(td.Partitions[0].ISR) >= 2
	})
	cl2, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	if err := cl2.ProduceSync(ctx, &kgo.Record{Value: []byte("accepted")}).FirstErr(); err != nil {
		t.Fatalf("acks=all with the ISR back at two: %v", err)
	}
}

package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spoolmq/spool/broker/brokertest"
)

// TestThousandsOfPartitionsLedAndServing (issue 28): three brokers on ZooKeeper take 2,400
// partitions at replication factor 2 (1,600 replicas each), created in one CreateTopics call
// by franz-go; every partition gets a leader and a full ISR, takes an acks=all record, and
// serves exactly that record to a consumer of every partition. Correctness only: the time
// this takes is measured by bench/scale, not asserted.
func TestThousandsOfPartitionsLedAndServing(t *testing.T) {
	brokertest.SkipShort(t)
	heavy(t)
	const topics, perTopic = 6, 400
	var stopping time.Time
	t.Cleanup(func() { // registered first, so it runs after the brokers' cleanups stopped them
		if !stopping.IsZero() {
			t.Logf("brokers stopped in %s", time.Since(stopping).Round(time.Millisecond))
		}
	})
	zk := brokertest.SharedZooKeeper(t)
	// replica.lag.time.max.ms at Kafka's default: followers of a loaded test machine keep
	// their ISR places while thousands of replicas are created.
	c := brokertest.StartCluster(t, 3, zk.Connect(""), map[string]string{"num.partitions": "1"})
	c.WaitBrokers(t, 3)
	// A broker of 1,600 replicas moves its leaderships away (up to 10 s), then closes 1,600
	// logs, each writing its producer snapshot with an fsync: on a CI machine busy with other
	// tests' fsyncs that took over brokertest's usual 30 s (alone: about 10 s per broker). The
	// stop time is logged here and measured by bench/scale, not asserted.
	for _, b := range c.Brokers {
		b.StopTimeout = 90 * time.Second
	}
	t.Logf("ZooKeeper and three brokers started")
	began := time.Now()
	adm := admin(t, c.Addrs())
	// The broker answers CreateTopics once this broker's replicas exist: on a loaded machine
	// that can take longer than kadm's 15 s, and a client that gives up and sends it again
	// gets TOPIC_ALREADY_EXISTS.
	adm.SetTimeoutMillis(240_000)
	names := make([]string, topics)
	for i := range names {
		names[i] = fmt.Sprintf("many-%d", i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := adm.CreateTopics(ctx, perTopic, 2, nil, names...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Sorted() {
		if r.Err != nil {
			t.Fatalf("creating %s: %v", r.Topic, r.Err)
		}
	}

	brokertest.WaitForState(t, 5*time.Minute, "every partition led with a full ISR", func() (bool, string) {
		mctx, mcancel := context.WithTimeout(ctx, 30*time.Second)
		defer mcancel()
		md, err := adm.Metadata(mctx, names...)
		if err != nil {
			return false, err.Error()
		}
		led, full := 0, 0
		var missing []string
		for _, name := range names {
			td, ok := md.Topics[name]
			if !ok || td.Err != nil {
				missing = append(missing, name)
				continue
			}
			for _, p := range td.Partitions {
				if p.Leader >= 0 && p.Err == nil {
					led++
					if len(p.ISR) == 2 && len(p.Replicas) == 2 {
						full++
					}
				}
			}
		}
		return full == topics*perTopic, fmt.Sprintf("%d of %d partitions led, %d with a full ISR; topics missing: %v",
			led, topics*perTopic, full, missing)
	})

	t.Logf("%d partitions led with a full ISR %s after the brokers started", topics*perTopic, time.Since(began).Round(time.Millisecond))

	prod, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var recs []*kgo.Record
	for _, name := range names {
		for p := range int32(perTopic) {
			recs = append(recs, &kgo.Record{Topic: name, Partition: p, Value: []byte(fmt.Sprintf("%s/%d", name, p))})
		}
	}
	for _, r := range prod.ProduceSync(ctx, recs...) {
		if r.Err != nil {
			t.Fatalf("acks=all produce to %s-%d: %v", r.Record.Topic, r.Record.Partition, r.Err)
		}
		if r.Record.Offset != 0 {
			t.Fatalf("produce to %s-%d: offset %d, want 0 (the partition's first record)", r.Record.Topic, r.Record.Partition, r.Record.Offset)
		}
	}

	t.Logf("one acks=all record in each partition at %s", time.Since(began).Round(time.Millisecond))

	from := map[string]map[int32]kgo.Offset{}
	for _, name := range names {
		from[name] = map[int32]kgo.Offset{}
		for p := range int32(perTopic) {
			from[name][p] = kgo.NewOffset().AtStart()
		}
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.ConsumePartitions(from))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := map[string]string{} // "topic/partition" -> value
	for len(got) < topics*perTopic {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d partitions' records before the deadline", len(got), topics*perTopic)
		}
		for _, e := range fs.Errors() {
			if !strings.Contains(e.Err.Error(), "context") {
				t.Logf("fetch error on %s-%d (retried by the client): %v", e.Topic, e.Partition, e.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) {
			key := fmt.Sprintf("%s/%d", r.Topic, r.Partition)
			if prev, dup := got[key]; dup {
				t.Errorf("%s served a second record %q at %d after %q", key, r.Value, r.Offset, prev)
			}
			if string(r.Value) != key || r.Offset != 0 {
				t.Errorf("%s served %q at offset %d, want %q at 0", key, r.Value, r.Offset, key)
			}
			got[key] = string(r.Value)
		})
	}
	t.Logf("every record served back at %s", time.Since(began).Round(time.Millisecond))
	stopping = time.Now()
}

package server_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spoolmq/spool/broker/brokertest"
)

// BenchmarkAckToConsumeRF3 measures, on 3 brokers on ZooKeeper with a topic of replication
// factor 3 and min.insync.replicas=2, how long after its acks=all acknowledgement each record
// reaches a consumer that long-polls with fetch.max.wait.ms=500 (librdkafka's default), one
// record at a time (issue 27). It reports the p50 and p99 in ms of the time from the ack to
// the consumer (0 when the consumer had it first) and from the send to the consumer.
func BenchmarkAckToConsumeRF3(b *testing.B) {
	zk := brokertest.StartZooKeeper(b)
	c := brokertest.StartCluster(b, 3, zk.Connect(""), map[string]string{"num.partitions": "1"})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	minISR := "2"
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &minISR}, "lat"); err != nil {
		b.Fatal(err)
	}
	brokertest.WaitFor(b, 30*time.Second, "a full ISR", func() bool {
		md, err := adm.Metadata(ctx, "lat")
		return err == nil && len(md.Topics["lat"].Partitions) == 1 && len(md.Topics["lat"].Partitions[0].ISR) == 3
	})
	prod, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))
	if err != nil {
		b.Fatal(err)
	}
	defer prod.Close()
	cons, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.ConsumeTopics("lat"), kgo.FetchMaxWait(500*time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		b.Fatal(err)
	}
	defer cons.Close()
	var mu sync.Mutex
	received := map[int]time.Time{}
	got := make(chan int, 1024)
	go func() {
		for {
			fs := cons.PollFetches(ctx)
			if fs.IsClientClosed() {
				return
			}
			now := time.Now()
			fs.EachRecord(func(r *kgo.Record) {
				n, _ := strconv.Atoi(string(r.Value))
				mu.Lock()
				received[n] = now
				mu.Unlock()
				got <- n
			})
		}
	}()
	n := max(b.N, 50)
	lat, e2e := make([]float64, 0, n), make([]float64, 0, n)
	b.ResetTimer()
	for i := 0; i < n; i++ {
		sent := time.Now()
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "lat", Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			b.Fatal(err)
		}
		acked := time.Now()
		for m := range got {
			if m == i {
				break
			}
		}
		mu.Lock()
		lat = append(lat, float64(max(received[i].Sub(acked), 0))/float64(time.Millisecond))
		e2e = append(e2e, float64(received[i].Sub(sent))/float64(time.Millisecond))
		mu.Unlock()
	}
	b.StopTimer()
	slices.Sort(lat)
	slices.Sort(e2e)
	b.ReportMetric(lat[len(lat)/2], "ack-p50-ms")
	b.ReportMetric(lat[len(lat)*99/100], "ack-p99-ms")
	b.ReportMetric(e2e[len(e2e)/2], "send-p50-ms")
	b.ReportMetric(e2e[len(e2e)*99/100], "send-p99-ms")
}

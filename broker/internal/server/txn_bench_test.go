package server_test

import (
	"context"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spoolmq/spool/broker/brokertest"
)

// BenchmarkTxnCommit measures franz-go transactional produce against spoold as its own process
// (fsync before ack): each iteration is one transaction of txnSize 100-byte records over 6
// partitions, committed. It reports committed records/s and the commit (EndTxn) latency.
//
//	go test ./broker/internal/server -run '^$' -bench 'TxnCommit' -benchtime 200x
func BenchmarkTxnCommit(b *testing.B) {
	for _, txnSize := range []int{100, 1000} {
		b.Run(map[int]string{100: "100", 1000: "1000"}[txnSize], func(b *testing.B) {
			br := brokertest.StartProcess(b, brokertest.Options{})
			ctx := context.Background()
			opts := []kgo.Opt{kgo.SeedBrokers(br.Addr)}
			createTopicWith(b, ctx, opts, "bench", 6)
			benchTxns(b, ctx, opts, txnSize)
		})
	}
}

// BenchmarkTxnCommitCluster is BenchmarkTxnCommit on a 3-broker ZooKeeper cluster, the topic
// replicated 3 times with min.insync.replicas=2: the partitions are led by all three
// brokers, so most markers go to another broker than the transaction coordinator
// (WriteTxnMarkers) and most first writes of a transaction are verified across brokers
// (AddPartitionsToTxn verify-only).
//
//	go test ./broker/internal/server -run '^$' -bench 'TxnCommitCluster' -benchtime 200x
func BenchmarkTxnCommitCluster(b *testing.B) {
	for _, txnSize := range []int{100, 1000} {
		b.Run(map[int]string{100: "100", 1000: "1000"}[txnSize], func(b *testing.B) {
			zk := brokertest.SharedZooKeeper(b)
			c := brokertest.StartCluster(b, 3, zk.Connect(""), clusterProps)
			ctx := context.Background()
			opts := []kgo.Opt{kgo.SeedBrokers(c.Addrs()...)}
			adm, err := kgo.NewClient(opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer adm.Close()
			minISR := "2"
			if _, err := kadm.NewClient(adm).CreateTopic(ctx, 6, 3, map[string]*string{"min.insync.replicas": &minISR}, "bench"); err != nil {
				b.Fatal(err)
			}
			benchTxns(b, ctx, opts, txnSize)
		})
	}
}

// benchTxns runs b.N committed transactions of txnSize 100-byte records to topic "bench" and
// reports committed records/s and the EndTxn latency.
func benchTxns(b *testing.B, ctx context.Context, opts []kgo.Opt, txnSize int) {
	cl, err := kgo.NewClient(append(slices.Clone(opts), kgo.DefaultProduceTopic("bench"), kgo.TransactionalID("bench-tx"),
		kgo.ProducerLinger(2*time.Millisecond), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))...)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	value := make([]byte, 100)
	var commits []time.Duration
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if err := cl.BeginTransaction(); err != nil {
			b.Fatal(err)
		}
		for range txnSize {
			cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
				if err != nil {
					b.Error(err)
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			b.Fatal(err)
		}
		commits = append(commits, time.Since(t0))
	}
	elapsed := time.Since(start)
	b.StopTimer()
	sort.Slice(commits, func(i, j int) bool { return commits[i] < commits[j] })
	b.ReportMetric(float64(b.N*txnSize)/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(commits[len(commits)/2].Microseconds())/1000, "commit-p50-ms")
	b.ReportMetric(float64(commits[len(commits)*99/100].Microseconds())/1000, "commit-p99-ms")

}

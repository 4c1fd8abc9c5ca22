package server_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spoolmq/spool/broker/brokertest"
)

// The broker benchmarks run spoold as its own process with default durability (fsync before
// ack) and drive it with franz-go from the benchmark process, 6 partitions, acks=all:
//
//	go test ./broker/internal/server -run '^$' -bench 'Broker' -benchtime 2000000x
//
// They report records/s, MB/s, produce latency percentiles and the broker's peak RSS.

func benchBroker(b *testing.B) *brokertest.Broker {
	props := map[string]string{}
	if addr := os.Getenv("SPOOL_BENCH_PPROF"); addr != "" {
		props["spool.pprof.listener"] = addr // profile the broker while the benchmark runs
	}
	br := brokertest.StartProcess(b, brokertest.Options{Props: props})
	createTopicKadm(b, context.Background(), br.Addr, "bench", 6)
	return br
}

func benchProducer(b *testing.B, addr string) *kgo.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("bench"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(1<<20),
		kgo.ProducerLinger(2*time.Millisecond), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		b.Fatal(err)
	}
	return cl
}

// produceN produces n records of size bytes and returns each record's latency.
func produceN(b *testing.B, cl *kgo.Client, n, size int) []time.Duration {
	value := make([]byte, size)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	lat := make([]time.Duration, n)
	var wg sync.WaitGroup
	var firstErr error
	var mu sync.Mutex
	ctx := context.Background()
	wg.Add(n)
	for i := 0; i < n; i++ {
		start := time.Now()
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			lat[i] = time.Since(start)
			if err != nil {
				mu.Lock()
				firstErr = err
				mu.Unlock()
			}
			wg.Done()
		})
	}
	wg.Wait()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	return lat
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*p))]
}

func BenchmarkBrokerProduce(b *testing.B) {
	for _, size := range []int{100, 1024} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			br := benchBroker(b)
			cl := benchProducer(b, br.Addr)
			defer cl.Close()
			produceN(b, cl, 10000, size) // warm up: connections, metadata, page cache
			b.SetBytes(int64(size))
			b.ResetTimer()
			start := time.Now()
			lat := produceN(b, cl, b.N, size)
			elapsed := time.Since(start)
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
			b.ReportMetric(float64(percentile(lat, 0.50).Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(br.PeakRSS(b))/(1<<20), "peak-RSS-MiB")
		})
	}
}

func BenchmarkBrokerFetch(b *testing.B) {
	for _, size := range []int{100, 1024} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) { benchmarkFetch(b, size) })
	}
}

func benchmarkFetch(b *testing.B, size int) {
	br := benchBroker(b)
	cl := benchProducer(b, br.Addr)
	produceN(b, cl, b.N, size)
	cl.Close()
	cons, err := kgo.NewClient(kgo.SeedBrokers(br.Addr), kgo.ConsumeTopics("bench"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(64<<20), kgo.FetchMaxPartitionBytes(16<<20))
	if err != nil {
		b.Fatal(err)
	}
	defer cons.Close()
	b.SetBytes(int64(size))
	b.ResetTimer()
	start := time.Now()
	got := 0
	ctx := context.Background()
	for got < b.N {
		fs := cons.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			b.Fatal(err)
		}
		got += fs.NumRecords()
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(got)/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(br.PeakRSS(b))/(1<<20), "peak-RSS-MiB")
}

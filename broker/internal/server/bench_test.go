package server_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/broker/brokertest/testca"
)

// The broker benchmarks run spoold as its own process with default durability (fsync before
// ack) and drive it with franz-go from the benchmark process, 6 partitions, acks=all:
//
//	go test ./broker/internal/server -run '^$' -bench 'Broker' -benchtime 2000000x
//
// They report records/s, MB/s, produce latency percentiles and the broker's peak RSS, over a
// PLAINTEXT listener and over an SSL one (TLS 1.3; fetch over TLS cannot use sendfile).

// transports are the listeners the benchmarks run over.
var transports = []string{"plaintext", "tls"}

// benchBroker starts the broker with one listener of the transport and returns the client
// options that reach it.
func benchBroker(b *testing.B, transport string) (*brokertest.Broker, []kgo.Opt) {
	props := map[string]string{}
	if addr := os.Getenv("SPOOL_BENCH_PPROF"); addr != "" {
		props["spool.pprof.listener"] = addr // profile the broker while the benchmark runs
	}
	var opts []kgo.Opt
	if transport == "tls" {
		ca := testca.New(b)
		props["listeners"] = "SSL://127.0.0.1:0"
		props["ssl.keystore.type"] = "PEM"
		props["ssl.keystore.location"] = ca.Server(b, "broker").File
		opts = append(opts, kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool()}))
	}
	br := brokertest.StartProcess(b, brokertest.Options{Props: props})
	opts = append(opts, kgo.SeedBrokers(br.Addr))
	createTopicWith(b, context.Background(), opts, "bench", 6)
	return br, opts
}

func benchProducer(b *testing.B, opts []kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append(slices.Clone(opts), kgo.DefaultProduceTopic("bench"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(1<<20),
		kgo.ProducerLinger(2*time.Millisecond), kgo.ProducerBatchCompression(kgo.NoCompression()))...)
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

// eachTransportAndSize runs bench for each transport and record size (100 B, 1 KiB).
func eachTransportAndSize(b *testing.B, bench func(b *testing.B, transport string, size int)) {
	for _, tr := range transports {
		for _, size := range []int{100, 1024} {
			b.Run(fmt.Sprintf("%s/%dB", tr, size), func(b *testing.B) { bench(b, tr, size) })
		}
	}
}

func BenchmarkBrokerProduce(b *testing.B) { eachTransportAndSize(b, benchmarkProduce) }

func benchmarkProduce(b *testing.B, transport string, size int) {
	br, opts := benchBroker(b, transport)
	cl := benchProducer(b, opts)
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
}

func BenchmarkBrokerFetch(b *testing.B) { eachTransportAndSize(b, benchmarkFetch) }

func benchmarkFetch(b *testing.B, transport string, size int) {
	br, opts := benchBroker(b, transport)
	cl := benchProducer(b, opts)
	produceN(b, cl, b.N, size)
	cl.Close()
	cons, err := kgo.NewClient(append(slices.Clone(opts), kgo.ConsumeTopics("bench"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(64<<20), kgo.FetchMaxPartitionBytes(16<<20))...)
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

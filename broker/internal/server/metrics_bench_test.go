package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spoolmq/spool/broker/brokertest"
)

// BenchmarkMetricsOverhead produces small records in small requests (concurrent synchronous
// producers, no linger, acks=1, no fsync, so the per-request work the dispatcher's metrics
// add is as large a share as it gets) with the metrics listener off and on, and with traces
// exported to an OTLP/HTTP receiver (in this process, discarding them); compare the records/s:
//
//	go test ./broker/internal/server -run '^$' -bench MetricsOverhead -benchtime 100000x -count 3
func BenchmarkMetricsOverhead(b *testing.B) {
	for _, mode := range []string{"off", "on", "traces"} {
		b.Run(mode, func(b *testing.B) {
			props := map[string]string{"spool.fsync": "never"}
			switch mode {
			case "on":
				props["spool.metrics.listener"] = "127.0.0.1:0"
			case "traces":
				props["spool.otlp.endpoint"] = startOTLPReceiver(b, false).url
			}
			br := brokertest.StartProcess(b, brokertest.Options{Props: props})
			createTopicKadm(b, context.Background(), br.Addr, "bench", 6)
			cl, err := kgo.NewClient(kgo.SeedBrokers(br.Addr), kgo.DefaultProduceTopic("bench"),
				kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.ProducerLinger(0),
				kgo.MaxBufferedRecords(1<<16), kgo.ProducerBatchCompression(kgo.NoCompression()))
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			payload := make([]byte, 100)
			ctx := context.Background()
			one := func() {
				if err := cl.ProduceSync(ctx, &kgo.Record{Value: payload}).FirstErr(); err != nil {
					b.Error(err)
				}
			}
			for range 1000 { // warm up
				one()
			}
			b.SetBytes(100)
			b.SetParallelism(8) // 16 producers waiting on their record each, on 2 cores
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					one()
				}
			})
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
			if mode == "on" {
				fams := scrape(b, br.MetricsAddr)
				reqs := value(fams, "rpc_server_call_duration_seconds", map[string]string{"rpc_method": "Produce"})
				if reqs == 0 {
					b.Fatal("no Produce request counted with metrics on")
				}
				b.ReportMetric(float64(b.N+1000)/reqs, "records/request")
			}
		})
	}
}

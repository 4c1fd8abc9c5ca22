package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spoolmq/spool/broker/brokertest"
)

// BenchmarkConsoleBrowse measures the message browser's scan: a value filter that matches
// nothing reads a page's whole scan budget (32 MiB of 100-byte records, lz4 batches as franz-go
// produces them) through the partition manager, decompresses and filters every record, and
// answers with none; MB/s is log bytes (compressed) scanned per second, records/s the records
// filtered per second.
//
//	go test ./broker/internal/server -run '^$' -bench ConsoleBrowse -benchtime 20x
func BenchmarkConsoleBrowse(b *testing.B) {
	br := brokertest.Start(b, brokertest.Options{Props: map[string]string{"spool.metrics.listener": "127.0.0.1:0"}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(br.Addr), kgo.DefaultProduceTopic("scan"), kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "scan"); err != nil {
		b.Fatal(err)
	}
	value := make([]byte, 100)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	const n = 600_000
	for range n {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				b.Error(err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	url := "http://" + br.MetricsAddr + "/console/api/topics/scan/partitions/0/records?from=beginning&value=nomatch"
	var page struct {
		Scanned int64 `json:"scannedBytes"`
		Start   int64 `json:"start"`
		Next    int64 `json:"next"`
		Records []json.RawMessage
	}
	get := func() {
		resp, err := http.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || resp.StatusCode != 200 || len(page.Records) != 0 || page.Scanned == 0 {
			b.Fatalf("status %d, %d records, %d bytes scanned, %v", resp.StatusCode, len(page.Records), page.Scanned, err)
		}
	}
	get() // warm-up: the page cache and the broker's buffers
	b.SetBytes(page.Scanned)
	b.ResetTimer()
	for range b.N {
		get()
	}
	b.ReportMetric(float64(page.Scanned)/float64(1<<20), "MiB-scanned/op")
	b.ReportMetric(float64(page.Next-page.Start)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

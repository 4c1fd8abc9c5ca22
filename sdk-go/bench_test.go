package spool_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	spool "github.com/spoolmq/spool/sdk-go"
	"github.com/twmb/franz-go/pkg/kgo"
)

// benchAddr starts a broker for one benchmark run; b's cleanup stops it.
func benchAddr(b *testing.B) string {
	return brokertest.Start(b, brokertest.Options{}).Addr
}

func benchTopic(b *testing.B, addr string, partitions int32) string {
	cl, err := spool.NewClient(spool.SeedBrokers(addr))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	name := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	if err := cl.Admin().CreateTopic(context.Background(), name, partitions, 1, nil); err != nil {
		b.Fatal(err)
	}
	return name
}

// readSpool polls c until it has read the topic's n records or want records, closes it and
// returns how many it read.
func readSpool(b *testing.B, c *spool.Client, n, want int) int {
	defer c.Close()
	seen := 0
	for seen < n && seen < want {
		rs, err := c.Poll(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		seen += len(rs)
	}
	return seen
}

// readSpoolFunc is readSpool with PollFunc, which allocates nothing per record.
func readSpoolFunc(b *testing.B, c *spool.Client, n, want int) int {
	defer c.Close()
	seen := 0
	for seen < n && seen < want {
		got, err := c.PollFunc(context.Background(), func(*spool.Record) {})
		if err != nil {
			b.Fatal(err)
		}
		seen += got
	}
	return seen
}

// readFranz is readSpool for a franz-go client.
func readFranz(b *testing.B, c *kgo.Client, n, want int) int {
	defer c.Close()
	seen := 0
	for seen < n && seen < want {
		fs := c.PollFetches(context.Background())
		if err := fs.Err0(); err != nil {
			b.Fatal(err)
		}
		seen += fs.NumRecords()
	}
	return seen
}

// fill produces n 100-byte records to topic, for the consume benchmarks.
func fill(b *testing.B, addr, topic string, n int) {
	cl, err := spool.NewClient(spool.SeedBrokers(addr))
	if err != nil {
		b.Fatal(err)
	}
	value := make([]byte, 100)
	recs := make([]spool.Record, n)
	for i := range recs {
		recs[i].Topic, recs[i].Value = topic, value
		cl.Produce(context.Background(), &recs[i], nil)
	}
	if err := cl.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	cl.Close()
}

// BenchmarkProduce produces b.N records of each size with acks=all through our producer and
// franz-go's, same broker, same workload. Ours runs with Linger(0) (default 5ms, as Kafka 4's
// Java client); franz-go v1.22 keeps its default 10ms, which at these rates does not matter:
// both send a batch once it is full, and the broker gets requests of the same size and number
// of batches from both.
func BenchmarkProduce(b *testing.B) {
	for _, size := range []int{100, 1024} {
		b.Run(fmt.Sprintf("spool/%dB", size), func(b *testing.B) {
			addr := benchAddr(b)
			topic := benchTopic(b, addr, 3)
			cl, err := spool.NewClient(spool.SeedBrokers(addr), spool.WithPartitioner(spool.Sticky(0, false)), spool.Linger(0))
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			ctx := context.Background()
			value := make([]byte, size)
			recs := make([]spool.Record, b.N)
			var errOnce sync.Once
			cb := func(_ *spool.Record, err error) {
				if err != nil {
					errOnce.Do(func() { b.Error(err) })
				}
			}
			// Warm up connections and the producer id.
			if err := cl.ProduceSync(ctx, &spool.Record{Topic: topic, Value: value}); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			for i := range recs {
				recs[i].Topic, recs[i].Value = topic, value
				cl.Produce(ctx, &recs[i], cb)
			}
			if err := cl.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		})
		b.Run(fmt.Sprintf("franz-go/%dB", size), func(b *testing.B) {
			addr := benchAddr(b)
			topic := benchTopic(b, addr, 3)
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()))
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			ctx := context.Background()
			value := make([]byte, size)
			recs := make([]kgo.Record, b.N)
			var errOnce sync.Once
			cb := func(_ *kgo.Record, err error) {
				if err != nil {
					errOnce.Do(func() { b.Error(err) })
				}
			}
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: value}).FirstErr(); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			for i := range recs {
				recs[i].Topic, recs[i].Value = topic, value
				cl.Produce(ctx, &recs[i], cb)
			}
			if err := cl.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkConsume fetches 100-byte records with our consumer (Poll, and PollFunc) and
// franz-go's.
func BenchmarkConsume(b *testing.B) {
	addr := benchAddr(b)
	const n = 200000
	topic := benchTopic(b, addr, 3)
	fill(b, addr, topic, n)
	for _, read := range []struct {
		name string
		fn   func(b *testing.B, c *spool.Client, n, want int) int
	}{{"spool", readSpool}, {"spool-func", readSpoolFunc}} {
		b.Run(read.name, func(b *testing.B) {
			b.SetBytes(100)
			b.ReportAllocs()
			got := 0
			for got < b.N {
				c, err := spool.NewClient(spool.SeedBrokers(addr))
				if err != nil {
					b.Fatal(err)
				}
				if err := c.AssignTopic(context.Background(), topic, spool.OffsetStart()); err != nil {
					b.Fatal(err)
				}
				got += read.fn(b, c, n, b.N-got)
			}
		})
	}
	b.Run("franz-go", func(b *testing.B) {
		b.SetBytes(100)
		b.ReportAllocs()
		got := 0
		for got < b.N {
			c, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			if err != nil {
				b.Fatal(err)
			}
			got += readFranz(b, c, n, b.N-got)
		}
	})
}

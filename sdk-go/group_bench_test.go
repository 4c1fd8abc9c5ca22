package spool_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/spoolmq/spool/broker/brokertest"
	spool "github.com/spoolmq/spool/sdk-go"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkGroupConsume reads 100-byte records as a fresh one-member group (join, offset
// fetch, auto commit every 5 s) with our group consumer and franz-go's, same broker; compare
// with BenchmarkConsume for the cost of group mode.
func BenchmarkGroupConsume(b *testing.B) {
	addr := brokertest.Start(b, brokertest.Options{Props: map[string]string{"group.initial.rebalance.delay.ms": "0"}}).Addr
	const n = 200000
	topic := benchTopic(b, addr, 3)
	fill(b, addr, topic, n)
	groups := 0
	b.Run("spool", func(b *testing.B) {
		b.SetBytes(100)
		b.ReportAllocs()
		for got := 0; got < b.N; {
			groups++
			c, err := spool.NewClient(spool.SeedBrokers(addr), spool.ConsumerGroup(fmt.Sprint("bench-spool-", groups)), spool.ConsumeTopics(topic))
			if err != nil {
				b.Fatal(err)
			}
			for seen := 0; seen < n && got < b.N; {
				rs, err := c.Poll(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				seen += len(rs)
				got += len(rs)
			}
			c.Close()
		}
	})
	b.Run("franz-go", func(b *testing.B) {
		b.SetBytes(100)
		b.ReportAllocs()
		for got := 0; got < b.N; {
			groups++
			c, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(fmt.Sprint("bench-franz-", groups)), kgo.ConsumeTopics(topic),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			if err != nil {
				b.Fatal(err)
			}
			for seen := 0; seen < n && got < b.N; {
				fs := c.PollFetches(context.Background())
				if err := fs.Err0(); err != nil {
					b.Fatal(err)
				}
				k := fs.NumRecords()
				seen += k
				got += k
			}
			c.Close()
		}
	})
}

package spool_test

import (
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
			got += readSpool(b, c, n, b.N-got)
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
			got += readFranz(b, c, n, b.N-got)
		}
	})
}

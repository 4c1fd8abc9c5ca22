package spool_test

import (
	"context"
	"fmt"
	"testing"

	spool "github.com/spoolmq/spool/sdk-go"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkTransactionalProduce produces 100 B records in transactions of 100 and 1,000
// records to 3 partitions of a Spool broker, with this SDK and with franz-go side by side.
// Each b.N is one record; the commits are part of the time.
func BenchmarkTransactionalProduce(b *testing.B) {
	addr := benchAddr(b)
	value := make([]byte, 100)
	for _, size := range []int{100, 1000} {
		b.Run(fmt.Sprintf("spool/txn=%d", size), func(b *testing.B) {
			topic := benchTopic(b, addr, 3)
			cl, err := spool.NewClient(spool.SeedBrokers(addr), spool.TransactionalID(topic))
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			ctx := context.Background()
			if err := cl.InitTransactions(ctx); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(value)))
			b.ResetTimer()
			for done := 0; done < b.N; {
				if err := cl.BeginTransaction(); err != nil {
					b.Fatal(err)
				}
				for i := 0; i < size && done < b.N; i++ {
					cl.Produce(ctx, &spool.Record{Topic: topic, Value: value}, nil)
					done++
				}
				if err := cl.CommitTransaction(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("franz-go/txn=%d", size), func(b *testing.B) {
			topic := benchTopic(b, addr, 3)
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID(topic), kgo.DefaultProduceTopic(topic))
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			ctx := context.Background()
			b.SetBytes(int64(len(value)))
			b.ResetTimer()
			for done := 0; done < b.N; {
				if err := cl.BeginTransaction(); err != nil {
					b.Fatal(err)
				}
				for i := 0; i < size && done < b.N; i++ {
					cl.Produce(ctx, &kgo.Record{Value: value}, nil)
					done++
				}
				if err := cl.Flush(ctx); err != nil { // franz-go's EndTransaction does not flush
					b.Fatal(err)
				}
				if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

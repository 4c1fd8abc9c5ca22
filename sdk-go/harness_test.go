package spool_test

import (
	"context"
	"fmt"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	spool "github.com/spoolmq/spool/sdk-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

// target is a broker the SDK suite runs against.
type target struct {
	name  string
	start func(t *testing.T) string
}

// brokerTargets are our broker, with props added to its defaults, and franz-go's in-memory
// Kafka, which we did not write.
func brokerTargets(props map[string]string) []target {
	return []target{
		{"spool", func(t *testing.T) string {
			all := map[string]string{"num.partitions": "3"}
			maps.Copy(all, props)
			return brokertest.Start(t, brokertest.Options{Props: all}).Addr
		}},
		{"kfake", func(t *testing.T) string {
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(3))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			return c.ListenAddrs()[0]
		}},
	}
}

var targets = brokerTargets(nil)

// eachTarget runs fn as a subtest against every target.
func eachTarget(t *testing.T, fn func(t *testing.T, addr string)) { runTargets(t, targets, fn) }

func runTargets(t *testing.T, ts []target, fn func(t *testing.T, addr string)) {
	for _, tg := range ts {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			fn(t, tg.start(t))
		})
	}
}

func newClient(t testing.TB, addr string, opts ...spool.Opt) *spool.Client {
	t.Helper()
	cl, err := spool.NewClient(append([]spool.Opt{spool.SeedBrokers(addr), spool.RetryBackoff(20*time.Millisecond, 500*time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var topicSeq atomic.Int64

func createTopic(t testing.TB, cl *spool.Client, partitions int32) string {
	t.Helper()
	name := fmt.Sprintf("t%d-%d", time.Now().UnixNano()%1e6, topicSeq.Add(1))
	if err := cl.Admin().CreateTopic(testCtx(t), name, partitions, 1, nil); err != nil {
		t.Fatal(err)
	}
	return name
}

// consumeN assigns all partitions of topic from the start and polls until n records came.
func consumeN(t testing.TB, cl *spool.Client, topic string, n int) []*spool.Record {
	t.Helper()
	ctx := testCtx(t)
	if err := cl.AssignTopic(ctx, topic, spool.OffsetStart()); err != nil {
		t.Fatal(err)
	}
	var out []*spool.Record
	for len(out) < n {
		rs, err := cl.Poll(ctx)
		if err != nil {
			t.Fatalf("poll after %d of %d records: %v", len(out), n, err)
		}
		out = append(out, rs...)
	}
	return out
}

package spool_test

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	spool "github.com/spoolmq/spool/sdk-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

// parallelTests is how many of this package's tests run at once unless -test.parallel says
// otherwise. Most of them wait: on brokers in this process and spoold processes, on group
// rebalances, session timeouts and retries, on kcat and Python. go test's default (GOMAXPROCS,
// two on our machines) would leave those waits end to end.
const parallelTests = 6

func TestMain(m *testing.M) {
	flag.Parse()
	brokertest.DefaultParallel(parallelTests)
	os.Exit(m.Run())
}

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

// eachTarget runs fn as a subtest against every single-address target. Tests that move
// partition leaders between brokers use eachClusterTarget, whose targets have several.
func eachTarget(t *testing.T, fn func(t *testing.T, addr string)) { runTargets(t, targets, fn) }

// cluster is a running multi-broker target: its brokers' addresses, and a way to move the
// leaders of a topic's partitions to other brokers for real.
type cluster struct {
	addrs []string
	// moveLeaders moves the leader of every partition of topic, or of at least partition 0
	// where the move is a crash, and returns when metadata names the new leaders.
	moveLeaders func(t *testing.T, topic string)
}

// clusterTarget is a multi-broker target: start brings up three brokers with topic created
// with partitions partitions, replicated to all three.
type clusterTarget struct {
	name  string
	start func(t *testing.T, topic string, partitions int32) cluster
}

// clusterTargets are three Spool brokers on a real ZooKeeper, whose moves are kill -9 of the
// leader (replication factor 3, min.insync.replicas 2), and three kfake brokers, whose moves
// are kfake's reassignment.
var clusterTargets = []clusterTarget{
	{"spool-cluster", startSpoolCluster},
	{"kfake-cluster", func(t *testing.T, topic string, partitions int32) cluster {
		c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(partitions, topic))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return cluster{addrs: c.ListenAddrs(), moveLeaders: func(t *testing.T, topic string) {
			for p := range partitions {
				if err := c.MoveTopicPartition(topic, p, (c.LeaderFor(topic, p)+1)%3); err != nil {
					t.Fatal(err)
				}
			}
		}}
	}},
}

// eachClusterTarget runs fn as a subtest against every multi-broker target.
func eachClusterTarget(t *testing.T, topic string, partitions int32, fn func(t *testing.T, c cluster)) {
	for _, tg := range clusterTargets {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			fn(t, tg.start(t, topic, partitions))
		})
	}
}

// startSpoolCluster starts ZooKeeper and three spoold processes, creates topic (RF 3,
// min.insync.replicas=2) and waits until every partition has a leader and a full ISR. Its
// move kills -9 the leader of partition 0 after restarting the broker the previous move
// killed and waiting for it to rejoin every ISR, so one broker at most is ever down and
// acks=all keeps its two in-sync replicas.
func startSpoolCluster(t *testing.T, topic string, partitions int32) cluster {
	zk := brokertest.StartZooKeeper(t)
	c := brokertest.StartCluster(t, 3, zk.Connect(""), map[string]string{"num.partitions": "1"})
	adm := newClient(t, c.Addrs()[0], spool.SeedBrokers(c.Addrs()...)).Admin()
	if err := adm.CreateTopic(testCtx(t), topic, partitions, 3, map[string]string{"min.insync.replicas": "2"}); err != nil {
		t.Fatal(err)
	}
	leaders := func(t *testing.T, what string, cond func(spool.PartitionDetail) bool) map[int32]int32 {
		t.Helper()
		out := map[int32]int32{}
		brokertest.WaitForState(t, 30*time.Second, topic+": "+what, func() (bool, string) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			tds, err := adm.DescribeTopics(ctx, topic)
			if err != nil || len(tds) != 1 || tds[0].Err != nil || len(tds[0].Partitions) != int(partitions) {
				return false, fmt.Sprintf("%+v %v", tds, err)
			}
			for _, p := range tds[0].Partitions {
				if p.Err != nil || !cond(p) {
					return false, fmt.Sprintf("%+v", tds[0].Partitions)
				}
				out[p.Partition] = p.Leader
			}
			return true, ""
		})
		return out
	}
	fullISR := func(p spool.PartitionDetail) bool { return p.Leader >= 0 && len(p.ISR) == 3 }
	leaders(t, "every partition led, ISR of 3", fullISR)
	killed := int32(-1)
	move := func(t *testing.T, topic string) {
		if killed >= 0 {
			c.Restart(t, killed)
			leaders(t, fmt.Sprintf("broker %d back in every ISR", killed), fullISR)
		}
		before := leaders(t, "every partition led", func(p spool.PartitionDetail) bool { return p.Leader >= 0 })
		killed = before[0]
		c.Kill(t, killed)
		after := leaders(t, fmt.Sprintf("partitions led by killed broker %d led elsewhere", killed), func(p spool.PartitionDetail) bool {
			return p.Leader >= 0 && p.Leader != killed
		})
		t.Logf("killed broker %d: leaders %v -> %v", killed, before, after)
	}
	return cluster{addrs: c.Addrs(), moveLeaders: move}
}

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

// confClient is a client configured by the librdkafka-style keys kv (NewConfFromMap), closed
// when the test ends.
func confClient(t testing.TB, kv map[string]string) *spool.Client {
	t.Helper()
	conf, err := spool.NewConfFromMap(kv)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := spool.NewClient(conf.Opts()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

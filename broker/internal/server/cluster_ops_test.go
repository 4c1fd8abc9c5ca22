package server_test

// Operating a cluster: growing it, shrinking it and moving replicas under acks=all load, with
// the spool CLI as an operator types it, and the history checker after each (nothing
// acknowledged lost or moved, no duplicates).

import (
	"context"
	"crypto/rand"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spoolmq/spool/broker/brokertest"
)

// spoolCmd runs the spool CLI against brokers and returns its output; it fails the test on a
// non-zero exit.
func spoolCmd(t *testing.T, brokers []string, args ...string) string {
	t.Helper()
	out, err := spoolRun(t, brokers, args...)
	if err != nil {
		t.Fatalf("spool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// spoolRun runs the spool CLI against brokers and returns its output and exit error.
func spoolRun(t *testing.T, brokers []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, brokertest.CLI(t), append([]string{"--brokers", strings.Join(brokers, ",")}, args...)...)
	out, err := cmd.CombinedOutput()
	t.Logf("spool %s:\n%s", strings.Join(args, " "), out)
	return string(out), err
}

// placement counts replicas and leaders per broker over every topic.
func placement(t *testing.T, adm *kadm.Client) (replicas, leaders map[int32]int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	md, err := adm.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	replicas, leaders = map[int32]int{}, map[int32]int{}
	for _, td := range md.Topics {
		for _, p := range td.Partitions {
			for _, r := range p.Replicas {
				replicas[r]++
			}
			leaders[p.Leader]++
		}
	}
	return replicas, leaders
}

// fair reports whether every broker of ids is within one of every other in n.
func fair(n map[int32]int, ids ...int32) bool {
	lo, hi := 1<<30, -1
	for _, id := range ids {
		lo, hi = min(lo, n[id]), max(hi, n[id])
	}
	return hi-lo <= 1
}

// TestClusterGrowAndShrink adds a fourth broker to a loaded three-broker cluster and
// rebalances onto it, then decommissions a broker and stops it, all under acks=all load.
func TestClusterGrowAndShrink(t *testing.T) {
	heavy(t)
	const topic, partitions = "orders", 6
	lc := startLoaded(t, 3, clusterProps, topic, partitions, 2)
	c, adm, hist, load := lc.c, lc.adm, lc.hist, lc.load

	c.Add(t, 4, clusterProps)
	addrs := c.Addrs()
	plan := spoolCmd(t, addrs, "cluster", "rebalance")
	if !strings.Contains(plan, "replicas to copy") || !strings.Contains(plan, "after the moves:") {
		t.Fatalf("rebalance plan:\n%s", plan)
	}
	if r, _ := placement(t, adm); r[4] != 0 {
		t.Fatalf("the plan moved replicas already: %v", r)
	}
	from := hist.Count()
	out := spoolCmd(t, addrs, "cluster", "rebalance", "--execute")
	if !strings.Contains(out, "done:") {
		t.Fatalf("rebalance --execute:\n%s", out)
	}
	waitAcks(t, hist, from, 1000, "writes during and after the rebalance")
	brokertest.WaitForState(t, 30*time.Second, "replicas and leaders spread over four brokers", func() (bool, string) {
		r, l := placement(t, adm)
		return fair(r, 1, 2, 3, 4) && fair(l, 1, 2, 3, 4) && r[4] > 0 && l[4] > 0, fmt.Sprintf("replicas %v leaders %v", r, l)
	})
	if again := spoolCmd(t, addrs, "cluster", "rebalance"); !strings.Contains(again, "0 partitions to move") {
		t.Errorf("a balanced cluster plans moves:\n%s", again)
	}

	from = hist.Count()
	spoolCmd(t, addrs, "cluster", "decommission", "2")
	brokertest.WaitForState(t, 30*time.Second, "broker 2 empty", func() (bool, string) {
		r, l := placement(t, adm)
		return r[2] == 0 && l[2] == 0 && fair(r, 1, 3, 4), fmt.Sprintf("replicas %v leaders %v", r, l)
	})
	c.Brokers[2].Stop(t)
	waitAcks(t, hist, from, 1000, "writes after broker 2 left")
	load.Stop()
	if e := load.errs.Load(); e > 0 {
		t.Logf("%d produce attempts failed and were not acknowledged (last: %v)", e, load.lastErr.Load())
	}
	reads := readAll(t, []string{c.Proxies[1].Addr, c.Proxies[3].Addr, c.Proxies[4].Addr}, topic, adm, hist)
	t.Log(hist.Check(t, reads))
}

// TestClusterReassignmentSurvivesFailures starts a move onto a new broker that cannot copy
// yet (its fetches are dropped), kills the controller and the receiving broker mid-move,
// brings them back, and checks that the move completes with nothing lost.
func TestClusterReassignmentSurvivesFailures(t *testing.T) {
	heavy(t)
	const topic, partitions = "orders", 3
	lc := startLoaded(t, 3, clusterProps, topic, partitions, 1)
	c, adm, hist, load := lc.c, lc.adm, lc.hist, lc.load
	c.Add(t, 4, clusterProps)
	for _, px := range c.Proxies {
		px.Drop(brokertest.DropFollowerFetches(4))
	}
	// Move partition 0 from [a,b,c] to [4,b,c] (its leader a leaves).
	td := waitMetadata(t, adm, topic, "led", func(kadm.TopicDetail) bool { return true })
	orig := td.Partitions[0].Replicas
	target := append([]int32{4}, orig[1:]...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := adm.AlterPartitionAssignments(ctx, func() kadm.AlterPartitionAssignmentsReq {
		var req kadm.AlterPartitionAssignmentsReq
		req.Assign(topic, 0, target)
		return req
	}())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Sorted() {
		if r.Err != nil {
			t.Fatalf("reassigning %s-%d: %v", r.Topic, r.Partition, r.Err)
		}
	}
	listed := spoolCmd(t, c.Addrs(), "cluster", "reassignments")
	if !strings.Contains(listed, "orders") || !strings.Contains(listed, "4") {
		t.Fatalf("the move is not listed:\n%s", listed)
	}
	v := (&faultRun{t: t, c: c, topic: topic, down: map[int32]bool{}}).wait("a controller", func(v clusterView) bool { return v.Controller > 0 })
	ctrl := v.Controller
	c.Kill(t, ctrl)
	if ctrl != 4 {
		c.Kill(t, 4)
	}
	c.Restart(t, ctrl)
	if ctrl != 4 {
		c.Restart(t, 4)
	}
	up := &faultRun{t: t, c: c, topic: topic, down: map[int32]bool{}}
	up.wait("the brokers back", func(v clusterView) bool { return v.Controller > 0 })
	if l, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {0: {}}}); err != nil || len(l) == 0 {
		t.Fatalf("the move did not survive the failures: %v %v", l, err)
	}
	for _, px := range c.Proxies {
		px.Drop(nil)
	}
	waitMetadata(t, adm, topic, "partition 0 on its target", func(td kadm.TopicDetail) bool {
		p := td.Partitions[0]
		return slices.Equal(p.Replicas, target) && len(p.ISR) == 3 && slices.Contains(target, p.Leader)
	})
	if l, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {0: {}}}); err != nil || len(l) != 0 {
		t.Fatalf("moves left: %v %v", l, err)
	}
	from := hist.Count()
	waitAcks(t, hist, from, 500, "writes after the move")
	load.Stop()
	reads := readAll(t, c.Addrs(), topic, adm, hist)
	t.Log(hist.Check(t, reads))
}

// TestClusterRacks places replicas over racks a, b and c (two brokers each): no partition has
// two replicas in one rack, when created and after a rebalance onto a new broker.
func TestClusterRacks(t *testing.T) {
	heavy(t)
	zk := brokertest.SharedZooKeeper(t)
	c := brokertest.StartCluster(t, 0, zk.Connect(""), nil)
	racks := map[int32]string{1: "a", 2: "a", 3: "b", 4: "b", 5: "c"}
	for id := int32(1); id <= 5; id++ {
		c.Add(t, id, withProps(map[string]string{"broker.rack": racks[id]}))
	}
	adm := admin(t, c.Addrs())
	createReplicated(t, adm, "orders", 10)
	checkRacks := func(when string) {
		t.Helper()
		md, err := adm.Metadata(context.Background(), "orders")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range md.Topics["orders"].Partitions {
			seen := map[string]bool{}
			for _, r := range p.Replicas {
				if seen[racks[r]] {
					t.Errorf("%s: orders-%d has two replicas in rack %s: %v", when, p.Partition, racks[r], p.Replicas)
				}
				seen[racks[r]] = true
			}
		}
	}
	checkRacks("created")
	racks[6] = "c"
	c.Add(t, 6, withProps(map[string]string{"broker.rack": "c"}))
	spoolCmd(t, c.Addrs(), "cluster", "rebalance", "--execute")
	brokertest.WaitForState(t, 30*time.Second, "replicas spread over six brokers", func() (bool, string) {
		r, _ := placement(t, adm)
		return fair(r, 1, 2, 3, 4, 5, 6), fmt.Sprintf("replicas %v", r)
	})
	checkRacks("rebalanced")
}

// TestClusterPreferredLeadersReturn restarts a broker under load and checks that, once it is
// back in the ISR, the controller's automatic rebalance gives it back the leaderships it is
// the preferred replica of (leader.imbalance.check.interval.seconds shortened to 1).
func TestClusterPreferredLeadersReturn(t *testing.T) {
	heavy(t)
	const topic, partitions = "orders", 6
	lc := startLoaded(t, 3, withProps(map[string]string{"leader.imbalance.check.interval.seconds": "1"}), topic, partitions, 1)
	c, adm, hist, load := lc.c, lc.adm, lc.hist, lc.load
	f := &faultRun{t: t, c: c, topic: topic, hist: hist, down: map[int32]bool{}}
	v := f.wait("leaders", func(v clusterView) bool { return len(led(v, 2)) > 0 })
	preferred := led(v, 2)
	c.Kill(t, 2)
	f.down[2] = true
	f.wait("broker 2's partitions moved", movedOff(2))
	c.Restart(t, 2)
	delete(f.down, 2)
	f.wait("broker 2 leads its preferred partitions again", func(v clusterView) bool {
		return slices.Equal(led(v, 2), preferred) && inEveryISR(2)(v)
	})
	waitAcks(t, hist, hist.Count(), 500, "writes after the leaders returned")
	load.Stop()
	t.Log(hist.Check(t, readAll(t, c.Addrs(), topic, adm, hist)))
}

// TestClusterThrottledMove copies a partition of 8 MiB onto another broker twice, without
// and with `--throttle 2MB`, and reports the copy rates. The throttled copy cannot be faster
// than the throttle allows (a token bucket holding one second's budget): 8 MiB at 2 MB/s
// takes at least 3 s.
func TestClusterThrottledMove(t *testing.T) {
	heavy(t)
	zk := brokertest.SharedZooKeeper(t)
	c := brokertest.StartCluster(t, 3, zk.Connect(""), clusterProps)
	adm := admin(t, c.Addrs())
	const topic = "big"
	createReplicated(t, adm, topic, 1)
	const size = 8 << 20
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DefaultProduceTopic(topic), kgo.ProducerBatchMaxBytes(1<<20),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	value := make([]byte, 64<<10)
	rand.Read(value) // incompressible, so the 8 MiB are copied as 8 MiB
	for i := 0; i < size/len(value); i++ {
		cl.Produce(context.Background(), &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("producing: %v", err)
			}
		})
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	c.Add(t, 4, clusterProps)
	addrs := c.Addrs()
	moved := regexp.MustCompile(`done: 1 partitions moved in ([0-9.]+)s`)
	move := func(off int32, throttle ...string) time.Duration {
		out := spoolCmd(t, addrs, append([]string{"cluster", "decommission", fmt.Sprint(off)}, throttle...)...)
		m := moved.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("decommission %d:\n%s", off, out)
		}
		took, err := time.ParseDuration(m[1] + "s")
		if err != nil {
			t.Fatal(err)
		}
		if len(throttle) > 0 && !strings.Contains(out, "throttled to 2.0 MB/s") {
			t.Fatalf("decommission %d: no throttle reported:\n%s", off, out)
		}
		waitMetadata(t, adm, topic, "full ISR without broker "+fmt.Sprint(off), func(td kadm.TopicDetail) bool {
			p := td.Partitions[0]
			return len(p.ISR) == 3 && !slices.Contains(p.Replicas, off)
		})
		return took
	}
	free := move(3)
	throttled := move(4, "--throttle", "2MB")
	// The leader's side alone, as kafka-reassign-partitions sets it: the leaders' replicas
	// named in leader.replication.throttled.replicas, the rate for every broker.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rate, all := "2000000", "*"
	if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "leader.replication.throttled.rate", Value: &rate}}); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "leader.replication.throttled.replicas", Value: &all}}, topic); err != nil {
		t.Fatal(err)
	}
	leaderOnly := move(3)
	mb := float64(size) / 1e6
	t.Logf("copying %.1f MB onto a broker: %.1f MB/s without a throttle, %.2f MB/s with --throttle 2MB (both sides), %.2f MB/s with the leader side at 2 MB/s (%v, %v, %v)",
		mb, mb/free.Seconds(), mb/throttled.Seconds(), mb/leaderOnly.Seconds(), free.Round(time.Millisecond), throttled.Round(time.Millisecond), leaderOnly.Round(time.Millisecond))
	if throttled < 3*time.Second {
		t.Errorf("the throttled copy took %v: faster than 2 MB/s allows", throttled)
	}
	if leaderOnly < 3*time.Second {
		t.Errorf("the copy throttled by its leader took %v: faster than 2 MB/s allows", leaderOnly)
	}
	cfgs, err := adm.DescribeTopicConfigs(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range cfgs {
		for _, e := range rc.Configs {
			if e.Key == "follower.replication.throttled.replicas" && e.Value != nil && *e.Value != "" && e.Source == kmsg.ConfigSourceDynamicTopicConfig {
				t.Errorf("the throttle is still set after the move: %s=%s", e.Key, *e.Value)
			}
		}
	}
}

// TestClusterUncleanElection takes a partition offline (its only in-sync replica killed after
// the other fell out of the ISR) and brings it back with `spool cluster elect-leaders
// --unclean`, which elects the out-of-sync replica; a preferred election is refused meanwhile.
func TestClusterUncleanElection(t *testing.T) {
	heavy(t)
	zk := brokertest.SharedZooKeeper(t)
	c := brokertest.StartCluster(t, 2, zk.Connect(""), clusterProps)
	adm := admin(t, c.Addrs())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if res, err := adm.CreateTopic(ctx, 1, 2, nil, "ledger"); err != nil || res.Err != nil {
		t.Fatalf("creating ledger: %v %v", err, res.Err)
	}
	td := waitMetadata(t, adm, "ledger", "both replicas in sync", func(td kadm.TopicDetail) bool { return len(td.Partitions[0].ISR) == 2 })
	leader := td.Partitions[0].Leader
	other := 3 - leader
	// The follower stops fetching and leaves the ISR (replica.lag.time.max.ms=2000).
	c.Proxies[leader].Drop(brokertest.DropFollowerFetches(other))
	waitMetadata(t, adm, "ledger", "the follower out of the ISR", func(td kadm.TopicDetail) bool {
		return slices.Equal(td.Partitions[0].ISR, []int32{leader})
	})
	c.Kill(t, leader)
	survivor := []string{c.Proxies[other].Addr}
	adm2 := admin(t, survivor)
	waitMetadata(t, adm2, "ledger", "offline", func(td kadm.TopicDetail) bool { return td.Partitions[0].Leader < 0 })
	out, err := spoolRun(t, survivor, "cluster", "elect-leaders", "--topic", "ledger")
	if err == nil || !strings.Contains(out, "PREFERRED_LEADER_NOT_AVAILABLE") {
		t.Fatalf("a preferred election of an offline partition: %v\n%s", err, out)
	}
	out = spoolCmd(t, survivor, "cluster", "elect-leaders", "--topic", "ledger", "--unclean")
	if !strings.Contains(out, "1 leaders elected") {
		t.Fatalf("elect-leaders --unclean:\n%s", out)
	}
	waitMetadata(t, adm2, "ledger", "led by the survivor", func(td kadm.TopicDetail) bool { return td.Partitions[0].Leader == other })
}

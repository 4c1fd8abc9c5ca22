package server_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// groupLedger records, across the members of consumer groups, who owns which partition and
// who consumed which record.
type groupLedger struct {
	mu       sync.Mutex
	owned    map[string]map[int32]bool // member name -> partitions
	consumed map[string]map[string]int // group -> value -> times
	by       map[string]string         // group/value -> member name
	revokes  map[string]int            // member name -> partitions revoked
	changed  chan struct{}
}

func newLedger() *groupLedger {
	return &groupLedger{owned: map[string]map[int32]bool{}, consumed: map[string]map[string]int{}, by: map[string]string{}, revokes: map[string]int{}, changed: make(chan struct{})}
}

func (l *groupLedger) notifyLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// waitFor waits until cond (called under the lock) holds.
func (l *groupLedger) waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for {
		l.mu.Lock()
		ok, ch := cond(), l.changed
		l.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			l.mu.Lock()
			defer l.mu.Unlock()
			t.Fatalf("timed out waiting for %s; owners %v", what, l.owned)
		}
	}
}

// exclusiveOwners reports whether members own exactly partitions 0..n-1, each once.
func (l *groupLedger) exclusiveOwners(members []string, n int32) bool {
	seen := map[int32]int{}
	for _, m := range members {
		for p, ok := range l.owned[m] {
			if ok {
				seen[p]++
			}
		}
	}
	if int32(len(seen)) != n {
		return false
	}
	for _, k := range seen {
		if k != 1 {
			return false
		}
	}
	// Members not listed own nothing.
	for m, ps := range l.owned {
		if !contains(members, m) && len(ps) > 0 {
			return false
		}
	}
	return true
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// startMember runs one group member that commits what it consumed before it allows a
// rebalance, so every record is consumed exactly once.
func (l *groupLedger) startMember(t *testing.T, ctx context.Context, addr, group, name, topic string, opts ...kgo.Opt) (stop func()) {
	t.Helper()
	l.mu.Lock()
	l.owned[name] = map[int32]bool{}
	l.mu.Unlock()
	base := []kgo.Opt{
		kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(), kgo.HeartbeatInterval(100 * time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.ClientID(name),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			l.mu.Lock()
			defer l.mu.Unlock()
			for _, p := range m[topic] {
				l.owned[name][p] = true
			}
			l.notifyLocked()
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			l.mu.Lock()
			defer l.mu.Unlock()
			for _, p := range m[topic] {
				delete(l.owned[name], p)
			}
			l.revokes[name] += len(m[topic])
			l.notifyLocked()
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			l.mu.Lock()
			defer l.mu.Unlock()
			for _, p := range m[topic] {
				delete(l.owned[name], p)
			}
			l.notifyLocked()
		}),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for mctx.Err() == nil {
			fs := cl.PollFetches(mctx)
			var got []string
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
			if len(got) > 0 {
				// Recorded once committed, so a test seeing the records sees their commit.
				if err := cl.CommitUncommittedOffsets(mctx); err != nil {
					if mctx.Err() == nil {
						t.Errorf("%s: commit: %v", name, err)
					}
					cl.AllowRebalance()
					continue
				}
				l.mu.Lock()
				if l.consumed[group] == nil {
					l.consumed[group] = map[string]int{}
				}
				for _, v := range got {
					l.consumed[group][v]++
					l.by[group+"/"+v] = name
				}
				l.notifyLocked()
				l.mu.Unlock()
			}
			cl.AllowRebalance()
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
			cl.Close() // leaves the group
			l.mu.Lock()
			l.owned[name] = map[int32]bool{}
			l.notifyLocked()
			l.mu.Unlock()
		})
	}
	t.Cleanup(stop)
	return stop
}

// consumedOnce reports whether group consumed each value exactly once.
func (l *groupLedger) consumedOnce(t *testing.T, group string, values []string) bool {
	got := l.consumed[group]
	for _, v := range values {
		if got[v] > 1 {
			t.Fatalf("group %s consumed %q %d times", group, v, got[v])
		}
		if got[v] == 0 {
			return false
		}
	}
	return true
}

func produceValues(t *testing.T, ctx context.Context, addr, topic, prefix string, n int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	var vals []string
	for i := 0; i < n; i++ {
		v := fmt.Sprintf("%s-%05d", prefix, i)
		vals = append(vals, v)
		recs = append(recs, &kgo.Record{Value: []byte(v)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return vals
}

func TestGroupFranzGoUnicast(t *testing.T) {
	parallel(t)
	for _, bal := range []struct {
		name string
		opt  kgo.GroupBalancer
	}{{"range", kgo.RangeBalancer()}, {"cooperative-sticky", kgo.CooperativeStickyBalancer()}} {
		t.Run(bal.name, func(t *testing.T) {
			b := startBroker(t, map[string]string{"group.initial.rebalance.delay.ms": "0"})
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			const topic, group = "unicast", "uni"
			createTopicKadm(t, ctx, b.Addr, topic, 6)
			l := newLedger()
			names := []string{"m1", "m2", "m3"}
			stops := map[string]func(){}
			for _, n := range names {
				stops[n] = l.startMember(t, ctx, b.Addr, group, n, topic, kgo.Balancers(bal.opt))
			}
			l.waitFor(t, ctx, "three members owning 6 partitions", func() bool {
				if !l.exclusiveOwners(names, 6) {
					return false
				}
				for _, n := range names {
					if len(l.owned[n]) == 0 {
						return false
					}
				}
				return true
			})
			vals := produceValues(t, ctx, b.Addr, topic, "a", 600)
			l.waitFor(t, ctx, "all records consumed", func() bool { return l.consumedOnce(t, group, vals) })
			// Each record was consumed by the member owning its partition: three members took part.
			l.mu.Lock()
			who := map[string]bool{}
			for _, v := range vals {
				who[l.by[group+"/"+v]] = true
			}
			moved := map[int32]bool{}
			for p := range l.owned["m2"] {
				moved[p] = true
			}
			l.mu.Unlock()
			if len(who) != 3 {
				t.Fatalf("records consumed by %v, want all three members", who)
			}
			// m2 leaves cleanly: its partitions move to m1 and m3.
			l.mu.Lock()
			revokedBefore := l.revokes["m1"] + l.revokes["m3"]
			l.mu.Unlock()
			stops["m2"]()
			rest := []string{"m1", "m3"}
			l.waitFor(t, ctx, "m1 and m3 owning all partitions", func() bool { return l.exclusiveOwners(rest, 6) })
			vals2 := produceValues(t, ctx, b.Addr, topic, "b", 600)
			l.waitFor(t, ctx, "second batch consumed", func() bool { return l.consumedOnce(t, group, vals2) })
			l.mu.Lock()
			defer l.mu.Unlock()
			for _, v := range vals2 {
				if m := l.by[group+"/"+v]; m == "m2" {
					t.Fatalf("%s consumed by the member that left", v)
				}
			}
			if len(moved) == 0 {
				t.Fatal("m2 owned nothing")
			}
			if bal.name == "cooperative-sticky" && l.revokes["m1"]+l.revokes["m3"] != revokedBefore {
				t.Fatalf("cooperative rebalance revoked partitions that did not move (%d before, %d after)", revokedBefore, l.revokes["m1"]+l.revokes["m3"])
			}
			// The group's committed offsets cover everything: 1200 records over 6 partitions.
			adm := kadm.NewClient(mustClient(t, b.Addr))
			offs, err := adm.FetchOffsets(ctx, group)
			if err != nil {
				t.Fatal(err)
			}
			var total int64
			offs.Each(func(o kadm.OffsetResponse) { total += o.At })
			if total != 1200 {
				t.Fatalf("committed offsets sum to %d, want 1200", total)
			}
		})
	}
}

func mustClient(t *testing.T, addr string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func TestGroupBroadcastThreeGroups(t *testing.T) {
	parallel(t)
	b := startBroker(t, map[string]string{"group.initial.rebalance.delay.ms": "0"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	createTopicKadm(t, ctx, b.Addr, "bcast", 3)
	vals := produceValues(t, ctx, b.Addr, "bcast", "x", 300)
	l := newLedger()
	groups := []string{"g1", "g2", "g3"}
	for _, g := range groups {
		l.startMember(t, ctx, b.Addr, g, g+"-a", "bcast", kgo.Balancers(kgo.RangeBalancer()))
		l.startMember(t, ctx, b.Addr, g, g+"-b", "bcast", kgo.Balancers(kgo.RangeBalancer()))
	}
	for _, g := range groups {
		l.waitFor(t, ctx, "group "+g+" consumed everything", func() bool { return l.consumedOnce(t, g, vals) })
	}
}

func TestGroupResumesFromCommittedOffsetsAfterRestart(t *testing.T) {
	heavy(t)
	for _, how := range []string{"sigterm", "kill9"} {
		t.Run(how, func(t *testing.T) {
			dataDir := t.TempDir()
			props := map[string]string{"group.initial.rebalance.delay.ms": "0"}
			b := brokertest.StartProcess(t, brokertest.Options{DataDir: dataDir, Props: props})
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			createTopicKadm(t, ctx, b.Addr, "resume", 3)
			first := produceValues(t, ctx, b.Addr, "resume", "p", 300)
			l := newLedger()
			stop := l.startMember(t, ctx, b.Addr, "rg", "before", "resume", kgo.Balancers(kgo.RangeBalancer()))
			l.waitFor(t, ctx, "first batch", func() bool { return l.consumedOnce(t, "rg", first) })
			stop()
			if how == "sigterm" {
				b.Stop(t)
			} else {
				b.Kill(t)
			}
			b2 := brokertest.StartProcess(t, brokertest.Options{DataDir: dataDir, Props: props, Addr: b.Addr})
			// The committed offsets survived, and the group is known.
			adm := kadm.NewClient(mustClient(t, b2.Addr))
			offs, err := adm.FetchOffsets(ctx, "rg")
			if err != nil {
				t.Fatal(err)
			}
			var total int64
			offs.Each(func(o kadm.OffsetResponse) { total += o.At })
			if total != 300 {
				t.Fatalf("committed offsets after restart sum to %d, want 300", total)
			}
			listed, err := adm.ListGroups(ctx)
			if err != nil || len(listed) != 1 {
				t.Fatalf("groups after restart: %v %v", listed, err)
			}
			second := produceValues(t, ctx, b2.Addr, "resume", "q", 300)
			l.startMember(t, ctx, b2.Addr, "rg", "after", "resume", kgo.Balancers(kgo.RangeBalancer()))
			l.waitFor(t, ctx, "second batch", func() bool { return l.consumedOnce(t, "rg", second) })
			// Nothing of the first batch was consumed again.
			l.mu.Lock()
			defer l.mu.Unlock()
			if !l.consumedOnce(t, "rg", first) {
				t.Fatal("first batch lost")
			}
		})
	}
}

// Members that stay up while the broker is killed and restarted keep consuming: the group is
// reloaded from __consumer_offsets (Stable, same members), commits continue from where they
// were, and no committed record is consumed twice.
func TestGroupSurvivesBrokerKillWithLiveMembers(t *testing.T) {
	heavy(t)
	dataDir := t.TempDir()
	props := map[string]string{"group.initial.rebalance.delay.ms": "0"}
	b := brokertest.StartProcess(t, brokertest.Options{DataDir: dataDir, Props: props})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	createTopicKadm(t, ctx, b.Addr, "live", 4)
	l := newLedger()
	opts := []kgo.Opt{kgo.Balancers(kgo.RangeBalancer()), kgo.RetryTimeout(time.Minute)}
	l.startMember(t, ctx, b.Addr, "lg", "l1", "live", opts...)
	l.startMember(t, ctx, b.Addr, "lg", "l2", "live", opts...)
	l.waitFor(t, ctx, "two owners", func() bool { return l.exclusiveOwners([]string{"l1", "l2"}, 4) && len(l.owned["l1"]) == 2 })
	first := produceValues(t, ctx, b.Addr, "live", "a", 400)
	l.waitFor(t, ctx, "first batch", func() bool { return l.consumedOnce(t, "lg", first) })
	b.Kill(t)
	b2 := brokertest.StartProcess(t, brokertest.Options{DataDir: dataDir, Props: props, Addr: b.Addr})
	second := produceValues(t, ctx, b2.Addr, "live", "b", 400)
	l.waitFor(t, ctx, "second batch", func() bool { return l.consumedOnce(t, "lg", second) })
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.consumedOnce(t, "lg", first) {
		t.Fatal("first batch lost")
	}
}

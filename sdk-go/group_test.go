package spool_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	spool "github.com/spoolmq/spool/sdk-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

// groupTargets are the SDK targets with the broker's first-rebalance delay off, so that
// tests do not wait 3 s for every new group.
var groupTargets = []target{
	{"spool", func(t *testing.T) string {
		return brokertest.Start(t, brokertest.Options{Props: map[string]string{
			"num.partitions": "3", "group.initial.rebalance.delay.ms": "0"}}).Addr
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

func eachGroupTarget(t *testing.T, fn func(t *testing.T, addr string)) {
	for _, tg := range groupTargets {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			fn(t, tg.start(t))
		})
	}
}

var groupSeq sync.Mutex
var groupN int

func groupName() string {
	groupSeq.Lock()
	defer groupSeq.Unlock()
	groupN++
	return fmt.Sprintf("g%d-%d", time.Now().UnixNano()%1e6, groupN)
}

// ledger records, for a test's group members, which partitions each owns (from the
// callbacks) and which values each consumed.
type ledger struct {
	mu       sync.Mutex
	owned    map[string]map[string][]int32 // member → topic → partitions
	consumed map[string][]string           // value → members that consumed it, in order
	events   []string                      // "member:assigned|revoked|lost"
}

func newLedger() *ledger {
	return &ledger{owned: map[string]map[string][]int32{}, consumed: map[string][]string{}}
}

// opts returns the callbacks that keep the ledger's view of member name's partitions.
func (l *ledger) opts(name string) []spool.Opt {
	change := func(kind string) spool.PartitionsFunc {
		return func(_ context.Context, ps map[string][]int32) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.events = append(l.events, name+":"+kind)
			if l.owned[name] == nil {
				l.owned[name] = map[string][]int32{}
			}
			for t, parts := range ps {
				if kind == "assigned" {
					l.owned[name][t] = append(l.owned[name][t], parts...)
				} else {
					l.owned[name][t] = slices.DeleteFunc(l.owned[name][t], func(p int32) bool { return slices.Contains(parts, p) })
				}
			}
		}
	}
	return []spool.Opt{spool.OnAssigned(change("assigned")), spool.OnRevoked(change("revoked")), spool.OnLost(change("lost"))}
}

// count is the number of partitions member owns.
func (l *ledger) count(member string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, ps := range l.owned[member] {
		n += len(ps)
	}
	return n
}

func (l *ledger) ownedBy(member, topic string) []int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Sorted(slices.Values(l.owned[member][topic]))
}

// consume polls cl until ctx ends, recording each value under member.
func (l *ledger) consume(ctx context.Context, cl *spool.Client, member string) {
	for ctx.Err() == nil {
		rs, err := cl.Poll(ctx)
		if err != nil {
			return
		}
		l.mu.Lock()
		for _, r := range rs {
			l.consumed[string(r.Value)] = append(l.consumed[string(r.Value)], member)
		}
		l.mu.Unlock()
	}
}

func (l *ledger) all(vals []string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, v := range vals {
		if len(l.consumed[v]) == 0 {
			return false
		}
	}
	return true
}

// groupMember starts a group client consuming in the background into l.
func groupMember(t *testing.T, addr, group, name string, l *ledger, opts ...spool.Opt) *spool.Client {
	t.Helper()
	base := []spool.Opt{spool.ConsumerGroup(group), spool.HeartbeatInterval(100 * time.Millisecond),
		spool.SessionTimeout(6 * time.Second), spool.RebalanceTimeout(10 * time.Second), spool.AutoCommit(100 * time.Millisecond),
		spool.FetchMaxWait(100 * time.Millisecond), spool.ClientID(name)}
	cl := newClient(t, addr, append(append(base, l.opts(name)...), opts...)...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.consume(ctx, cl, name) }()
	t.Cleanup(func() { cancel(); <-done })
	return cl
}

func produceValues(t *testing.T, cl *spool.Client, topic, prefix string, n int) []string {
	t.Helper()
	ctx := testCtx(t)
	vals := make([]string, n)
	for i := range vals {
		vals[i] = fmt.Sprintf("%s-%d", prefix, i)
		cl.Produce(ctx, spool.StringRecord(topic, vals[i]), func(_ *spool.Record, err error) {
			if err != nil {
				t.Error(err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	return vals
}

// TestGroupSplitAndTakeOver: two members split six partitions three each and consume every
// record once; when one closes, the other takes all six and consumes what follows; records the
// leaver consumed may come again only if it had not committed them.
func TestGroupSplitAndTakeOver(t *testing.T) {
	eachGroupTarget(t, func(t *testing.T, addr string) {
		admin := newClient(t, addr)
		topic := createTopic(t, admin, 6)
		group := groupName()
		l := newLedger()
		a := groupMember(t, addr, group, "a", l, spool.ConsumeTopics(topic))
		b := groupMember(t, addr, group, "b", l, spool.ConsumeTopics(topic))
		waitCond(t, func() bool { return l.count("a") == 3 && l.count("b") == 3 })
		if pa, pb := l.ownedBy("a", topic), l.ownedBy("b", topic); len(slices.Concat(pa, pb)) != 6 ||
			len(slices.Compact(slices.Sorted(slices.Values(slices.Concat(pa, pb))))) != 6 {
			t.Fatalf("a owns %v, b owns %v: want a split of 0..5", pa, pb)
		}
		if id, gen := a.GroupMemberID(); id == "" || gen < 1 {
			t.Fatalf("member id %q generation %d", id, gen)
		}
		first := produceValues(t, admin, topic, "first", 300)
		waitCond(t, func() bool { return l.all(first) })
		l.mu.Lock()
		for _, v := range first {
			if len(l.consumed[v]) != 1 {
				t.Errorf("%s consumed by %v in a stable group, want once", v, l.consumed[v])
			}
		}
		l.mu.Unlock()

		b.Close()
		waitCond(t, func() bool { return l.count("a") == 6 })
		second := produceValues(t, admin, topic, "second", 300)
		waitCond(t, func() bool { return l.all(second) })
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, v := range second {
			if got := l.consumed[v]; len(got) != 1 || got[0] != "a" {
				t.Errorf("%s consumed by %v, want once by a", v, got)
			}
		}
		for _, v := range first {
			// b committed on Close, so a resumes where b stopped.
			if len(l.consumed[v]) != 1 {
				t.Errorf("%s consumed by %v after b left with a commit, want once", v, l.consumed[v])
			}
		}
	})
}

// TestGroupOptionsValidated: group options need a group and must not conflict.
func TestGroupOptionsValidated(t *testing.T) {
	cases := []struct {
		name string
		opts []spool.Opt
		want string
	}{
		{"topics without group", []spool.Opt{spool.ConsumeTopics("a")}, "ConsumeTopics needs ConsumerGroup"},
		{"callback without group", []spool.Opt{spool.OnAssigned(nil)}, "OnAssigned needs ConsumerGroup"},
		{"group without topics", []spool.Opt{spool.ConsumerGroup("g")}, "needs ConsumeTopics or ConsumeRegex"},
		{"topics and regex", []spool.Opt{spool.ConsumerGroup("g"), spool.ConsumeTopics("a"), spool.ConsumeRegex("b.*")}, "conflict"},
		{"bad regex", []spool.Opt{spool.ConsumerGroup("g"), spool.ConsumeRegex("(")}, "ConsumeRegex: pattern"},
		{"unknown balancer", []spool.Opt{spool.ConsumerGroup("g"), spool.ConsumeTopics("a"), spool.Balancers("sticky")}, "unknown balancer"},
		{"duplicate balancer", []spool.Opt{spool.ConsumerGroup("g"), spool.ConsumeTopics("a"), spool.Balancers("range", "range")}, "twice"},
		{"heartbeat above session", []spool.Opt{spool.ConsumerGroup("g"), spool.ConsumeTopics("a"), spool.SessionTimeout(time.Second), spool.HeartbeatInterval(2 * time.Second)}, "below SessionTimeout"},
		{"empty group", []spool.Opt{spool.ConsumerGroup("")}, "empty group id"},
		{"empty instance", []spool.Opt{spool.ConsumerGroup("g"), spool.ConsumeTopics("a"), spool.InstanceID("")}, "empty instance id"},
		{"zero auto commit", []spool.Opt{spool.ConsumerGroup("g"), spool.ConsumeTopics("a"), spool.AutoCommit(0)}, "AutoCommit"},
	}
	for _, c := range cases {
		_, err := spool.NewClient(c.opts...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one containing %q", c.name, err, c.want)
		}
	}
	cl, err := spool.NewClient(spool.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.CommitOffsets(context.Background(), map[string]map[int32]int64{"a": {0: 1}}); err != spool.ErrNoGroup {
		t.Fatalf("commit without a group: %v, want ErrNoGroup", err)
	}
	if id, gen := cl.GroupMemberID(); id != "" || gen != -1 {
		t.Fatalf("GroupMemberID without a group: %q %d", id, gen)
	}
}

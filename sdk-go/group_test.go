package spool_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
	spool "github.com/spoolmq/spool/sdk-go"
)

// groupTargets are the SDK targets with the broker's first-rebalance delay off, so that
// tests do not wait 3 s for every new group.
var groupTargets = brokerTargets(map[string]string{"group.initial.rebalance.delay.ms": "0"})

func eachGroupTarget(t *testing.T, fn func(t *testing.T, addr string)) {
	runTargets(t, groupTargets, fn)
}

var groupSeq atomic.Int64

func groupName() string { return fmt.Sprintf("g%d-%d", time.Now().UnixNano()%1e6, groupSeq.Add(1)) }

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
	return []spool.Opt{spool.OnAssigned(l.callback(name, "assigned")), spool.OnRevoked(l.callback(name, "revoked")),
		spool.OnLost(l.callback(name, "lost"))}
}

// callback records a kind ("assigned", "revoked", "lost") of change to member name's partitions.
func (l *ledger) callback(name, kind string) spool.PartitionsFunc {
	return func(_ context.Context, ps map[string][]int32) {
		l.mu.Lock()
		defer l.mu.Unlock()
		n := 0
		for _, parts := range ps {
			n += len(parts)
		}
		l.events = append(l.events, fmt.Sprintf("%s:%s:%d", name, kind, n))
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
	t.Parallel()
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

// TestGroupBalancers: three SDK members offering one assignor split eight partitions on both
// targets, completely, disjointly and in the assignor's shape (range 3+3+2 in blocks,
// roundrobin every third partition), and each consumes exactly its partitions' records.
func TestGroupBalancers(t *testing.T) {
	t.Parallel()
	for _, b := range []string{spool.BalancerRange, spool.BalancerRoundRobin, spool.BalancerCooperativeSticky} {
		t.Run(b, func(t *testing.T) {
			t.Parallel()
			eachGroupTarget(t, func(t *testing.T, addr string) {
				admin := newClient(t, addr)
				topic := createTopic(t, admin, 8)
				group := groupName()
				l := newLedger()
				names := []string{"a", "b", "c"}
				for _, n := range names {
					groupMember(t, addr, group, n, l, spool.ConsumeTopics(topic), spool.Balancers(b))
				}
				shares := waitShares(t, admin, group, topic, b, len(names), 8)
				if err := checkShape(shares, 8, b); err != nil {
					t.Fatal(err)
				}
				consumedByOwners(t, addr, topic, l, shares, names...)
			})
		})
	}
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

// memberEvents returns the callback events of member, as "kind:count".
func (l *ledger) memberEvents(member string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.events {
		if rest, ok := strings.CutPrefix(e, member+":"); ok {
			out = append(out, rest)
		}
	}
	return out
}

// totals sums member's callback partition counts by kind.
func (l *ledger) totals(member string) map[string]int {
	out := map[string]int{}
	for _, e := range l.memberEvents(member) {
		kind, n, _ := strings.Cut(e, ":")
		v, _ := strconv.Atoi(n)
		out[kind] += v
	}
	return out
}

// produceTo writes n records to each partition of topic, values "prefix-p-i".
func produceTo(t *testing.T, addr, topic, prefix string, partitions int32, n int) {
	t.Helper()
	cl := newClient(t, addr, spool.WithPartitioner(spool.ManualPartitioner()))
	ctx := testCtx(t)
	for p := range partitions {
		for i := range n {
			cl.Produce(ctx, &spool.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%s-%d-%d", prefix, p, i)}, func(_ *spool.Record, err error) {
				if err != nil {
					t.Error(err)
				}
			})
		}
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// pollUntil polls cl until it has n records.
func pollUntil(t *testing.T, cl *spool.Client, n int) []*spool.Record {
	t.Helper()
	ctx := testCtx(t)
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

// TestGroupCommitsSurviveRestart: manual commits (sync, async, records) decide where the next
// client of the group starts; auto commit on Close covers everything polled.
func TestGroupCommitsSurviveRestart(t *testing.T) {
	t.Parallel()
	eachGroupTarget(t, func(t *testing.T, addr string) {
		admin := newClient(t, addr)
		topic := createTopic(t, admin, 3)
		group := groupName()
		produceTo(t, addr, topic, "a", 3, 20)
		opts := []spool.Opt{spool.ConsumerGroup(group), spool.ConsumeTopics(topic), spool.HeartbeatInterval(100 * time.Millisecond),
			spool.FetchMaxWait(100 * time.Millisecond)}

		c1 := newClient(t, addr, append(opts, spool.DisableAutoCommit())...)
		recs := pollUntil(t, c1, 60)
		ctx := testCtx(t)
		if err := c1.CommitOffsets(ctx, map[string]map[int32]int64{topic: {0: 5}}); err != nil {
			t.Fatal(err)
		}
		var p1 []*spool.Record
		for _, r := range recs {
			if r.Partition == 1 && r.Offset < 8 {
				p1 = append(p1, r)
			}
		}
		if err := c1.CommitRecords(ctx, p1...); err != nil {
			t.Fatal(err)
		}
		asyncDone := make(chan error, 1)
		c1.CommitAsync(map[string]map[int32]int64{topic: {2: 12}}, func(err error) { asyncDone <- err })
		if err := <-asyncDone; err != nil {
			t.Fatal(err)
		}
		c1.Close() // no auto commit: nothing more is committed

		c2 := newClient(t, addr, opts...)
		recs = pollUntil(t, c2, 15+12+8)
		first := map[int32]int64{0: -1, 1: -1, 2: -1}
		for _, r := range recs {
			if first[r.Partition] < 0 {
				first[r.Partition] = r.Offset
			}
		}
		if want := map[int32]int64{0: 5, 1: 8, 2: 12}; !reflect.DeepEqual(first, want) {
			t.Fatalf("restart resumed at %v, want the commits %v", first, want)
		}
		if len(recs) != 35 {
			t.Fatalf("got %d records after restart, want 35", len(recs))
		}
		c2.Close() // auto commit: everything polled

		produceTo(t, addr, topic, "b", 3, 1)
		c3 := newClient(t, addr, opts...)
		recs = pollUntil(t, c3, 3)
		for _, r := range recs {
			if !strings.HasPrefix(string(r.Value), "b-") {
				t.Fatalf("after an auto-committed close, got old record %s[%d]@%d %q", r.Topic, r.Partition, r.Offset, r.Value)
			}
		}
		if err := c3.CommitUncommitted(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c3.LeaveGroup(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c3.CommitOffsets(ctx, map[string]map[int32]int64{topic: {0: 1}}); !errors.Is(err, spool.ErrGroupStopped) {
			t.Fatalf("commit after LeaveGroup: %v, want ErrGroupStopped", err)
		}
	})
}

// TestGroupRegexPicksUpNewTopic: a regex member gets a matching topic created after it joined.
func TestGroupRegexPicksUpNewTopic(t *testing.T) {
	t.Parallel()
	eachGroupTarget(t, func(t *testing.T, addr string) {
		admin := newClient(t, addr)
		prefix := groupName()
		ctx := testCtx(t)
		if err := admin.Admin().CreateTopic(ctx, prefix+"-one", 2, 1, nil); err != nil {
			t.Fatal(err)
		}
		l := newLedger()
		groupMember(t, addr, groupName(), "r", l, spool.ConsumeRegex("^"+prefix+"-"), spool.MetadataMaxAge(time.Second))
		waitCond(t, func() bool { return l.count("r") == 2 })
		if err := admin.Admin().CreateTopic(ctx, prefix+"-two", 3, 1, nil); err != nil {
			t.Fatal(err)
		}
		waitCond(t, func() bool { return l.count("r") == 5 })
		if got := l.ownedBy("r", prefix+"-two"); !reflect.DeepEqual(got, []int32{0, 1, 2}) {
			t.Fatalf("new topic partitions %v", got)
		}
		vals := produceValues(t, admin, prefix+"-two", "x", 30)
		waitCond(t, func() bool { return l.all(vals) })
	})
}

// TestGroupCallbackOrder: with an eager balancer, a member revokes everything before it gets
// its new share; a member fenced by a newer static member with its instance id loses its
// partitions (OnLost, not OnRevoked) and Poll reports the fencing.
func TestGroupCallbackOrder(t *testing.T) {
	t.Parallel()
	eachGroupTarget(t, func(t *testing.T, addr string) {
		admin := newClient(t, addr)
		topic := createTopic(t, admin, 4)
		group := groupName()
		l := newLedger()
		a := newClient(t, addr, append(l.opts("a"), spool.ConsumerGroup(group), spool.ConsumeTopics(topic),
			spool.InstanceID("a-instance"), spool.HeartbeatInterval(50*time.Millisecond))...)
		waitCond(t, func() bool { return l.count("a") == 4 })
		groupMember(t, addr, group, "b", l, spool.ConsumeTopics(topic))
		waitCond(t, func() bool { return l.count("a") == 2 && l.count("b") == 2 })
		if got, want := l.memberEvents("a"), []string{"assigned:4", "revoked:4", "assigned:2"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("a's callbacks %v, want %v", got, want)
		}

		// A second client with a's instance id fences a.
		groupMember(t, addr, group, "a2", l, spool.ConsumeTopics(topic), spool.InstanceID("a-instance"))
		waitCond(t, func() bool { return l.count("a") == 0 })
		if got := l.memberEvents("a"); got[len(got)-1] != "lost:2" {
			t.Fatalf("a's callbacks after fencing %v, want lost:2 last", got)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for {
			_, err := a.Poll(ctx)
			if errors.Is(err, wire.ErrFencedInstanceId) {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("Poll of the fenced member: %v, want FENCED_INSTANCE_ID", err)
			}
		}
		waitCond(t, func() bool { return l.count("a2")+l.count("b") == 4 })
	})
}

// TestGroupStaticRejoinKeepsAssignment: a static member that closes and comes back with the
// same instance id gets the same partitions, and the other member sees no rebalance.
func TestGroupStaticRejoinKeepsAssignment(t *testing.T) {
	t.Parallel()
	eachGroupTarget(t, func(t *testing.T, addr string) {
		admin := newClient(t, addr)
		topic := createTopic(t, admin, 6)
		group := groupName()
		l := newLedger()
		static := func(name, instance string) *spool.Client {
			return newClient(t, addr, append(l.opts(name), spool.ConsumerGroup(group), spool.ConsumeTopics(topic),
				spool.InstanceID(instance), spool.HeartbeatInterval(100*time.Millisecond), spool.SessionTimeout(20*time.Second))...)
		}
		s1 := static("s1", "i1")
		s2 := static("s2", "i2")
		waitCond(t, func() bool { return l.count("s1") == 3 && l.count("s2") == 3 })
		_, gen := s2.GroupMemberID()
		before := l.ownedBy("s1", topic)
		s2Events := l.memberEvents("s2")
		s1.Close()
		static("s1again", "i1")
		waitCond(t, func() bool { return l.count("s1again") == 3 })
		if got := l.ownedBy("s1again", topic); !reflect.DeepEqual(got, before) {
			t.Fatalf("rejoined static member owns %v, before %v", got, before)
		}
		if got := l.memberEvents("s2"); !reflect.DeepEqual(got, s2Events) {
			t.Fatalf("s2 callbacks went from %v to %v: a rebalance happened", s2Events, got)
		}
		if _, gen2 := s2.GroupMemberID(); gen2 != gen {
			t.Fatalf("generation moved from %d to %d", gen, gen2)
		}
	})
}

// TestGroupCooperativeMovesOnlyWhatIsNeeded: with cooperative-sticky, members joining one by
// one take partitions only from members that have too many; nobody revokes all, and records
// flow throughout.
func TestGroupCooperativeMovesOnlyWhatIsNeeded(t *testing.T) {
	t.Parallel()
	eachGroupTarget(t, func(t *testing.T, addr string) {
		admin := newClient(t, addr)
		topic := createTopic(t, admin, 6)
		group := groupName()
		l := newLedger()
		coop := spool.Balancers(spool.BalancerCooperativeSticky)
		groupMember(t, addr, group, "a", l, spool.ConsumeTopics(topic), coop)
		waitCond(t, func() bool { return l.count("a") == 6 })
		first := produceValues(t, admin, topic, "first", 120)
		groupMember(t, addr, group, "b", l, spool.ConsumeTopics(topic), coop)
		waitCond(t, func() bool { return l.count("a") == 3 && l.count("b") == 3 })
		groupMember(t, addr, group, "c", l, spool.ConsumeTopics(topic), coop)
		waitCond(t, func() bool { return l.count("a") == 2 && l.count("b") == 2 && l.count("c") == 2 })
		second := produceValues(t, admin, topic, "second", 120)
		waitCond(t, func() bool { return l.all(first) && l.all(second) })
		// Whatever the number of rounds (a member whose SyncGroup raced a follow-up rebalance
		// takes one more), a gives up exactly 4 partitions, b 1, c none: only what must move.
		for _, c := range []struct {
			member            string
			assigned, revoked int
		}{{"a", 6, 4}, {"b", 3, 1}, {"c", 2, 0}} {
			if got := l.totals(c.member); got["assigned"] != c.assigned || got["revoked"] != c.revoked || got["lost"] != 0 {
				t.Fatalf("%s: callbacks %v, want %d assigned and %d revoked in all", c.member, l.memberEvents(c.member), c.assigned, c.revoked)
			}
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, v := range second {
			if len(l.consumed[v]) != 1 {
				t.Errorf("%s consumed by %v in a stable group, want once", v, l.consumed[v])
			}
		}
	})
}

// freezer hands out connections whose writes block while it is frozen: to the broker the
// client falls silent, as behind a network partition.
type freezer struct {
	mu     sync.Mutex
	thawed chan struct{} // closed while not frozen
}

func newFreezer() *freezer {
	f := &freezer{thawed: make(chan struct{})}
	close(f.thawed)
	return f
}

func (f *freezer) freeze() {
	f.mu.Lock()
	f.thawed = make(chan struct{})
	f.mu.Unlock()
}

func (f *freezer) thaw() {
	f.mu.Lock()
	select {
	case <-f.thawed:
	default:
		close(f.thawed)
	}
	f.mu.Unlock()
}

func (f *freezer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &frozenConn{Conn: c, f: f}, nil
}

type frozenConn struct {
	net.Conn
	f *freezer
}

func (c *frozenConn) Write(p []byte) (int, error) {
	c.f.mu.Lock()
	thawed := c.f.thawed
	c.f.mu.Unlock()
	<-thawed
	return c.Conn.Write(p)
}

// TestGroupSessionExpiryLosesPartitions: a member cut off from the coordinator past its
// session timeout loses its partitions (OnLost, never OnRevoked); the other member gets them,
// and the cut-off member rejoins once it can talk again.
func TestGroupSessionExpiryLosesPartitions(t *testing.T) {
	t.Parallel()
	eachGroupTarget(t, func(t *testing.T, addr string) {
		admin := newClient(t, addr)
		topic := createTopic(t, admin, 4)
		group := groupName()
		l := newLedger()
		f := newFreezer()
		groupMember(t, addr, group, "a", l, spool.ConsumeTopics(topic), spool.Dialer(f.dial), spool.RequestTimeout(time.Second))
		t.Cleanup(f.thaw) // runs before a's Close, which was registered earlier
		waitCond(t, func() bool { return l.count("a") == 4 })
		groupMember(t, addr, group, "b", l, spool.ConsumeTopics(topic))
		waitCond(t, func() bool { return l.count("a") == 2 && l.count("b") == 2 })

		f.freeze()
		waitCond(t, func() bool { return l.count("b") == 4 && l.count("a") == 0 })
		if got, want := l.memberEvents("a"), []string{"assigned:4", "revoked:4", "assigned:2", "lost:2"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("a's callbacks %v, want %v", got, want)
		}
		f.thaw()
		waitCond(t, func() bool { return l.count("a") == 2 && l.count("b") == 2 })
	})
}

// TestGroupNoLossThroughRebalances: records produced all along while a third member joins and
// then two leave are all consumed; a record comes twice only when a partition changed hands
// (never twice to one member), since revocation commits what was polled.
func TestGroupNoLossThroughRebalances(t *testing.T) {
	t.Parallel()
	eachGroupTarget(t, func(t *testing.T, addr string) {
		admin := newClient(t, addr)
		topic := createTopic(t, admin, 6)
		group := groupName()
		l := newLedger()
		groupMember(t, addr, group, "a", l, spool.ConsumeTopics(topic))
		b := groupMember(t, addr, group, "b", l, spool.ConsumeTopics(topic))
		waitCond(t, func() bool { return l.count("a") == 3 && l.count("b") == 3 })

		ctx := testCtx(t)
		stop := make(chan struct{})
		producerDone := make(chan []string)
		go func() {
			var vals []string
			for i := 0; ; i++ {
				select {
				case <-stop:
					if err := admin.Flush(ctx); err != nil {
						t.Error(err)
					}
					producerDone <- vals
					return
				default:
				}
				v := fmt.Sprint("r-", i)
				vals = append(vals, v)
				if err := admin.ProduceSync(ctx, spool.StringRecord(topic, v)); err != nil {
					t.Error(err)
				}
			}
		}()
		waitCond(t, func() bool { l.mu.Lock(); defer l.mu.Unlock(); return len(l.consumed) > 50 })
		c := groupMember(t, addr, group, "c", l, spool.ConsumeTopics(topic))
		waitCond(t, func() bool { return l.count("a") == 2 && l.count("b") == 2 && l.count("c") == 2 })
		b.Close()
		waitCond(t, func() bool { return l.count("a") == 3 && l.count("c") == 3 })
		c.Close()
		waitCond(t, func() bool { return l.count("a") == 6 })
		close(stop)
		vals := <-producerDone
		waitCond(t, func() bool { return l.all(vals) })
		l.mu.Lock()
		defer l.mu.Unlock()
		dups := 0
		for _, v := range vals {
			by := l.consumed[v]
			if len(by) > 1 {
				dups++
				if len(slices.Compact(slices.Sorted(slices.Values(by)))) != len(by) {
					t.Errorf("%s consumed by %v: twice by one member", v, by)
				}
			}
		}
		t.Logf("%d records, %d consumed more than once", len(vals), dups)
	})
}

// TestGroupManualCommitInOnRevoked: with auto commit off, CommitUncommitted called from
// OnRevoked commits what Poll returned, so the partition's next owner starts after it.
func TestGroupManualCommitInOnRevoked(t *testing.T) {
	t.Parallel()
	eachGroupTarget(t, func(t *testing.T, addr string) {
		admin := newClient(t, addr)
		topic := createTopic(t, admin, 2)
		group := groupName()
		produceTo(t, addr, topic, "old", 2, 30)
		var m atomic.Pointer[spool.Client]
		commitErr := make(chan error, 10)
		l := newLedger()
		cl := newClient(t, addr, spool.ConsumerGroup(group), spool.ConsumeTopics(topic), spool.DisableAutoCommit(),
			spool.HeartbeatInterval(100*time.Millisecond), spool.OnRevoked(func(ctx context.Context, _ map[string][]int32) {
				commitErr <- m.Load().CommitUncommitted(ctx)
			}))
		m.Store(cl)
		pollUntil(t, cl, 60)
		go l.consume(testCtx(t), cl, "m")

		groupMember(t, addr, group, "n", l, spool.ConsumeTopics(topic))
		waitCond(t, func() bool { return l.count("n") == 1 })
		if err := <-commitErr; err != nil {
			t.Fatalf("CommitUncommitted in OnRevoked: %v", err)
		}
		produceTo(t, addr, topic, "new", 2, 10)
		mine := fmt.Sprintf("new-%d-", l.ownedBy("n", topic)[0])
		var want []string
		for i := range 10 {
			want = append(want, fmt.Sprint(mine, i))
		}
		waitCond(t, func() bool { return l.all(want) })
		l.mu.Lock()
		defer l.mu.Unlock()
		for v, by := range l.consumed {
			if slices.Contains(by, "n") && !strings.HasPrefix(v, mine) {
				t.Errorf("n consumed %q, which m had polled and committed in OnRevoked", v)
			}
		}
	})
}

// TestGroupSlowCallbackKeepsMembership: heartbeats go on while OnAssigned takes longer than
// the session timeout, so the member keeps its generation and partitions.
func TestGroupSlowCallbackKeepsMembership(t *testing.T) {
	t.Parallel()
	eachGroupTarget(t, func(t *testing.T, addr string) {
		admin := newClient(t, addr)
		topic := createTopic(t, admin, 2)
		l := newLedger()
		var slow sync.Once
		session := 6 * time.Second // the broker's group.min.session.timeout.ms
		group := groupName()
		cl := groupMember(t, addr, group, "m", l, spool.ConsumeTopics(topic), spool.SessionTimeout(session),
			spool.HeartbeatInterval(200*time.Millisecond),
			spool.OnAssigned(func(ctx context.Context, ps map[string][]int32) {
				slow.Do(func() { time.Sleep(session + 2*time.Second) }) // slow work, not a wait for an event
				l.callback("m", "assigned")(ctx, ps)
			}))
		waitCond(t, func() bool { return l.count("m") == 2 })
		id, gen := cl.GroupMemberID()
		// Had heartbeats stopped during the callback, the coordinator would have removed the
		// member two seconds ago.
		req := &wire.DescribeGroupsRequest{Groups: []string{group}}
		resp := &wire.DescribeGroupsResponse{}
		if err := admin.Request(testCtx(t), req, resp); err != nil {
			t.Fatal(err)
		}
		if g := resp.Groups[0]; g.GroupState != "Stable" || len(g.Members) != 1 || g.Members[0].MemberId != id {
			t.Fatalf("group %s with %d members after the slow callback, want Stable with member %s", g.GroupState, len(g.Members), id)
		}
		vals := produceValues(t, admin, topic, "v", 20)
		waitCond(t, func() bool { return l.all(vals) })
		if _, now := cl.GroupMemberID(); now != gen {
			t.Fatalf("generation went from %d to %d: the member was dropped during the callback", gen, now)
		}
		if got, want := l.memberEvents("m"), []string{"assigned:2"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("callbacks %v, want %v", got, want)
		}
	})
}

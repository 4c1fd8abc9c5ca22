package group

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// The coordinator driven by a fake clock: each case is one rule of Kafka's classic group
// protocol, played as requests and clock moves; every timeout fires exactly when the clock
// passes it, never by real time. Group records go to a real log (LogPartition), so the
// assignment's completion is the real one.

const (
	session   = 10 * time.Second
	rebalance = 30 * time.Second
	delay     = 3 * time.Second
)

type fixture struct {
	t     *testing.T
	c     *Coordinator
	clock *fakeClock
}

func newFixture(t *testing.T, initialDelay time.Duration) *fixture {
	t.Helper()
	clock := newFakeClock()
	c := newLoaded(t, Config{InitialRebalanceDelay: initialDelay, Clock: clock, Log: slog.New(slog.NewTextHandler(io.Discard, nil))},
		testLogs(t, t.TempDir(), 1))
	t.Cleanup(c.Close)
	return &fixture{t: t, c: c, clock: clock}
}

// join sends a JoinGroup (v4+ when requireID) and returns where its answer arrives.
func (f *fixture) join(memberID string, instance *string, meta string, requireID bool) chan JoinResult {
	ch := make(chan JoinResult, 1)
	f.c.Join(JoinRequest{GroupID: "g", MemberID: memberID, InstanceID: instance, ClientID: "app", SessionTimeout: session,
		RebalanceTimeout: rebalance, ProtocolType: "consumer", Protocols: []Protocol{{Name: "range", Metadata: []byte(meta)}},
		RequireKnownMemberID: requireID}, func(r JoinResult) { ch <- r })
	return ch
}

// answered returns an answer already given; the coordinator answers under the group's lock,
// so one due by now is there when the call that caused it returns.
func answered[T any](f *fixture, ch chan T, what string) T {
	f.t.Helper()
	select {
	case r := <-ch:
		return r
	default:
		f.t.Fatalf("%s: not answered", what)
		panic("unreachable")
	}
}

func pending[T any](f *fixture, ch chan T, what string) {
	f.t.Helper()
	select {
	case r := <-ch:
		f.t.Fatalf("%s: answered %+v, want it still pending", what, r)
	default:
	}
}

// awaited waits for an answer that comes from a completion (the group record committed).
func awaited[T any](f *fixture, ch chan T, what string) T {
	f.t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(time.Minute): // a hang guard, not a timing assertion
		f.t.Fatalf("%s: never answered", what)
		panic("unreachable")
	}
}

func (f *fixture) sync(memberID string, instance *string, gen int32, assign map[string][]byte) chan SyncResult {
	ch := make(chan SyncResult, 1)
	f.c.Sync(SyncRequest{GroupID: "g", MemberID: memberID, InstanceID: instance, Generation: gen, Assignments: assign},
		func(r SyncResult) { ch <- r })
	return ch
}

func (f *fixture) heartbeat(memberID string, instance *string, gen int32) int16 {
	return f.c.Heartbeat("g", memberID, instance, gen)
}

func (f *fixture) wantCode(got int16, want *wire.Error, what string) {
	f.t.Helper()
	var code int16
	if want != nil {
		code = want.Code
	}
	if got != code {
		f.t.Fatalf("%s: error %v, want %v", what, wire.ErrorForCode(got), want)
	}
}

func (f *fixture) state() string { return f.c.Describe("g").State }

// stable makes a one-member stable group (no initial delay) and returns the member's join.
func (f *fixture) stable(instance *string) JoinResult {
	f.t.Helper()
	j := answered(f, f.join("", instance, "m1", false), "first join")
	f.wantCode(j.Err, nil, "first join")
	s := awaited(f, f.sync(j.MemberID, instance, j.Generation, map[string][]byte{j.MemberID: []byte("all")}), "leader sync")
	f.wantCode(s.Err, nil, "leader sync")
	if f.state() != "Stable" {
		f.t.Fatalf("state %s, want Stable", f.state())
	}
	return j
}

func TestGroupRulesWithFakeClock(t *testing.T) {
	inst := func(s string) *string { return &s }
	cases := []struct {
		rule         string
		initialDelay time.Duration
		play         func(f *fixture)
	}{
		{"join: an empty group's first join waits the initial delay, then the member leads generation 1", delay, func(f *fixture) {
			ch := f.join("", nil, "m1", false)
			f.clock.Advance(delay - time.Millisecond)
			pending(f, ch, "join before the initial delay passed")
			f.clock.Advance(time.Millisecond)
			j := answered(f, ch, "join once the initial delay passed")
			if j.Err != 0 || j.Generation != 1 || j.Leader != j.MemberID || len(j.Members) != 1 {
				f.t.Fatalf("join %+v, want the leader of generation 1", j)
			}
		}},
		{"join: a member arriving during the initial delay extends it, up to the rebalance timeout", delay, func(f *fixture) {
			a := f.join("", nil, "a", false)
			f.clock.Advance(delay - time.Second)
			b := f.join("", nil, "b", false)
			f.clock.Advance(time.Second)
			pending(f, a, "first join after one delay with a newcomer")
			f.clock.Advance(delay)
			ja, jb := answered(f, a, "first join"), answered(f, b, "second join")
			if ja.Generation != 1 || jb.Generation != 1 || len(ja.Members)+len(jb.Members) != 2 {
				f.t.Fatalf("joins %+v %+v, want both in generation 1, one leader of two", ja, jb)
			}
		}},
		{"join: a v4 member without an id gets MEMBER_ID_REQUIRED and joins with the id it was given", 0, func(f *fixture) {
			first := answered(f, f.join("", nil, "m", true), "join without id")
			f.wantCode(first.Err, wire.ErrMemberIdRequired, "join without id")
			j := answered(f, f.join(first.MemberID, nil, "m", true), "join with the id")
			if j.Err != 0 || j.MemberID != first.MemberID || j.Generation != 1 {
				f.t.Fatalf("join %+v, want generation 1 as %s", j, first.MemberID)
			}
		}},
		{"join: a join to a stable group starts a rebalance that members learn from their heartbeat", 0, func(f *fixture) {
			j1 := f.stable(nil)
			second := f.join("", nil, "m2", false)
			pending(f, second, "newcomer's join while the first member has not rejoined")
			f.wantCode(f.heartbeat(j1.MemberID, nil, j1.Generation), wire.ErrRebalanceInProgress, "heartbeat during the rebalance")
			r1 := answered(f, f.join(j1.MemberID, nil, "m1", false), "rejoin")
			r2 := answered(f, second, "newcomer's join")
			if r1.Generation != 2 || r2.Generation != 2 || r1.Leader != j1.MemberID {
				f.t.Fatalf("rejoin %+v, newcomer %+v: want generation 2 led by %s", r1, r2, j1.MemberID)
			}
		}},
		{"sync: followers wait for the leader's assignment, which they get once it is stored", 0, func(f *fixture) {
			a := f.join("", nil, "a", false)
			j1 := answered(f, a, "first join")
			b := f.join("", nil, "b", false)
			r1 := answered(f, f.join(j1.MemberID, nil, "a", false), "leader's rejoin")
			j2 := answered(f, b, "second join")
			follower := f.sync(j2.MemberID, nil, j2.Generation, nil)
			pending(f, follower, "follower's sync before the leader's")
			leader := f.sync(r1.MemberID, nil, r1.Generation, map[string][]byte{r1.MemberID: []byte("x"), j2.MemberID: []byte("y")})
			if s := awaited(f, follower, "follower's sync"); s.Err != 0 || string(s.Assignment) != "y" {
				f.t.Fatalf("follower's sync %+v, want assignment y", s)
			}
			if s := awaited(f, leader, "leader's sync"); s.Err != 0 || string(s.Assignment) != "x" {
				f.t.Fatalf("leader's sync %+v, want assignment x", s)
			}
		}},
		{"sync: a sync of an older generation is ILLEGAL_GENERATION", 0, func(f *fixture) {
			j := f.stable(nil)
			s := answered(f, f.sync(j.MemberID, nil, j.Generation-1, nil), "stale sync")
			f.wantCode(s.Err, wire.ErrIllegalGeneration, "stale sync")
		}},
		{"heartbeat: heartbeats keep a member past its session timeout", 0, func(f *fixture) {
			j := f.stable(nil)
			for i := 0; i < 6; i++ {
				f.clock.Advance(session / 2)
				f.wantCode(f.heartbeat(j.MemberID, nil, j.Generation), nil, "heartbeat")
			}
			if f.state() != "Stable" {
				f.t.Fatalf("state %s after three session timeouts of heartbeats, want Stable", f.state())
			}
		}},
		{"heartbeat: an unknown member or a wrong generation is refused", 0, func(f *fixture) {
			j := f.stable(nil)
			f.wantCode(f.heartbeat("nobody", nil, j.Generation), wire.ErrUnknownMemberId, "unknown member")
			f.wantCode(f.heartbeat(j.MemberID, nil, j.Generation+1), wire.ErrIllegalGeneration, "wrong generation")
		}},
		{"session timeout: a silent member is removed when its session ends, not before", 0, func(f *fixture) {
			j := f.stable(nil)
			f.clock.Advance(session - time.Millisecond)
			f.wantCode(f.heartbeat(j.MemberID, nil, j.Generation), nil, "heartbeat just before the session ends")
			f.clock.Advance(session)
			f.wantCode(f.heartbeat(j.MemberID, nil, j.Generation), wire.ErrUnknownMemberId, "heartbeat after the session ended")
			if f.state() != "Empty" {
				f.t.Fatalf("state %s, want Empty once its only member expired", f.state())
			}
		}},
		{"session timeout: a silent member that does not rejoin is removed when its session ends, and the join completes without it", 0, func(f *fixture) {
			j1 := f.stable(nil)
			second := f.join("", nil, "m2", false) // waits for the first member's rejoin
			f.clock.Advance(session - time.Millisecond)
			pending(f, second, "newcomer's join before the first member's session ended")
			f.clock.Advance(time.Millisecond)
			j2 := answered(f, second, "newcomer's join once the first member expired")
			if j2.Err != 0 || j2.Generation != 2 || j2.Leader != j2.MemberID || len(j2.Members) != 1 {
				f.t.Fatalf("newcomer %+v, want it leading generation 2 alone", j2)
			}
			f.wantCode(f.heartbeat(j1.MemberID, nil, j1.Generation), wire.ErrUnknownMemberId, "the expired member")
		}},
		{"session timeout: a member waiting in a join outlives its session; the rebalance timeout governs it", 0, func(f *fixture) {
			a := answered(f, f.join("", nil, "a", false), "a joins")
			b := f.join("", nil, "b", false)
			_ = answered(f, f.join(a.MemberID, nil, "a", false), "a rejoins")
			jb := answered(f, b, "b joins")
			awaited(f, f.sync(a.MemberID, nil, 2, map[string][]byte{a.MemberID: {}, jb.MemberID: {}}), "a syncs")
			awaited(f, f.sync(jb.MemberID, nil, 2, nil), "b syncs")
			rb := f.join(jb.MemberID, nil, "b2", false) // b waits in its join, sending no heartbeat
			for elapsed := time.Duration(0); elapsed < 2*session; elapsed += session / 2 {
				f.clock.Advance(session / 2)
				f.wantCode(f.heartbeat(a.MemberID, nil, 2), wire.ErrRebalanceInProgress, "a's heartbeat")
			}
			pending(f, rb, "b's join after twice its session timeout")
			r := answered(f, f.join(a.MemberID, nil, "a", false), "a rejoins")
			if jr := answered(f, rb, "b's join"); jr.Err != 0 || jr.Generation != 3 || r.Generation != 3 {
				f.t.Fatalf("b %+v, a %+v: want both in generation 3", jr, r)
			}
		}},
		{"rebalance timeout: members that do not rejoin in time are dropped and the join completes without them", 0, func(f *fixture) {
			a := answered(f, f.join("", nil, "a", false), "a joins")
			b := f.join("", nil, "b", false)
			_ = answered(f, f.join(a.MemberID, nil, "a", false), "a rejoins")
			jb := answered(f, b, "b joins")
			awaited(f, f.sync(a.MemberID, nil, 2, map[string][]byte{a.MemberID: {}, jb.MemberID: {}}), "a syncs")
			awaited(f, f.sync(jb.MemberID, nil, 2, nil), "b syncs")
			// b asks for a rebalance; a never rejoins but keeps its session by heartbeats.
			rb := f.join(jb.MemberID, nil, "b2", false)
			for elapsed := time.Duration(0); elapsed < rebalance-session/2; elapsed += session / 2 {
				f.clock.Advance(session / 2)
				pending(f, rb, "b's rejoin before the rebalance timeout")
				f.wantCode(f.heartbeat(a.MemberID, nil, 2), wire.ErrRebalanceInProgress, "a's heartbeat")
			}
			f.clock.Advance(session / 2)
			r := answered(f, rb, "b's rejoin at the rebalance timeout")
			if r.Err != 0 || r.Generation != 3 || r.Leader != jb.MemberID || len(r.Members) != 1 {
				f.t.Fatalf("rejoin %+v, want b leading generation 3 alone", r)
			}
			f.wantCode(f.heartbeat(a.MemberID, nil, 3), wire.ErrUnknownMemberId, "a after being dropped")
		}},
		{"rebalance timeout: members that do not sync in time are removed and the group rebalances", 0, func(f *fixture) {
			a := answered(f, f.join("", nil, "a", false), "a joins")
			b := f.join("", nil, "b", false)
			ra := answered(f, f.join(a.MemberID, nil, "a", false), "a rejoins")
			jb := answered(f, b, "b joins")
			sa := awaited(f, f.sync(ra.MemberID, nil, 2, map[string][]byte{a.MemberID: {}, jb.MemberID: {}}), "a syncs")
			f.wantCode(sa.Err, nil, "a's sync")
			// b never syncs but heartbeats; at the rebalance timeout it is removed.
			for elapsed := time.Duration(0); elapsed < rebalance; elapsed += session / 2 {
				f.wantCode(f.heartbeat(a.MemberID, nil, 2), nil, "a's heartbeat")
				f.wantCode(f.heartbeat(jb.MemberID, nil, 2), nil, "b's heartbeat")
				f.clock.Advance(session / 2)
			}
			f.wantCode(f.heartbeat(jb.MemberID, nil, 2), wire.ErrUnknownMemberId, "b after the sync deadline")
			f.wantCode(f.heartbeat(a.MemberID, nil, 2), wire.ErrRebalanceInProgress, "a after b's removal")
		}},
		{"leave: a member leaving a stable group starts a rebalance; the last one leaving empties it", 0, func(f *fixture) {
			a := answered(f, f.join("", nil, "a", false), "a joins")
			b := f.join("", nil, "b", false)
			_ = answered(f, f.join(a.MemberID, nil, "a", false), "a rejoins")
			jb := answered(f, b, "b joins")
			awaited(f, f.sync(a.MemberID, nil, 2, map[string][]byte{a.MemberID: {}, jb.MemberID: {}}), "a syncs")
			awaited(f, f.sync(jb.MemberID, nil, 2, nil), "b syncs")
			code, codes := f.c.Leave("g", []Leaving{{MemberID: jb.MemberID}})
			f.wantCode(code, nil, "leave")
			f.wantCode(codes[0], nil, "b leaves")
			f.wantCode(f.heartbeat(a.MemberID, nil, 2), wire.ErrRebalanceInProgress, "a after b left")
			r := answered(f, f.join(a.MemberID, nil, "a", false), "a rejoins")
			if r.Generation != 3 || len(r.Members) != 1 {
				f.t.Fatalf("rejoin %+v, want a alone in generation 3", r)
			}
			_, codes = f.c.Leave("g", []Leaving{{MemberID: a.MemberID}})
			f.wantCode(codes[0], nil, "a leaves")
			if f.state() != "Empty" {
				f.t.Fatalf("state %s, want Empty", f.state())
			}
			_, codes = f.c.Leave("g", []Leaving{{MemberID: a.MemberID}})
			f.wantCode(codes[0], wire.ErrUnknownMemberId, "a leaves twice")
		}},
		{"static members: a rejoin with a new member id takes the place without a rebalance and fences the old id", 0, func(f *fixture) {
			j := f.stable(inst("i1"))
			r := awaited(f, f.join("", inst("i1"), "m1", false), "the instance rejoins after a restart")
			if r.Err != 0 || r.MemberID == j.MemberID || r.Generation != j.Generation {
				f.t.Fatalf("rejoin %+v, want a new member id in generation %d", r, j.Generation)
			}
			if f.state() != "Stable" {
				f.t.Fatalf("state %s, want Stable (no rebalance)", f.state())
			}
			f.wantCode(f.heartbeat(j.MemberID, inst("i1"), j.Generation), wire.ErrFencedInstanceId, "the old id")
			f.wantCode(f.heartbeat(r.MemberID, inst("i1"), r.Generation), nil, "the new id")
		}},
		{"static members: one that misses a join phase is kept in the new generation, not dropped", 0, func(f *fixture) {
			j := f.stable(inst("i1"))
			other := f.join("", nil, "m2", false)
			for elapsed := time.Duration(0); elapsed < rebalance; elapsed += session / 2 {
				f.wantCode(f.heartbeat(j.MemberID, inst("i1"), j.Generation), wire.ErrRebalanceInProgress, "i1's heartbeat")
				f.clock.Advance(session / 2)
			}
			o := answered(f, other, "newcomer's join at the rebalance timeout")
			if o.Err != 0 || o.Generation != 2 || o.Leader != o.MemberID || len(o.Members) != 2 {
				f.t.Fatalf("newcomer %+v, want it leading generation 2 with the static member", o)
			}
			f.wantCode(f.heartbeat(j.MemberID, inst("i1"), j.Generation), wire.ErrIllegalGeneration, "i1 at its old generation")
			r := answered(f, f.join(j.MemberID, inst("i1"), "m1", false), "i1 rejoins")
			if r.Err != 0 || r.Generation != 2 || r.MemberID != j.MemberID {
				f.t.Fatalf("rejoin %+v, want generation 2 under its id", r)
			}
		}},
		{"static members: a leave naming the instance with another member id is FENCED_INSTANCE_ID", 0, func(f *fixture) {
			f.stable(inst("i1"))
			_, codes := f.c.Leave("g", []Leaving{{MemberID: "someone-else", InstanceID: inst("i1")}})
			f.wantCode(codes[0], wire.ErrFencedInstanceId, "leave with a wrong member id")
			if f.state() != "Stable" {
				f.t.Fatalf("state %s, want Stable", f.state())
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			c.play(newFixture(t, c.initialDelay))
		})
	}
}

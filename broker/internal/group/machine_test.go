package group

import (
	"testing"
	"time"
)

func TestStep(t *testing.T) {
	cases := []struct {
		rule    string
		from    State
		event   Event
		to      State
		effects Effects
		illegal bool
	}{
		{"a first member starts a rebalance of an empty group", Empty, RebalanceNeeded, PreparingRebalance, StartJoinTimer, false},
		{"a join to a stable group starts a rebalance", Stable, RebalanceNeeded, PreparingRebalance, StartJoinTimer, false},
		{"a join while awaiting the assignment restarts the rebalance", CompletingRebalance, RebalanceNeeded, PreparingRebalance, StartJoinTimer, false},
		{"a join during a rebalance keeps preparing it", PreparingRebalance, RebalanceNeeded, PreparingRebalance, StartJoinTimer, false},
		{"the join phase ends with members: joins are answered", PreparingRebalance, JoinCompleted, CompletingRebalance, AnswerJoins, false},
		{"the join phase ends with nobody: the empty group is stored", PreparingRebalance, JoinCompletedEmpty, Empty, StoreGroup, false},
		{"a committed assignment makes the group stable and answers the syncs", CompletingRebalance, AssignmentStored, Stable, AnswerSyncs, false},
		{"an assignment is stored only while awaiting it", Stable, AssignmentStored, Stable, 0, true},
		{"an assignment of a restarted rebalance is not applied", PreparingRebalance, AssignmentStored, PreparingRebalance, 0, true},
		{"a join phase completes only during a rebalance", Stable, JoinCompleted, Stable, 0, true},
		{"a dead group never rebalances", Dead, RebalanceNeeded, Dead, 0, true},
		{"a dead group is never stable again", Dead, AssignmentStored, Dead, 0, true},
		{"only an empty group is deleted", Stable, Deleted, Stable, 0, true},
		{"an empty group is deleted", Empty, Deleted, Dead, StopTimers, false},
		{"unloading kills a group in any state", CompletingRebalance, Unloaded, Dead, StopTimers, false},
		{"unloading a dead group is harmless", Dead, Unloaded, Dead, StopTimers, false},
	}
	now := time.Unix(1000, 0)
	for _, c := range cases {
		out, err := Step(c.from, c.event, Input{Now: now, RebalanceTimeout: time.Minute})
		to, eff := out.State, out.Effects
		if (err != nil) != c.illegal {
			t.Errorf("%s: %s on %s: error %v, want illegal=%v", c.rule, c.event, c.from, err, c.illegal)
			continue
		}
		if to != c.to || eff != c.effects {
			t.Errorf("%s: %s on %s = %s %b, want %s %b", c.rule, c.event, c.from, to, eff, c.to, c.effects)
		}
		if !c.illegal && !out.Since.Equal(now) {
			t.Errorf("%s: the state time is %v, want the event's %v", c.rule, out.Since, now)
		}
	}
	if _, err := Step(Stable, Event(99), Input{}); err == nil {
		t.Error("an unknown event is not refused")
	}
}

// TestStepReachesEveryState: every state but the start is the target of some event, and
// every event is legal somewhere (the table has no dead rows).
func TestStepReachesEveryState(t *testing.T) {
	reached := map[State]bool{}
	for e := RebalanceNeeded; e <= Deleted; e++ {
		legal := false
		for s := Empty; s <= Dead; s++ {
			if out, err := Step(s, e, Input{}); err == nil {
				legal = true
				reached[out.State] = true
			}
		}
		if !legal {
			t.Errorf("event %s is legal in no state", e)
		}
	}
	for s := Empty; s <= Dead; s++ {
		if !reached[s] {
			t.Errorf("state %s is never reached", s)
		}
	}
}

// TestStepDeadlines: the timers a transition arms are deadlines computed from the event's
// time, named after Kafka's rules.
func TestStepDeadlines(t *testing.T) {
	now := time.Unix(5000, 0)
	const rebalance, delay = 40 * time.Second, 3 * time.Second
	cases := []struct {
		rule         string
		from         State
		event        Event
		initialDelay time.Duration
		join, sync   time.Duration // from now; 0: no deadline
		delayed      bool
	}{
		{"an empty group's first rebalance waits the initial delay for more members", Empty, RebalanceNeeded, delay, delay, 0, true},
		{"without an initial delay an empty group waits the rebalance timeout", Empty, RebalanceNeeded, 0, rebalance, 0, false},
		{"a stable group's rebalance waits the rebalance timeout for rejoins, never the initial delay", Stable, RebalanceNeeded, delay, rebalance, 0, false},
		{"a restarted rebalance waits the rebalance timeout again from now", PreparingRebalance, RebalanceNeeded, delay, rebalance, 0, false},
		{"a rebalance while awaiting the assignment waits the rebalance timeout", CompletingRebalance, RebalanceNeeded, delay, rebalance, 0, false},
		{"answered joins leave the members the rebalance timeout to sync", PreparingRebalance, JoinCompleted, delay, 0, rebalance, false},
		{"a stored assignment arms no timer", CompletingRebalance, AssignmentStored, delay, 0, 0, false},
		{"an empty join phase arms no timer", PreparingRebalance, JoinCompletedEmpty, delay, 0, 0, false},
	}
	for _, c := range cases {
		out, err := Step(c.from, c.event, Input{Now: now, RebalanceTimeout: rebalance, InitialDelay: c.initialDelay})
		if err != nil {
			t.Errorf("%s: %v", c.rule, err)
			continue
		}
		want := func(d time.Duration) time.Time {
			if d == 0 {
				return time.Time{}
			}
			return now.Add(d)
		}
		if !out.JoinDeadline.Equal(want(c.join)) || !out.SyncDeadline.Equal(want(c.sync)) || out.InitialDelay != c.delayed {
			t.Errorf("%s: join deadline %v, sync deadline %v, initial delay %v; want %v, %v, %v",
				c.rule, out.JoinDeadline, out.SyncDeadline, out.InitialDelay, want(c.join), want(c.sync), c.delayed)
		}
	}
}

func TestNextInitialDelay(t *testing.T) {
	const delay = 3 * time.Second
	cases := []struct {
		rule           string
		joined         bool
		remaining      time.Duration
		extend, remain time.Duration
	}{
		{"a member joined during the delay: wait another delay", true, 10 * time.Second, delay, 7 * time.Second},
		{"the extension never passes the rebalance timeout", true, time.Second, time.Second, 0},
		{"nobody joined during the delay: the join phase ends", false, 10 * time.Second, 0, 10 * time.Second},
		{"the rebalance timeout is used up: the join phase ends", true, 0, 0, 0},
	}
	for _, c := range cases {
		if d, left := NextInitialDelay(c.joined, c.remaining, delay); d != c.extend || left != c.remain {
			t.Errorf("%s: extend %v, remaining %v; want %v, %v", c.rule, d, left, c.extend, c.remain)
		}
	}
}

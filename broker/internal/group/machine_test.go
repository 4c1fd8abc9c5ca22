package group

import "testing"

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
	for _, c := range cases {
		to, eff, err := Step(c.from, c.event)
		if (err != nil) != c.illegal {
			t.Errorf("%s: %s on %s: error %v, want illegal=%v", c.rule, c.event, c.from, err, c.illegal)
			continue
		}
		if to != c.to || eff != c.effects {
			t.Errorf("%s: %s on %s = %s %b, want %s %b", c.rule, c.event, c.from, to, eff, c.to, c.effects)
		}
	}
	if _, _, err := Step(Stable, Event(99)); err == nil {
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
			if to, _, err := Step(s, e); err == nil {
				legal = true
				reached[to] = true
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

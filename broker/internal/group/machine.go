package group

import "fmt"

// The group state machine's transitions, as a pure function: a state and an event in, the
// next state and the effects the coordinator must carry out. It is the table Kafka's
// GroupMetadata keeps as each state's valid previous states, written per event. The
// coordinator moves a group only through Step (Coordinator.step); the timers, the records
// and the answers to members stay in coordinator.go.

// Event is what happens to a group.
type Event int8

const (
	// RebalanceNeeded: a member joined, rejoined with new metadata, left or expired, or the
	// stored assignment failed.
	RebalanceNeeded Event = iota
	// JoinCompleted: every member rejoined (or the rebalance timeout passed) and some remain.
	JoinCompleted
	// JoinCompletedEmpty: the join phase ended with no member left.
	JoinCompletedEmpty
	// AssignmentStored: the leader's assignment is committed to __consumer_offsets.
	AssignmentStored
	// Unloaded: the group's partition stopped being led here; Deleted: DeleteGroups, or its
	// last offsets expired with no member.
	Unloaded
	Deleted
)

func (e Event) String() string {
	return [...]string{"RebalanceNeeded", "JoinCompleted", "JoinCompletedEmpty", "AssignmentStored", "Unloaded", "Deleted"}[e]
}

// Effects are what a transition asks the coordinator to do.
type Effects uint8

const (
	// StartJoinTimer: (re)arm the rebalance timeout (or the initial rebalance delay).
	StartJoinTimer Effects = 1 << iota
	// AnswerJoins: answer the pending joins with the new generation, arm the pending-sync timer.
	AnswerJoins
	// AnswerSyncs: answer the pending syncs with their assignments.
	AnswerSyncs
	// StoreGroup: append the group's record (with a completion).
	StoreGroup
	// StopTimers: stop every timer and answer every pending join and sync with an error.
	StopTimers
)

// transition is one row of the table.
type transition struct {
	from    []State
	to      State
	effects Effects
}

var transitions = map[Event]transition{
	RebalanceNeeded:    {from: []State{Empty, Stable, CompletingRebalance, PreparingRebalance}, to: PreparingRebalance, effects: StartJoinTimer},
	JoinCompleted:      {from: []State{PreparingRebalance}, to: CompletingRebalance, effects: AnswerJoins},
	JoinCompletedEmpty: {from: []State{PreparingRebalance}, to: Empty, effects: StoreGroup},
	AssignmentStored:   {from: []State{CompletingRebalance}, to: Stable, effects: AnswerSyncs},
	Unloaded:           {from: []State{Empty, PreparingRebalance, CompletingRebalance, Stable, Dead}, to: Dead, effects: StopTimers},
	Deleted:            {from: []State{Empty, Dead}, to: Dead, effects: StopTimers},
}

// Step returns the state a group in state s moves to on e, and the effects to carry out; an
// event not legal in s is an error and leaves s as it is.
func Step(s State, e Event) (State, Effects, error) {
	tr, ok := transitions[e]
	if !ok {
		return s, 0, fmt.Errorf("unknown group event %d", e)
	}
	for _, f := range tr.from {
		if f == s {
			return tr.to, tr.effects, nil
		}
	}
	return s, 0, fmt.Errorf("group event %s is not legal in state %s", e, s)
}

// step moves g through Step; g.mu is held. An illegal event is logged and changes nothing.
func (c *Coordinator) step(g *group, e Event) {
	next, _, err := Step(g.state, e)
	if err != nil {
		c.log.Error("group state machine", "group", g.id, "err", err)
		return
	}
	g.setState(next)
}

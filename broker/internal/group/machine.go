package group

import (
	"fmt"
	"time"
)

// The group state machine's transitions, as a pure function: a state, an event and the time
// in; the next state, when it was entered, the effects the coordinator must carry out and the
// deadlines of the timers it must arm out. It is the table Kafka's GroupMetadata keeps as each
// state's valid previous states, written per event. Step reads no clock: the coordinator
// passes its Clock's time, and tests pass any time they like. The coordinator moves a group
// only through Step (Coordinator.step); arming the timers, writing the records and answering
// the members stay in coordinator.go.

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

// Input is what a transition depends on besides the state and the event.
type Input struct {
	// Now is the time of the event.
	Now time.Time
	// RebalanceTimeout is the largest rebalance timeout of the group's members: how long
	// the join phase waits for members to rejoin, and the sync phase for them to sync.
	RebalanceTimeout time.Duration
	// InitialDelay is group.initial.rebalance.delay.ms: how long the first rebalance of an
	// empty group waits for more members before it ends the join phase.
	InitialDelay time.Duration
}

// Output is a transition's result.
type Output struct {
	State State
	// Since is when the group entered State (DescribeGroups; the retention of an Empty
	// group's offsets counts from it).
	Since   time.Time
	Effects Effects
	// JoinDeadline (with StartJoinTimer) is when the join phase ends with the members that
	// rejoined by then; InitialDelay says it is the initial delay's, which extends while
	// members keep arriving (NextInitialDelay).
	JoinDeadline time.Time
	InitialDelay bool
	// SyncDeadline (with AnswerJoins) is when members that have not synced are removed.
	SyncDeadline time.Time
}

// Step returns what a group in state s becomes on e at in.Now; an event not legal in s is an
// error and leaves s as it is.
//
// Rules for the deadlines: a rebalance of an Empty group waits the initial delay (when
// configured) for members to arrive; any other rebalance waits the rebalance timeout for the
// members to rejoin; once the joins are answered the members have the rebalance timeout to
// sync.
func Step(s State, e Event, in Input) (Output, error) {
	tr, ok := transitions[e]
	if !ok {
		return Output{State: s}, fmt.Errorf("unknown group event %d", e)
	}
	for _, f := range tr.from {
		if f != s {
			continue
		}
		out := Output{State: tr.to, Since: in.Now, Effects: tr.effects}
		if tr.effects&StartJoinTimer != 0 {
			if s == Empty && in.InitialDelay > 0 {
				out.JoinDeadline, out.InitialDelay = in.Now.Add(in.InitialDelay), true
			} else {
				out.JoinDeadline = in.Now.Add(in.RebalanceTimeout)
			}
		}
		if tr.effects&AnswerJoins != 0 {
			out.SyncDeadline = in.Now.Add(in.RebalanceTimeout)
		}
		return out, nil
	}
	return Output{State: s}, fmt.Errorf("group event %s is not legal in state %s", e, s)
}

// NextInitialDelay is Kafka's InitialDelayedJoin when the delay expires: if a member joined
// during the last delay and some of the rebalance timeout remains (remaining), the join phase
// waits another delay (at most what remains; extend > 0, and remaining becomes left);
// otherwise it ends now (extend 0).
func NextInitialDelay(memberJoined bool, remaining, delay time.Duration) (extend, left time.Duration) {
	if !memberJoined || remaining <= 0 {
		return 0, remaining
	}
	d := min(delay, remaining)
	return d, remaining - d
}

// step moves g through Step at now; g.mu is held. An illegal event is logged and changes
// nothing (ok false).
func (c *Coordinator) step(g *group, e Event, now time.Time) (Output, bool) {
	out, err := Step(g.state, e, Input{Now: now, RebalanceTimeout: g.rebalanceTimeout(), InitialDelay: c.cfg.InitialRebalanceDelay})
	if err != nil {
		c.log.Error("group state machine", "group", g.id, "err", err)
		return out, false
	}
	g.state, g.stateTime = out.State, out.Since
	return out, true
}

package group

import "time"

// Clock is the coordinator's time. Every timestamp the coordinator records (state times,
// commit times, rebalance durations) and every timer it arms (session, rebalance and
// pending-sync timeouts, the initial rebalance delay, offset expiry) comes from it, so tests
// drive the coordinator with a fake clock instead of real time; the state machine (Step)
// takes the time as an input and never reads a clock.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f on a goroutine of the clock's after d, unless the timer is stopped
	// first. f may take locks; the clock holds none of its own while f runs.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is an armed AfterFunc.
type Timer interface {
	// Stop prevents the call if it has not started; it reports whether it did.
	Stop() bool
}

// realClock is the wall clock.
type realClock struct{}

func (realClock) Now() time.Time                            { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

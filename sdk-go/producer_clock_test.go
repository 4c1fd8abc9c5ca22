package spool

import (
	"testing"
	"time"
)

// TestRecordClock checks that record stamps read as wall time (compared without the monotonic
// reading, to a millisecond, Kafka's resolution) and never go backwards while anchored.
func TestRecordClock(t *testing.T) {
	var c recordClock
	prev := c.now()
	for i := range 1000 {
		before := time.Now().Round(0)
		ts := c.now()
		after := time.Now().Round(0)
		wall := ts.Round(0)
		if wall.Before(before.Add(-time.Millisecond)) || wall.After(after.Add(time.Millisecond)) {
			t.Fatalf("stamp %d: %v outside [%v, %v]", i, wall, before, after)
		}
		if ts.Before(prev) {
			t.Fatalf("stamp %d: %v before %v", i, ts, prev)
		}
		prev = ts
	}
	// An anchor older than clockReanchor is replaced by a fresh reading.
	old := time.Now().Add(-2 * clockReanchor)
	c.anchor.Store(&old)
	if a := c.now(); a.Sub(old) < clockReanchor || *c.anchor.Load() == old {
		t.Fatalf("stale anchor kept: %v", a)
	}
}

package replication

// The quorum arithmetic, as pure functions over plain values so that table tests pin every
// rule (quorum_test.go).

import (
	"slices"
	"time"
)

// Position is what the leader knows of one replica: its log end offset as of its last fetch
// (durable on that replica, which fetches again only after its fsync), and whether it has
// fetched at all under the current leadership.
type Position struct {
	ID     int32
	Offset int64
	Known  bool
}

// HighWatermark is the offset below which every ISR member holds the log: the minimum
// position over the ISR, never moving backwards from current, and frozen while the ISR is
// smaller than minISR (an ISR that small cannot acknowledge acks=all writes, and records it
// alone holds must not become visible). A member whose position is unknown holds it back.
func HighWatermark(current int64, isr []int32, positions []Position, minISR int) int64 {
	if len(isr) < minISR || len(isr) == 0 {
		return current
	}
	low := int64(-1)
	for _, id := range isr {
		i := slices.IndexFunc(positions, func(p Position) bool { return p.ID == id })
		if i < 0 || !positions[i].Known {
			return current
		}
		if low < 0 || positions[i].Offset < low {
			low = positions[i].Offset
		}
	}
	return max(current, low)
}

// Follower is the leader's record of one follower, for ISR decisions.
type Follower struct {
	ID int32
	// Offset is the follower's log end as of its last fetch; Known whether it fetched under
	// this leadership.
	Offset int64
	Known  bool
	// CaughtUp is the last time the follower was at the leader's log end.
	CaughtUp time.Time
}

// Shrink returns the ISR without the followers that have not caught up within lagMax of now.
// The leader itself (leader) always stays. It returns isr itself when nobody is removed.
func Shrink(isr []int32, leader int32, followers []Follower, now time.Time, lagMax time.Duration) []int32 {
	var out []int32
	removed := false
	for _, id := range isr {
		if id != leader {
			i := slices.IndexFunc(followers, func(f Follower) bool { return f.ID == id })
			if i < 0 || now.Sub(followers[i].CaughtUp) > lagMax {
				removed = true
				continue
			}
		}
		out = append(out, id)
	}
	if !removed {
		return isr
	}
	return out
}

// CanJoin reports whether a follower outside the ISR may join it: it has fetched under this
// leadership up to the high watermark and past the start of the leader's current epoch (so it
// holds nothing from an older leader that this leader does not).
func CanJoin(f Follower, hw, epochStart int64) bool {
	return f.Known && f.Offset >= hw && f.Offset >= epochStart
}

// CaughtUp updates a follower's caught-up time from a fetch at fetchOffset: at the leader's
// current end it is caught up now; at or past the end the leader had at the follower's
// previous fetch, it was caught up then (Kafka's rule, so a follower that keeps up with a
// steady stream never looks behind).
func CaughtUp(prev time.Time, fetchOffset, leaderEnd, prevLeaderEnd int64, prevFetch, now time.Time) time.Time {
	switch {
	case fetchOffset >= leaderEnd:
		return now
	case fetchOffset >= prevLeaderEnd && prevFetch.After(prev):
		return prevFetch
	}
	return prev
}

// TruncationOffset is where a follower truncates when its leader reports a divergence: the
// smaller of the leader's end offset for the diverging epoch and the follower's own end offset
// for the largest epoch at most that one (KIP-101/KIP-279). A leader that knows no such epoch
// (divergingEpoch < 0) sends the follower back to its own start.
func TruncationOffset(divergingEpoch int32, leaderEnd int64, localEpoch int32, localEnd int64) int64 {
	if divergingEpoch < 0 || leaderEnd < 0 {
		return 0
	}
	if localEpoch < 0 || localEnd < 0 {
		return 0
	}
	return min(leaderEnd, localEnd)
}

// OffsetsAvailable is KIP-207's rule for a new leader: until its high watermark reaches the
// offset its leadership began at (the log end when it was elected), the high watermark may
// trail what the previous leader had already made visible, so the leader cannot tell a client
// where the log ends (ListOffsets answers OFFSET_NOT_AVAILABLE, a retriable error) without
// showing an end that moves backwards.
func OffsetsAvailable(hw, epochStart int64) bool { return hw >= epochStart }

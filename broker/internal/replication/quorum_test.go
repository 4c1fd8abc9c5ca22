package replication

import (
	"slices"
	"testing"
	"time"
)

func TestHighWatermark(t *testing.T) {
	pos := func(ps ...Position) []Position { return ps }
	cases := []struct {
		name    string
		current int64
		isr     []int32
		pos     []Position
		minISR  int
		want    int64
	}{
		{"single replica follows its own end", 3, []int32{1}, pos(Position{1, 10, true}), 1, 10},
		{"minimum over the ISR", 0, []int32{1, 2, 3}, pos(Position{1, 10, true}, Position{2, 7, true}, Position{3, 9, true}), 2, 7},
		{"never backwards", 8, []int32{1, 2}, pos(Position{1, 10, true}, Position{2, 7, true}), 1, 8},
		{"unknown member holds it", 2, []int32{1, 2}, pos(Position{1, 10, true}, Position{2, 9, false}), 1, 2},
		{"missing member holds it", 2, []int32{1, 2}, pos(Position{1, 10, true}), 1, 2},
		{"frozen below min ISR", 4, []int32{1}, pos(Position{1, 10, true}), 2, 4},
		{"followers outside the ISR do not count", 0, []int32{1, 2}, pos(Position{1, 10, true}, Position{2, 9, true}, Position{3, 1, true}), 2, 9},
		{"empty ISR", 5, nil, nil, 1, 5},
	}
	for _, c := range cases {
		if got := HighWatermark(c.current, c.isr, c.pos, c.minISR); got != c.want {
			t.Errorf("%s: HighWatermark = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestShrink(t *testing.T) {
	now := time.Unix(1000, 0)
	lag := 10 * time.Second
	fs := []Follower{{ID: 2, CaughtUp: now.Add(-5 * time.Second)}, {ID: 3, CaughtUp: now.Add(-11 * time.Second)}}
	if got := Shrink([]int32{1, 2, 3}, 1, fs, now, lag); !slices.Equal(got, []int32{1, 2}) {
		t.Errorf("lagging follower 3: got %v, want [1 2]", got)
	}
	if got := Shrink([]int32{1, 2}, 1, fs, now, lag); !slices.Equal(got, []int32{1, 2}) {
		t.Errorf("nobody lagging: got %v", got)
	}
	if got := Shrink([]int32{1, 4}, 1, fs, now, lag); !slices.Equal(got, []int32{1}) {
		t.Errorf("a member that never fetched goes: got %v", got)
	}
	if got := Shrink([]int32{1}, 1, nil, now, lag); !slices.Equal(got, []int32{1}) {
		t.Errorf("the leader always stays: got %v", got)
	}
}

func TestCanJoin(t *testing.T) {
	cases := []struct {
		f          Follower
		hw, epoch0 int64
		want       bool
	}{
		{Follower{Offset: 10, Known: true}, 10, 5, true},
		{Follower{Offset: 9, Known: true}, 10, 5, false},
		{Follower{Offset: 10, Known: true}, 10, 11, false},
		{Follower{Offset: 10, Known: false}, 10, 5, false},
	}
	for _, c := range cases {
		if got := CanJoin(c.f, c.hw, c.epoch0); got != c.want {
			t.Errorf("CanJoin(%+v, hw %d, epoch start %d) = %v", c.f, c.hw, c.epoch0, got)
		}
	}
}

func TestCaughtUp(t *testing.T) {
	t0 := time.Unix(100, 0)
	t1, t2 := t0.Add(time.Second), t0.Add(2*time.Second)
	if got := CaughtUp(t0, 50, 50, 40, t1, t2); !got.Equal(t2) {
		t.Errorf("at the end: %v, want now", got)
	}
	if got := CaughtUp(t0, 45, 50, 40, t1, t2); !got.Equal(t1) {
		t.Errorf("past the previous end: %v, want the previous fetch", got)
	}
	if got := CaughtUp(t0, 30, 50, 40, t1, t2); !got.Equal(t0) {
		t.Errorf("behind: %v, want unchanged", got)
	}
}

func TestTruncationOffset(t *testing.T) {
	cases := []struct {
		epoch      int32
		leaderEnd  int64
		localEpoch int32
		localEnd   int64
		want       int64
	}{
		{3, 100, 3, 120, 100}, // follower wrote past the leader in epoch 3
		{3, 100, 2, 90, 90},   // follower never saw epoch 3: its own end for epoch 2
		{-1, -1, 2, 90, 0},    // leader knows no such epoch
		{3, 100, -1, -1, 0},   // follower has no epoch at or below
	}
	for _, c := range cases {
		if got := TruncationOffset(c.epoch, c.leaderEnd, c.localEpoch, c.localEnd); got != c.want {
			t.Errorf("TruncationOffset(%d, %d, %d, %d) = %d, want %d", c.epoch, c.leaderEnd, c.localEpoch, c.localEnd, got, c.want)
		}
	}
}

func TestOffsetsAvailable(t *testing.T) {
	for _, c := range []struct {
		name      string
		hw, start int64
		want      bool
	}{
		{"a high watermark below the leadership's start offset is not served", 90, 100, false},
		{"a high watermark that reached the start offset is served", 100, 100, true},
		{"a high watermark past the start offset is served", 140, 100, true},
		{"a leadership that began on an empty log is served at once", 0, 0, true},
	} {
		if got := OffsetsAvailable(c.hw, c.start); got != c.want {
			t.Errorf("%s: OffsetsAvailable(%d, %d) = %v, want %v", c.name, c.hw, c.start, got, c.want)
		}
	}
}

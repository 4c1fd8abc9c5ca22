package replication

import (
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/internal/storage"
)

// TestApplyOfAHeldStateChangesNothing: the reconciler hands every replica its state on each
// metadata change; a replica that holds that state already reports no change and wakes no
// parked fetch (at 10,000 partitions every change woke them all). A different ISR, version
// or min.insync.replicas is taken and heard.
func TestApplyOfAHeldStateChangesNothing(t *testing.T) {
	l, err := storage.Open(t.TempDir(), storage.DefaultLogConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	r := NewReplica("t", 0, l, &Settings{Self: 1, LagMax: time.Minute})
	heard := 0
	r.SetOnChange(func(Change, int64) { heard++ })
	st := State{Leader: 1, LeaderEpoch: 2, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Version: 5, MinISR: 1}
	if _, changed, err := r.Apply(st); err != nil || !changed {
		t.Fatalf("first Apply: changed %v, err %v", changed, err)
	}
	for _, tc := range []struct {
		name  string
		st    State
		heard bool
	}{
		{"the same state", st, false},
		{"the same state, min.insync.replicas 0 read as 1", State{Leader: 1, LeaderEpoch: 2, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Version: 5}, false},
		{"an ISR change", State{Leader: 1, LeaderEpoch: 2, Replicas: []int32{1, 2}, ISR: []int32{1}, Version: 6, MinISR: 1}, true},
		{"a min.insync.replicas change", State{Leader: 1, LeaderEpoch: 2, Replicas: []int32{1, 2}, ISR: []int32{1}, Version: 6, MinISR: 2}, true},
	} {
		before := heard
		holds := r.Holds(tc.st)
		if _, changed, err := r.Apply(tc.st); err != nil || changed {
			t.Fatalf("%s: changed %v, err %v; want no role change", tc.name, changed, err)
		}
		if got := heard > before; got != tc.heard || holds == tc.heard {
			t.Fatalf("%s: change hook heard %v, Holds before %v; want heard %v", tc.name, got, holds, tc.heard)
		}
	}
}

// lines is a slog handler's output, safe for concurrent writes.
type lines struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lines) infos() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range strings.Split(l.buf.String(), "\n") {
		if strings.Contains(s, "level=INFO") {
			out = append(out, s)
		}
	}
	return out
}

// TestISRChangesSummarizedInTheInfoLog: the first ISR change of a quiet period is an info line
// of its own; the others of the following second are one line with their counts (issue 28:
// thousands of lines a second after a broker stopped); each is still at debug.
func TestISRChangesSummarizedInTheInfoLog(t *testing.T) {
	var out lines
	set := &Settings{Log: slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	set.noteISR(nil, true, "topic", "t", "partition", 0)
	for i := range 60 {
		set.noteISR(nil, i%3 == 0, "topic", "t", "partition", i+1)
	}
	for range 9 {
		set.noteISR(errors.New("partition state changed since it was read"), false, "topic", "t", "partition", 99)
	}
	if got := out.infos(); len(got) != 1 || !strings.Contains(got[0], `msg="ISR changed"`) || !strings.Contains(got[0], "partition=0") {
		t.Fatalf("info lines after 70 changes in a burst: %q; want the first change alone", got)
	}
	set.isrLog.flush(set.Log) // the end of the second (its timer's flush then finds nothing)
	got := out.infos()
	if len(got) != 2 {
		t.Fatalf("info lines after the window: %q; want the first change and one summary", got)
	}
	for _, want := range []string{"written=60", "shrinks=20", "expands=40", "not_written=9", "first_error="} {
		if !strings.Contains(got[1], want) {
			t.Fatalf("summary %q lacks %s", got[1], want)
		}
	}
	if n := strings.Count(out.buf.String(), "level=DEBUG"); n != 70 {
		t.Fatalf("%d debug lines, want one per change (70)", n)
	}
}

package replication

import (
	"testing"
	"time"
)

func TestQuota(t *testing.T) {
	var q Quota
	t0 := time.Unix(1000, 0)
	if q.Wait(t0) != 0 || q.Limit(1<<20) != 1<<20 {
		t.Fatal("an unset quota limits")
	}
	q.SetRate(1000, t0) // 1000 B/s, a full second to start with
	if q.Limit(1<<20) != 1000 {
		t.Fatalf("limit %d, want one second's budget", q.Limit(1<<20))
	}
	q.Record(600, t0)
	if w := q.Wait(t0); w != 0 {
		t.Fatalf("400 B left, wait %v", w)
	}
	q.Record(900, t0) // 500 B over
	if w := q.Wait(t0); w != 500*time.Millisecond {
		t.Fatalf("500 B over at 1000 B/s: wait %v, want 500ms", w)
	}
	if w := q.Wait(t0.Add(500 * time.Millisecond)); w != 0 {
		t.Fatalf("after the refill: wait %v", w)
	}
	// A long idle spell refills one second at most.
	q.Record(2500, t0.Add(10*time.Second))
	if w := q.Wait(t0.Add(10 * time.Second)); w != 1500*time.Millisecond {
		t.Fatalf("2500 B after an idle spell: wait %v, want 1.5s", w)
	}
	q.SetRate(0, t0.Add(10*time.Second))
	if q.Wait(t0.Add(10*time.Second)) != 0 {
		t.Fatal("a removed quota still limits")
	}
}

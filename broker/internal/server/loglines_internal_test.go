package server

import (
	"testing"
	"time"
)

// The rules of repeated info lines (loglines.go), one table row each.
func TestThrottleStep(t *testing.T) {
	t0 := time.Unix(1000, 0)
	const iv = 10 * time.Second
	for _, tc := range []struct {
		rule      string
		e         throttled
		known     bool
		now       time.Time
		next      throttled
		logIt     bool
		suppessed int64
	}{
		{"the first event of a key is logged", throttled{}, false, t0, throttled{last: t0}, true, 0},
		{"a repeat within the interval is counted, not logged", throttled{last: t0, suppressed: 2}, true, t0.Add(iv - 1), throttled{last: t0, suppressed: 3}, false, 0},
		{"the first event after the interval is logged with the repeats before it", throttled{last: t0, suppressed: 7}, true, t0.Add(iv), throttled{last: t0.Add(iv)}, true, 7},
		{"an event long after the last line is logged as a first", throttled{last: t0}, true, t0.Add(time.Hour), throttled{last: t0.Add(time.Hour)}, true, 0},
	} {
		next, logIt, n := throttleStep(tc.e, tc.known, tc.now, iv)
		if next != tc.next || logIt != tc.logIt || n != tc.suppessed {
			t.Errorf("%s: got %+v, %v, %d; want %+v, %v, %d", tc.rule, next, logIt, n, tc.next, tc.logIt, tc.suppessed)
		}
	}
}

func TestLogThrottle(t *testing.T) {
	t0 := time.Unix(1000, 0)
	const iv = 10 * time.Second
	t.Run("keys are independent", func(t *testing.T) {
		var th logThrottle[string]
		if ok, _ := th.note("a", t0, iv); !ok {
			t.Error("a's first event not logged")
		}
		if ok, _ := th.note("b", t0, iv); !ok {
			t.Error("b's first event not logged after a's")
		}
		if ok, _ := th.note("a", t0.Add(time.Second), iv); ok {
			t.Error("a's repeat within the interval logged")
		}
	})
	t.Run("flush reports the repeats of ended intervals and forgets their keys, keeps the others", func(t *testing.T) {
		var th logThrottle[string]
		th.note("busy", t0, iv)
		for i := range 5 {
			th.note("busy", t0.Add(time.Duration(i+1)*time.Second), iv)
		}
		th.note("quiet", t0, iv)
		th.note("recent", t0.Add(5*time.Second), iv)
		th.note("recent", t0.Add(6*time.Second), iv)
		pending, overflow := th.flush(t0.Add(iv), iv)
		if len(pending) != 1 || pending["busy"] != 5 || overflow != 0 {
			t.Errorf("flush = %v, %d; want busy's 5 repeats only", pending, overflow)
		}
		if _, ok := th.keys["busy"]; ok {
			t.Error("busy kept after its interval was flushed")
		}
		if _, ok := th.keys["quiet"]; ok {
			t.Error("quiet (no repeats) kept after its interval")
		}
		if e, ok := th.keys["recent"]; !ok || e.suppressed != 1 {
			t.Errorf("recent, within its interval: %+v, %v; want kept with 1 repeat", e, ok)
		}
		if ok, _ := th.note("busy", t0.Add(iv+time.Second), iv); !ok {
			t.Error("busy's next event after the flush not logged")
		}
	})
	t.Run("a full table counts new keys as overflow, reported by flush", func(t *testing.T) {
		var th logThrottle[int]
		for k := range throttleMaxKeys {
			if ok, _ := th.note(k, t0, iv); !ok {
				t.Fatalf("key %d's first event not logged", k)
			}
		}
		for range 3 {
			if ok, _ := th.note(-1, t0, iv); ok {
				t.Fatal("a key beyond the table's bound logged")
			}
		}
		if len(th.keys) != throttleMaxKeys {
			t.Errorf("%d keys tracked, bound %d", len(th.keys), throttleMaxKeys)
		}
		if _, overflow := th.flush(t0.Add(iv), iv); overflow != 3 {
			t.Errorf("overflow %d, want 3", overflow)
		}
		if len(th.keys) != 0 {
			t.Errorf("%d keys left after every interval ended", len(th.keys))
		}
	})
}

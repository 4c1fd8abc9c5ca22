package storage

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestCompactionPassesBetweenAppends runs a pass after every append, one batch per segment, as
// the broker's cleaner does on a busy compacted topic: later passes must still drop records
// that newer ones of the same key superseded below an earlier pass's checkpoint.
func TestCompactionPassesBetweenAppends(t *testing.T) {
	cfg := compactConfig()
	cfg.SegmentBytes = 200
	cfg.MinCleanableDirtyRatio = 0.01
	l := openLog(t, t.TempDir(), cfg)
	var all []rec
	const keys, rounds = 4, 3
	pad := fmt.Sprintf("%060d", 0)
	appendOne := func(key, value string) {
		r := rec{Timestamp: t0.UnixMilli(), Key: key, Value: value}
		res := leaderAppend(t, l, buildBatch(t, batchSpec{recs: []rec{r}, pid: -1}))
		r.Offset = res.BaseOffset
		all = append(all, r)
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		if _, err := l.compactIfNeeded(t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	for r := range rounds {
		for k := range keys {
			appendOne(fmt.Sprintf("k%d", k), fmt.Sprintf("r%d-%s", r, pad))
		}
	}
	appendOne("last", pad)
	want := expectCompacted(all, l.activeBase(), func(rec) bool { return false })
	if got := readAll(t, l); !slices.Equal(got, want) {
		var offs []int64
		for _, r := range got {
			offs = append(offs, r.Offset)
		}
		t.Fatalf("after passes between appends: offsets %v, want %d records", offs, len(want))
	}
}

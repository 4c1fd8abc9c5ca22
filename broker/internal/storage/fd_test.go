//go:build linux

package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// openFDs counts this process's open descriptors.
func openFDs(t testing.TB) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}

// TestOneDescriptorPerLog: a log with one (active) segment holds one descriptor, its log file;
// its indexes are mapped without one (issue 28: three per replica exhausted the descriptors of
// brokers with thousands of partitions). Lookups through the indexes still work.
func TestOneDescriptorPerLog(t *testing.T) {
	const n = 40
	root := t.TempDir()
	cfg := smallConfig()
	before := openFDs(t)
	logs := make([]*Log, n)
	for i := range logs {
		logs[i] = openLog(t, filepath.Join(root, fmt.Sprintf("t-%d", i)), cfg)
		for j := range 8 { // several index entries (IndexIntervalBytes is small)
			leaderAppend(t, logs[i], simpleBatch(t, 5, time.Now().UnixMilli()+int64(j), fmt.Sprint(j)))
		}
	}
	if got := openFDs(t) - before; got > n {
		t.Fatalf("%d logs hold %d descriptors, want at most %d (one each)", n, got, n)
	}
	t.Logf("%d logs: %d descriptors", n, openFDs(t)-before)
	for _, l := range logs {
		data, err := l.ReadBytes(22, 1<<20, l.LogEndOffset())
		if err != nil {
			t.Fatal(err)
		}
		if recs := decodeAll(t, data); len(recs) == 0 || recs[0].Offset > 22 || recs[len(recs)-1].Offset != 39 {
			t.Fatalf("read from offset 22 through the offset index: %d records from %+v", len(recs), recs)
		}
		if off, _, ok, err := l.OffsetForTimestamp(0); err != nil || !ok || off != 0 {
			t.Fatalf("time index lookup: %d %v %v", off, ok, err)
		}
	}
}

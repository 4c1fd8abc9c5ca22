package storage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// onDiskLogBytes sums the .log files of a partition directory.
func onDiskLogBytes(t *testing.T, dir string) (n int64, segments int) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".log") {
			fi, err := os.Stat(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			n += fi.Size()
			segments++
		}
	}
	return n, segments
}

// Size is the bytes of the segment files, across rolls, deletion of old segments and
// truncation, and after a reopen.
func TestSizeFollowsTheSegments(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, smallConfig())
	if got := l.Size(); got != 0 {
		t.Fatalf("empty log: size %d", got)
	}
	for i := 0; i < 200; i++ {
		leaderAppend(t, l, simpleBatch(t, 5, 1000, "size"))
	}
	check := func(what string) {
		t.Helper()
		want, segs := onDiskLogBytes(t, dir)
		if got := l.Size(); got != want || want == 0 {
			t.Errorf("%s: Size %d, the %d .log files hold %d bytes", what, got, segs, want)
		}
	}
	if _, segs := onDiskLogBytes(t, dir); segs < 3 {
		t.Fatalf("only %d segments: the test needs rolls", segs)
	}
	check("after rolls")
	before := l.Size()
	if err := l.DeleteRecordsBefore(l.LogEndOffset() - 10); err != nil {
		t.Fatal(err)
	}
	check("after old segments are deleted")
	if err := l.Truncate(l.LogEndOffset() - 5); err != nil {
		t.Fatal(err)
	}
	check("after truncation")
	if l.Size() >= before {
		t.Errorf("size %d did not shrink from %d", l.Size(), before)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, smallConfig())
	check("after reopening")
}

func TestVolumeSpace(t *testing.T) {
	m, err := OpenManager(t.TempDir(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	total, usable, err := m.VolumeSpace()
	if err != nil || total <= 0 || usable < 0 || usable > total {
		t.Errorf("VolumeSpace = %d, %d, %v", total, usable, err)
	}
}

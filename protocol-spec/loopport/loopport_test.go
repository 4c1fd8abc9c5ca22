package loopport

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// Rule: a port is handed out once per process, from below the ephemeral range.
func TestPickHandsOutEachPortOnceBelowTheEphemeralRange(t *testing.T) {
	seen := map[int]bool{}
	for range 200 {
		p, err := Pick()
		if err != nil {
			t.Fatal(err)
		}
		if p < first || p >= first+count || p >= 32768 {
			t.Fatalf("port %d outside %d-%d", p, first, first+count-1)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
}

// Rule: a picked port stays claimed against other processes (its lock file is held).
func TestPickedPortIsLockedForOtherProcesses(t *testing.T) {
	p, err := Pick()
	if err != nil {
		t.Fatal(err)
	}
	// flock locks belong to open files: a second open of the lock file is what another
	// process would have.
	f, err := os.Open(filepath.Join(os.TempDir(), "spool-loopport", strconv.Itoa(p)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
		t.Fatalf("port %d's lock was free to take", p)
	}
}

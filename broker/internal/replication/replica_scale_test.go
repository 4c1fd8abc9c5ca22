package replication

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/internal/storage"
)

// TestApplyLeaderEpochFailureLeavesReplicaWhole: a replica whose leader epoch cannot be
// recorded (here its checkpoint's temporary file cannot be created) stays as it was, so the
// next Apply retries the election instead of finding a leader without follower records
// (issue 28: a nil-map panic in syncFollowersLocked).
func TestApplyLeaderEpochFailureLeavesReplicaWhole(t *testing.T) {
	dir := t.TempDir()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	l, err := storage.Open(dir, storage.DefaultLogConfig(), logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	// A directory where the checkpoint's temporary file goes: creating it fails (EISDIR),
	// whoever runs the test.
	blocker := filepath.Join(dir, "leader-epoch-checkpoint.tmp")
	if err := os.MkdirAll(filepath.Join(blocker, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := NewReplica("t", 0, l, &Settings{Self: 1, LagMax: time.Minute, Log: logger})
	st := State{Leader: 1, LeaderEpoch: 3, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Version: 1, MinISR: 1}
	for i := range 2 { // the second Apply is the one that panicked
		if _, changed, err := r.Apply(st); err == nil || changed {
			t.Fatalf("apply %d with an unwritable epoch checkpoint: changed %v, err %v; want an error and no change", i, changed, err)
		}
		if role, epoch := r.Role(); role != RoleFollower || epoch != -1 {
			t.Fatalf("after a failed election the replica is %v at epoch %d; want the follower of nobody at -1", role, epoch)
		}
	}
	if err := os.RemoveAll(blocker); err != nil {
		t.Fatal(err)
	}
	role, changed, err := r.Apply(st)
	if err != nil || !changed || role != RoleLeader {
		t.Fatalf("retried election: role %v changed %v err %v; want leader, changed", role, changed, err)
	}
	// A reassignment under the same epoch syncs the follower records.
	st.Replicas, st.Version = []int32{1, 2, 4}, 2
	if _, changed, err := r.Apply(st); err != nil || changed {
		t.Fatalf("reassignment: changed %v err %v", changed, err)
	}
	r.mu.Lock()
	_, has4 := r.followers[4]
	_, has3 := r.followers[3]
	r.mu.Unlock()
	if !has4 || has3 {
		t.Fatalf("followers after reassignment: 4 tracked %v, 3 tracked %v; want true, false", has4, has3)
	}
	if got := l.LatestEpoch(); got != 3 {
		t.Fatalf("latest epoch in the log %d, want 3", got)
	}
}

package group

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a log destination the coordinator's timers and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRebalanceLogLines: a member joining, syncing and then going silent produces the info
// lines an operator reads: rebalancing, joined, completed, session expired, empty.
func TestRebalanceLogLines(t *testing.T) {
	var out syncBuffer
	log := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo}))
	c := newLoaded(t, Config{OffsetsRetention: time.Hour, MinSessionTimeout: time.Millisecond, MaxSessionTimeout: time.Minute, Log: log},
		testLogs(t, t.TempDir(), 1))
	defer c.Close()
	joined := make(chan JoinResult, 1)
	c.Join(JoinRequest{GroupID: "g", ClientID: "app", SessionTimeout: 200 * time.Millisecond, RebalanceTimeout: time.Second,
		ProtocolType: "consumer", Protocols: []Protocol{{Name: "range", Metadata: []byte{}}}}, func(r JoinResult) { joined <- r })
	jr := <-joined
	if jr.Err != 0 {
		t.Fatalf("join: %d", jr.Err)
	}
	synced := make(chan SyncResult, 1)
	c.Sync(SyncRequest{GroupID: "g", MemberID: jr.MemberID, Generation: jr.Generation,
		Assignments: map[string][]byte{jr.MemberID: []byte("a")}}, func(r SyncResult) { synced <- r })
	if sr := <-synced; sr.Err != 0 {
		t.Fatalf("sync: %d", sr.Err)
	}
	// No heartbeat follows: the session expires and the group empties.
	want := []string{
		`level=INFO msg="group rebalancing" group=g from_state=Empty generation=0 members=1`,
		`level=INFO msg="group joined, waiting for the leader's assignment" group=g generation=1 members=1 protocol=range leader=` + jr.MemberID,
		`level=INFO msg="group rebalance completed" group=g generation=1 members=1 protocol=range took=`,
		`level=INFO msg="member session expired, removing it" group=g member=` + jr.MemberID + ` client_id=app generation=1`,
		`level=INFO msg="group rebalancing" group=g from_state=Stable generation=1 members=0`,
		`level=INFO msg="group empty after rebalance" group=g generation=2`,
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "group empty after rebalance") {
		if time.Now().After(deadline) {
			t.Fatalf("the group did not empty within 30s:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	got := out.String()
	at := 0
	for _, w := range want {
		i := strings.Index(got[at:], w)
		if i < 0 {
			t.Fatalf("log lacks, in order, %s\nlog:\n%s", w, got)
		}
		at += i + len(w)
	}
}

package storage

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// openManagerLogs opens n logs of one topic in a new Manager.
func openManagerLogs(t *testing.T, n int) (*Manager, []*Log) {
	t.Helper()
	m, err := OpenManager(t.TempDir(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	cfg := smallConfig()
	cfg.SegmentBytes = 1 << 20 // no roll: a roll starts a background flush of its own
	logs := make([]*Log, n)
	for i := range logs {
		if logs[i], err = m.Open("sync", int32(i), cfg); err != nil {
			t.Fatal(err)
		}
	}
	return m, logs
}

// waitUntil polls cond: the syncer's queue has no channel to wait on.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSyncRoundSharedAcrossLogs holds a sync round in its fsync, then has a request for six
// partitions and other waiters of some of them queue meanwhile: all of them must ride the one
// next round, and each log must be fsynced once in it.
func TestSyncRoundSharedAcrossLogs(t *testing.T) {
	m, logs := openManagerLogs(t, 6)
	targets := appendToEach(t, logs, 2)
	logs[0].flushSem <- struct{}{} // the first round blocks in its flush of logs[0]
	first := make(chan error, 1)
	go func() { first <- logs[0].WaitDurable(context.Background(), targets[0].Offset) }()
	waitUntil(t, "the first round runs", func() bool {
		m.syncer.mu.Lock()
		defer m.syncer.mu.Unlock()
		return m.syncer.running && m.syncer.next == nil && logs[0].syncRound != nil
	})

	res := leaderAppend(t, logs[0], simpleBatch(t, 1, 2, "again"))
	targets[0].Offset = res.LastOffset + 1
	var wg sync.WaitGroup
	errs := make(chan error, len(logs)+3)
	wg.Add(1)
	go func() { // a produce request for all six partitions
		defer wg.Done()
		WaitAllDurable(context.Background(), targets, func(i int, err error) { errs <- fmt.Errorf("target %d: %w", i, err) })
	}()
	for _, l := range logs[1:4] { // other connections waiting for some of them
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.WaitDurable(context.Background(), l.LogEndOffset()); err != nil {
				errs <- err
			}
		}()
	}
	waitUntil(t, "the request's logs are queued", func() bool {
		m.syncer.mu.Lock()
		defer m.syncer.mu.Unlock()
		return m.syncer.next != nil && len(m.syncer.next.logs) == len(logs)
	})
	before := make([]int64, len(logs))
	for i, l := range logs {
		before[i] = l.flushCount.Load()
	}
	<-logs[0].flushSem
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := m.syncer.rounds.Load(); n != 2 {
		t.Fatalf("%d sync rounds, want 2: the waiters that queued during the first did not share the next", n)
	}
	for i, l := range logs {
		// logs[0] too: the held round flushed up to its end as of the flush, the second
		// append included, so the shared round had nothing left to do for it.
		if got := l.flushCount.Load() - before[i]; got != 1 {
			t.Fatalf("log %d: %d flushes, want 1", i, got)
		}
		if l.DurableEndOffset() != l.LogEndOffset() {
			t.Fatalf("log %d: durable %d, end %d", i, l.DurableEndOffset(), l.LogEndOffset())
		}
	}
}

// TestWaitAllDurableReportsEachFailure: a failed log fails its own targets only.
func TestWaitAllDurableReportsEachFailure(t *testing.T) {
	_, logs := openManagerLogs(t, 3)
	targets := appendToEach(t, logs, 3)
	logs[1].crash()
	failed := map[int]error{}
	WaitAllDurable(context.Background(), targets, func(i int, err error) { failed[i] = err })
	if len(failed) != 1 || !errors.Is(failed[1], ErrClosed) {
		t.Fatalf("failures %v, want only target 1 with ErrClosed", failed)
	}
	for _, i := range []int{0, 2} {
		if d := logs[i].DurableEndOffset(); d != targets[i].Offset {
			t.Fatalf("log %d: durable %d, want %d", i, d, targets[i].Offset)
		}
	}
}

// appendToEach appends a batch of n records to each log and returns, per log, the offset that
// makes that batch durable.
func appendToEach(t *testing.T, logs []*Log, n int) []DurableTarget {
	t.Helper()
	targets := make([]DurableTarget, len(logs))
	for i, l := range logs {
		res := leaderAppend(t, l, simpleBatch(t, n, 1, fmt.Sprint(i)))
		targets[i] = DurableTarget{Log: l, Offset: res.LastOffset + 1}
	}
	return targets
}

package storage

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestDirSyncCoversEveryEarlierChange: an fsync of a directory covers every change taken
// before it started, so a later waiter for an earlier change runs none; a change taken after
// it needs another.
func TestDirSyncCoversEveryEarlierChange(t *testing.T) {
	d := &dirSyncer{dir: t.TempDir()}
	g1, g2 := d.changed(), d.changed()
	for _, step := range []struct {
		gen    uint64
		fsyncs int64
	}{{g2, 1}, {g1, 1}, {g2, 1}} {
		if err := d.syncAfter(step.gen); err != nil {
			t.Fatal(err)
		}
		if d.fsyncs != step.fsyncs {
			t.Fatalf("after syncAfter(%d): %d fsyncs, want %d", step.gen, d.fsyncs, step.fsyncs)
		}
	}
	if err := d.syncAfter(d.changed()); err != nil {
		t.Fatal(err)
	}
	if d.fsyncs != 2 {
		t.Fatalf("a change after the fsync: %d fsyncs in all, want 2", d.fsyncs)
	}
}

// TestDirSyncsShared: many logs' first flushes at once share the parent's fsyncs (each waiter
// runs one only when none that covers its change has run or is running).
func TestDirSyncsShared(t *testing.T) {
	d := &dirSyncer{dir: t.TempDir()}
	const n = 64
	gens := make([]uint64, n)
	for i := range gens {
		gens[i] = d.changed()
	}
	var wg sync.WaitGroup
	for _, g := range gens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := d.syncAfter(g); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if d.synced < gens[n-1] {
		t.Fatalf("synced up to %d, want %d", d.synced, gens[n-1])
	}
	if d.fsyncs > 2 { // the first may start before the others queue; the second covers all
		t.Fatalf("%d concurrent waiters for changes taken before any fsync ran %d fsyncs, want at most 2", n, d.fsyncs)
	}
}

// TestNewLogDirectoryDurableBeforeItsFirstAck: a Manager creates a log without fsyncing its
// directory or the data directory; the first flush, which an acknowledgement waits for, does
// both before the durable offset moves. A new leader epoch's checkpoint, fsynced itself, leaves
// its rename to the next flush too.
func TestNewLogDirectoryDurableBeforeItsFirstAck(t *testing.T) {
	m, err := OpenManager(t.TempDir(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, err := m.Open("t", 0, smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	if !l.dirDirty.Load() || l.parentGen.Load() == 0 {
		t.Fatalf("a new log: directory dirty %v, parent generation %d; want both pending", l.dirDirty.Load(), l.parentGen.Load())
	}
	if m.dirs.fsyncs != 0 {
		t.Fatalf("creating a log fsynced the data directory %d times, want 0", m.dirs.fsyncs)
	}
	if err := l.AssignLeaderEpoch(3); err != nil {
		t.Fatal(err)
	}
	leaderAppend(t, l, simpleBatch(t, 2, time.Now().UnixMilli(), "a"))
	if err := l.WaitDurable(context.Background(), l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if l.DurableEndOffset() != 2 {
		t.Fatalf("durable end %d, want 2", l.DurableEndOffset())
	}
	if l.dirDirty.Load() || l.parentGen.Load() != 0 || m.dirs.fsyncs != 1 {
		t.Fatalf("after the first flush: directory dirty %v, parent generation %d, data directory fsyncs %d; want settled by one fsync",
			l.dirDirty.Load(), l.parentGen.Load(), m.dirs.fsyncs)
	}
	if err := l.AssignLeaderEpoch(4); err != nil {
		t.Fatal(err)
	}
	if !l.dirDirty.Load() {
		t.Fatal("a new epoch's checkpoint renamed into place: directory not marked for the next flush")
	}
	leaderAppend(t, l, simpleBatch(t, 1, time.Now().UnixMilli(), "b"))
	if err := l.WaitDurable(context.Background(), l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if l.dirDirty.Load() {
		t.Fatal("the directory is still marked after a flush")
	}
	if got := l.LeaderEpochs(); len(got) != 2 || got[1] != (EpochEntry{4, 2}) {
		t.Fatalf("epochs %v, want 3@0 and 4@2", got)
	}
}

// TestManagerOpensInParallel: concurrent Opens of the same partitions return one log each;
// opens of different partitions run at once; Remove and Close wait for opens in progress.
func TestManagerOpensInParallel(t *testing.T) {
	m, err := OpenManager(t.TempDir(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	const parts, openers = 16, 8
	got := make([][]*Log, parts)
	for i := range got {
		got[i] = make([]*Log, openers)
	}
	var wg sync.WaitGroup
	for p := range parts {
		for o := range openers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l, err := m.Open(fmt.Sprintf("t%d", p%4), int32(p), smallConfig())
				if err != nil {
					t.Error(err)
				}
				got[p][o] = l
			}()
		}
	}
	wg.Add(1)
	go func() { // a removal racing the opens of partition 0
		defer wg.Done()
		if err := m.Remove("t0", 0); err != nil {
			t.Error(err)
		}
	}()
	wg.Wait()
	for p := 1; p < parts; p++ {
		for o := range openers {
			if got[p][o] == nil || got[p][o] != got[p][0] {
				t.Fatalf("partition %d: opener %d got log %p, opener 0 %p; want the same one", p, o, got[p][o], got[p][0])
			}
		}
	}
	if n := len(m.Partitions()); n < parts-1 || n > parts {
		t.Fatalf("%d logs open, want %d or %d (partition 0 removed before or after its opens)", n, parts-1, parts)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Open("t1", 1, smallConfig()); err == nil {
		t.Fatal("Open after Close succeeded")
	}
}

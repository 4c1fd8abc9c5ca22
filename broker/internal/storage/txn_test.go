package storage

import (
	"bytes"
	"math"
	"testing"

	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

func txnBatch(t testing.TB, pid int64, epoch int16, seq int32, n int) []byte {
	t.Helper()
	b := batch.NewBuilder()
	b.SetProducer(pid, epoch, seq)
	b.SetTransactional(true)
	for i := range n {
		b.Append(t0.UnixMilli(), []byte{byte('a' + i)}, []byte("v"), nil)
	}
	out, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(out)
}

func markerBatch(t testing.TB, pid int64, epoch int16, ct batch.ControlType) []byte {
	t.Helper()
	b := batch.NewBuilder()
	b.SetProducer(pid, epoch, -1)
	if err := b.AppendControl(ct, 0, t0.UnixMilli()); err != nil {
		t.Fatal(err)
	}
	out, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(out)
}

func appendMarker(t testing.TB, l *Log, pid int64, epoch int16, ct batch.ControlType) AppendResult {
	t.Helper()
	res, err := l.Append(markerBatch(t, pid, epoch, ct), AppendOptions{AssignOffsets: true, Now: t0, Markers: true})
	if err != nil {
		t.Fatalf("appending a %v marker: %v", ct, err)
	}
	return res
}

// TestTransactionsLastStableAndAborted follows the rules: an open transaction holds the first
// unstable offset at its first batch; a marker releases it; an abort is listed for reads that
// overlap it, a commit is not; the state survives a restart (snapshot, then replay).
func TestTransactionsLastStableAndAborted(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig()
	l := openLog(t, dir, cfg)
	if got := l.FirstUnstableOffset(); got != math.MaxInt64 {
		t.Fatalf("an empty log has first unstable offset %d", got)
	}
	leaderAppend(t, l, simpleBatch(t, 2, t0.UnixMilli(), "plain")) // 0-1
	a := leaderAppend(t, l, txnBatch(t, 10, 0, 0, 3))              // 2-4, producer 10 opens
	leaderAppend(t, l, txnBatch(t, 11, 0, 0, 1))                   // 5, producer 11 opens
	if got := l.FirstUnstableOffset(); got != a.BaseOffset {
		t.Fatalf("first unstable offset %d, want %d (producer 10's first batch)", got, a.BaseOffset)
	}
	leaderAppend(t, l, txnBatch(t, 10, 0, 3, 1)) // 6, same transaction
	if _, err := l.Append(markerBatch(t, 10, 0, batch.ControlAbort), AppendOptions{AssignOffsets: true, Now: t0}); err == nil {
		t.Fatal("a client append of a control batch was accepted")
	}
	m := appendMarker(t, l, 10, 0, batch.ControlAbort) // 7
	if got := l.FirstUnstableOffset(); got != 5 {
		t.Fatalf("after producer 10's abort the first unstable offset is %d, want 5 (producer 11)", got)
	}
	appendMarker(t, l, 11, 0, batch.ControlCommit) // 8
	if got := l.FirstUnstableOffset(); got != math.MaxInt64 {
		t.Fatalf("with no open transaction the first unstable offset is %d", got)
	}
	want := []AbortedTxn{{ProducerID: 10, FirstOffset: 2, LastOffset: m.BaseOffset}}
	check := func(l *Log, when string) {
		t.Helper()
		if got := l.AbortedTransactions(0, 9); len(got) != 1 || got[0] != want[0] {
			t.Fatalf("%s: aborted in [0,9) = %v, want %v", when, got, want)
		}
		if got := l.AbortedTransactions(0, 2); len(got) != 0 {
			t.Fatalf("%s: aborted in [0,2) = %v, want none (the transaction starts at 2)", when, got)
		}
		if got := l.AbortedTransactions(8, 9); len(got) != 0 {
			t.Fatalf("%s: aborted in [8,9) = %v, want none (the marker is at 7)", when, got)
		}
	}
	check(l, "live")
	// An epoch older than the producer's current one cannot write a marker.
	leaderAppend(t, l, txnBatch(t, 12, 3, 0, 1)) // 9, producer 12 epoch 3 opens
	if _, err := l.Append(markerBatch(t, 12, 2, batch.ControlCommit), AppendOptions{AssignOffsets: true, Now: t0, Markers: true}); err == nil {
		t.Fatal("a marker of an older epoch was accepted")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openLog(t, dir, cfg)
	check(l2, "after a clean restart")
	if got := l2.FirstUnstableOffset(); got != 9 {
		t.Fatalf("after a restart the open transaction of producer 12 is at %d, want 9", got)
	}
	// Replay without the snapshot rebuilds the same state from the log.
	l2.Close()
	offs, _ := (&producerStateManager{dir: dir}).snapshotOffsets()
	for _, o := range offs {
		removeIfExists(snapshotPath(dir, o))
	}
	l3 := openLog(t, dir, cfg)
	check(l3, "after a replay from the log")
	if got := l3.FirstUnstableOffset(); got != 9 {
		t.Fatalf("after a replay the open transaction of producer 12 is at %d, want 9", got)
	}
	appendMarker(t, l3, 12, 3, batch.ControlCommit)
	if got := l3.FirstUnstableOffset(); got != math.MaxInt64 {
		t.Fatalf("producer 12's commit left the first unstable offset at %d", got)
	}
}

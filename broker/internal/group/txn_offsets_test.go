package group

import (
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/internal/storage"
	"github.com/spoolmq/spool/protocol-spec/wire"
	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

func txnCommit(t *testing.T, c *Coordinator, pid int64, epoch int16, part int32, offset int64) int16 {
	t.Helper()
	ch := make(chan []int16, 1)
	c.TxnCommit(TxnCommitRequest{GroupID: "g", Generation: -1, ProducerID: pid, ProducerEpoch: epoch,
		Commits: []Commit{{Topic: "t", Partition: part, Offset: offset, LeaderEpoch: -1}}}, func(codes []int16) { ch <- codes })
	return (<-ch)[0]
}

// appendMarker writes a transaction marker to l as the marker path does on a leader.
func appendMarker(t *testing.T, l *storage.Log, pid int64, epoch int16, commit bool) {
	t.Helper()
	b := batch.NewBuilder()
	b.SetProducer(pid, epoch, -1)
	ct := batch.ControlAbort
	if commit {
		ct = batch.ControlCommit
	}
	if err := b.AppendControl(ct, 0, time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	recs, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(recs, storage.AppendOptions{AssignOffsets: true, Markers: true}); err != nil {
		t.Fatal(err)
	}
}

func offsetOf(t *testing.T, c *Coordinator, part int32) int64 {
	t.Helper()
	got, code := c.FetchOffsets("g", []TopicPartitions{{Topic: "t", Partitions: []int32{part}}}, false)
	if code != 0 {
		t.Fatalf("fetching offsets: %v", wire.ErrorForCode(code))
	}
	return got[0].Offset
}

// The rules of durable transactional offsets (txn_offsets.go), each checked live and after a
// reload from the log.
func TestTxnOffsets(t *testing.T) {
	logs := testLogs(t, t.TempDir(), 1)
	c := newLoaded(t, Config{}, logs)
	for _, tc := range []struct {
		pid    int64
		part   int32
		offset int64
	}{{7, 0, 5}, {8, 1, 9}, {9, 2, 11}} {
		if code := txnCommit(t, c, tc.pid, 0, tc.part, tc.offset); code != 0 {
			t.Fatalf("TxnCommit of producer %d: %v", tc.pid, wire.ErrorForCode(code))
		}
	}
	t.Run("PendingUntilTheMarker", func(t *testing.T) {
		for part := range int32(3) {
			if !c.PendingTxnOffset("g", "t", part) || offsetOf(t, c, part) != -1 {
				t.Fatalf("t-%d: pending %v, offset %d; want pending and no committed offset", part, c.PendingTxnOffset("g", "t", part), offsetOf(t, c, part))
			}
		}
	})
	t.Run("CommitMarkerMakesThemCommitted", func(t *testing.T) {
		appendMarker(t, logs[0], 7, 0, true)
		if err := c.CompleteTxn(7, 0, true); err != nil {
			t.Fatal(err)
		}
		if c.PendingTxnOffset("g", "t", 0) || offsetOf(t, c, 0) != 5 {
			t.Fatalf("t-0 after the commit: pending %v, offset %d; want 5", c.PendingTxnOffset("g", "t", 0), offsetOf(t, c, 0))
		}
	})
	t.Run("AbortMarkerDropsThem", func(t *testing.T) {
		appendMarker(t, logs[0], 8, 0, false)
		if err := c.CompleteTxn(8, 0, false); err != nil {
			t.Fatal(err)
		}
		if c.PendingTxnOffset("g", "t", 1) || offsetOf(t, c, 1) != -1 {
			t.Fatalf("t-1 after the abort: pending %v, offset %d; want none", c.PendingTxnOffset("g", "t", 1), offsetOf(t, c, 1))
		}
	})
	t.Run("OlderEpochThanTheLogIsFenced", func(t *testing.T) {
		appendMarker(t, logs[0], 7, 1, false) // producer 7 re-initialised at epoch 1
		if code := txnCommit(t, c, 7, 0, 0, 99); code != wire.ErrProducerFenced.Code {
			t.Fatalf("TxnCommit at epoch 0 after epoch 1: %v, want PRODUCER_FENCED", wire.ErrorForCode(code))
		}
		if c.PendingTxnOffset("g", "t", 0) {
			t.Fatal("a fenced commit left a pending offset")
		}
	})
	c.Close()
	c = newLoaded(t, Config{}, logs)
	t.Run("ReloadResolvesByTheMarkersInTheLog", func(t *testing.T) {
		if offsetOf(t, c, 0) != 5 || offsetOf(t, c, 1) != -1 {
			t.Fatalf("reloaded t-0 %d (want 5), t-1 %d (want -1)", offsetOf(t, c, 0), offsetOf(t, c, 1))
		}
		if c.PendingTxnOffset("g", "t", 0) || c.PendingTxnOffset("g", "t", 1) {
			t.Fatal("a reload left settled offsets pending")
		}
	})
	t.Run("ReloadKeepsOpenOnesPendingForTheirMarker", func(t *testing.T) {
		if !c.PendingTxnOffset("g", "t", 2) || offsetOf(t, c, 2) != -1 {
			t.Fatalf("reloaded t-2: pending %v, offset %d; want pending", c.PendingTxnOffset("g", "t", 2), offsetOf(t, c, 2))
		}
		appendMarker(t, logs[0], 9, 0, true)
		if err := c.CompleteTxn(9, 0, true); err != nil {
			t.Fatal(err)
		}
		if c.PendingTxnOffset("g", "t", 2) || offsetOf(t, c, 2) != 11 {
			t.Fatalf("t-2 after its commit: pending %v, offset %d; want 11", c.PendingTxnOffset("g", "t", 2), offsetOf(t, c, 2))
		}
	})
	t.Run("LaterPlainCommitWinsOverEarlierTransactionalOne", func(t *testing.T) {
		if code := txnCommit(t, c, 10, 0, 3, 40); code != 0 {
			t.Fatalf("TxnCommit: %v", wire.ErrorForCode(code))
		}
		if codes := commit(t, c, CommitRequest{GroupID: "g", Generation: -1, Retention: -1, Commits: []Commit{{Topic: "t", Partition: 3, Offset: 50, LeaderEpoch: -1}}}); codes[0] != 0 {
			t.Fatalf("commit: %v", wire.ErrorForCode(codes[0]))
		}
		appendMarker(t, logs[0], 10, 0, true)
		if err := c.CompleteTxn(10, 0, true); err != nil {
			t.Fatal(err)
		}
		if got := offsetOf(t, c, 3); got != 50 {
			t.Fatalf("t-3: %d, want the later plain commit's 50", got)
		}
	})
	c.Close()
	c = newLoaded(t, Config{}, logs)
	defer c.Close()
	t.Run("ReloadAgreesWithLiveState", func(t *testing.T) {
		for part, want := range []int64{5, -1, 11, 50} {
			if got := offsetOf(t, c, int32(part)); got != want {
				t.Errorf("reloaded t-%d: %d, want %d", part, got, want)
			}
			if c.PendingTxnOffset("g", "t", int32(part)) {
				t.Errorf("reloaded t-%d is pending", part)
			}
		}
	})
}

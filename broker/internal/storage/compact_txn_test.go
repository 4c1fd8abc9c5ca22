package storage

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

// keyedTxnBatch is one transactional record key=value of producer pid (no sequence, as a
// coordinator writes transactional offsets).
func keyedTxnBatch(t testing.TB, pid int64, key, value string) []byte {
	t.Helper()
	b := batch.NewBuilder()
	b.SetProducer(pid, 0, -1)
	b.SetTransactional(true)
	b.Append(t0.UnixMilli(), []byte(key), []byte(value), nil)
	out, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(out)
}

// fillSegments appends plain records of other keys until the active segment starts past end.
func fillSegments(t *testing.T, l *Log, end int64, tag string) {
	t.Helper()
	for i := 0; l.activeBase() <= end; i++ {
		leaderAppend(t, l, simpleBatch(t, 4, t0.UnixMilli(), fmt.Sprintf("%s%d", tag, i)))
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
}

func valuesOf(t *testing.T, l *Log, key string) []string {
	t.Helper()
	var out []string
	for _, r := range readAll(t, l) {
		if r.Key == key {
			out = append(out, r.Value)
		}
	}
	return out
}

// The compaction rules for transactional records (compact.go): an aborted record never
// shadows an earlier value of its key, and nothing at or past the first unstable offset is
// cleaned while its transaction may still abort. Without them a compacted
// __consumer_offsets loses a group's committed offset to an aborted TxnOffsetCommit.
func TestCompactionTransactions(t *testing.T) {
	t.Run("AbortedRecordDoesNotShadowEarlierValue", func(t *testing.T) {
		l := openLog(t, t.TempDir(), compactConfig())
		leaderAppend(t, l, buildBatch(t, batchSpec{recs: []rec{{Timestamp: t0.UnixMilli(), Key: "k", Value: "committed"}}, pid: -1}))
		leaderAppend(t, l, keyedTxnBatch(t, 10, "k", "aborted"))
		m := appendMarker(t, l, 10, 0, batch.ControlAbort)
		fillSegments(t, l, m.LastOffset, "fill")
		if err := l.Compact(t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		got := valuesOf(t, l, "k")
		if len(got) == 0 || got[0] != "committed" {
			t.Fatalf("key k after compaction: %q; the committed value must survive the aborted one", got)
		}
	})
	t.Run("OpenTransactionIsNotCleaned", func(t *testing.T) {
		l := openLog(t, t.TempDir(), compactConfig())
		leaderAppend(t, l, buildBatch(t, batchSpec{recs: []rec{{Timestamp: t0.UnixMilli(), Key: "m", Value: "old"}}, pid: -1}))
		open := leaderAppend(t, l, keyedTxnBatch(t, 12, "m", "new"))
		fillSegments(t, l, open.LastOffset, "a")
		if err := l.Compact(t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if got := valuesOf(t, l, "m"); len(got) != 2 || got[0] != "old" {
			t.Fatalf("key m with its transaction open: %q, want [old new]", got)
		}
		m := appendMarker(t, l, 12, 0, batch.ControlAbort)
		fillSegments(t, l, m.LastOffset, "b")
		if err := l.Compact(t0.Add(2 * time.Hour)); err != nil {
			t.Fatal(err)
		}
		if got := valuesOf(t, l, "m"); len(got) == 0 || got[0] != "old" {
			t.Fatalf("key m after the abort: %q; the earlier value must survive", got)
		}
	})
	t.Run("CommittedRecordShadowsEarlierValue", func(t *testing.T) {
		l := openLog(t, t.TempDir(), compactConfig())
		leaderAppend(t, l, buildBatch(t, batchSpec{recs: []rec{{Timestamp: t0.UnixMilli(), Key: "c", Value: "old"}}, pid: -1}))
		leaderAppend(t, l, keyedTxnBatch(t, 13, "c", "new"))
		m := appendMarker(t, l, 13, 0, batch.ControlCommit)
		fillSegments(t, l, m.LastOffset, "fill")
		if err := l.Compact(t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if got := valuesOf(t, l, "c"); len(got) != 1 || got[0] != "new" {
			t.Fatalf("key c after compaction: %q, want [new]", got)
		}
	})
}

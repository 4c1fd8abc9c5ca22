package spool_test

import (
	"context"
	"errors"
	"time"

	"testing"

	spool "github.com/spoolmq/spool/sdk-go"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestPositionCountsOnlyPolled: Position is the offset after the last record Poll returned
// (the Java client's meaning), never the prefetch cursor. Before, records fetched and still
// waiting for Poll already counted, so `spool consume -e`, which stops when every Position
// reaches the end, stopped without printing the records of partitions whose fetch had landed
// but not yet been polled: whole partitions of one broker, exit 0.
func TestPositionCountsOnlyPolled(t *testing.T) {
	eachTarget(t, func(t *testing.T, addr string) {
		admin := newClient(t, addr)
		topic := createTopic(t, admin, 1)
		produceTo(t, addr, topic, "v", 1, 5)
		c := newClient(t, addr)
		if err := c.Assign(map[string]map[int32]spool.Offset{topic: {0: spool.OffsetAt(0)}}); err != nil {
			t.Fatal(err)
		}
		if pos := c.Position(topic, 0); pos != 0 {
			t.Fatalf("position after Assign at 0 is %d, want 0", pos)
		}
		waitCond(t, func() bool { return spool.BufferedFetches(c) > 0 })
		if pos := c.Position(topic, 0); pos != 0 {
			t.Fatalf("position with 5 records fetched and none polled is %d, want 0", pos)
		}
		got := pollUntil(t, c, 5)
		if len(got) != 5 {
			t.Fatalf("polled %d records, want 5", len(got))
		}
		if pos := c.Position(topic, 0); pos != 5 {
			t.Fatalf("position after polling offsets 0-4 is %d, want 5", pos)
		}

		// Seeking to the end: the position is the end offset once looked up, with no Poll.
		if err := c.Seek(topic, 0, spool.OffsetEnd()); err != nil {
			t.Fatal(err)
		}
		waitCond(t, func() bool { return c.Position(topic, 0) == 5 })
	})
}

// TestPositionPastControlBatch: a log ending with a transaction's commit marker has an end
// offset past the last record; Position gets there once the records are polled, so reading
// to the end of such a partition ends. Against kfake, which has transactions.
func TestPositionPastControlBatch(t *testing.T) {
	runTargets(t, targets[1:], func(t *testing.T, addr string) {
		admin := newClient(t, addr)
		topic := createTopic(t, admin, 1)
		w := newTxnWriter(t, addr, topic)
		w.begin("a", "b")
		w.end(kgo.TryCommit)
		ends, err := admin.Admin().ListOffsets(testCtx(t), topic, spool.OffsetLatest)
		if err != nil {
			t.Fatal(err)
		}
		if ends[0] != 3 {
			t.Fatalf("end offset %d, want 3 (two records and the commit marker)", ends[0])
		}
		for _, iso := range []spool.IsolationLevel{spool.ReadUncommitted, spool.ReadCommitted} {
			c := newClient(t, addr, spool.Isolation(iso))
			if got := pollValues(t, c, topic, "b"); len(got) != 2 {
				t.Fatalf("isolation %v: got %v, want a and b", iso, got)
			}
			// The marker may come in a fetch of its own, which moves the position when Poll
			// takes it.
			ctx := testCtx(t)
			for c.Position(topic, 0) != 3 {
				short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
				rs, err := c.Poll(short)
				cancel()
				if len(rs) > 0 || (err != nil && ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded)) {
					t.Fatalf("isolation %v: past the end: %d records, %v", iso, len(rs), err)
				}
				if ctx.Err() != nil {
					t.Fatalf("isolation %v: position %d, want 3", iso, c.Position(topic, 0))
				}
			}
		}
	})
}

package spool_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/sdk-go"
)

// TestGroupResetNoneWithoutCommit: a group member with AutoOffsetReset(ResetNone) that gets
// partitions its group never committed learns it from Poll (ErrNoOffset, naming each
// partition) and fetches nothing from them until it seeks; after Seek it reads them all.
// Before, the policy was ignored and the member silently started at the earliest offset.
func TestGroupResetNoneWithoutCommit(t *testing.T) {
	t.Parallel()
	eachGroupTarget(t, func(t *testing.T, addr string) {
		admin := newClient(t, addr)
		topic := createTopic(t, admin, 2)
		produceTo(t, addr, topic, "v", 2, 3)
		cl := newClient(t, addr, spool.ConsumerGroup(groupName()), spool.ConsumeTopics(topic),
			spool.AutoOffsetReset(spool.ResetNone), spool.FetchMaxWait(100*time.Millisecond))
		ctx := testCtx(t)
		reported := map[string]bool{}
		for len(reported) < 2 {
			rs, err := cl.Poll(ctx)
			if len(rs) > 0 {
				t.Fatalf("got %d records from partitions without a position", len(rs))
			}
			if !errors.Is(err, spool.ErrNoOffset) {
				t.Fatalf("poll: %v, want ErrNoOffset", err)
			}
			for _, p := range []string{"[0]", "[1]"} {
				if strings.Contains(err.Error(), topic+p) {
					reported[p] = true
				}
			}
		}
		for p := range int32(2) {
			if pos := cl.Position(topic, p); pos != -1 {
				t.Fatalf("partition %d has position %d before any seek", p, pos)
			}
		}
		// Nothing is fetched meanwhile: a short poll ends by its deadline, empty.
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		rs, err := cl.Poll(short)
		cancel()
		if len(rs) != 0 || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("before seek: %d records, %v", len(rs), err)
		}
		for p := range int32(2) {
			if err := cl.Seek(topic, p, spool.OffsetStart()); err != nil {
				t.Fatal(err)
			}
		}
		if got := pollUntil(t, cl, 6); len(got) != 6 {
			t.Fatalf("after seek: %d records, want 6", len(got))
		}
	})
}

// TestOffsetAtSpecialValues: OffsetAt takes Kafka's -1 (OffsetLatest) and -2 (OffsetEarliest)
// as the end and the start, as ListOffsets does; any other negative offset is refused by
// Assign, AssignTopic and Seek instead of silently meaning the start.
func TestOffsetAtSpecialValues(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		cl := newClient(t, addr)
		topic := createTopic(t, cl, 1)
		produceTo(t, addr, topic, "v", 1, 5)
		ctx := testCtx(t)

		latest := newClient(t, addr)
		if err := latest.Assign(map[string]map[int32]spool.Offset{topic: {0: spool.OffsetAt(spool.OffsetLatest)}}); err != nil {
			t.Fatal(err)
		}
		waitCond(t, func() bool { return latest.Position(topic, 0) == 5 })
		produceTo(t, addr, topic, "new", 1, 1)
		rs, err := latest.Poll(ctx)
		if err != nil || len(rs) == 0 || rs[0].Offset != 5 {
			first := int64(-1)
			if len(rs) > 0 {
				first = rs[0].Offset
			}
			t.Fatalf("OffsetAt(OffsetLatest): %d records from offset %d, %v; want offset 5 only", len(rs), first, err)
		}

		earliest := newClient(t, addr)
		if err := earliest.Assign(map[string]map[int32]spool.Offset{topic: {0: spool.OffsetAt(spool.OffsetEarliest)}}); err != nil {
			t.Fatal(err)
		}
		if rs, err := earliest.Poll(ctx); err != nil || len(rs) == 0 || rs[0].Offset != 0 {
			t.Fatalf("OffsetAt(OffsetEarliest): %d records, %v", len(rs), err)
		}

		bad := newClient(t, addr)
		if err := bad.Assign(map[string]map[int32]spool.Offset{topic: {0: spool.OffsetAt(-5)}}); err == nil || !strings.Contains(err.Error(), "-5") {
			t.Fatalf("Assign(OffsetAt(-5)) = %v, want an error naming the offset", err)
		}
		if pos := bad.Position(topic, 0); pos != -1 {
			t.Fatalf("a refused Assign left the partition assigned at %d", pos)
		}
		if err := bad.AssignTopic(ctx, topic, spool.OffsetAt(-3)); err == nil {
			t.Fatal("AssignTopic(OffsetAt(-3)) succeeded")
		}
		if err := earliest.Seek(topic, 0, spool.OffsetAt(-7)); err == nil {
			t.Fatal("Seek(OffsetAt(-7)) succeeded")
		}
	})
}

package spool_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	spool "github.com/spoolmq/spool/sdk-go"
)

// TestGroupRejectsManualAssignment: a group member's partitions are the group's to decide, so
// Assign, AssignTopic and Unassign fail with ErrGroupManaged and leave consumption as the group
// set it (the partition Unassign named still delivers, the topic Assign named never does). The
// same calls succeed on a client without a group.
func TestGroupRejectsManualAssignment(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		ctx := testCtx(t)
		producer := newClient(t, addr, spool.WithPartitioner(spool.ManualPartitioner()))
		topic := createTopic(t, producer, 2)
		other := createTopic(t, producer, 1)

		assigned := make(chan map[string][]int32, 8)
		member := newClient(t, addr, spool.ConsumerGroup("managed-"+topic), spool.ConsumeTopics(topic),
			spool.HeartbeatInterval(100*time.Millisecond), spool.FetchMaxWait(100*time.Millisecond),
			spool.OnAssigned(func(_ context.Context, ps map[string][]int32) { assigned <- ps }))
		select {
		case ps := <-assigned:
			if !slices.Equal(ps[topic], []int32{0, 1}) {
				t.Fatalf("the only member was assigned %v, want %s[0 1]", ps, topic)
			}
		case <-ctx.Done():
			t.Fatal("never assigned")
		}

		if err := member.Assign(map[string]map[int32]spool.Offset{other: {0: spool.OffsetStart()}}); !errors.Is(err, spool.ErrGroupManaged) {
			t.Errorf("Assign in a group: %v, want ErrGroupManaged", err)
		}
		if err := member.AssignTopic(ctx, other, spool.OffsetStart()); !errors.Is(err, spool.ErrGroupManaged) {
			t.Errorf("AssignTopic in a group: %v, want ErrGroupManaged", err)
		}
		if err := member.Unassign(topic, 0); !errors.Is(err, spool.ErrGroupManaged) {
			t.Errorf("Unassign in a group: %v, want ErrGroupManaged", err)
		}

		// other's record goes first: had Assign taken effect it would be fetched alongside.
		if err := producer.ProduceSync(ctx, &spool.Record{Topic: other, Partition: 0, Value: []byte("stray")},
			&spool.Record{Topic: topic, Partition: 0, Value: []byte("p0")},
			&spool.Record{Topic: topic, Partition: 1, Value: []byte("p1")}); err != nil {
			t.Fatal(err)
		}
		seen := map[int32]bool{}
		for !seen[0] || !seen[1] {
			rs, err := member.Poll(ctx)
			if err != nil {
				t.Fatalf("poll (seen %v): %v", seen, err)
			}
			for _, r := range rs {
				if r.Topic != topic {
					t.Fatalf("a group member consumed %s[%d], which the group never assigned", r.Topic, r.Partition)
				}
				seen[r.Partition] = true
			}
		}

		plain := newClient(t, addr)
		if err := plain.Assign(map[string]map[int32]spool.Offset{other: {0: spool.OffsetStart()}}); err != nil {
			t.Fatalf("Assign without a group: %v", err)
		}
		if rs, err := plain.Poll(ctx); err != nil || len(rs) == 0 || string(rs[0].Value) != "stray" {
			t.Fatalf("Assign without a group: poll %v, %v", rs, err)
		}
		if err := plain.Unassign(other, 0); err != nil {
			t.Fatalf("Unassign without a group: %v", err)
		}
		if err := plain.AssignTopic(ctx, other, spool.OffsetStart()); err != nil {
			t.Fatalf("AssignTopic without a group: %v", err)
		}
	})
}

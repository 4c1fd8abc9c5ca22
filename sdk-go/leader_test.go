package spool_test

import (
	"fmt"
	"testing"

	spool "github.com/spoolmq/spool/sdk-go"
)

// TestLeaderMove moves partition leaders between rounds of produces on three-broker clusters
// (eachClusterTarget): on Spool by kill -9 of a leader, on kfake by reassignment. The producer
// must see the old leader gone or NOT_LEADER, refresh metadata and carry on; a consumer
// assigned from the start before the first move must read every round from the new leaders;
// nothing is lost or duplicated.
func TestLeaderMove(t *testing.T) {
	t.Parallel()
	const topic = "moving"
	eachClusterTarget(t, topic, 2, func(t *testing.T, c cluster) {
		cl := newClient(t, c.addrs[0], spool.SeedBrokers(c.addrs...), spool.WithPartitioner(spool.ManualPartitioner()))
		consumer := newClient(t, c.addrs[1], spool.SeedBrokers(c.addrs...))
		ctx := testCtx(t)
		if err := consumer.AssignTopic(ctx, topic, spool.OffsetStart()); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		total := 0
		for round := range 4 {
			var recs []*spool.Record
			for i := range 50 {
				recs = append(recs, &spool.Record{Topic: topic, Partition: int32(i % 2), Value: []byte(fmt.Sprintf("%d-%d", round, i))})
			}
			if err := cl.ProduceSync(ctx, recs...); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			total += len(recs)
			// The consumer reads this round from wherever the leaders are now.
			for len(seen) < total {
				rs, err := consumer.Poll(ctx)
				if err != nil {
					t.Fatalf("round %d: poll after %d of %d records: %v", round, len(seen), total, err)
				}
				for _, r := range rs {
					if seen[string(r.Value)] {
						t.Fatalf("round %d: duplicate %s", round, r.Value)
					}
					seen[string(r.Value)] = true
				}
			}
			c.moveLeaders(t, topic)
		}
		// After the last move: everything is still there for a new reader.
		got := consumeN(t, newClient(t, c.addrs[1], spool.SeedBrokers(c.addrs...)), topic, total)
		again := map[string]bool{}
		for _, r := range got {
			if again[string(r.Value)] {
				t.Fatalf("duplicate %s after the last move", r.Value)
			}
			again[string(r.Value)] = true
		}
		if len(again) != total || len(seen) != total {
			t.Fatalf("%d distinct records read after the moves and %d during them, want %d", len(again), len(seen), total)
		}
	})
}

package spool_test

import (
	"fmt"
	"testing"

	spool "github.com/spoolmq/spool/sdk-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

// TestLeaderMove moves partition leaders between produces and consumes on a three-broker
// kfake cluster: the client must see NOT_LEADER, refresh metadata and carry on, losing and
// duplicating nothing.
func TestLeaderMove(t *testing.T) {
	// kfake only: a leader move needs several brokers, and our broker has no cluster mode yet.
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(2, "moving"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl := newClient(t, c.ListenAddrs()[0], spool.WithPartitioner(spool.ManualPartitioner()))
	ctx := testCtx(t)
	total := 0
	for round := range 4 {
		var recs []*spool.Record
		for i := range 50 {
			recs = append(recs, &spool.Record{Topic: "moving", Partition: int32(i % 2), Value: []byte(fmt.Sprintf("%d-%d", round, i))})
		}
		if err := cl.ProduceSync(ctx, recs...); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		total += len(recs)
		for p := int32(0); p < 2; p++ {
			next := (c.LeaderFor("moving", p) + 1) % 3
			if err := c.MoveTopicPartition("moving", p, next); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := consumeN(t, newClient(t, c.ListenAddrs()[1]), "moving", total)
	seen := map[string]bool{}
	for _, r := range got {
		if seen[string(r.Value)] {
			t.Fatalf("duplicate %s", r.Value)
		}
		seen[string(r.Value)] = true
	}
	if len(seen) != total {
		t.Fatalf("%d distinct records, want %d", len(seen), total)
	}
}

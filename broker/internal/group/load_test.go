package group

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

// gatedPartition is a Partition whose replay waits for gate: a load that is slow (a big
// partition, a slow disk) for as long as the test wants. started closes when the replay began.
type gatedPartition struct {
	Partition
	gate, started chan struct{}
}

func newGated(p Partition) *gatedPartition {
	return &gatedPartition{Partition: p, gate: make(chan struct{}), started: make(chan struct{})}
}

func (g *gatedPartition) EachBatchRecord(fn func(batch.Header, batch.Record)) error {
	close(g.started)
	<-g.gate
	return g.Partition.EachBatchRecord(fn)
}

// groupIn is a group id that hashes to partition p of n.
func groupIn(p, n int32) string {
	for i := 0; ; i++ {
		if id := fmt.Sprintf("g%d", i); PartitionFor(id, n) == p {
			return id
		}
	}
}

// TestLoadRunsOffTheElectingGoroutine: OnElection returns while the partition's replay is
// still running (a synchronous load would block this test, whose replay waits for the test to
// open its gate, until the test binary's timeout); meanwhile that partition's groups answer
// COORDINATOR_LOAD_IN_PROGRESS and another partition's groups are served; once the replay ends
// the loaded offsets are served. A resignation during a load discards it: the groups then
// answer NOT_COORDINATOR, and the load's late end installs nothing.
func TestLoadRunsOffTheElectingGoroutine(t *testing.T) {
	const n = 2
	logs := testLogs(t, t.TempDir(), n)
	slow, fast := groupIn(0, n), groupIn(1, n)
	seed := newLoaded(t, Config{OffsetsRetention: time.Hour}, logs)
	for _, id := range []string{slow, fast} {
		if codes := commit(t, seed, CommitRequest{GroupID: id, Generation: -1, Retention: -1, Commits: []Commit{{Topic: "t", Partition: 0, Offset: 10, LeaderEpoch: -1}}}); codes[0] != 0 {
			t.Fatalf("seeding %s: %v", id, wire.ErrorForCode(codes[0]))
		}
	}
	seed.Close()

	c, err := New(Config{OffsetsRetention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := c.OnElection(1, n, LogPartition(logs[1])); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitLoad(ctx, 1); err != nil {
		t.Fatal(err)
	}
	gated := newGated(LogPartition(logs[0]))
	if err := c.OnElection(0, n, gated); err != nil { // returns with the replay parked on the gate
		t.Fatal(err)
	}
	<-gated.started
	want := []TopicPartitions{{Topic: "t", Partitions: []int32{0}}}
	if _, code := c.FetchOffsets(slow, want, false); code != wire.ErrCoordinatorLoadInProgress.Code {
		t.Fatalf("a group of the partition being loaded: %v, want COORDINATOR_LOAD_IN_PROGRESS", wire.ErrorForCode(code))
	}
	if got, code := c.FetchOffsets(fast, want, false); code != 0 || len(got) != 1 || got[0].Offset != 10 {
		t.Fatalf("a group of a loaded partition during another's load: %+v %v, want offset 10", got, wire.ErrorForCode(code))
	}
	if code := c.Heartbeat(fast, "nobody", nil, 1); code != wire.ErrUnknownMemberId.Code {
		t.Fatalf("a heartbeat to a loaded partition's group during another's load: %v, want UNKNOWN_MEMBER_ID", wire.ErrorForCode(code))
	}
	close(gated.gate)
	if err := c.WaitLoad(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if got, code := c.FetchOffsets(slow, want, false); code != 0 || len(got) != 1 || got[0].Offset != 10 {
		t.Fatalf("after the load: %+v %v, want offset 10", got, wire.ErrorForCode(code))
	}

	// A resignation while a load runs: the load is discarded.
	c.OnResignation(0)
	gated = newGated(LogPartition(logs[0]))
	if err := c.OnElection(0, n, gated); err != nil {
		t.Fatal(err)
	}
	<-gated.started
	c.OnResignation(0)
	if _, code := c.FetchOffsets(slow, want, false); code != wire.ErrNotCoordinator.Code {
		t.Fatalf("resigned during the load: %v, want NOT_COORDINATOR", wire.ErrorForCode(code))
	}
	close(gated.gate)
	if err := c.WaitLoad(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if c.Owns(slow) {
		t.Fatal("a load that ended after its partition's resignation installed its groups")
	}
}

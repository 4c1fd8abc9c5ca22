package server_test

// The stalled-heartbeat regression (issue 27): an OffsetCommit waits for every in-sync
// replica of __consumer_offsets; while one follower is cut off that wait lasts until the
// leader drops it from the ISR (replica.lag.time.max.ms, longer than the members' session
// timeout here). The commit must wait without the group's lock: the members' heartbeats are
// answered meanwhile, so the group keeps its members and its generation.

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func TestGroupKeepsMembersWhileACommitWaitsForACutOffFollower(t *testing.T) {
	heavy(t)
	zk := brokertest.SharedZooKeeper(t)
	c := brokertest.StartCluster(t, 3, zk.Connect(""), map[string]string{
		"num.partitions": "1", "offsets.topic.num.partitions": "1", "offsets.topic.replication.factor": "3",
		"group.initial.rebalance.delay.ms": "0", "replica.lag.time.max.ms": "8000"})
	const g, topic = "committing", "events"
	adm := admin(t, c.Addrs())
	if _, err := adm.CreateTopic(context.Background(), 1, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	coord := findCoordinator(t, c, g)
	md := waitMetadata(t, adm, "__consumer_offsets", "a full ISR led by the coordinator", func(td kadm.TopicDetail) bool {
		return len(td.Partitions) == 1 && len(td.Partitions[0].ISR) == 3 && td.Partitions[0].Leader == coord.NodeId
	})
	var follower int32 = -1
	for _, r := range md.Partitions[0].Replicas {
		if r != coord.NodeId && follower < 0 {
			follower = r
		}
	}
	addr := c.Proxies[coord.NodeId].Addr
	a, b, hbA, hbB := dial(t, addr), dial(t, addr), dial(t, addr), dial(t, addr)

	// A stable group of two: A alone first, then B joins and A rejoins.
	var ja *wire.JoinGroupResponse
	brokertest.WaitForState(t, 30*time.Second, "A joined", func() (bool, string) {
		ja = joinNew(a, sessionJoin(g), 5)
		return ja.ErrorCode == 0, fmt.Sprint(wire.ErrorForCode(ja.ErrorCode))
	})
	A := ja.MemberId
	s := &wire.SyncGroupResponse{}
	a.roundTrip(syncReq(g, A, ja.GenerationId, map[string]string{A: "a1"}), s, 5)
	wantCode(t, "A's first sync", s.ErrorCode, nil)
	jbReq := sessionJoin(g)
	if jb := join(b, jbReq, 5); jb.ErrorCode == wire.ErrMemberIdRequired.Code {
		jbReq.MemberId = jb.MemberId
	}
	idB := b.send(jbReq, 5)
	waitHeartbeat(t, hbA, g, A, ja.GenerationId, wire.ErrRebalanceInProgress)
	rejoin := sessionJoin(g)
	rejoin.MemberId = A
	ja2 := join(a, rejoin, 5)
	jb2 := &wire.JoinGroupResponse{}
	if b.recv(jb2, 5) != idB {
		t.Fatal("correlation id of B's join")
	}
	wantCode(t, "A's rejoin", ja2.ErrorCode, nil)
	wantCode(t, "B's join", jb2.ErrorCode, nil)
	B, gen := jb2.MemberId, ja2.GenerationId
	idSyncB := b.send(syncReq(g, B, gen, nil), 5)
	a.roundTrip(syncReq(g, A, gen, map[string]string{A: "a2", B: "b2"}), s, 5)
	wantCode(t, "A's sync", s.ErrorCode, nil)
	if b.recv(s, 5) != idSyncB {
		t.Fatal("correlation id of B's sync")
	}
	wantCode(t, "B's sync", s.ErrorCode, nil)

	// The follower is cut off; A commits. The commit's record waits for the ISR to shrink.
	c.Proxies[coord.NodeId].Drop(brokertest.DropFollowerFetches(follower))
	t.Cleanup(func() { c.Proxies[coord.NodeId].Drop(nil) })
	commit := &wire.OffsetCommitRequest{}
	commit.Default()
	commit.GroupId, commit.MemberId, commit.GenerationIdOrMemberEpoch = g, A, gen
	commit.Topics = []wire.OffsetCommitRequestTopic{{Name: topic, Partitions: []wire.OffsetCommitRequestPartition{{PartitionIndex: 0, CommittedOffset: 42, CommittedLeaderEpoch: -1}}}}
	sent := time.Now()
	idCommit := a.send(commit, 8)
	committed := make(chan error, 1)
	commitResp := &wire.OffsetCommitResponse{}
	go func() { committed <- recvInto(a.conn, commitResp, 8, idCommit, 2*time.Minute) }()

	// Both members heartbeat on their own connections (as a client's heartbeat thread
	// does) while the commit waits: every heartbeat is answered without error.
	answeredWhileWaiting := 0
	tick := time.NewTicker(300 * time.Millisecond)
	defer tick.Stop()
	var commitErr error
wait:
	for {
		select {
		case commitErr = <-committed:
			break wait
		case <-tick.C:
		}
		wantCode(t, "A's heartbeat while the commit waits", heartbeat(hbA, g, A, gen, nil), nil)
		wantCode(t, "B's heartbeat while the commit waits", heartbeat(hbB, g, B, gen, nil), nil)
		select {
		case commitErr = <-committed:
			break wait
		default:
			answeredWhileWaiting++
		}
	}
	held := time.Since(sent)
	if commitErr != nil {
		t.Fatalf("A's commit: %v", commitErr)
	}
	wantCode(t, "A's commit", commitResp.Topics[0].Partitions[0].ErrorCode, nil)
	// The test proves something only if the commit was held past the members' session
	// timeout (6 s; the ISR shrinks after replica.lag.time.max.ms, 8 s): a lower bound set by
	// the brokers' configuration, which load can only lengthen.
	if held < 6*time.Second || answeredWhileWaiting == 0 {
		t.Fatalf("the commit was answered after %v and %d heartbeat rounds: the cut-off follower did not hold it past the session timeout", held, answeredWhileWaiting)
	}
	// What released it is the leader dropping the cut-off follower from the ISR.
	waitMetadata(t, adm, "__consumer_offsets", "the cut-off follower out of the ISR", func(td kadm.TopicDetail) bool {
		return !slices.Contains(td.Partitions[0].ISR, follower)
	})

	// Nothing was lost: the generation stands, both members are in it, the offset is there.
	wantCode(t, "A's heartbeat after", heartbeat(hbA, g, A, gen, nil), nil)
	wantCode(t, "B's heartbeat after", heartbeat(hbB, g, B, gen, nil), nil)
	dr := &wire.DescribeGroupsResponse{}
	a.roundTrip(&wire.DescribeGroupsRequest{Groups: []string{g}}, dr, 5)
	var ids []string
	for _, m := range dr.Groups[0].Members {
		ids = append(ids, m.MemberId)
	}
	slices.Sort(ids)
	want := []string{A, B}
	slices.Sort(want)
	if dr.Groups[0].GroupState != "Stable" || !slices.Equal(ids, want) {
		t.Fatalf("group %s with members %v, want Stable with %v", dr.Groups[0].GroupState, ids, want)
	}
	fr := &wire.OffsetFetchResponse{}
	a.roundTrip(&wire.OffsetFetchRequest{GroupId: g, Topics: []wire.OffsetFetchRequestTopic{{Name: topic, PartitionIndexes: []int32{0}}}}, fr, 7)
	if fr.ErrorCode != 0 || len(fr.Topics) != 1 || fr.Topics[0].Partitions[0].CommittedOffset != 42 {
		t.Fatalf("offset fetch %+v, want 42 committed", fr)
	}
	t.Logf("%d heartbeat rounds answered while the commit waited %v for the ISR to drop follower %d", answeredWhileWaiting, held.Round(time.Millisecond), follower)
}

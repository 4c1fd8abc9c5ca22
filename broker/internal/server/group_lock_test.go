package server_test

// The group coordinator never waits under a group's lock (issue 27): while a group record
// waits for a __consumer_offsets follower that is cut off, the group's heartbeats are
// answered and its members stay, without a rebalance from missed heartbeats.

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func TestGroupHeartbeatsAnsweredWhileAGroupRecordWaitsForAFollower(t *testing.T) {
	heavy(t)
	zk := brokertest.SharedZooKeeper(t) // a chroot of the binary's one ZooKeeper: this test never stops it
	c := brokertest.StartCluster(t, 3, zk.Connect(""), map[string]string{
		"num.partitions": "1", "offsets.topic.num.partitions": "1", "offsets.topic.replication.factor": "3",
		"group.initial.rebalance.delay.ms": "0", "replica.lag.time.max.ms": "8000"})
	const g = "held"
	coord := findCoordinator(t, c, g)
	adm := admin(t, c.Addrs())
	md := waitMetadata(t, adm, "__consumer_offsets", "a full ISR", func(td kadm.TopicDetail) bool {
		return len(td.Partitions) == 1 && len(td.Partitions[0].ISR) == 3 && td.Partitions[0].Leader == coord.NodeId
	})
	follower := md.Partitions[0].Replicas[0]
	if follower == coord.NodeId {
		follower = md.Partitions[0].Replicas[1]
	}
	addr := net.JoinHostPort(coord.Host, strconv.Itoa(int(coord.Port)))
	a, b, hbA, hbB := dial(t, addr), dial(t, addr), dial(t, addr), dial(t, addr)

	// A alone: generation 1, Stable (once the coordinator has taken up the partition).
	var ja *wire.JoinGroupResponse
	brokertest.WaitForState(t, 30*time.Second, "A joined", func() (bool, string) {
		ja = joinNew(a, sessionJoin(g), 5)
		return ja.ErrorCode == 0, fmt.Sprint(wire.ErrorForCode(ja.ErrorCode))
	})
	A := ja.MemberId
	sa := &wire.SyncGroupResponse{}
	a.roundTrip(syncReq(g, A, 1, map[string]string{A: "a1"}), sa, 5)
	wantCode(t, "A sync", sa.ErrorCode, nil)

	// The follower is cut off: the next group record waits until the leader drops it from
	// the ISR (replica.lag.time.max.ms).
	c.Proxies[coord.NodeId].Drop(brokertest.DropFollowerFetches(follower))
	t.Cleanup(func() { c.Proxies[coord.NodeId].Drop(nil) })

	// B joins; A learns of the rebalance and rejoins; A, the leader, syncs.
	jbReq := sessionJoin(g)
	jb := join(b, jbReq, 5)
	if jb.ErrorCode == wire.ErrMemberIdRequired.Code {
		jbReq.MemberId = jb.MemberId
	}
	idB := b.send(jbReq, 5)
	waitHeartbeat(t, hbA, g, A, 1, wire.ErrRebalanceInProgress)
	rejoin := sessionJoin(g)
	rejoin.MemberId = A
	ja2 := join(a, rejoin, 5)
	jb2 := &wire.JoinGroupResponse{}
	if b.recv(jb2, 5) != idB {
		t.Fatal("correlation id of B's join")
	}
	wantCode(t, "A rejoin", ja2.ErrorCode, nil)
	wantCode(t, "B join", jb2.ErrorCode, nil)
	B, gen := jb2.MemberId, ja2.GenerationId
	idSyncB := b.send(syncReq(g, B, gen, nil), 5)
	idSyncA := a.send(syncReq(g, A, gen, map[string]string{A: "a2", B: "b2"}), 5)
	syncDone := make(chan error, 1)
	syncA := &wire.SyncGroupResponse{}
	go func() { syncDone <- recvInto(a.conn, syncA, 5, idSyncA, time.Minute) }()

	// While A's group record waits for the follower, both members heartbeat on their own
	// connections, at heartbeat.interval.ms: each is answered, and the store is still waiting.
	answeredWhileWaiting := 0
	tick := time.NewTicker(300 * time.Millisecond)
	defer tick.Stop()
	var syncErr error
wait:
	for {
		select {
		case syncErr = <-syncDone:
			break wait
		case <-tick.C:
		}
		codeA, codeB := heartbeat(hbA, g, A, gen, nil), heartbeat(hbB, g, B, gen, nil)
		wantCode(t, "A heartbeat while the group record waits", codeA, nil)
		wantCode(t, "B heartbeat while the group record waits", codeB, nil)
		select {
		case syncErr = <-syncDone:
			break wait
		default:
			answeredWhileWaiting++
		}
	}
	if syncErr != nil {
		t.Fatalf("A's sync: %v", syncErr)
	}
	wantCode(t, "A sync after the ISR shrank", syncA.ErrorCode, nil)
	if string(syncA.Assignment) != "a2" {
		t.Fatalf("A's assignment %q, want a2", syncA.Assignment)
	}
	syncB := &wire.SyncGroupResponse{}
	if b.recv(syncB, 5) != idSyncB {
		t.Fatal("correlation id of B's sync")
	}
	wantCode(t, "B sync", syncB.ErrorCode, nil)
	if string(syncB.Assignment) != "b2" {
		t.Fatalf("B's assignment %q, want b2", syncB.Assignment)
	}
	if answeredWhileWaiting < 2 {
		t.Fatalf("%d heartbeat rounds answered while the group record waited for the follower, want several", answeredWhileWaiting)
	}
	// No member was lost: the generation stands and both are still members.
	wantCode(t, "A heartbeat after", heartbeat(hbA, g, A, gen, nil), nil)
	wantCode(t, "B heartbeat after", heartbeat(hbB, g, B, gen, nil), nil)
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
	t.Logf("%d heartbeat rounds answered while the group record waited for the ISR to shrink", answeredWhileWaiting)
}

// sessionJoin is a join with the smallest session timeout the broker allows, so that a
// heartbeat held for a few seconds would cost the member.
func sessionJoin(g string) *wire.JoinGroupRequest {
	r := joinReq(g, "", "range")
	r.SessionTimeoutMs, r.RebalanceTimeoutMs = 6000, 30000
	return r
}

func findCoordinator(t *testing.T, c *brokertest.Cluster, g string) *wire.FindCoordinatorResponse {
	t.Helper()
	var resp *wire.FindCoordinatorResponse
	conn := dial(t, c.Addrs()[0])
	brokertest.WaitForState(t, 60*time.Second, "a coordinator for "+g, func() (bool, string) {
		resp = &wire.FindCoordinatorResponse{}
		conn.roundTrip(&wire.FindCoordinatorRequest{Key: g}, resp, 3)
		return resp.ErrorCode == 0, fmt.Sprint(wire.ErrorForCode(resp.ErrorCode))
	})
	return resp
}

// recvInto reads one response on conn within d, from any goroutine (no t.Fatal).
func recvInto(conn net.Conn, msg wire.Message, version int16, wantID int32, d time.Duration) error {
	conn.SetReadDeadline(time.Now().Add(d))
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return err
	}
	buf := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(conn, buf); err != nil {
		return err
	}
	api := wire.LookupAPI(msg.APIKey())
	r := wire.NewReader(buf)
	var h wire.ResponseHeader
	h.ReadFrom(r, api.ResponseHeaderVersion(version))
	msg.ReadFrom(r, version)
	if r.Err() != nil {
		return r.Err()
	}
	if h.CorrelationId != wantID {
		return fmt.Errorf("correlation id %d, want %d", h.CorrelationId, wantID)
	}
	return nil
}

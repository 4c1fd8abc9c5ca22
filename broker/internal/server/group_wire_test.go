package server_test

import (
	"bytes"
	"testing"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// Wire-level tests of the classic group protocol: each error Kafka returns, asserted on the
// exact response.

func noDelay() map[string]string { return map[string]string{"group.initial.rebalance.delay.ms": "0"} }

func joinReq(group, member string, protocols ...string) *wire.JoinGroupRequest {
	r := &wire.JoinGroupRequest{}
	r.Default()
	r.GroupId, r.MemberId, r.ProtocolType = group, member, "consumer"
	r.SessionTimeoutMs, r.RebalanceTimeoutMs = 10000, 10000
	for _, p := range protocols {
		r.Protocols = append(r.Protocols, wire.JoinGroupRequestProtocol{Name: p, Metadata: []byte("meta-" + p + "-" + member)})
	}
	return r
}

func join(c *rawClient, r *wire.JoinGroupRequest, v int16) *wire.JoinGroupResponse {
	c.t.Helper()
	resp := &wire.JoinGroupResponse{}
	c.roundTrip(r, resp, v)
	return resp
}

// joinNew joins as a new member, answering MEMBER_ID_REQUIRED (v4+) with the given id.
func joinNew(c *rawClient, r *wire.JoinGroupRequest, v int16) *wire.JoinGroupResponse {
	c.t.Helper()
	resp := join(c, r, v)
	if resp.ErrorCode == wire.ErrMemberIdRequired.Code {
		r.MemberId = resp.MemberId
		resp = join(c, r, v)
	}
	return resp
}

func syncReq(group, member string, gen int32, assign map[string]string) *wire.SyncGroupRequest {
	r := &wire.SyncGroupRequest{}
	r.Default()
	r.GroupId, r.MemberId, r.GenerationId = group, member, gen
	for m, a := range assign {
		r.Assignments = append(r.Assignments, wire.SyncGroupRequestAssignment{MemberId: m, Assignment: []byte(a)})
	}
	return r
}

func heartbeat(c *rawClient, group, member string, gen int32, instance *string) int16 {
	c.t.Helper()
	r := &wire.HeartbeatRequest{GroupId: group, MemberId: member, GenerationId: gen, GroupInstanceId: instance}
	resp := &wire.HeartbeatResponse{}
	c.roundTrip(r, resp, 4)
	return resp.ErrorCode
}

func wantCode(t *testing.T, what string, got int16, want *wire.Error) {
	t.Helper()
	var wc int16
	if want != nil {
		wc = want.Code
	}
	if got != wc {
		t.Fatalf("%s: error %v (%d), want %v", what, wire.ErrorForCode(got), got, want)
	}
}

func TestGroupMemberIDRequiredOnlyFromV4(t *testing.T) {
	parallel(t)
	b := startBroker(t, noDelay())
	c := dial(t, b.Addr)
	r4 := join(c, joinReq("g4", "", "range"), 4)
	wantCode(t, "join v4 without member id", r4.ErrorCode, wire.ErrMemberIdRequired)
	if r4.MemberId == "" || r4.GenerationId != -1 {
		t.Fatalf("MEMBER_ID_REQUIRED reply: member %q generation %d", r4.MemberId, r4.GenerationId)
	}
	again := join(c, joinReq("g4", r4.MemberId, "range"), 4)
	wantCode(t, "join v4 with the given id", again.ErrorCode, nil)
	if again.MemberId != r4.MemberId || again.Leader != r4.MemberId || again.GenerationId != 1 || *again.ProtocolName != "range" {
		t.Fatalf("join v4: %+v", again)
	}
	r3 := join(c, joinReq("g3", "", "range"), 3)
	wantCode(t, "join v3 without member id", r3.ErrorCode, nil)
	if r3.MemberId == "" || r3.GenerationId != 1 || r3.Leader != r3.MemberId || len(r3.Members) != 1 {
		t.Fatalf("join v3: %+v", r3)
	}
	// The leader gets the metadata verbatim.
	if !bytes.Equal(r3.Members[0].Metadata, []byte("meta-range-")) {
		t.Fatalf("leader got metadata %q", r3.Members[0].Metadata)
	}
	// Unknown member id on an existing and a missing group.
	wantCode(t, "join with unknown member", join(c, joinReq("g3", "nobody", "range"), 3).ErrorCode, wire.ErrUnknownMemberId)
	wantCode(t, "join missing group with member", join(c, joinReq("missing", "nobody", "range"), 3).ErrorCode, wire.ErrUnknownMemberId)
	// Bad session timeout, empty group id.
	bad := joinReq("g5", "", "range")
	bad.SessionTimeoutMs = 10
	wantCode(t, "tiny session timeout", join(c, bad, 3).ErrorCode, wire.ErrInvalidSessionTimeout)
	wantCode(t, "empty group id", join(c, joinReq("", "", "range"), 3).ErrorCode, wire.ErrInvalidGroupId)
}

func TestGroupRebalanceProtocolVoteAndErrors(t *testing.T) {
	parallel(t)
	b := startBroker(t, noDelay())
	a, bc, cc := dial(t, b.Addr), dial(t, b.Addr), dial(t, b.Addr)
	createTopic(t, a, "t", 1, nil)
	const g = "vote"
	// A alone: generation 1, then Stable.
	ja := joinNew(a, joinReq(g, "", "range", "roundrobin"), 5)
	wantCode(t, "A join", ja.ErrorCode, nil)
	A := ja.MemberId
	sa := &wire.SyncGroupResponse{}
	a.roundTrip(syncReq(g, A, 1, map[string]string{A: "a1"}), sa, 5)
	wantCode(t, "A sync", sa.ErrorCode, nil)
	if string(sa.Assignment) != "a1" || *sa.ProtocolName != "range" || *sa.ProtocolType != "consumer" {
		t.Fatalf("A sync: %+v", sa)
	}
	wantCode(t, "A heartbeat", heartbeat(a, g, A, 1, nil), nil)

	// A member sharing no protocol is refused, and so is another protocol type.
	wantCode(t, "no common protocol", join(cc, joinReq(g, "", "sticky"), 5).ErrorCode, wire.ErrInconsistentGroupProtocol)
	other := joinReq(g, "", "range")
	other.ProtocolType = "connect"
	wantCode(t, "other protocol type", join(cc, other, 5).ErrorCode, wire.ErrInconsistentGroupProtocol)

	// B and C join, preferring roundrobin: the group rebalances; A learns it from its heartbeat.
	idB := bc.send(joinReq(g, "", "roundrobin", "range"), 3)
	waitHeartbeat(t, a, g, A, 1, wire.ErrRebalanceInProgress)
	idC := cc.send(joinReq(g, "", "roundrobin", "range"), 3)
	waitMembers(t, a, g, 3)
	// A rejoins: the join phase completes for all three.
	ja2 := join(a, joinReq(g, A, "range", "roundrobin"), 5)
	jb, jc := &wire.JoinGroupResponse{}, &wire.JoinGroupResponse{}
	if bc.recv(jb, 3) != idB || cc.recv(jc, 3) != idC {
		t.Fatal("correlation ids")
	}
	for _, r := range []*wire.JoinGroupResponse{ja2, jb, jc} {
		wantCode(t, "rejoin", r.ErrorCode, nil)
		if r.GenerationId != 2 || r.ProtocolName == nil || *r.ProtocolName != "roundrobin" || r.Leader != A {
			t.Fatalf("generation 2 join: gen %d protocol %s leader %s (A %s)", r.GenerationId, *r.ProtocolName, r.Leader, A)
		}
	}
	if len(ja2.Members) != 3 || len(jb.Members) != 0 || len(jc.Members) != 0 {
		t.Fatalf("members: leader %d, followers %d %d", len(ja2.Members), len(jb.Members), len(jc.Members))
	}
	for _, m := range ja2.Members {
		want := "meta-roundrobin-"
		if m.MemberId == A {
			want += A
		}
		if string(m.Metadata) != want {
			t.Fatalf("member %s metadata %q, want %q", m.MemberId, m.Metadata, want)
		}
	}
	B, C := jb.MemberId, jc.MemberId
	// Old generation and unknown members.
	wantCode(t, "heartbeat old generation", heartbeat(a, g, A, 1, nil), wire.ErrIllegalGeneration)
	wantCode(t, "heartbeat unknown member", heartbeat(a, g, "ghost", 2, nil), wire.ErrUnknownMemberId)
	wantCode(t, "heartbeat unknown group", heartbeat(a, "nogroup", A, 2, nil), wire.ErrUnknownMemberId)
	sr := &wire.SyncGroupResponse{}
	a.roundTrip(syncReq(g, A, 1, nil), sr, 5)
	wantCode(t, "sync old generation", sr.ErrorCode, wire.ErrIllegalGeneration)
	// Commits are refused while the group completes its rebalance.
	wantCode(t, "commit while completing", commitOne(a, g, A, 2, "t", 0, 5), wire.ErrRebalanceInProgress)

	// Followers wait for the leader's assignments, which they get verbatim.
	idB = bc.send(syncReq(g, B, 2, nil), 5)
	a.roundTrip(syncReq(g, A, 2, map[string]string{A: "for-a", B: "for-b", C: "for-c"}), sr, 5)
	wantCode(t, "leader sync", sr.ErrorCode, nil)
	sb := &wire.SyncGroupResponse{}
	bc.recv(sb, 5)
	sc := &wire.SyncGroupResponse{}
	cc.roundTrip(syncReq(g, C, 2, nil), sc, 5)
	if string(sr.Assignment) != "for-a" || string(sb.Assignment) != "for-b" || string(sc.Assignment) != "for-c" {
		t.Fatalf("assignments %q %q %q", sr.Assignment, sb.Assignment, sc.Assignment)
	}
	// A v5 sync naming another protocol is refused.
	bad := syncReq(g, B, 2, nil)
	bad.ProtocolName = ptr("range")
	bc.roundTrip(bad, sb, 5)
	wantCode(t, "sync with another protocol", sb.ErrorCode, wire.ErrInconsistentGroupProtocol)

	// DescribeGroups shows the Stable group with metadata and assignments.
	dr := &wire.DescribeGroupsResponse{}
	a.roundTrip(&wire.DescribeGroupsRequest{Groups: []string{g, "unknown-group"}}, dr, 5)
	if d := dr.Groups[0]; d.GroupState != "Stable" || d.ProtocolData != "roundrobin" || d.ProtocolType != "consumer" || len(d.Members) != 3 {
		t.Fatalf("describe: %+v", d)
	}
	for _, m := range dr.Groups[0].Members {
		if m.ClientHost != "/127.0.0.1" {
			t.Errorf("member %s: client host %q, want /127.0.0.1", m.MemberId, m.ClientHost)
		}
	}
	if d := dr.Groups[1]; d.GroupState != "Dead" || d.ErrorCode != 0 {
		t.Fatalf("describe unknown: %+v", d)
	}

	// A group with members cannot be deleted.
	del := &wire.DeleteGroupsResponse{}
	a.roundTrip(&wire.DeleteGroupsRequest{GroupsNames: []string{g, "never-existed"}}, del, 2)
	wantCode(t, "delete non-empty", del.Results[0].ErrorCode, wire.ErrNonEmptyGroup)
	wantCode(t, "delete unknown", del.Results[1].ErrorCode, wire.ErrGroupIdNotFound)

	// LeaveGroup v3 batches members; an unknown one gets its own error.
	lr := &wire.LeaveGroupResponse{}
	a.roundTrip(&wire.LeaveGroupRequest{GroupId: g, Members: []wire.LeaveGroupRequestMemberIdentity{{MemberId: B}, {MemberId: C}, {MemberId: "ghost"}}}, lr, 3)
	wantCode(t, "leave", lr.ErrorCode, nil)
	if len(lr.Members) != 3 || lr.Members[0].ErrorCode != 0 || lr.Members[1].ErrorCode != 0 || lr.Members[2].ErrorCode != wire.ErrUnknownMemberId.Code {
		t.Fatalf("leave members: %+v", lr.Members)
	}
	// A must rejoin; alone it becomes generation 3.
	wantCode(t, "heartbeat after leave", heartbeat(a, g, A, 2, nil), wire.ErrRebalanceInProgress)
	ja3 := join(a, joinReq(g, A, "range", "roundrobin"), 5)
	if ja3.GenerationId != 3 || *ja3.ProtocolName != "range" || len(ja3.Members) != 1 {
		t.Fatalf("generation 3: %+v", ja3)
	}
	// v0 leave of the last member empties the group; then it can be deleted.
	a.roundTrip(&wire.LeaveGroupRequest{GroupId: g, MemberId: A}, lr, 0)
	wantCode(t, "leave v0", lr.ErrorCode, nil)
	a.roundTrip(&wire.LeaveGroupRequest{GroupId: g, MemberId: A}, lr, 0)
	wantCode(t, "leave v0 again", lr.ErrorCode, wire.ErrUnknownMemberId)
	lg := &wire.ListGroupsResponse{}
	a.roundTrip(&wire.ListGroupsRequest{StatesFilter: []string{"empty"}}, lg, 4)
	if len(lg.Groups) != 1 || lg.Groups[0].GroupId != g || lg.Groups[0].GroupState != "Empty" {
		t.Fatalf("list empty groups: %+v", lg.Groups)
	}
	a.roundTrip(&wire.DeleteGroupsRequest{GroupsNames: []string{g}}, del, 2)
	wantCode(t, "delete empty", del.Results[0].ErrorCode, nil)
	a.roundTrip(&wire.ListGroupsRequest{}, lg, 4)
	if len(lg.Groups) != 0 {
		t.Fatalf("groups after delete: %+v", lg.Groups)
	}
}

// waitMembers waits until DescribeGroups shows n members.
func waitMembers(t *testing.T, c *rawClient, g string, n int) {
	t.Helper()
	for i := 0; ; i++ {
		dr := &wire.DescribeGroupsResponse{}
		c.roundTrip(&wire.DescribeGroupsRequest{Groups: []string{g}}, dr, 5)
		if len(dr.Groups[0].Members) == n {
			return
		}
		if i == 1000 {
			t.Fatalf("group %s never had %d members", g, n)
		}
	}
}

// waitHeartbeat heartbeats until the wanted error (the rebalance starts asynchronously).
func waitHeartbeat(t *testing.T, c *rawClient, g, m string, gen int32, want *wire.Error) {
	t.Helper()
	for i := 0; ; i++ {
		if heartbeat(c, g, m, gen, nil) == want.Code {
			return
		}
		if i == 1000 {
			t.Fatalf("heartbeat never returned %v", want)
		}
	}
}

func commitOne(c *rawClient, g, member string, gen int32, topic string, partition int32, offset int64) int16 {
	c.t.Helper()
	r := &wire.OffsetCommitRequest{}
	r.Default()
	r.GroupId, r.MemberId, r.GenerationIdOrMemberEpoch = g, member, gen
	md := "md-" + topic
	r.Topics = []wire.OffsetCommitRequestTopic{{Name: topic, Partitions: []wire.OffsetCommitRequestPartition{{PartitionIndex: partition, CommittedOffset: offset, CommittedLeaderEpoch: -1, CommittedMetadata: &md}}}}
	resp := &wire.OffsetCommitResponse{}
	c.roundTrip(r, resp, 8)
	return resp.Topics[0].Partitions[0].ErrorCode
}

func TestGroupStaticMembershipFencing(t *testing.T) {
	parallel(t)
	b := startBroker(t, noDelay())
	c := dial(t, b.Addr)
	createTopic(t, c, "st", 1, nil)
	const g = "static"
	inst := ptr("instance-1")
	r := joinReq(g, "", "range")
	r.GroupInstanceId = inst
	j1 := joinNew(c, r, 5)
	r.MemberId = ""
	wantCode(t, "static join", j1.ErrorCode, nil)
	sr := &wire.SyncGroupResponse{}
	c.roundTrip(syncReq(g, j1.MemberId, j1.GenerationId, map[string]string{j1.MemberId: "mine"}), sr, 5)
	wantCode(t, "sync", sr.ErrorCode, nil)
	// The same instance restarts with no member id: it takes over without a rebalance.
	j2 := join(c, r, 5)
	wantCode(t, "static rejoin", j2.ErrorCode, nil)
	if j2.MemberId == j1.MemberId || j2.GenerationId != j1.GenerationId {
		t.Fatalf("static rejoin: member %s gen %d (was %s gen %d)", j2.MemberId, j2.GenerationId, j1.MemberId, j1.GenerationId)
	}
	// As Kafka: the reply names the leader as it was, so the replaced leader does not assign.
	if j2.Leader != j1.MemberId || len(j2.Members) != 0 {
		t.Fatalf("static rejoin: leader %s with %d members, want the old leader id %s and none", j2.Leader, len(j2.Members), j1.MemberId)
	}
	s2 := syncReq(g, j2.MemberId, j2.GenerationId, nil)
	s2.GroupInstanceId = inst
	c.roundTrip(s2, sr, 5)
	if sr.ErrorCode != 0 || string(sr.Assignment) != "mine" {
		t.Fatalf("static member's assignment after rejoin: %v %q", wire.ErrorForCode(sr.ErrorCode), sr.Assignment)
	}
	wantCode(t, "new id heartbeat", heartbeat(c, g, j2.MemberId, j2.GenerationId, inst), nil)
	// The old member id is fenced.
	wantCode(t, "old id heartbeat", heartbeat(c, g, j1.MemberId, j1.GenerationId, inst), wire.ErrFencedInstanceId)
	old := joinReq(g, j1.MemberId, "range")
	old.GroupInstanceId = inst
	wantCode(t, "old id join", join(c, old, 5).ErrorCode, wire.ErrFencedInstanceId)
	wantCode(t, "old id commit", commitStatic(c, g, j1.MemberId, j1.GenerationId, inst), wire.ErrFencedInstanceId)
	wantCode(t, "new id commit", commitStatic(c, g, j2.MemberId, j2.GenerationId, inst), nil)
	lr := &wire.LeaveGroupResponse{}
	c.roundTrip(&wire.LeaveGroupRequest{GroupId: g, Members: []wire.LeaveGroupRequestMemberIdentity{{MemberId: j1.MemberId, GroupInstanceId: inst}}}, lr, 4)
	if lr.Members[0].ErrorCode != wire.ErrFencedInstanceId.Code {
		t.Fatalf("leave with the fenced id: %v", wire.ErrorForCode(lr.Members[0].ErrorCode))
	}
	c.roundTrip(&wire.LeaveGroupRequest{GroupId: g, Members: []wire.LeaveGroupRequestMemberIdentity{{GroupInstanceId: inst}}}, lr, 4)
	wantCode(t, "leave by instance id", lr.Members[0].ErrorCode, nil)
}

func commitStatic(c *rawClient, g, member string, gen int32, inst *string) int16 {
	c.t.Helper()
	r := &wire.OffsetCommitRequest{}
	r.Default()
	r.GroupId, r.MemberId, r.GenerationIdOrMemberEpoch, r.GroupInstanceId = g, member, gen, inst
	r.Topics = []wire.OffsetCommitRequestTopic{{Name: "st", Partitions: []wire.OffsetCommitRequestPartition{{PartitionIndex: 0, CommittedOffset: 1, CommittedLeaderEpoch: -1}}}}
	resp := &wire.OffsetCommitResponse{}
	c.roundTrip(r, resp, 8)
	return resp.Topics[0].Partitions[0].ErrorCode
}

func TestGroupOffsetCommitFetch(t *testing.T) {
	parallel(t)
	b := startBroker(t, noDelay())
	c := dial(t, b.Addr)
	createTopic(t, c, "t", 3, nil)
	createTopic(t, c, "st", 1, nil)
	// Standalone commits: generation -1, empty member id.
	wantCode(t, "standalone commit", commitOne(c, "solo", "", -1, "t", 1, 42), nil)
	wantCode(t, "standalone commit 2", commitOne(c, "solo", "", -1, "t", 2, 7), nil)
	wantCode(t, "unknown topic", commitOne(c, "solo", "", -1, "nope", 0, 1), wire.ErrUnknownTopicOrPartition)
	wantCode(t, "bad partition", commitOne(c, "solo", "", -1, "t", 9, 1), wire.ErrUnknownTopicOrPartition)
	wantCode(t, "generation on a missing group", commitOne(c, "ghost-group", "m", 3, "t", 0, 1), wire.ErrIllegalGeneration)

	fr := &wire.OffsetFetchResponse{}
	c.roundTrip(&wire.OffsetFetchRequest{GroupId: "solo", Topics: []wire.OffsetFetchRequestTopic{{Name: "t", PartitionIndexes: []int32{0, 1}}}, RequireStable: true}, fr, 7)
	p := fr.Topics[0].Partitions
	if fr.ErrorCode != 0 || len(p) != 2 || p[0].CommittedOffset != -1 || p[1].CommittedOffset != 42 || *p[1].Metadata != "md-t" {
		t.Fatalf("fetch: %+v", fr)
	}
	// Null topics: every committed partition.
	c.roundTrip(&wire.OffsetFetchRequest{GroupId: "solo"}, fr, 7)
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 2 || fr.Topics[0].Partitions[1].CommittedOffset != 7 {
		t.Fatalf("fetch all: %+v", fr.Topics)
	}
	// v1 (not nullable) for an unknown group.
	c.roundTrip(&wire.OffsetFetchRequest{GroupId: "nobody", Topics: []wire.OffsetFetchRequestTopic{{Name: "t", PartitionIndexes: []int32{0}}}}, fr, 1)
	if fr.Topics[0].Partitions[0].CommittedOffset != -1 {
		t.Fatalf("fetch unknown group: %+v", fr.Topics)
	}
	// A member group: generation and member are checked.
	j := joinNew(c, joinReq("members", "", "range"), 5)
	wantCode(t, "commit before sync", commitOne(c, "members", j.MemberId, j.GenerationId, "t", 0, 5), wire.ErrRebalanceInProgress)
	sr := &wire.SyncGroupResponse{}
	c.roundTrip(syncReq("members", j.MemberId, j.GenerationId, nil), sr, 5)
	wantCode(t, "member commit", commitOne(c, "members", j.MemberId, j.GenerationId, "t", 0, 5), nil)
	wantCode(t, "stale generation", commitOne(c, "members", j.MemberId, j.GenerationId-1, "t", 0, 5), wire.ErrIllegalGeneration)
	wantCode(t, "unknown member", commitOne(c, "members", "ghost", j.GenerationId, "t", 0, 5), wire.ErrUnknownMemberId)
	wantCode(t, "standalone on a live group", commitOne(c, "members", "", -1, "t", 0, 5), wire.ErrUnknownMemberId)
	// ListGroups: the standalone group has no protocol type.
	lg := &wire.ListGroupsResponse{}
	c.roundTrip(&wire.ListGroupsRequest{}, lg, 3)
	got := map[string]string{}
	for _, g := range lg.Groups {
		got[g.GroupId] = g.ProtocolType
	}
	if len(got) != 2 || got["solo"] != "" || got["members"] != "consumer" {
		t.Fatalf("list groups: %v", got)
	}
}

func TestGroupInitialRebalanceDelayGathersMembers(t *testing.T) {
	parallel(t)
	b := startBroker(t, map[string]string{"group.initial.rebalance.delay.ms": "500"})
	a, c := dial(t, b.Addr), dial(t, b.Addr)
	ia := a.send(joinReq("slow", "", "range"), 3)
	ic := c.send(joinReq("slow", "", "range"), 3)
	ja, jc := &wire.JoinGroupResponse{}, &wire.JoinGroupResponse{}
	if a.recv(ja, 3) != ia || c.recv(jc, 3) != ic {
		t.Fatal("correlation")
	}
	// Both joined within the delay: one generation with both members.
	if ja.GenerationId != 1 || jc.GenerationId != 1 || ja.Leader != jc.Leader {
		t.Fatalf("generations %d %d leaders %s %s", ja.GenerationId, jc.GenerationId, ja.Leader, jc.Leader)
	}
	leader := ja
	if jc.Leader == jc.MemberId {
		leader = jc
	}
	if len(leader.Members) != 2 {
		t.Fatalf("leader saw %d members", len(leader.Members))
	}
}

// A member that does not rejoin within the rebalance timeout is removed; the others go on.
func TestGroupRebalanceTimeoutRemovesLaggards(t *testing.T) {
	parallel(t)
	b := startBroker(t, noDelay())
	a, c := dial(t, b.Addr), dial(t, b.Addr)
	const g = "laggard"
	ra := joinReq(g, "", "range")
	ra.RebalanceTimeoutMs = 300
	ja := join(a, ra, 3)
	sr := &wire.SyncGroupResponse{}
	a.roundTrip(syncReq(g, ja.MemberId, 1, map[string]string{ja.MemberId: "x"}), sr, 3)
	wantCode(t, "sync", sr.ErrorCode, nil)
	rc := joinReq(g, "", "range")
	rc.RebalanceTimeoutMs = 300
	// A never rejoins: after the rebalance timeout C is alone in generation 2, and leads.
	jc := join(c, rc, 3)
	wantCode(t, "join", jc.ErrorCode, nil)
	if jc.GenerationId != 2 || jc.Leader != jc.MemberId || len(jc.Members) != 1 {
		t.Fatalf("after the timeout: %+v", jc)
	}
	wantCode(t, "removed member's heartbeat", heartbeat(a, g, ja.MemberId, 1, nil), wire.ErrUnknownMemberId)
	wantCode(t, "removed member's rejoin", join(a, joinReq(g, ja.MemberId, "range"), 3).ErrorCode, wire.ErrUnknownMemberId)
}

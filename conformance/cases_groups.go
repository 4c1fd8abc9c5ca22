package conformance

import (
	"fmt"
	"strings"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// Consumer groups, the classic protocol, and committed offsets: SPEC.md §8.5-§8.10, §8.17, §8.19.

const protoType = "conformance"

// coordinator finds group's coordinator and waits until it serves the group: the broker
// creates __consumer_offsets on first need and loads it, answering COORDINATOR_NOT_AVAILABLE
// or COORDINATOR_LOAD_IN_PROGRESS meanwhile, which clients retry. On a single node the
// coordinator is the broker c is connected to.
func (t *T) coordinator(c *Conn, group string) wire.FindCoordinatorResponse {
	var resp wire.FindCoordinatorResponse
	t.waitFor("the coordinator of "+group, func() (bool, string) {
		resp = wire.FindCoordinatorResponse{}
		t.Do(c, &wire.FindCoordinatorRequest{Key: group}, &resp, maxV(wire.KeyFindCoordinator))
		if resp.ErrorCode != 0 {
			return false, "FindCoordinator: " + codeName(resp.ErrorCode)
		}
		if group == "" {
			return true, "" // not a valid group to describe
		}
		var d wire.DescribeGroupsResponse
		t.Do(c, &wire.DescribeGroupsRequest{Groups: []string{group}}, &d, maxV(wire.KeyDescribeGroups))
		if len(d.Groups) != 1 || d.Groups[0].ErrorCode != 0 {
			return false, fmt.Sprintf("DescribeGroups: %+v", d.Groups)
		}
		return true, ""
	})
	return resp
}

// newGroup names a new group and waits for its coordinator, on a new connection.
func (t *T) newGroup() (*Conn, string) {
	c, group := t.Conn(), t.Name("g")
	t.coordinator(c, group)
	return c, group
}

// coordinatorMoving reports the coordinator errors clients retry after finding the
// coordinator again: Kafka answers them for a while after creating __consumer_offsets.
func coordinatorMoving(code int16) bool {
	switch wire.ErrorForCode(code) {
	case wire.ErrCoordinatorNotAvailable, wire.ErrCoordinatorLoadInProgress, wire.ErrNotCoordinator:
		return true
	}
	return false
}

// member is one raw group member on its own connection.
type member struct {
	c          *Conn
	group, id  string
	generation int32
	leader     string
}

func joinReq(group, memberID, ptype string) *wire.JoinGroupRequest {
	req := def[wire.JoinGroupRequest]()
	req.GroupId, req.MemberId, req.ProtocolType = group, memberID, ptype
	req.SessionTimeoutMs, req.RebalanceTimeoutMs = 30000, 20000
	req.Protocols = []wire.JoinGroupRequestProtocol{{Name: "p1", Metadata: []byte("meta")}}
	return req
}

// join makes a new member join group (the two-step join of v4+) and returns it. Like
// clients, it starts over when the coordinator forgot the member id it handed out
// (UNKNOWN_MEMBER_ID) or moved, which Kafka does now and then while its coordinator settles.
func (t *T) join(group string) *member {
	c := t.Conn()
	t.coordinator(c, group)
	v := maxV(wire.KeyJoinGroup)
	for attempt := 1; ; attempt++ {
		var first wire.JoinGroupResponse
		t.waitFor("the coordinator to take a JoinGroup", func() (bool, string) {
			first = wire.JoinGroupResponse{}
			t.Do(c, joinReq(group, "", protoType), &first, v)
			return !coordinatorMoving(first.ErrorCode), codeName(first.ErrorCode)
		})
		if first.ErrorCode != wire.CodeOf(wire.ErrMemberIdRequired) || first.MemberId == "" {
			t.Fatalf("first JoinGroup: %s, member id %q; want MEMBER_ID_REQUIRED with an id", codeName(first.ErrorCode), first.MemberId)
		}
		m := &member{c: c, group: group, id: first.MemberId}
		var resp wire.JoinGroupResponse
		t.Do(c, joinReq(group, m.id, protoType), &resp, v)
		if (resp.ErrorCode == wire.CodeOf(wire.ErrUnknownMemberId) || coordinatorMoving(resp.ErrorCode)) && attempt < 5 {
			continue
		}
		if resp.ErrorCode != 0 {
			t.Fatalf("JoinGroup: %s", codeName(resp.ErrorCode))
		}
		m.generation, m.leader = resp.GenerationId, resp.Leader
		return m
	}
}

// sync sends SyncGroup for m (as leader, assigning the given bytes to itself) and returns the
// error code and assignment.
func (t *T) sync(m *member, generation int32, memberID string, assign []byte) (int16, []byte) {
	req := def[wire.SyncGroupRequest]()
	req.GroupId, req.GenerationId, req.MemberId = m.group, generation, memberID
	req.ProtocolType, req.ProtocolName = ptr(protoType), ptr("p1")
	if assign != nil {
		req.Assignments = []wire.SyncGroupRequestAssignment{{MemberId: memberID, Assignment: assign}}
	}
	var resp wire.SyncGroupResponse
	t.Do(m.c, req, &resp, maxV(wire.KeySyncGroup))
	return resp.ErrorCode, resp.Assignment
}

// stable joins a one-member group and syncs it.
func (t *T) stable(group string) *member {
	m := t.join(group)
	if code, _ := t.sync(m, m.generation, m.id, []byte("a")); code != 0 {
		t.Fatalf("SyncGroup: %s", codeName(code))
	}
	return m
}

func (t *T) heartbeat(m *member, generation int32, memberID string) int16 {
	req := def[wire.HeartbeatRequest]()
	req.GroupId, req.GenerationId, req.MemberId = m.group, generation, memberID
	var resp wire.HeartbeatResponse
	t.Do(m.c, req, &resp, maxV(wire.KeyHeartbeat))
	return resp.ErrorCode
}

func (t *T) describeGroup(c *Conn, group string) wire.DescribeGroupsResponseDescribedGroup {
	var resp wire.DescribeGroupsResponse
	t.Do(c, &wire.DescribeGroupsRequest{Groups: []string{group}}, &resp, maxV(wire.KeyDescribeGroups))
	if len(resp.Groups) != 1 {
		t.Fatalf("DescribeGroups: %d groups, want 1", len(resp.Groups))
	}
	return resp.Groups[0]
}

func commitReq(group string, generation int32, memberID, topic string, p int32, offset int64, meta string) *wire.OffsetCommitRequest {
	req := def[wire.OffsetCommitRequest]()
	req.GroupId, req.GenerationIdOrMemberEpoch, req.MemberId = group, generation, memberID
	part := wire.OffsetCommitRequestPartition{PartitionIndex: p, CommittedOffset: offset, CommittedLeaderEpoch: -1, CommittedMetadata: &meta}
	req.Topics = []wire.OffsetCommitRequestTopic{{Name: topic, Partitions: []wire.OffsetCommitRequestPartition{part}}}
	return req
}

// commit commits one offset and returns the partition's error code.
func (t *T) commit(c *Conn, req *wire.OffsetCommitRequest) int16 {
	var resp wire.OffsetCommitResponse
	t.Do(c, req, &resp, maxV(wire.KeyOffsetCommit))
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("OffsetCommit: want one partition in the response, got %+v", resp.Topics)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// committed fetches group's committed offsets; topics nil asks for all of them.
func (t *T) committed(c *Conn, group string, topics []wire.OffsetFetchRequestTopic) map[string]wire.OffsetFetchResponsePartition {
	var resp wire.OffsetFetchResponse
	t.Do(c, &wire.OffsetFetchRequest{GroupId: group, Topics: topics}, &resp, maxV(wire.KeyOffsetFetch))
	t.wantCode("OffsetFetch", resp.ErrorCode, nil)
	out := map[string]wire.OffsetFetchResponsePartition{}
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			out[fmt.Sprintf("%s/%d", tp.Name, p.PartitionIndex)] = p
		}
	}
	return out
}

func init() {
	for v := int16(0); v <= maxV(wire.KeyFindCoordinator); v++ {
		register(&Case{ID: fmt.Sprintf("groups/find-coordinator-v%d", v), Spec: "§8.7",
			Desc: fmt.Sprintf("FindCoordinator v%d names a broker of the cluster for a group", v),
			Run: func(t *T) {
				c, group := t.newGroup()
				var resp wire.FindCoordinatorResponse
				t.Do(c, &wire.FindCoordinatorRequest{Key: group}, &resp, v)
				t.wantCode("FindCoordinator", resp.ErrorCode, nil)
				var md wire.MetadataResponse
				t.Do(c, &wire.MetadataRequest{Topics: []wire.MetadataRequestTopic{}}, &md, 1)
				found := false
				for _, b := range md.Brokers {
					found = found || (b.NodeId == resp.NodeId && b.Host == resp.Host && b.Port == resp.Port)
				}
				if !found {
					t.Errorf("coordinator %d at %s:%d is not among the brokers of Metadata", resp.NodeId, resp.Host, resp.Port)
				}
			}})
	}
	register(&Case{ID: "groups/member-id-required", Spec: "§8.8",
		Desc: "JoinGroup v4+ with an empty member id gets MEMBER_ID_REQUIRED and a member id to rejoin with",
		Run: func(t *T) {
			m := t.join(t.Name("g")) // join checks the first answer
			if m.generation < 1 || m.leader != m.id {
				t.Errorf("generation %d, leader %q; want >= 1 and the only member %q", m.generation, m.leader, m.id)
			}
		}})
	register(&Case{ID: "groups/join-v3-direct", Spec: "§8.8",
		Desc: "JoinGroup v3 (before MEMBER_ID_REQUIRED) joins in one step and gets a member id",
		Run: func(t *T) {
			c, group := t.newGroup()
			var resp wire.JoinGroupResponse
			t.Do(c, joinReq(group, "", protoType), &resp, 3)
			t.wantCode("JoinGroup v3", resp.ErrorCode, nil)
			if resp.MemberId == "" || resp.Leader != resp.MemberId || resp.GenerationId < 1 {
				t.Errorf("member %q leader %q generation %d", resp.MemberId, resp.Leader, resp.GenerationId)
			}
		}})
	register(&Case{ID: "groups/lifecycle", Spec: "§8.8",
		Desc: "join, sync (the leader's assignment comes back), heartbeat, leave; the group goes Stable then Empty (or Dead)",
		Run: func(t *T) {
			group := t.Name("g")
			m := t.join(group)
			code, got := t.sync(m, m.generation, m.id, []byte("assignment-bytes"))
			t.wantCode("SyncGroup", code, nil)
			if string(got) != "assignment-bytes" {
				t.Errorf("assignment %q, want the leader's %q", got, "assignment-bytes")
			}
			t.wantCode("Heartbeat", t.heartbeat(m, m.generation, m.id), nil)
			d := t.describeGroup(m.c, group)
			if d.GroupState != "Stable" || len(d.Members) != 1 || d.ProtocolType != protoType || d.ProtocolData != "p1" {
				t.Errorf("described as %s with %d members, protocol %s/%s; want Stable, 1, %s/p1", d.GroupState, len(d.Members), d.ProtocolType, d.ProtocolData, protoType)
			}
			var leave wire.LeaveGroupResponse
			t.Do(m.c, &wire.LeaveGroupRequest{GroupId: group, Members: []wire.LeaveGroupRequestMemberIdentity{{MemberId: m.id}}}, &leave, maxV(wire.KeyLeaveGroup))
			t.wantCode("LeaveGroup", leave.ErrorCode, nil)
			// Empty, or Dead once the broker dropped the empty group (it has no offsets to
			// keep): Kafka does that on its own schedule.
			if d := t.describeGroup(m.c, group); (d.GroupState != "Empty" && d.GroupState != "Dead") || len(d.Members) != 0 {
				t.Errorf("after leaving: %s with %d members, want Empty (or Dead) and 0", d.GroupState, len(d.Members))
			}
		}})
	register(&Case{ID: "groups/heartbeat-unknown-member", Spec: "§8.8",
		Desc: "a heartbeat from a member the group does not know gets UNKNOWN_MEMBER_ID",
		Run: func(t *T) {
			m := t.stable(t.Name("g"))
			t.wantCode("Heartbeat", t.heartbeat(m, m.generation, "nobody"), wire.ErrUnknownMemberId)
		}})
	register(&Case{ID: "groups/heartbeat-illegal-generation", Spec: "§8.8",
		Desc: "a heartbeat with a generation that is not the group's gets ILLEGAL_GENERATION",
		Run: func(t *T) {
			m := t.stable(t.Name("g"))
			t.wantCode("Heartbeat", t.heartbeat(m, m.generation+5, m.id), wire.ErrIllegalGeneration)
		}})
	register(&Case{ID: "groups/sync-unknown-member", Spec: "§8.8",
		Desc: "SyncGroup from an unknown member gets UNKNOWN_MEMBER_ID",
		Run: func(t *T) {
			m := t.stable(t.Name("g"))
			code, _ := t.sync(m, m.generation, "nobody", nil)
			t.wantCode("SyncGroup", code, wire.ErrUnknownMemberId)
		}})
	register(&Case{ID: "groups/sync-illegal-generation", Spec: "§8.8",
		Desc: "SyncGroup with a wrong generation gets ILLEGAL_GENERATION",
		Run: func(t *T) {
			m := t.join(t.Name("g"))
			code, _ := t.sync(m, m.generation+1, m.id, []byte("a"))
			t.wantCode("SyncGroup", code, wire.ErrIllegalGeneration)
		}})
	register(&Case{ID: "groups/invalid-session-timeout", Spec: "§8.8",
		Desc: "a session timeout below group.min.session.timeout.ms (6 s by default) gets INVALID_SESSION_TIMEOUT",
		Run: func(t *T) {
			c, group := t.newGroup()
			req := joinReq(group, "", protoType)
			req.SessionTimeoutMs = 100
			var resp wire.JoinGroupResponse
			t.Do(c, req, &resp, maxV(wire.KeyJoinGroup))
			t.wantCode("JoinGroup with a 100 ms session", resp.ErrorCode, wire.ErrInvalidSessionTimeout)
		}})
	register(&Case{ID: "groups/empty-group-id", Spec: "§8.8",
		Desc: "JoinGroup with an empty group id gets INVALID_GROUP_ID",
		Run: func(t *T) {
			c := t.Conn()
			t.coordinator(c, "")
			var resp wire.JoinGroupResponse
			t.Do(c, joinReq("", "", protoType), &resp, maxV(wire.KeyJoinGroup))
			t.wantCode("JoinGroup \"\"", resp.ErrorCode, wire.ErrInvalidGroupId)
		}})
	register(&Case{ID: "groups/inconsistent-protocol", Spec: "§8.8",
		Desc: "a member joining with another protocol type than the group's gets INCONSISTENT_GROUP_PROTOCOL",
		Run: func(t *T) {
			m := t.stable(t.Name("g"))
			var resp wire.JoinGroupResponse
			t.Do(t.Conn(), joinReq(m.group, "", "other-type"), &resp, 3)
			t.wantCode("JoinGroup with another protocol type", resp.ErrorCode, wire.ErrInconsistentGroupProtocol)
		}})
	register(&Case{ID: "groups/rebalance-on-join", Spec: "§8.8",
		Desc: "a second member joining makes the first one's heartbeat answer REBALANCE_IN_PROGRESS; both rejoin into the next generation",
		Run: func(t *T) {
			group := t.Name("g")
			a := t.stable(group)
			b := &member{c: t.Conn(), group: group}
			var bFirst wire.JoinGroupResponse
			t.Do(b.c, joinReq(group, "", protoType), &bFirst, maxV(wire.KeyJoinGroup))
			if bFirst.ErrorCode != wire.CodeOf(wire.ErrMemberIdRequired) {
				t.Fatalf("second member's first join: %s", codeName(bFirst.ErrorCode))
			}
			b.id = bFirst.MemberId
			v := maxV(wire.KeyJoinGroup)
			bCorr, err := b.c.Send(joinReq(group, b.id, protoType), v) // parked until a rejoins
			if err != nil {
				t.Fatalf("%v", err)
			}
			t.waitFor("a rebalance to begin", func() (bool, string) {
				code := t.heartbeat(a, a.generation, a.id)
				return code == wire.CodeOf(wire.ErrRebalanceInProgress), codeName(code)
			})
			var aResp, bResp wire.JoinGroupResponse
			t.Do(a.c, joinReq(group, a.id, protoType), &aResp, v)
			if err := b.c.Recv(&bResp, v, bCorr, 40*time.Second); err != nil {
				t.Fatalf("second member's join: %v", err)
			}
			t.wantCode("rejoin", aResp.ErrorCode, nil)
			t.wantCode("second join", bResp.ErrorCode, nil)
			if aResp.GenerationId != a.generation+1 || bResp.GenerationId != aResp.GenerationId {
				t.Errorf("generations %d and %d, want both %d", aResp.GenerationId, bResp.GenerationId, a.generation+1)
			}
			leader := aResp
			if bResp.Leader == b.id {
				leader = bResp
			}
			if len(leader.Members) != 2 {
				t.Errorf("the leader sees %d members, want 2", len(leader.Members))
			}
		}})
	register(&Case{ID: "groups/leave-unknown-member", Spec: "§8.8",
		Desc: "LeaveGroup v3+ for an unknown member reports UNKNOWN_MEMBER_ID for that member",
		Run: func(t *T) {
			m := t.stable(t.Name("g"))
			var resp wire.LeaveGroupResponse
			t.Do(m.c, &wire.LeaveGroupRequest{GroupId: m.group, Members: []wire.LeaveGroupRequestMemberIdentity{{MemberId: "nobody"}}}, &resp, maxV(wire.KeyLeaveGroup))
			code := resp.ErrorCode
			if code == 0 && len(resp.Members) == 1 {
				code = resp.Members[0].ErrorCode
			}
			t.wantCode("LeaveGroup", code, wire.ErrUnknownMemberId)
		}})
	register(&Case{ID: "groups/commit-standalone", Spec: "§8.5",
		Desc: "a commit with generation -1 to an empty group is stored, and OffsetFetch returns it with its metadata",
		Run: func(t *T) {
			topic := t.Topic(2)
			c, group := t.newGroup()
			t.wantCode("OffsetCommit", t.commit(c, commitReq(group, -1, "", topic, 1, 42, "meta-1")), nil)
			got := t.committed(c, group, []wire.OffsetFetchRequestTopic{{Name: topic, PartitionIndexes: []int32{0, 1}}})
			p1, p0 := got[topic+"/1"], got[topic+"/0"]
			if p1.CommittedOffset != 42 || p1.Metadata == nil || *p1.Metadata != "meta-1" {
				t.Errorf("partition 1: offset %d metadata %v, want 42 meta-1", p1.CommittedOffset, p1.Metadata)
			}
			if p0.CommittedOffset != -1 || p0.ErrorCode != 0 {
				t.Errorf("uncommitted partition 0: offset %d error %s, want -1 and NONE", p0.CommittedOffset, codeName(p0.ErrorCode))
			}
		}})
	register(&Case{ID: "groups/offset-fetch-all", Spec: "§8.6",
		Desc: "OffsetFetch with null topics returns every partition the group has commits for",
		Run: func(t *T) {
			topic := t.Topic(3)
			c, group := t.newGroup()
			for p := range int32(2) {
				t.wantCode("OffsetCommit", t.commit(c, commitReq(group, -1, "", topic, p, int64(10+p), "")), nil)
			}
			got := t.committed(c, group, nil)
			if len(got) != 2 || got[topic+"/0"].CommittedOffset != 10 || got[topic+"/1"].CommittedOffset != 11 {
				t.Errorf("all committed offsets: %v, want %s/0=10 and %s/1=11", got, topic, topic)
			}
		}})
	register(&Case{ID: "groups/offset-fetch-unknown-group", Spec: "§8.6",
		Desc: "OffsetFetch for a group that never committed returns -1 with no error",
		Run: func(t *T) {
			topic := t.Topic(1)
			c, group := t.newGroup()
			got := t.committed(c, group, []wire.OffsetFetchRequestTopic{{Name: topic, PartitionIndexes: []int32{0}}})
			if p := got[topic+"/0"]; p.CommittedOffset != -1 || p.ErrorCode != 0 {
				t.Errorf("offset %d error %s, want -1 NONE", p.CommittedOffset, codeName(p.ErrorCode))
			}
		}})
	register(&Case{ID: "groups/commit-member-generation", Spec: "§8.5",
		Desc: "a member commits with its generation; an unknown member gets UNKNOWN_MEMBER_ID and a wrong generation ILLEGAL_GENERATION",
		Run: func(t *T) {
			topic := t.Topic(1)
			m := t.stable(t.Name("g"))
			t.wantCode("member commit", t.commit(m.c, commitReq(m.group, m.generation, m.id, topic, 0, 5, "")), nil)
			t.wantCode("unknown member", t.commit(m.c, commitReq(m.group, m.generation, "nobody", topic, 0, 6, "")), wire.ErrUnknownMemberId)
			t.wantCode("wrong generation", t.commit(m.c, commitReq(m.group, m.generation+3, m.id, topic, 0, 7, "")), wire.ErrIllegalGeneration)
			got := t.committed(m.c, m.group, []wire.OffsetFetchRequestTopic{{Name: topic, PartitionIndexes: []int32{0}}})
			if o := got[topic+"/0"].CommittedOffset; o != 5 {
				t.Errorf("committed offset %d after refused commits, want 5", o)
			}
		}})
	register(&Case{ID: "groups/commit-unknown-partition", Spec: "§8.5",
		Desc: "a commit for a topic that does not exist gets UNKNOWN_TOPIC_OR_PARTITION",
		Run: func(t *T) {
			c, group := t.newGroup()
			t.wantCode("OffsetCommit", t.commit(c, commitReq(group, -1, "", t.Name("missing"), 0, 1, "")), wire.ErrUnknownTopicOrPartition)
		}})
	register(&Case{ID: "groups/commit-metadata-too-large", Spec: "§8.5",
		Desc: "commit metadata above offset.metadata.max.bytes (4096) gets OFFSET_METADATA_TOO_LARGE",
		Run: func(t *T) {
			topic := t.Topic(1)
			c, group := t.newGroup()
			t.wantCode("OffsetCommit", t.commit(c, commitReq(group, -1, "", topic, 0, 1, strings.Repeat("m", 5000))), wire.ErrOffsetMetadataTooLarge)
		}})
	register(&Case{ID: "groups/describe-unknown", Spec: "§8.9",
		Desc: "DescribeGroups for a group that does not exist answers state Dead with no error",
		Run: func(t *T) {
			c, group := t.newGroup()
			d := t.describeGroup(c, group)
			t.wantCode("DescribeGroups", d.ErrorCode, nil)
			if d.GroupState != "Dead" || len(d.Members) != 0 {
				t.Errorf("state %q with %d members, want Dead and none", d.GroupState, len(d.Members))
			}
		}})
	register(&Case{ID: "groups/list-groups", Spec: "§8.10",
		Desc: "ListGroups lists a stable group with its protocol type and state (v4)",
		Run: func(t *T) {
			m := t.stable(t.Name("g"))
			var resp wire.ListGroupsResponse
			t.Do(m.c, &wire.ListGroupsRequest{}, &resp, maxV(wire.KeyListGroups))
			t.wantCode("ListGroups", resp.ErrorCode, nil)
			for _, g := range resp.Groups {
				if g.GroupId == m.group {
					if g.ProtocolType != protoType || g.GroupState != "Stable" {
						t.Errorf("listed with type %q state %q, want %q Stable", g.ProtocolType, g.GroupState, protoType)
					}
					return
				}
			}
			t.Errorf("group %s is not listed", m.group)
		}})
	register(&Case{ID: "groups/delete", Spec: "§8.17",
		Desc: "DeleteGroups refuses a group with members (NON_EMPTY_GROUP), deletes an empty one that has committed offsets, and reports GROUP_ID_NOT_FOUND after",
		Run: func(t *T) {
			topic := t.Topic(1)
			m := t.stable(t.Name("g"))
			// A committed offset keeps the group once its last member leaves: Apache Kafka
			// drops an empty group without offsets as soon as its rebalance completes, so
			// deleting that one may already find nothing.
			t.wantCode("OffsetCommit", t.commit(m.c, commitReq(m.group, m.generation, m.id, topic, 0, 1, "")), nil)
			del := func() int16 {
				var resp wire.DeleteGroupsResponse
				t.Do(m.c, &wire.DeleteGroupsRequest{GroupsNames: []string{m.group}}, &resp, maxV(wire.KeyDeleteGroups))
				return resp.Results[0].ErrorCode
			}
			t.wantCode("delete a group with a member", del(), wire.ErrNonEmptyGroup)
			var leave wire.LeaveGroupResponse
			t.Do(m.c, &wire.LeaveGroupRequest{GroupId: m.group, Members: []wire.LeaveGroupRequestMemberIdentity{{MemberId: m.id}}}, &leave, maxV(wire.KeyLeaveGroup))
			t.wantCode("delete the empty group", del(), nil)
			t.wantCode("delete it again", del(), wire.ErrGroupIdNotFound)
		}})
	register(&Case{ID: "groups/offset-delete", Spec: "§8.19",
		Desc: "OffsetDelete removes an empty group's committed offset",
		Run: func(t *T) {
			topic := t.Topic(1)
			c, group := t.newGroup()
			t.wantCode("OffsetCommit", t.commit(c, commitReq(group, -1, "", topic, 0, 3, "")), nil)
			var resp wire.OffsetDeleteResponse
			t.Do(c, &wire.OffsetDeleteRequest{GroupId: group, Topics: []wire.OffsetDeleteRequestTopic{{Name: topic, Partitions: []wire.OffsetDeleteRequestPartition{{PartitionIndex: 0}}}}}, &resp, 0)
			t.wantCode("OffsetDelete", resp.ErrorCode, nil)
			if len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 {
				t.wantCode("OffsetDelete partition", resp.Topics[0].Partitions[0].ErrorCode, nil)
			}
			got := t.committed(c, group, []wire.OffsetFetchRequestTopic{{Name: topic, PartitionIndexes: []int32{0}}})
			if o := got[topic+"/0"].CommittedOffset; o != -1 {
				t.Errorf("committed offset %d after OffsetDelete, want -1", o)
			}
		}})
}

func init() {
	register(&Case{ID: "groups/join-unknown-member-id", Spec: "§8.8",
		Desc: "JoinGroup with a member id the group never gave out gets UNKNOWN_MEMBER_ID",
		Run: func(t *T) {
			m := t.stable(t.Name("g"))
			var resp wire.JoinGroupResponse
			t.Do(t.Conn(), joinReq(m.group, "made-up-member", protoType), &resp, maxV(wire.KeyJoinGroup))
			t.wantCode("JoinGroup", resp.ErrorCode, wire.ErrUnknownMemberId)
		}})
	register(&Case{ID: "groups/commit-rebalance-in-progress", Spec: "§8.5",
		Desc: "a member's commit between JoinGroup and SyncGroup (CompletingRebalance) gets REBALANCE_IN_PROGRESS",
		Run: func(t *T) {
			topic := t.Topic(1)
			m := t.join(t.Name("g"))
			code := t.commit(m.c, commitReq(m.group, m.generation, m.id, topic, 0, 1, ""))
			t.wantCode("OffsetCommit before SyncGroup", code, wire.ErrRebalanceInProgress)
		}})
	register(&Case{ID: "groups/static-member-fenced", Spec: "§8.8",
		Desc: "a static member (GroupInstanceId) rejoining gets a new member id without error, and its old member id is fenced (FENCED_INSTANCE_ID)",
		Run: func(t *T) {
			c, group := t.newGroup()
			v := maxV(wire.KeyJoinGroup)
			static := func(c *Conn) wire.JoinGroupResponse {
				req := joinReq(group, "", protoType)
				req.GroupInstanceId = ptr("instance-1")
				var resp wire.JoinGroupResponse
				t.Do(c, req, &resp, v)
				if resp.ErrorCode != 0 || resp.MemberId == "" {
					t.Fatalf("static JoinGroup: %s, member id %q", codeName(resp.ErrorCode), resp.MemberId)
				}
				return resp
			}
			first := static(c)
			m := &member{c: c, group: group, id: first.MemberId, generation: first.GenerationId}
			sync := def[wire.SyncGroupRequest]()
			sync.GroupId, sync.GenerationId, sync.MemberId, sync.GroupInstanceId = group, m.generation, m.id, ptr("instance-1")
			sync.ProtocolType, sync.ProtocolName = ptr(protoType), ptr("p1")
			sync.Assignments = []wire.SyncGroupRequestAssignment{{MemberId: m.id, Assignment: []byte("a")}}
			var sr wire.SyncGroupResponse
			t.Do(c, sync, &sr, maxV(wire.KeySyncGroup))
			t.wantCode("SyncGroup", sr.ErrorCode, nil)
			again := static(t.Conn())
			if again.MemberId == first.MemberId {
				t.Errorf("the rejoined static member kept member id %q, want a new one", again.MemberId)
			}
			hb := def[wire.HeartbeatRequest]()
			hb.GroupId, hb.GenerationId, hb.MemberId, hb.GroupInstanceId = group, m.generation, m.id, ptr("instance-1")
			var hr wire.HeartbeatResponse
			t.Do(c, hb, &hr, maxV(wire.KeyHeartbeat))
			t.wantCode("Heartbeat with the replaced member id", hr.ErrorCode, wire.ErrFencedInstanceId)
		}})
}

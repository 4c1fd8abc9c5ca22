package server

// DescribeGroups (key 15), versions 0-5; flexible from 5.
//
// State, protocol type, and members (client id, instance id from v4). A Stable group also
// shows its protocol and each member's metadata and assignment; other states show them empty,
// as Kafka does. An unknown group is described as Dead with no error (as Kafka before
// DescribeGroups v6). Authorized operations are not computed (INT32_MIN).
//
// Authorization (with authorizer.class.name set): Describe on each group, else
// GROUP_AUTHORIZATION_FAILED for it.

import (
	"context"

	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleDescribeGroups(s *Server, ctx context.Context, req *request) *pending {
	s.ensureOffsetsTopic(ctx) // on failure the coordinator answers NOT_COORDINATOR
	r := req.msg.(*wire.DescribeGroupsRequest)
	resp := &wire.DescribeGroupsResponse{}
	resp.Default()
	for _, id := range r.Groups {
		if !s.allowed(req, security.OpDescribe, security.ResourceGroup, id) {
			resp.Groups = append(resp.Groups, wire.DescribeGroupsResponseDescribedGroup{GroupId: id, ErrorCode: wire.ErrGroupAuthorizationFailed.Code,
				Members: []wire.DescribeGroupsResponseDescribedGroupMember{}, AuthorizedOperations: -1 << 31})
			continue
		}
		d := s.groups.Describe(id)
		dg := wire.DescribeGroupsResponseDescribedGroup{GroupId: d.GroupID, GroupState: d.State, ProtocolType: d.ProtocolType, ProtocolData: d.Protocol, AuthorizedOperations: -1 << 31}
		if id == "" {
			dg.ErrorCode = wire.ErrInvalidGroupId.Code
		} else if d.Err != 0 {
			dg.ErrorCode = d.Err
		}
		dg.Members = []wire.DescribeGroupsResponseDescribedGroupMember{}
		for _, m := range d.Members {
			dg.Members = append(dg.Members, wire.DescribeGroupsResponseDescribedGroupMember{MemberId: m.MemberID, GroupInstanceId: m.InstanceID,
				ClientId: m.ClientID, ClientHost: m.ClientHost, MemberMetadata: m.Metadata, MemberAssignment: m.Assignment})
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return ready(reply{msg: resp})
}

package server

// LeaveGroup (key 13), versions 0-4; flexible from 4.
//
// v0-2 remove one member (MemberId; its error is the top-level one); v3+ remove a batch of
// members by member id or group.instance.id, each with its own error (UNKNOWN_MEMBER_ID,
// FENCED_INSTANCE_ID when the instance is held by another member id). Leaving members'
// partitions move at once: the group starts a rebalance.
//
// Authorization (with authorizer.class.name set): Read on the group, else
// GROUP_AUTHORIZATION_FAILED.

import (
	"context"
	"strings"

	"github.com/spoolmq/spool/broker/internal/group"
	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleLeaveGroup(s *Server, ctx context.Context, req *request) *pending {
	s.ensureOffsetsTopic(ctx) // on failure the coordinator answers NOT_COORDINATOR
	r := req.msg.(*wire.LeaveGroupRequest)
	resp := &wire.LeaveGroupResponse{}
	resp.Default()
	if !s.allowed(req, security.OpRead, security.ResourceGroup, r.GroupId) {
		resp.ErrorCode = wire.ErrGroupAuthorizationFailed.Code
		return ready(reply{msg: resp})
	}
	var leaving []group.Leaving
	if req.version < 3 {
		leaving = []group.Leaving{{MemberID: strings.Clone(r.MemberId)}}
	} else {
		for _, m := range r.Members {
			leaving = append(leaving, group.Leaving{MemberID: strings.Clone(m.MemberId), InstanceID: clonePtr(m.GroupInstanceId)})
		}
	}
	top, codes := s.groups.Leave(strings.Clone(r.GroupId), leaving)
	resp.ErrorCode = top
	if req.version < 3 {
		if top == 0 && len(codes) == 1 {
			resp.ErrorCode = codes[0]
		}
		return ready(reply{msg: resp})
	}
	for i, l := range leaving {
		resp.Members = append(resp.Members, wire.LeaveGroupResponseMemberResponse{MemberId: l.MemberID, GroupInstanceId: l.InstanceID, ErrorCode: codes[i]})
	}
	return ready(reply{msg: resp})
}

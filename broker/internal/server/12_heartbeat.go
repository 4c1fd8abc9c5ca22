package server

// Heartbeat (key 12), versions 0-4; flexible from 4.
//
// Keeps a member's session alive. REBALANCE_IN_PROGRESS while the group prepares a rebalance
// (the member must rejoin), UNKNOWN_MEMBER_ID for a member the group does not know (or an
// Empty or unknown group), ILLEGAL_GENERATION for a stale generation, FENCED_INSTANCE_ID (v3+)
// for a replaced static member. During CompletingRebalance a heartbeat of the new generation
// is fine.
//
// Authorization (with authorizer.class.name set): Read on the group, else
// GROUP_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleHeartbeat(s *Server, ctx context.Context, req *request) *pending {
	s.ensureOffsetsTopic(ctx) // on failure the coordinator answers NOT_COORDINATOR
	r := req.msg.(*wire.HeartbeatRequest)
	resp := &wire.HeartbeatResponse{}
	resp.Default()
	if !s.allowed(req, security.OpRead, security.ResourceGroup, r.GroupId) {
		resp.ErrorCode = wire.ErrGroupAuthorizationFailed.Code
		return ready(reply{msg: resp})
	}
	resp.ErrorCode = s.groups.Heartbeat(r.GroupId, r.MemberId, r.GroupInstanceId, r.GenerationId)
	return ready(reply{msg: resp})
}

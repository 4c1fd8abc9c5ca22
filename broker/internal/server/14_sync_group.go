package server

// SyncGroup (key 14), versions 0-5; flexible from 4.
//
// The leader's assignments are stored (group metadata record in __consumer_offsets, durable)
// and passed to every member verbatim; followers wait for them. REBALANCE_IN_PROGRESS while
// the group prepares a rebalance, ILLEGAL_GENERATION and UNKNOWN_MEMBER_ID for stale members,
// FENCED_INSTANCE_ID (v3+) for a replaced static member. v5 checks and echoes the protocol
// type and name (INCONSISTENT_GROUP_PROTOCOL when they differ).
//
// Authorization (with authorizer.class.name set): Read on the group, else
// GROUP_AUTHORIZATION_FAILED.

import (
	"context"
	"slices"
	"strings"

	"github.com/spoolmq/spool/broker/internal/group"
	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleSyncGroup(s *Server, ctx context.Context, req *request) *pending {
	s.ensureOffsetsTopic(ctx) // on failure the coordinator answers NOT_COORDINATOR
	r := req.msg.(*wire.SyncGroupRequest)
	if !s.allowed(req, security.OpRead, security.ResourceGroup, r.GroupId) {
		resp := &wire.SyncGroupResponse{}
		resp.Default()
		resp.ErrorCode, resp.Assignment = wire.ErrGroupAuthorizationFailed.Code, []byte{}
		return ready(reply{msg: resp})
	}
	sr := group.SyncRequest{
		GroupID:      strings.Clone(r.GroupId),
		MemberID:     strings.Clone(r.MemberId),
		InstanceID:   clonePtr(r.GroupInstanceId),
		Generation:   r.GenerationId,
		ProtocolType: clonePtr(r.ProtocolType),
		Protocol:     clonePtr(r.ProtocolName),
	}
	if len(r.Assignments) > 0 {
		sr.Assignments = make(map[string][]byte, len(r.Assignments))
		for _, a := range r.Assignments {
			b := slices.Clone(a.Assignment)
			if b == nil {
				b = []byte{}
			}
			sr.Assignments[strings.Clone(a.MemberId)] = b
		}
	}
	p := later()
	version := req.version
	s.groups.Sync(sr, func(res group.SyncResult) {
		resp := &wire.SyncGroupResponse{}
		resp.Default()
		resp.ErrorCode = res.Err
		resp.Assignment = res.Assignment
		if resp.Assignment == nil {
			resp.Assignment = []byte{}
		}
		if version >= 5 && res.Err == 0 {
			resp.ProtocolType, resp.ProtocolName = strPtr(res.ProtocolType), strPtr(res.Protocol)
		}
		p.complete(reply{msg: resp})
	})
	return p
}

package server

// JoinGroup (key 11), versions 0-7; flexible from 6.
//
// Kafka's classic protocol (internal/group): a new member without a member id gets
// MEMBER_ID_REQUIRED with its id only from v4 (older clients cannot cope with it); the
// protocol is chosen by the members' votes among those all members support, and a member
// sharing none gets INCONSISTENT_GROUP_PROTOCOL; the reply waits until the join phase ends
// (all members rejoined, the rebalance timeout, or group.initial.rebalance.delay.ms for a new
// group) and the leader gets every member's metadata verbatim. v0 has no rebalance timeout:
// it is the session timeout. v5 adds group.instance.id (static membership); v7 echoes the
// protocol type.
//
// Authorization (with authorizer.class.name set): Read on the group, else
// GROUP_AUTHORIZATION_FAILED.

import (
	"context"
	"strings"
	"time"

	"github.com/spoolmq/spool/broker/internal/group"
	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleJoinGroup(s *Server, ctx context.Context, req *request) *pending {
	s.ensureOffsetsTopic(ctx) // on failure the coordinator answers NOT_COORDINATOR
	r := req.msg.(*wire.JoinGroupRequest)
	if !s.allowed(req, security.OpRead, security.ResourceGroup, r.GroupId) {
		resp := &wire.JoinGroupResponse{}
		resp.Default()
		resp.ErrorCode, resp.GenerationId = wire.ErrGroupAuthorizationFailed.Code, -1
		if req.version < 7 {
			resp.ProtocolName = strPtr("")
		}
		return ready(reply{msg: resp})
	}
	jr := group.JoinRequest{
		GroupID:              strings.Clone(r.GroupId),
		MemberID:             strings.Clone(r.MemberId),
		InstanceID:           clonePtr(r.GroupInstanceId),
		ClientID:             strings.Clone(req.clientID()),
		ClientHost:           clientHost(req),
		SessionTimeout:       time.Duration(r.SessionTimeoutMs) * time.Millisecond,
		RebalanceTimeout:     time.Duration(r.RebalanceTimeoutMs) * time.Millisecond,
		ProtocolType:         strings.Clone(r.ProtocolType),
		RequireKnownMemberID: req.version >= 4,
	}
	if req.version == 0 || r.RebalanceTimeoutMs < 0 {
		jr.RebalanceTimeout = jr.SessionTimeout
	}
	for _, p := range r.Protocols {
		// Copied by the coordinator (copyProtocols) before the frame is reused.
		jr.Protocols = append(jr.Protocols, group.Protocol{Name: p.Name, Metadata: p.Metadata})
	}
	p := later()
	version := req.version
	s.groups.Join(jr, func(res group.JoinResult) {
		resp := &wire.JoinGroupResponse{}
		resp.Default()
		resp.ErrorCode = res.Err
		resp.GenerationId = res.Generation
		resp.MemberId = res.MemberID
		resp.Leader = res.Leader
		if res.Err == 0 {
			resp.ProtocolName = strPtr(res.Protocol)
			if version >= 7 {
				resp.ProtocolType = strPtr(res.ProtocolType)
			}
		} else if version < 7 {
			resp.ProtocolName = strPtr("")
		}
		for _, m := range res.Members {
			resp.Members = append(resp.Members, wire.JoinGroupResponseMember{MemberId: m.MemberID, GroupInstanceId: m.InstanceID, Metadata: m.Metadata})
		}
		p.complete(reply{msg: resp})
	})
	return p
}

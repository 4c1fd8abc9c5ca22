package server

// DeleteGroups (key 42), versions 0-2; flexible from 2.
//
// Deletes Empty groups with their committed offsets (tombstones in __consumer_offsets,
// durable before the answer). NON_EMPTY_GROUP while a group has members,
// GROUP_ID_NOT_FOUND for an unknown group, INVALID_GROUP_ID for "".
//
// Authorization (with authorizer.class.name set): Delete on each group, else
// GROUP_AUTHORIZATION_FAILED for it.

import (
	"context"

	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleDeleteGroups(s *Server, ctx context.Context, req *request) *pending {
	s.ensureOffsetsTopic(ctx) // on failure the coordinator answers NOT_COORDINATOR
	r := req.msg.(*wire.DeleteGroupsRequest)
	resp := &wire.DeleteGroupsResponse{}
	resp.Default()
	for _, id := range r.GroupsNames {
		if !s.allowed(req, security.OpDelete, security.ResourceGroup, id) {
			resp.Results = append(resp.Results, wire.DeleteGroupsResponseDeletableGroupResult{GroupId: id, ErrorCode: wire.ErrGroupAuthorizationFailed.Code})
			continue
		}
		resp.Results = append(resp.Results, wire.DeleteGroupsResponseDeletableGroupResult{GroupId: id, ErrorCode: s.groups.Delete(ctx, id)})
	}
	return ready(reply{msg: resp})
}

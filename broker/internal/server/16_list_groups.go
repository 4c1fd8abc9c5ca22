package server

// ListGroups (key 16), versions 0-4; flexible from 3.
//
// Every group this coordinator knows (standalone committers have an empty protocol type);
// v4 filters by state (case-insensitive) and reports each group's state.
//
// Authorization (with authorizer.class.name set): Describe on the cluster lists every group;
// otherwise only the groups the principal may Describe.

import (
	"context"

	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleListGroups(s *Server, _ context.Context, req *request) *pending {
	r := req.msg.(*wire.ListGroupsRequest)
	resp := &wire.ListGroupsResponse{}
	resp.Default()
	resp.Groups = []wire.ListGroupsResponseListedGroup{}
	cluster := s.permits(req, security.OpDescribe, security.ResourceCluster, security.ClusterName) // filters: no denial logged
	for _, g := range s.groups.List(r.StatesFilter) {
		if !cluster && !s.permits(req, security.OpDescribe, security.ResourceGroup, g.GroupID) {
			continue
		}
		resp.Groups = append(resp.Groups, wire.ListGroupsResponseListedGroup{GroupId: g.GroupID, ProtocolType: g.ProtocolType, GroupState: g.State})
	}
	return ready(reply{msg: resp})
}

package server

// ListGroups (key 16), versions 0-4; flexible from 3.
//
// Every group this coordinator knows (standalone committers have an empty protocol type);
// v4 filters by state (case-insensitive) and reports each group's state.

import (
	"context"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleListGroups(s *Server, _ context.Context, req *request) *pending {
	r := req.msg.(*wire.ListGroupsRequest)
	resp := &wire.ListGroupsResponse{}
	resp.Default()
	resp.Groups = []wire.ListGroupsResponseListedGroup{}
	for _, g := range s.groups.List(r.StatesFilter) {
		resp.Groups = append(resp.Groups, wire.ListGroupsResponseListedGroup{GroupId: g.GroupID, ProtocolType: g.ProtocolType, GroupState: g.State})
	}
	return ready(reply{msg: resp})
}

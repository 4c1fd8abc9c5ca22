package server

// ListPartitionReassignments (key 46), version 0; flexible.
//
// Lists the partitions being moved, from this broker's metadata image: each with its whole
// replica list during the move (the target followed by the replicas leaving) and the replicas
// being added and removed. Null topics list every move; named partitions that are unknown or
// not moving are left out, as Kafka does. With authorizer.class.name set it needs Describe on
// the cluster, else the top-level CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"
	"slices"

	"github.com/spoolmq/spool/broker/internal/cluster"
	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleListPartitionReassignments(s *Server, _ context.Context, req *request) *pending {
	r := req.msg.(*wire.ListPartitionReassignmentsRequest)
	resp := &wire.ListPartitionReassignmentsResponse{}
	resp.Default()
	if !s.allowedCluster(req, security.OpDescribe) {
		resp.ErrorCode = wire.ErrClusterAuthorizationFailed.Code
		return ready(reply{msg: resp})
	}
	wanted := func(topic string, p int32) bool {
		if r.Topics == nil {
			return true
		}
		for _, t := range r.Topics {
			if t.Name == topic && slices.Contains(t.PartitionIndexes, p) {
				return true
			}
		}
		return false
	}
	for _, t := range s.md.Topics() {
		var out wire.ListPartitionReassignmentsResponseOngoingTopicReassignment
		out.Name = t.Name
		for _, p := range t.Partitions {
			if len(p.Adding)+len(p.Removing) == 0 || !wanted(t.Name, p.Index) {
				continue
			}
			out.Partitions = append(out.Partitions, ongoing(p))
		}
		if len(out.Partitions) > 0 {
			resp.Topics = append(resp.Topics, out)
		}
	}
	return ready(reply{msg: resp})
}

func ongoing(p cluster.Partition) wire.ListPartitionReassignmentsResponseOngoingPartitionReassignment {
	nonNil := func(ids []int32) []int32 {
		if ids == nil {
			return []int32{}
		}
		return ids
	}
	return wire.ListPartitionReassignmentsResponseOngoingPartitionReassignment{PartitionIndex: p.Index,
		Replicas: nonNil(p.Replicas), AddingReplicas: nonNil(p.Adding), RemovingReplicas: nonNil(p.Removing)}
}

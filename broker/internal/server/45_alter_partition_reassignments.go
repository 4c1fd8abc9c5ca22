package server

// AlterPartitionReassignments (key 45), version 0; flexible.
//
// Records moves of partitions to new replica lists, or cancels them (null replicas); the
// controller carries them out (cluster.Metadata.Reassign, zk/reassign.go). The reply comes
// once the move is recorded, not when the data has moved, as in Kafka; ListPartitionReassignments
// shows progress. Per partition: an unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION;
// an empty target, a broker listed twice or one that is not alive is
// INVALID_REPLICA_ASSIGNMENT; cancelling a partition that is not moving is
// NO_REASSIGNMENT_IN_PROGRESS. A single node can only "move" a partition onto itself.
// The work runs on its own goroutine, bounded by TimeoutMs (REQUEST_TIMED_OUT), so the
// connection's other requests are not held up.
//
// Authorization (with authorizer.class.name set): Alter on the cluster, else the top-level
// CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"
	"time"

	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleAlterPartitionReassignments(s *Server, ctx context.Context, req *request) *pending {
	r := req.msg.(*wire.AlterPartitionReassignmentsRequest)
	if !s.allowedCluster(req, security.OpAlter) {
		resp := &wire.AlterPartitionReassignmentsResponse{}
		resp.Default()
		resp.ErrorCode = wire.ErrClusterAuthorizationFailed.Code
		return ready(reply{msg: resp})
	}
	p := later()
	go func() {
		ctx, cancel := context.WithTimeout(ctx, time.Duration(max(r.TimeoutMs, 1))*time.Millisecond)
		defer cancel()
		resp := &wire.AlterPartitionReassignmentsResponse{}
		resp.Default()
		for _, rt := range r.Topics {
			tr := wire.AlterPartitionReassignmentsResponseReassignableTopicResponse{Name: rt.Name}
			targets := map[int32][]int32{}
			for _, rp := range rt.Partitions {
				targets[rp.PartitionIndex] = rp.Replicas
			}
			results, err := s.md.Reassign(ctx, rt.Name, targets)
			for _, rp := range rt.Partitions {
				perr := err
				if perr == nil {
					perr = results[rp.PartitionIndex]
				}
				perr = protocolError(perr)
				tr.Partitions = append(tr.Partitions, wire.AlterPartitionReassignmentsResponseReassignablePartitionResponse{
					PartitionIndex: rp.PartitionIndex, ErrorCode: errCode(perr), ErrorMessage: errMessage(perr)})
			}
			resp.Responses = append(resp.Responses, tr)
		}
		if err := s.reconcile(); err != nil {
			s.log.Warn("reconciling after a reassignment", "err", err)
		}
		p.complete(reply{msg: resp})
	}()
	return p
}

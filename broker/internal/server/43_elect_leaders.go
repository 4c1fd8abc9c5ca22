package server

// ElectLeaders (key 43), versions 0-2; flexible from 2.
//
// Runs leader elections: type 0 (v0 always) puts each partition's preferred replica (its
// first) in the lead; type 1 elects the first live replica of a partition with no live ISR
// member, which may lose acknowledged records. Null topic partitions mean every partition
// (Kafka: every partition whose preferred leader is not leading; those already led by it are
// left out of the reply). Per partition: ELECTION_NOT_NEEDED when it already has the leader
// asked for; PREFERRED_LEADER_NOT_AVAILABLE when the preferred replica is dead or out of the
// ISR; ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica is alive; UNKNOWN_TOPIC_OR_PARTITION;
// REQUEST_TIMED_OUT past TimeoutMs. The controller runs the elections (zk/reassign.go); the
// reply waits for their outcome on its own goroutine. With authorizer.class.name set it needs
// Alter on the cluster, else CLUSTER_AUTHORIZATION_FAILED at the top level and per partition.

import (
	"context"
	"errors"
	"time"

	"github.com/spoolmq/spool/broker/internal/cluster"
	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleElectLeaders(s *Server, ctx context.Context, req *request) *pending {
	r := req.msg.(*wire.ElectLeadersRequest)
	typ := cluster.ElectionType(r.ElectionType)
	p := later()
	go func() {
		ctx, cancel := context.WithTimeout(ctx, time.Duration(max(r.TimeoutMs, 1))*time.Millisecond)
		defer cancel()
		resp := &wire.ElectLeadersResponse{}
		resp.Default()
		if !s.allowedCluster(req, security.OpAlter) {
			// Kafka: the top-level error (v1+) and each partition asked for refused.
			resp.ErrorCode = wire.ErrClusterAuthorizationFailed.Code
			for _, tp := range r.TopicPartitions {
				out := wire.ElectLeadersResponseReplicaElectionResult{Topic: tp.Topic}
				for _, idx := range tp.Partitions {
					out.PartitionResult = append(out.PartitionResult, wire.ElectLeadersResponsePartitionResult{PartitionId: idx, ErrorCode: wire.ErrClusterAuthorizationFailed.Code})
				}
				resp.ReplicaElectionResults = append(resp.ReplicaElectionResults, out)
			}
			p.complete(reply{msg: resp})
			return
		}
		if typ != cluster.ElectPreferred && typ != cluster.ElectUnclean {
			resp.ErrorCode = wire.ErrInvalidRequest.Code
			p.complete(reply{msg: resp})
			return
		}
		all := r.TopicPartitions == nil
		wanted := r.TopicPartitions
		if all {
			for _, t := range s.md.Topics() {
				tp := wire.ElectLeadersRequestTopicPartitions{Topic: t.Name}
				for _, part := range t.Partitions {
					tp.Partitions = append(tp.Partitions, part.Index)
				}
				wanted = append(wanted, tp)
			}
		}
		for _, tp := range wanted {
			out := wire.ElectLeadersResponseReplicaElectionResult{Topic: tp.Topic}
			results, err := s.md.ElectLeaders(ctx, typ, tp.Topic, tp.Partitions)
			for _, idx := range tp.Partitions {
				perr := err
				if perr == nil {
					perr = results[idx]
				}
				if all && errors.Is(perr, cluster.ErrElectionNotNeeded) {
					continue
				}
				perr = protocolError(perr)
				out.PartitionResult = append(out.PartitionResult, wire.ElectLeadersResponsePartitionResult{
					PartitionId: idx, ErrorCode: errCode(perr), ErrorMessage: errMessage(perr)})
			}
			if len(out.PartitionResult) > 0 || !all {
				resp.ReplicaElectionResults = append(resp.ReplicaElectionResults, out)
			}
		}
		if err := s.reconcile(); err != nil {
			s.log.Warn("reconciling after leader elections", "err", err)
		}
		p.complete(reply{msg: resp})
	}()
	return p
}

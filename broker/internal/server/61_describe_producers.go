package server

// DescribeProducers (key 61), version 0; flexible from 0.
//
// For each partition led here, the producers its log remembers (idempotent and
// transactional): producer id, epoch, last sequence, last timestamp, and the first offset of
// the open transaction (-1 when none) that holds the partition's last stable offset; this is
// what `kafka-transactions.sh describe-producers` and `find-hanging` read. CoordinatorEpoch is
// -1 (the markers' coordinator epoch is not kept per producer). A partition led elsewhere is
// NOT_LEADER_OR_FOLLOWER, an unknown one UNKNOWN_TOPIC_OR_PARTITION.
//
// Authorization (with authorizer.class.name set): Read on the topic, else
// TOPIC_AUTHORIZATION_FAILED for its partitions.

import (
	"context"

	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleDescribeProducers(s *Server, _ context.Context, req *request) *pending {
	r := req.msg.(*wire.DescribeProducersRequest)
	resp := &wire.DescribeProducersResponse{}
	resp.Default()
	for _, t := range r.Topics {
		tr := wire.DescribeProducersResponseTopicResponse{Name: t.Name}
		allowed := s.allowed(req, security.OpRead, security.ResourceTopic, t.Name)
		for _, idx := range t.PartitionIndexes {
			pr := wire.DescribeProducersResponsePartitionResponse{PartitionIndex: idx}
			pr.Default()
			pr.PartitionIndex = idx
			if !allowed {
				pr.ErrorCode = wire.ErrTopicAuthorizationFailed.Code
				tr.Partitions = append(tr.Partitions, pr)
				continue
			}
			part, err := s.leaderPart(t.Name, idx)
			if err != nil {
				pr.ErrorCode, pr.ErrorMessage = errCode(err), errMessage(err)
				tr.Partitions = append(tr.Partitions, pr)
				continue
			}
			for _, p := range part.Producers() {
				pr.ActiveProducers = append(pr.ActiveProducers, wire.DescribeProducersResponseProducerState{ProducerId: p.ProducerID,
					ProducerEpoch: int32(p.Epoch), LastSequence: p.LastSequence, LastTimestamp: p.LastTimestamp, CoordinatorEpoch: -1, CurrentTxnStartOffset: p.TxnStartOffset})
			}
			tr.Partitions = append(tr.Partitions, pr)
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return ready(reply{msg: resp})
}

package server

// AddPartitionsToTxn (key 24), versions 0-5; flexible from 3.
//
// v0-3 (producers): adds partitions to the transaction of V3AndBelowTransactionalId before
// the producer first writes to them; the transaction coordinator (internal/txn) persists
// Ongoing with them to __transaction_state and answers once that is committed. The answer is
// per partition and all or nothing: a partition of an unknown topic is
// UNKNOWN_TOPIC_OR_PARTITION, a topic without Write TOPIC_AUTHORIZATION_FAILED, and then the
// others OPERATION_NOT_ATTEMPTED; otherwise every partition gets the coordinator's verdict:
// NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS (the id's __transaction_state partition is
// not led or not loaded here), INVALID_PRODUCER_ID_MAPPING (another producer id),
// PRODUCER_FENCED (an older epoch; INVALID_PRODUCER_EPOCH before v2), CONCURRENT_TRANSACTIONS
// (the previous transaction's markers are still being written: retriable).
//
// v4+ (brokers, KIP-890 part 1): a batch of transactions; VerifyOnly asks whether each
// partition is already in the producer's open transaction (INVALID_TXN_STATE when not) without
// adding it; otherwise the partitions are added as above. It needs ClusterAction on the
// cluster (else CLUSTER_AUTHORIZATION_FAILED at the top level).
//
// Authorization (v0-3, with authorizer.class.name set): Write on the transactional id, else
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition; Write on each topic.

import (
	"context"
	"sync"

	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/broker/internal/txn"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

type addTopic = wire.AddPartitionsToTxnRequestTopic

func handleAddPartitionsToTxn(s *Server, _ context.Context, req *request) *pending {
	r := req.msg.(*wire.AddPartitionsToTxnRequest)
	resp := &wire.AddPartitionsToTxnResponse{}
	resp.Default()
	if req.version >= 4 {
		return addPartitionsBatched(s, req, r, resp)
	}
	topics := make([]addTopic, len(r.V3AndBelowTopics))
	for i, t := range r.V3AndBelowTopics {
		topics[i] = addTopic{Name: t.Name, Partitions: t.Partitions}
	}
	p := later()
	addToTxn(s, req, r.V3AndBelowTransactionalId, r.V3AndBelowProducerId, r.V3AndBelowProducerEpoch, topics, false, true, func(res []wire.AddPartitionsToTxnResponseTopicResult) {
		for _, t := range res {
			v3 := wire.AddPartitionsToTxnResponseV3TopicResult{Name: t.Name}
			for _, pr := range t.ResultsByPartition {
				v3.ResultsByPartition = append(v3.ResultsByPartition, wire.AddPartitionsToTxnResponseV3PartitionResult{PartitionIndex: pr.PartitionIndex, PartitionErrorCode: pr.PartitionErrorCode})
			}
			resp.ResultsByTopicV3AndBelow = append(resp.ResultsByTopicV3AndBelow, v3)
		}
		p.complete(reply{msg: resp})
	})
	return p
}

// addPartitionsBatched serves v4+: each transaction on its own, answered together.
func addPartitionsBatched(s *Server, req *request, r *wire.AddPartitionsToTxnRequest, resp *wire.AddPartitionsToTxnResponse) *pending {
	if !s.allowedCluster(req, security.OpClusterAction) {
		resp.ErrorCode = wire.ErrClusterAuthorizationFailed.Code
		return ready(reply{msg: resp})
	}
	resp.ResultsByTransaction = make([]wire.AddPartitionsToTxnResponseResult, len(r.Transactions))
	p := later()
	var wg sync.WaitGroup
	wg.Add(len(r.Transactions))
	for i, t := range r.Transactions {
		resp.ResultsByTransaction[i].TransactionalId = t.TransactionalId
		addToTxn(s, req, t.TransactionalId, t.ProducerId, t.ProducerEpoch, t.Topics, t.VerifyOnly, false, func(res []wire.AddPartitionsToTxnResponseTopicResult) {
			resp.ResultsByTransaction[i].TopicResults = res
			wg.Done()
		})
	}
	go func() {
		wg.Wait()
		p.complete(reply{msg: resp})
	}()
	return p
}

type addTopicResult = wire.AddPartitionsToTxnResponseTopicResult
type addPartitionResult = wire.AddPartitionsToTxnResponsePartitionResult

// addToTxn adds (or with verifyOnly checks) one transaction's partitions; done gets the
// per-partition results.
func addToTxn(s *Server, req *request, id string, pid int64, epoch int16, topics []addTopic, verifyOnly, client bool, done func([]addTopicResult)) {
	results := make([]addTopicResult, len(topics))
	each := func(code func(topic string, partition int32) int16) []addTopicResult {
		for i, t := range topics {
			results[i] = addTopicResult{Name: t.Name, ResultsByPartition: make([]addPartitionResult, len(t.Partitions))}
			for j, part := range t.Partitions {
				results[i].ResultsByPartition[j] = addPartitionResult{PartitionIndex: part, PartitionErrorCode: code(t.Name, part)}
			}
		}
		return results
	}
	all := func(c int16) []addTopicResult { return each(func(string, int32) int16 { return c }) }
	if client && !s.allowed(req, security.OpWrite, security.ResourceTransactionalID, id) {
		done(all(wire.ErrTransactionalIdAuthorizationFailed.Code))
		return
	}
	if verifyOnly {
		done(each(func(topic string, partition int32) int16 {
			return txnErrorCode(s.txn.coord.Verify(id, pid, epoch, txn.TopicPartition{Topic: topic, Partition: partition}), false)
		}))
		return
	}
	// Topic checks first: all or nothing.
	bad := map[string]int16{}
	var parts []txn.TopicPartition
	for _, t := range topics {
		switch tp, ok := s.md.Topic(t.Name); {
		case client && !s.allowed(req, security.OpWrite, security.ResourceTopic, t.Name):
			bad[t.Name] = wire.ErrTopicAuthorizationFailed.Code
		case !ok:
			bad[t.Name] = wire.ErrUnknownTopicOrPartition.Code
		default:
			for _, p := range t.Partitions {
				if p < 0 || int(p) >= len(tp.Partitions) {
					bad[t.Name] = wire.ErrUnknownTopicOrPartition.Code
				}
				parts = append(parts, txn.TopicPartition{Topic: t.Name, Partition: p})
			}
		}
	}
	if len(bad) > 0 {
		done(each(func(topic string, _ int32) int16 {
			if c, ok := bad[topic]; ok {
				return c
			}
			return wire.ErrOperationNotAttempted.Code
		}))
		return
	}
	old := req.version < 2
	s.txn.coord.AddPartitions(id, pid, epoch, parts, func(e *wire.Error) {
		done(all(txnErrorCode(e, old)))
	})
}

package server

// DescribeTransactions (key 65), version 0; flexible from 0.
//
// For each transactional id the coordinator serves here: its state (Kafka's names: Empty,
// Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, Dead,
// PrepareEpochFence), timeout, start time (-1 with no transaction), producer id and epoch, and
// the partitions of its transaction (`kafka-transactions.sh describe`). An id not coordinated
// here is NOT_COORDINATOR (COORDINATOR_LOAD_IN_PROGRESS while loading); an unknown one
// TRANSACTIONAL_ID_NOT_FOUND.
//
// Authorization (with authorizer.class.name set): Describe on the transactional id, else
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/broker/internal/txn"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleDescribeTransactions(s *Server, _ context.Context, req *request) *pending {
	r := req.msg.(*wire.DescribeTransactionsRequest)
	resp := &wire.DescribeTransactionsResponse{}
	resp.Default()
	for _, id := range r.TransactionalIds {
		st := wire.DescribeTransactionsResponseTransactionState{TransactionalId: id, TransactionStartTimeMs: -1, ProducerId: -1, ProducerEpoch: -1}
		if !s.allowed(req, security.OpDescribe, security.ResourceTransactionalID, id) {
			st.ErrorCode = wire.ErrTransactionalIdAuthorizationFailed.Code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		d, e := s.txn.coord.Describe(id)
		switch {
		case e != nil:
			st.ErrorCode = e.Code
		case !d.Found:
			st.ErrorCode = wire.ErrTransactionalIdNotFound.Code
		default:
			st.TransactionState = d.State.String()
			st.TransactionTimeoutMs, st.ProducerId, st.ProducerEpoch = d.TimeoutMs, d.ProducerID, d.Epoch
			if d.State == txn.Ongoing || d.State == txn.PrepareCommit || d.State == txn.PrepareAbort {
				st.TransactionStartTimeMs = d.StartMs
			}
			for _, tp := range d.Partitions {
				if n := len(st.Topics); n > 0 && st.Topics[n-1].Topic == tp.Topic {
					st.Topics[n-1].Partitions = append(st.Topics[n-1].Partitions, tp.Partition)
					continue
				}
				st.Topics = append(st.Topics, wire.DescribeTransactionsResponseTopicData{Topic: tp.Topic, Partitions: []int32{tp.Partition}})
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return ready(reply{msg: resp})
}

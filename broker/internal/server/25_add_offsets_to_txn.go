package server

// AddOffsetsToTxn (key 25), versions 0-4; flexible from 3.
//
// Adds the group's __consumer_offsets partition (the one its group coordinator leads) to the
// transaction, so that offsets the producer then sends with TxnOffsetCommit commit or abort
// with it. The transaction coordinator answers as for AddPartitionsToTxn: NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS, INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED
// (INVALID_PRODUCER_EPOCH before v2), CONCURRENT_TRANSACTIONS (retriable). __consumer_offsets
// is created first if it does not exist yet.
//
// Authorization (with authorizer.class.name set): Write on the transactional id, else
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED; Read on the group, else GROUP_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/spoolmq/spool/broker/internal/group"
	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/broker/internal/txn"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleAddOffsetsToTxn(s *Server, ctx context.Context, req *request) *pending {
	r := req.msg.(*wire.AddOffsetsToTxnRequest)
	resp := &wire.AddOffsetsToTxnResponse{}
	resp.Default()
	fail := func(e *wire.Error) *pending {
		resp.ErrorCode = e.Code
		return ready(reply{msg: resp})
	}
	switch {
	case !s.allowed(req, security.OpWrite, security.ResourceTransactionalID, r.TransactionalId):
		return fail(wire.ErrTransactionalIdAuthorizationFailed)
	case !s.allowed(req, security.OpRead, security.ResourceGroup, r.GroupId):
		return fail(wire.ErrGroupAuthorizationFailed)
	}
	if err := s.ensureOffsetsTopic(ctx); err != nil {
		return fail(wire.ErrCoordinatorNotAvailable)
	}
	t, ok := s.md.Topic(group.Topic)
	if !ok || len(t.Partitions) == 0 {
		return fail(wire.ErrCoordinatorNotAvailable)
	}
	tp := txn.TopicPartition{Topic: group.Topic, Partition: group.PartitionFor(r.GroupId, int32(len(t.Partitions)))}
	p := later()
	s.txn.coord.AddPartitions(r.TransactionalId, r.ProducerId, r.ProducerEpoch, []txn.TopicPartition{tp}, func(e *wire.Error) {
		resp.ErrorCode = txnErrorCode(e, req.version < 2)
		p.complete(reply{msg: resp})
	})
	return p
}

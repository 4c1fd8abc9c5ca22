package server

// InitProducerId (key 22), versions 0-4; flexible from 2.
//
// Without a TransactionalId: hands an idempotent producer a new producer id with epoch 0. Ids
// come from a block of 1000 the metadata store reserves for this broker (a file in the data
// directory on a single node, /latest_producer_id_block in ZooKeeper), so they never repeat
// across restarts or brokers. For a non-transactional producer Kafka ignores the
// ProducerId/ProducerEpoch of v3+ (KIP-360) and allocates a new id; so do we, and the old id's
// sequence state simply ages out.
//
// With a TransactionalId the transaction coordinator (internal/txn) answers, on the broker
// leading the id's __transaction_state partition (else NOT_COORDINATOR, or
// COORDINATOR_LOAD_IN_PROGRESS while that partition loads): a new id gets a producer id at
// epoch 0; a known one the same id with its epoch bumped, which fences older instances; an open
// transaction is first aborted under a bumped epoch and the caller gets
// CONCURRENT_TRANSACTIONS (retriable: the retry gets a second bump); markers still being
// written are CONCURRENT_TRANSACTIONS too. v3+ (KIP-360) may name the current producer id and
// epoch (or the previous ones) to recover; others are PRODUCER_FENCED, which v0-3 clients know
// as INVALID_PRODUCER_EPOCH. TransactionTimeoutMs above transaction.max.timeout.ms (or not
// positive) is INVALID_TRANSACTION_TIMEOUT. The answer waits for the coordinator's record to
// be committed to __transaction_state.
//
// Authorization (with authorizer.class.name set): without a transactional id, IdempotentWrite
// on the cluster or Write on at least one topic (Kafka's rule since 2.8), else
// CLUSTER_AUTHORIZATION_FAILED; with one, Write on the transactional id, else
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleInitProducerID(s *Server, ctx context.Context, req *request) *pending {
	r := req.msg.(*wire.InitProducerIdRequest)
	resp := &wire.InitProducerIdResponse{}
	resp.Default()
	if r.TransactionalId != nil {
		return initTransactional(s, req, r, resp)
	}
	// Kafka's rule for idempotent producers: IdempotentWrite on the cluster, or Write on any topic.
	if !s.allowedCluster(req, security.OpIdempotentWrite) && !s.allowedAny(req, security.OpWrite, security.ResourceTopic) {
		resp.ErrorCode = wire.ErrClusterAuthorizationFailed.Code
		return ready(reply{msg: resp})
	}
	id, err := s.producers.allocate(ctx)
	if err != nil {
		s.log.Error("allocating a producer id", "err", err)
		resp.ErrorCode = wire.ErrKafkaStorageError.Code
		return ready(reply{msg: resp})
	}
	resp.ProducerId, resp.ProducerEpoch = id, 0
	return ready(reply{msg: resp})
}

func initTransactional(s *Server, req *request, r *wire.InitProducerIdRequest, resp *wire.InitProducerIdResponse) *pending {
	id := *r.TransactionalId
	if id == "" {
		resp.ErrorCode = wire.ErrInvalidRequest.Code
		return ready(reply{msg: resp})
	}
	if !s.allowed(req, security.OpWrite, security.ResourceTransactionalID, id) {
		resp.ErrorCode = wire.ErrTransactionalIdAuthorizationFailed.Code
		return ready(reply{msg: resp})
	}
	pid, epoch := int64(-1), int16(-1)
	if req.version >= 3 {
		pid, epoch = r.ProducerId, r.ProducerEpoch
	}
	p := later()
	s.txn.coord.InitProducerID(id, r.TransactionTimeoutMs, pid, epoch, func(pid int64, epoch int16, e *wire.Error) {
		if e != nil {
			resp.ErrorCode = txnErrorCode(e, req.version < 4)
		} else {
			resp.ProducerId, resp.ProducerEpoch = pid, epoch
		}
		p.complete(reply{msg: resp})
	})
	return p
}

// txnErrorCode is the code of a coordinator error for a request version: PRODUCER_FENCED (90)
// came with KIP-588; versions before it get INVALID_PRODUCER_EPOCH, as Kafka answers them.
func txnErrorCode(e *wire.Error, old bool) int16 {
	if e == nil {
		return 0
	}
	if e == wire.ErrProducerFenced && old {
		return wire.ErrInvalidProducerEpoch.Code
	}
	return e.Code
}

package server

// EndTxn (key 26), versions 0-4; flexible from 3.
//
// Commits (Committed true) or aborts the producer's open transaction. The transaction
// coordinator (internal/txn) writes PrepareCommit or PrepareAbort to __transaction_state (the
// decision point), then the markers to every partition of the transaction (control batches,
// through the partition manager), then CompleteCommit or CompleteAbort, and answers then; if a
// marker cannot be written at once, it answers as soon as the decision is committed (as Kafka
// always does) and retries the markers in the background (a new transaction meanwhile gets
// CONCURRENT_TRANSACTIONS). Errors: NOT_COORDINATOR and
// COORDINATOR_LOAD_IN_PROGRESS (not led or not loaded here), INVALID_PRODUCER_ID_MAPPING
// (another producer id), PRODUCER_FENCED (an older epoch; INVALID_PRODUCER_EPOCH before v2),
// CONCURRENT_TRANSACTIONS (the same decision is still being written: retriable),
// INVALID_TXN_STATE (no open transaction, or the opposite decision already made). Repeating a
// completed decision succeeds (a retry after a lost answer).
//
// Authorization (with authorizer.class.name set): Write on the transactional id, else
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleEndTxn(s *Server, _ context.Context, req *request) *pending {
	r := req.msg.(*wire.EndTxnRequest)
	resp := &wire.EndTxnResponse{}
	resp.Default()
	if !s.allowed(req, security.OpWrite, security.ResourceTransactionalID, r.TransactionalId) {
		resp.ErrorCode = wire.ErrTransactionalIdAuthorizationFailed.Code
		return ready(reply{msg: resp})
	}
	p := later()
	s.txn.coord.EndTxn(r.TransactionalId, r.ProducerId, r.ProducerEpoch, r.Committed, func(e *wire.Error) {
		resp.ErrorCode = txnErrorCode(e, req.version < 2)
		p.complete(reply{msg: resp})
	})
	return p
}

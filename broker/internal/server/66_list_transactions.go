package server

// ListTransactions (key 66), versions 0-1; flexible from 0.
//
// The transactional ids of the __transaction_state partitions this broker coordinates
// (`kafka-transactions.sh list` asks every broker), filtered: StateFilters by Kafka's state
// names (names it does not know come back in UnknownStateFilters), ProducerIdFilters, and (v1)
// DurationFilter, the transactions running longer than that many milliseconds. Empty filters
// keep everything.
//
// Authorization (with authorizer.class.name set): ids without Describe are left out.

import (
	"context"
	"slices"
	"time"

	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/broker/internal/txn"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

var txnStateNames = []txn.State{txn.Empty, txn.Ongoing, txn.PrepareCommit, txn.PrepareAbort, txn.CompleteCommit, txn.CompleteAbort, txn.Dead, txn.PrepareEpochFence}

func handleListTransactions(s *Server, _ context.Context, req *request) *pending {
	r := req.msg.(*wire.ListTransactionsRequest)
	resp := &wire.ListTransactionsResponse{}
	resp.Default()
	resp.UnknownStateFilters = []string{}
	resp.TransactionStates = []wire.ListTransactionsResponseTransactionState{}
	var states []string
	for _, f := range r.StateFilters {
		if slices.ContainsFunc(txnStateNames, func(st txn.State) bool { return st.String() == f }) {
			states = append(states, f)
		} else {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, f)
		}
	}
	now := time.Now().UnixMilli()
	for _, m := range s.txn.coord.List() {
		switch {
		case len(r.StateFilters) > 0 && !slices.Contains(states, m.State.String()):
			continue
		case len(r.ProducerIdFilters) > 0 && !slices.Contains(r.ProducerIdFilters, m.ProducerID):
			continue
		case r.DurationFilter >= 0 && !(m.State == txn.Ongoing && now-m.StartMs > r.DurationFilter):
			continue
		case !s.allowed(req, security.OpDescribe, security.ResourceTransactionalID, m.ID):
			continue
		}
		resp.TransactionStates = append(resp.TransactionStates, wire.ListTransactionsResponseTransactionState{TransactionalId: m.ID, ProducerId: m.ProducerID, TransactionState: m.State.String()})
	}
	return ready(reply{msg: resp})
}

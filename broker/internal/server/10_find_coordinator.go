package server

// FindCoordinator (key 10), versions 0-3; flexible from 3.
//
// A group's coordinator is the leader of the __consumer_offsets partition its id hashes to
// (Kafka's rule: abs(hashCode(groupId)) % offsets.topic.num.partitions), so any broker
// answers for any group, and the coordinator moves with that partition's leadership. The
// topic is created on the first lookup, as Kafka does; while it cannot be, or while the
// partition has no leader, the answer is COORDINATOR_NOT_AVAILABLE (retriable). On a single
// node this broker coordinates every group. v0 must be served: librdkafka enables LZ4 and its
// group consumer only when FindCoordinator v0 is advertised. Key type 1 (TRANSACTION, v1+):
// the transaction coordinator is the leader of the __transaction_state partition the
// transactional id hashes to (the same formula over transaction.state.log.num.partitions),
// the topic created on first lookup in the same way. Other key types are INVALID_REQUEST.
// The lookup runs on the connection's goroutine (creating the topic waits for its leaders).
//
// Authorization (with authorizer.class.name set): Describe on the group, else
// GROUP_AUTHORIZATION_FAILED; Describe on the transactional id, else
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED.

import (
	"context"
	"errors"
	"fmt"

	"github.com/spoolmq/spool/broker/internal/group"
	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleFindCoordinator(s *Server, ctx context.Context, req *request) *pending {
	r := req.msg.(*wire.FindCoordinatorRequest)
	resp := &wire.FindCoordinatorResponse{}
	resp.Default()
	fail := func(code *wire.Error, err error) *pending {
		resp.ErrorCode = code.Code
		if req.version >= 1 {
			resp.ErrorMessage = errMessage(err)
		}
		resp.NodeId, resp.Port = -1, -1
		return ready(reply{msg: resp})
	}
	switch {
	case r.KeyType == 1 && req.version >= 1:
		if !s.allowed(req, security.OpDescribe, security.ResourceTransactionalID, r.Key) {
			return fail(wire.ErrTransactionalIdAuthorizationFailed, errors.New("FindCoordinator needs Describe on the transactional id"))
		}
		node, host, port, err := s.txnCoordinatorFor(ctx, r.Key, req.listener)
		if err != nil {
			return fail(wire.ErrCoordinatorNotAvailable, err)
		}
		resp.NodeId, resp.Host, resp.Port = node, host, port
		return ready(reply{msg: resp})
	case r.KeyType != 0:
		return fail(wire.ErrInvalidRequest, fmt.Errorf("unknown coordinator key type %d", r.KeyType))
	}
	if !s.allowed(req, security.OpDescribe, security.ResourceGroup, r.Key) {
		return fail(wire.ErrGroupAuthorizationFailed, errors.New("FindCoordinator needs Describe on the group"))
	}
	if err := s.ensureOffsetsTopic(ctx); err != nil {
		return fail(wire.ErrCoordinatorNotAvailable, err)
	}
	t, ok := s.md.Topic(group.Topic)
	if !ok || len(t.Partitions) == 0 {
		return fail(wire.ErrCoordinatorNotAvailable, fmt.Errorf("%s is being deleted", group.Topic))
	}
	p := t.Partitions[group.PartitionFor(r.Key, int32(len(t.Partitions)))]
	for _, b := range s.md.Brokers() {
		if b.NodeID == p.Leader {
			host, port, _ := b.Addr(req.listener)
			resp.NodeId, resp.Host, resp.Port = b.NodeID, host, port
			return ready(reply{msg: resp})
		}
	}
	return fail(wire.ErrCoordinatorNotAvailable, fmt.Errorf("%s-%d has no live leader", group.Topic, p.Index))
}

package server

// InitProducerId (key 22), versions 0-4; flexible from 2.
//
// Hands an idempotent producer a new producer id with epoch 0. Ids come from a block of 1000
// the metadata store reserves for this broker (a file in the data directory on a single node,
// /latest_producer_id_block in ZooKeeper), so they never repeat across restarts or brokers. For a non-transactional producer Kafka ignores
// the ProducerId/ProducerEpoch of v3+ (KIP-360) and allocates a new id; so do we, and the old
// id's sequence state simply ages out. Transactions are not supported yet: a non-null
// TransactionalId gets INVALID_REQUEST.
//
// Authorization (with authorizer.class.name set): IdempotentWrite on the cluster, or Write on at
// least one topic (Kafka's rule since 2.8), else CLUSTER_AUTHORIZATION_FAILED.

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
		resp.ErrorCode = wire.ErrInvalidRequest.Code
		return ready(reply{msg: resp})
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

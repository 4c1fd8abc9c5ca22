package server

// CreatePartitions (key 37), versions 0-3; flexible from 2.
//
// Grows topics to a new total partition count; shrinking or keeping the count gets
// INVALID_PARTITIONS, unknown topics UNKNOWN_TOPIC_OR_PARTITION. Manual assignments may only
// name this broker on a single node. ValidateOnly checks without changing anything. New
// partitions' logs are opened before the response, so they can be produced to at once.
//
// Authorization (with authorizer.class.name set): Alter on each topic, else
// TOPIC_AUTHORIZATION_FAILED for it.

import (
	"context"
	"fmt"

	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleCreatePartitions(s *Server, ctx context.Context, req *request) *pending {
	r := req.msg.(*wire.CreatePartitionsRequest)
	resp := &wire.CreatePartitionsResponse{}
	resp.Default()
	for _, rt := range r.Topics {
		var res wire.CreatePartitionsResponseTopicResult
		res.Default()
		res.Name = rt.Name
		var err error = wire.ErrTopicAuthorizationFailed
		if s.allowed(req, security.OpAlter, security.ResourceTopic, rt.Name) {
			err = s.createPartitions(ctx, rt, r.ValidateOnly)
		}
		res.ErrorCode = errCode(err)
		res.ErrorMessage = errMessage(err)
		resp.Results = append(resp.Results, res)
	}
	return ready(reply{msg: resp})
}

func (s *Server) createPartitions(ctx context.Context, rt wire.CreatePartitionsRequestTopic, validateOnly bool) error {
	for _, a := range rt.Assignments {
		if len(a.BrokerIds) != 1 || a.BrokerIds[0] != s.self.NodeID {
			return fmt.Errorf("%w: assignments may only name broker %d", wire.ErrInvalidReplicaAssignment, s.self.NodeID)
		}
	}
	s.createMu.Lock()
	defer s.createMu.Unlock()
	if err := s.md.CreatePartitions(ctx, rt.Name, rt.Count, validateOnly); err != nil {
		return protocolError(err)
	}
	if validateOnly {
		return nil
	}
	if err := s.reconcile(); err != nil {
		return fmt.Errorf("%w: %v", wire.ErrKafkaStorageError, err)
	}
	s.log.Info("partitions created", "topic", rt.Name, "partitions", rt.Count)
	return nil
}

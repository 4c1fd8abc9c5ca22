package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/spoolmq/spool/broker/internal/cluster"
	"github.com/spoolmq/spool/broker/internal/config"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// errMapping pairs an internal sentinel error with the protocol error it becomes.
type errMapping struct {
	from error
	to   *wire.Error
}

// mapError turns err into a protocol error that keeps err's message: unchanged if it already
// wraps one, else the first matching mapping, else fallback.
func mapError(err error, table []errMapping, fallback *wire.Error) error {
	var code *wire.Error
	if err == nil || errors.As(err, &code) {
		return err
	}
	code = fallback
	for _, m := range table {
		if errors.Is(err, m.from) {
			code = m.to
			break
		}
	}
	return fmt.Errorf("%w: %v", code, err)
}

// metadataErrors maps metadata-store errors to protocol errors.
var metadataErrors = []errMapping{
	{cluster.ErrTopicExists, wire.ErrTopicAlreadyExists},
	{cluster.ErrUnknownTopic, wire.ErrUnknownTopicOrPartition},
	{cluster.ErrInvalidPartitions, wire.ErrInvalidPartitions},
	{cluster.ErrInvalidReplication, wire.ErrInvalidReplicationFactor},
	{cluster.ErrInvalidTopic, wire.ErrInvalidTopicException},
	{cluster.ErrInvalidConfig, wire.ErrInvalidConfig},
	{cluster.ErrNotController, wire.ErrNotController},
	{cluster.ErrInvalidReplicaAssignment, wire.ErrInvalidReplicaAssignment},
	{cluster.ErrNoReassignment, wire.ErrNoReassignmentInProgress},
	{cluster.ErrElectionNotNeeded, wire.ErrElectionNotNeeded},
	{cluster.ErrPreferredLeaderNotAvailable, wire.ErrPreferredLeaderNotAvailable},
	{cluster.ErrEligibleLeadersNotAvailable, wire.ErrEligibleLeadersNotAvailable},
	{context.DeadlineExceeded, wire.ErrRequestTimedOut},
}

func protocolError(err error) error { return mapError(err, metadataErrors, wire.ErrUnknownServerError) }

// validateTopicConfigs checks topic-level overrides by name and value.
func validateTopicConfigs(configs map[string]string) error {
	for k, v := range configs {
		if err := config.ValidateTopic(k, v); err != nil {
			return fmt.Errorf("%w: %v", wire.ErrInvalidConfig, err)
		}
	}
	return nil
}

// createTopic validates, records and opens a new topic.
func (s *Server) createTopic(ctx context.Context, name string, partitions int32, rf int16, configs map[string]string, validateOnly bool) (cluster.Topic, error) {
	if err := validateTopicConfigs(configs); err != nil {
		return cluster.Topic{}, err
	}
	s.createMu.Lock()
	defer s.createMu.Unlock()
	t, err := s.md.CreateTopic(ctx, name, partitions, rf, configs, validateOnly)
	if err != nil || validateOnly {
		return t, protocolError(err)
	}
	if err := s.reconcile(); err != nil {
		s.log.Error("opening the logs of a new topic", "topic", name, "err", err)
		return t, fmt.Errorf("%w: %v", wire.ErrKafkaStorageError, err)
	}
	s.log.Info("topic created", "topic", name, "partitions", partitions, "configs", configs)
	return t, nil
}

// deleteTopic removes a topic and its data.
func (s *Server) deleteTopic(ctx context.Context, name string) (cluster.Topic, error) {
	s.createMu.Lock()
	defer s.createMu.Unlock()
	t, err := s.md.DeleteTopic(ctx, name)
	if err != nil {
		return t, protocolError(err)
	}
	if err := s.reconcile(); err != nil {
		s.log.Warn("removing the replicas of a deleted topic", "topic", name, "err", err)
	}
	s.log.Info("topic deleted", "topic", name)
	return t, nil
}

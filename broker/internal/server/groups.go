package server

// Wiring of the group coordinator (internal/group): its __consumer_offsets logs, created on
// first use as a compacted internal topic with offsets.topic.num.partitions partitions.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/spoolmq/spool/broker/internal/config"
	"github.com/spoolmq/spool/broker/internal/group"
	"github.com/spoolmq/spool/broker/internal/storage"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// newGroupCoordinator starts the coordinator, loading __consumer_offsets if it exists.
func (s *Server) newGroupCoordinator() (*group.Coordinator, error) {
	return group.New(group.Config{
		InitialRebalanceDelay: time.Duration(s.conf.Int64(config.GroupInitialRebalanceDelay)) * time.Millisecond,
		OffsetsRetention:      time.Duration(s.conf.Int64(config.OffsetsRetentionMinutes)) * time.Minute,
		Partitions:            int32(s.conf.Int(config.OffsetsTopicNumPartitions)),
		Logs:                  s.offsetsLogs,
		Log:                   s.log.With("component", "group-coordinator"),
	})
}

// offsetsLogs returns the logs of __consumer_offsets by partition, creating the topic when
// create is set.
func (s *Server) offsetsLogs(create bool) ([]*storage.Log, error) {
	t, ok := s.md.Topic(group.Topic)
	if !ok {
		if !create {
			return nil, nil
		}
		n := int32(s.conf.Int(config.OffsetsTopicNumPartitions))
		_, err := s.createTopic(context.Background(), group.Topic, n, 1, map[string]string{"cleanup.policy": "compact"}, false)
		if err != nil && !errors.Is(err, wire.ErrTopicAlreadyExists) {
			return nil, fmt.Errorf("creating %s: %w", group.Topic, err)
		}
		if t, ok = s.md.Topic(group.Topic); !ok {
			return nil, fmt.Errorf("%s vanished after creation", group.Topic)
		}
	}
	logs := make([]*storage.Log, len(t.Partitions))
	for _, p := range t.Partitions {
		part := s.parts.get(group.Topic, p.Index)
		if part == nil {
			// Another goroutine may be creating the topic: createTopic holds createMu from
			// registering it until its logs are open. Wait for that, then look again.
			s.createMu.Lock()
			part = s.parts.get(group.Topic, p.Index)
			s.createMu.Unlock()
		}
		if part == nil || int(p.Index) >= len(logs) {
			return nil, fmt.Errorf("%s-%d is not open here", group.Topic, p.Index)
		}
		logs[p.Index] = part.log
	}
	return logs, nil
}

// clientHost is the host a member connected from, as Kafka shows it ("/127.0.0.1").
func clientHost(req *request) string {
	if req.remote == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(req.remote.String())
	if err != nil {
		return ""
	}
	return "/" + host
}

func strPtr(s string) *string { return &s }

func clonePtr(p *string) *string {
	if p == nil {
		return nil
	}
	return strPtr(*p)
}

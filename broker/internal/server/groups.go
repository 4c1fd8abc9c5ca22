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
	"github.com/spoolmq/spool/broker/internal/partition"
	"github.com/spoolmq/spool/protocol-spec/wire"
	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

// newGroupCoordinator starts the coordinator; it serves the groups of the __consumer_offsets
// partitions this broker leads, as reconcile hands them over.
func (s *Server) newGroupCoordinator() (*group.Coordinator, error) {
	return group.New(group.Config{
		InitialRebalanceDelay: time.Duration(s.conf.Int64(config.GroupInitialRebalanceDelay)) * time.Millisecond,
		OffsetsRetention:      time.Duration(s.conf.Int64(config.OffsetsRetentionMinutes)) * time.Minute,
		Log:                   s.log.With("component", "group-coordinator"),
	})
}

// ensureOffsetsTopic creates __consumer_offsets on first use, as Kafka does when a client
// first looks for a coordinator: offsets.topic.num.partitions partitions, compacted, with
// offsets.topic.replication.factor replicas, capped (with a warning) by the live brokers.
// Concurrent first calls wait for the one creating it, so none sees the topic before this
// broker has taken up its leaderships.
func (s *Server) ensureOffsetsTopic(ctx context.Context) error {
	if s.offsetsReady.Load() {
		return nil
	}
	s.offsetsMu.Lock()
	defer s.offsetsMu.Unlock()
	if _, ok := s.md.Topic(group.Topic); ok {
		s.offsetsReady.Store(true)
		return nil
	}
	n := int32(s.conf.Int(config.OffsetsTopicNumPartitions))
	rf := int16(1)
	if s.clustered {
		want := s.conf.Int(config.OffsetsTopicReplicationFactor)
		live := len(s.md.Brokers())
		rf = int16(min(want, live))
		if live < want {
			s.log.Warn("creating "+group.Topic+" with fewer replicas than offsets.topic.replication.factor: not enough live brokers",
				"replication_factor", rf, "offsets.topic.replication.factor", want)
		}
	}
	_, err := s.createTopic(ctx, group.Topic, n, rf, map[string]string{"cleanup.policy": "compact"}, false)
	if err != nil && !errors.Is(err, wire.ErrTopicAlreadyExists) {
		return fmt.Errorf("creating %s: %w", group.Topic, err)
	}
	// The coordinator loads the partitions led here off reconcile's goroutine; those of a
	// new topic are empty, so the wait is short, and the request that created the topic is
	// then served rather than told COORDINATOR_LOAD_IN_PROGRESS.
	for p := range n {
		if err := s.groups.WaitLoad(ctx, p); err != nil {
			return fmt.Errorf("loading %s-%d: %w", group.Topic, p, err)
		}
	}
	s.offsetsReady.Store(true)
	return nil
}

// offsetsPartition is a __consumer_offsets partition led here, as the coordinator writes it:
// appends as leader and commits that are durable and, in a cluster, on every ISR member
// (Kafka's offsets.commit.required.acks=-1).
type offsetsPartition struct {
	part  *partition.Partition
	epoch int32
}

func (o offsetsPartition) Append(records []byte) (partition.AppendResult, error) {
	res, _, err := o.part.AppendAsLeader(records, false, time.Now())
	return res, err
}

// Wait is the partition manager's commit wait: durable, then on every ISR member.
func (o offsetsPartition) Wait(ctx context.Context, end int64) error {
	var err error
	partition.Commit(ctx, []partition.Appended{{Part: o.part, End: end, Epoch: o.epoch, AcksAll: true}}, func(_ int, e error) { err = e })
	return err
}

func (o offsetsPartition) EachRecord(fn func(batch.Record)) error {
	return o.part.EachRecord(fn)
}

func (o offsetsPartition) EachBatchRecord(fn func(batch.Header, batch.Record)) error {
	return o.part.EachBatchRecord(fn)
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

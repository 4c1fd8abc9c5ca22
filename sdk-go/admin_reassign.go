package spool

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// Reassignment is a partition being moved to other brokers.
type Reassignment struct {
	Topic     string
	Partition int32
	// Replicas is the whole replica list during the move: the target, then the replicas
	// being removed.
	Replicas []int32
	Adding   []int32
	Removing []int32
}

// PartitionErrors holds an error (or nil) per topic and partition.
type PartitionErrors map[string]map[int32]error

// Err is the first error in e, in topic and partition order, or nil.
func (e PartitionErrors) Err() error {
	topics := make([]string, 0, len(e))
	for t := range e {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	for _, t := range topics {
		parts := make([]int32, 0, len(e[t]))
		for p := range e[t] {
			parts = append(parts, p)
		}
		sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
		for _, p := range parts {
			if err := e[t][p]; err != nil {
				return fmt.Errorf("%s-%d: %w", t, p, err)
			}
		}
	}
	return nil
}

func (e PartitionErrors) set(topic string, p int32, err error) {
	if e[topic] == nil {
		e[topic] = map[int32]error{}
	}
	e[topic][p] = err
}

// AlterReassignments starts moving partitions to new replica lists (targets[topic][partition];
// a nil list cancels that partition's move). It returns when the brokers have recorded the
// moves, with a result per partition; ListReassignments follows their progress.
func (a *Admin) AlterReassignments(ctx context.Context, targets map[string]map[int32][]int32) (PartitionErrors, error) {
	req := &wire.AlterPartitionReassignmentsRequest{}
	req.Default()
	req.TimeoutMs = int32(a.cl.cfg.requestTimeout / time.Millisecond)
	for topic, parts := range targets {
		rt := wire.AlterPartitionReassignmentsRequestReassignableTopic{Name: topic}
		for p, replicas := range parts {
			rt.Partitions = append(rt.Partitions, wire.AlterPartitionReassignmentsRequestReassignablePartition{PartitionIndex: p, Replicas: replicas})
		}
		req.Topics = append(req.Topics, rt)
	}
	resp := &wire.AlterPartitionReassignmentsResponse{}
	out := PartitionErrors{}
	err := a.controllerRequest(ctx, req, resp, func(bool) error {
		if err := wire.ErrorForCode(resp.ErrorCode); err != nil {
			return withMessage(err, resp.ErrorMessage)
		}
		for _, t := range resp.Responses {
			for _, p := range t.Partitions {
				out.set(t.Name, p.PartitionIndex, withMessage(wire.ErrorForCode(p.ErrorCode), p.ErrorMessage))
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("spool: reassigning partitions: %w", err)
	}
	a.cl.triggerRefresh()
	return out, nil
}

// ListReassignments returns the moves in progress, by topic and partition.
func (a *Admin) ListReassignments(ctx context.Context) ([]Reassignment, error) {
	req := &wire.ListPartitionReassignmentsRequest{}
	req.Default()
	req.TimeoutMs = int32(a.cl.cfg.requestTimeout / time.Millisecond)
	resp := &wire.ListPartitionReassignmentsResponse{}
	err := a.controllerRequest(ctx, req, resp, func(bool) error {
		return withMessage(wire.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
	})
	if err != nil {
		return nil, fmt.Errorf("spool: listing reassignments: %w", err)
	}
	var out []Reassignment
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out = append(out, Reassignment{Topic: t.Name, Partition: p.PartitionIndex, Replicas: p.Replicas, Adding: p.AddingReplicas, Removing: p.RemovingReplicas})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out, nil
}

// ElectLeaders runs leader elections: preferred (unclean false) puts each partition's first
// replica back in the lead; unclean elects any live replica of a partition that has no live
// in-sync replica, which may lose acknowledged records. parts nil means every partition. The
// result per partition is nil (elected), wire.ErrElectionNotNeeded,
// wire.ErrPreferredLeaderNotAvailable, wire.ErrEligibleLeadersNotAvailable or another error.
func (a *Admin) ElectLeaders(ctx context.Context, unclean bool, parts map[string][]int32) (PartitionErrors, error) {
	req := &wire.ElectLeadersRequest{}
	req.Default()
	if unclean {
		req.ElectionType = 1
	}
	req.TimeoutMs = int32(a.cl.cfg.requestTimeout / time.Millisecond)
	if parts != nil {
		req.TopicPartitions = []wire.ElectLeadersRequestTopicPartitions{}
		for t, ps := range parts {
			req.TopicPartitions = append(req.TopicPartitions, wire.ElectLeadersRequestTopicPartitions{Topic: t, Partitions: ps})
		}
	}
	resp := &wire.ElectLeadersResponse{}
	out := PartitionErrors{}
	err := a.controllerRequest(ctx, req, resp, func(bool) error {
		if err := wire.ErrorForCode(resp.ErrorCode); err != nil {
			return err
		}
		for _, t := range resp.ReplicaElectionResults {
			for _, p := range t.PartitionResult {
				out.set(t.Topic, p.PartitionId, withMessage(wire.ErrorForCode(p.ErrorCode), p.ErrorMessage))
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("spool: electing leaders: %w", err)
	}
	a.cl.triggerRefresh()
	return out, nil
}

package spool

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// ReplicaLogDir is where one replica of a partition lives on one broker, and its size, as
// DescribeLogDirs reports it.
type ReplicaLogDir struct {
	Broker    int32
	Dir       string // the broker's log directory holding the replica
	Topic     string
	Partition int32
	Size      int64 // bytes of the replica's log segments
	OffsetLag int64 // Kafka's max(high watermark - log end offset, 0): 0 for a current replica
}

// DescribeLogDirs asks every broker for the replicas it holds of the named topics (of every
// topic when none are named), sorted by topic, partition and broker. When some brokers fail to
// answer, the replicas of the others are still returned, with an error naming each broker that
// failed, as ListGroups does.
func (a *Admin) DescribeLogDirs(ctx context.Context, topics ...string) ([]ReplicaLogDir, error) {
	m, err := a.cl.fetchMetadata(ctx, []string{}, false)
	if err != nil {
		return nil, fmt.Errorf("spool: describing log dirs: %w", err)
	}
	req := &wire.DescribeLogDirsRequest{}
	req.Default()
	if len(topics) > 0 {
		ds, err := a.DescribeTopics(ctx, topics...)
		if err != nil {
			return nil, fmt.Errorf("spool: describing log dirs: %w", err)
		}
		req.Topics = []wire.DescribeLogDirsRequestDescribableLogDirTopic{}
		for _, d := range ds {
			t := wire.DescribeLogDirsRequestDescribableLogDirTopic{Topic: d.Name}
			for _, p := range d.Partitions {
				t.Partitions = append(t.Partitions, p.Partition)
			}
			req.Topics = append(req.Topics, t)
		}
	}
	ids := make([]int32, 0, len(m.brokers))
	for id := range m.brokers {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var out []ReplicaLogDir
	var failed []error
	for _, id := range ids {
		resp := &wire.DescribeLogDirsResponse{}
		err := a.cl.withRetries(ctx, func(ctx context.Context) error {
			if err := a.cl.RequestNode(ctx, id, req, resp); err != nil {
				return err
			}
			return wire.ErrorForCode(resp.ErrorCode)
		})
		if err != nil {
			failed = append(failed, fmt.Errorf("spool: describing the log dirs of broker %d: %w", id, err))
			continue
		}
		for _, r := range resp.Results {
			if err := wire.ErrorForCode(r.ErrorCode); err != nil {
				failed = append(failed, fmt.Errorf("spool: log dir %s of broker %d: %w", r.LogDir, id, err))
				continue
			}
			for _, t := range r.Topics {
				for _, p := range t.Partitions {
					if p.IsFutureKey {
						continue // a copy being moved between directories, not the replica
					}
					out = append(out, ReplicaLogDir{Broker: id, Dir: r.LogDir, Topic: t.Name, Partition: p.PartitionIndex,
						Size: p.PartitionSize, OffsetLag: p.OffsetLag})
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		if a.Partition != b.Partition {
			return a.Partition < b.Partition
		}
		return a.Broker < b.Broker
	})
	return out, errors.Join(failed...)
}

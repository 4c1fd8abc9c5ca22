package server

// OffsetFetch (key 9), versions 1-7; flexible from 6.
//
// Returns the group's committed offsets (-1 and no error for a partition without one, and for
// an unknown group), with the leader epoch from v5 and the committed metadata string. Topics
// null (v2+) asks for every committed partition. With RequireStable (v7) a partition whose
// offset an open transaction holds pending (TxnOffsetCommit) gets UNSTABLE_OFFSET_COMMIT
// (retriable) and offset -1, as Kafka answers; without it the last committed offset.
//
// Authorization (with authorizer.class.name set): Describe on the group, else
// GROUP_AUTHORIZATION_FAILED; Describe on each topic, else its partitions get
// TOPIC_AUTHORIZATION_FAILED (and, when every topic is asked for, it is left out).

import (
	"context"

	"github.com/spoolmq/spool/broker/internal/group"
	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleOffsetFetch(s *Server, ctx context.Context, req *request) *pending {
	s.ensureOffsetsTopic(ctx) // on failure the coordinator answers NOT_COORDINATOR
	r := req.msg.(*wire.OffsetFetchRequest)
	resp := &wire.OffsetFetchResponse{}
	resp.Default()
	if r.GroupId == "" {
		resp.ErrorCode = wire.ErrInvalidGroupId.Code
		return ready(reply{msg: resp})
	}
	if !s.allowed(req, security.OpDescribe, security.ResourceGroup, r.GroupId) {
		resp.ErrorCode = wire.ErrGroupAuthorizationFailed.Code
		// v1 has no top-level error: every partition asked for carries it.
		for _, t := range r.Topics {
			rt := wire.OffsetFetchResponseTopic{Name: t.Name}
			for _, p := range t.PartitionIndexes {
				rt.Partitions = append(rt.Partitions, wire.OffsetFetchResponsePartition{PartitionIndex: p, CommittedOffset: -1, CommittedLeaderEpoch: -1, ErrorCode: resp.ErrorCode})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return ready(reply{msg: resp})
	}
	all := r.Topics == nil && req.version >= 2
	var ask []group.TopicPartitions
	for _, t := range r.Topics {
		ask = append(ask, group.TopicPartitions{Topic: t.Name, Partitions: t.PartitionIndexes})
	}
	got, code := s.groups.FetchOffsets(r.GroupId, ask, all)
	if code != 0 {
		resp.ErrorCode = code
		return ready(reply{msg: resp})
	}
	byTopic := map[string]int{}
	describe := map[string]bool{}
	for _, f := range got {
		ok, seen := describe[f.Topic]
		if !seen {
			ok = s.allowed(req, security.OpDescribe, security.ResourceTopic, f.Topic)
			describe[f.Topic] = ok
		}
		if !ok && all {
			continue // hidden, as Kafka hides topics the principal may not describe
		}
		i, ok := byTopic[f.Topic]
		if !ok {
			i = len(resp.Topics)
			byTopic[f.Topic] = i
			resp.Topics = append(resp.Topics, wire.OffsetFetchResponseTopic{Name: f.Topic})
		}
		md := f.Metadata
		p := wire.OffsetFetchResponsePartition{PartitionIndex: f.Partition, CommittedOffset: f.Offset, CommittedLeaderEpoch: f.LeaderEpoch, Metadata: &md}
		switch {
		case !describe[f.Topic]:
			p = wire.OffsetFetchResponsePartition{PartitionIndex: f.Partition, CommittedOffset: -1, CommittedLeaderEpoch: -1, ErrorCode: wire.ErrTopicAuthorizationFailed.Code}
		case r.RequireStable && s.groups.PendingTxnOffset(r.GroupId, f.Topic, f.Partition):
			p = wire.OffsetFetchResponsePartition{PartitionIndex: f.Partition, CommittedOffset: -1, CommittedLeaderEpoch: -1, ErrorCode: wire.ErrUnstableOffsetCommit.Code}
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, p)
	}
	if !all {
		// Requested topics with no partitions still appear, as Kafka answers.
		for _, t := range r.Topics {
			if _, ok := byTopic[t.Name]; !ok {
				byTopic[t.Name] = len(resp.Topics)
				resp.Topics = append(resp.Topics, wire.OffsetFetchResponseTopic{Name: t.Name, Partitions: []wire.OffsetFetchResponsePartition{}})
			}
		}
	}
	return ready(reply{msg: resp})
}

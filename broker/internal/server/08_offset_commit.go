package server

// OffsetCommit (key 8), versions 2-8; flexible from 8.
//
// Commits are validated against the group: a member of the current generation
// (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS while the group completes a
// rebalance, FENCED_INSTANCE_ID from v7), or generation -1 with an empty member id for a
// standalone consumer of an Empty group. Offsets, leader epochs (v6+) and the metadata
// string are written to __consumer_offsets and acknowledged once durable (acks=all).
// RetentionTimeMs (v2-4) other than -1 sets an explicit expiry; otherwise
// offsets.retention.minutes applies. A partition of an unknown topic is
// UNKNOWN_TOPIC_OR_PARTITION; a metadata string over 4096 bytes OFFSET_METADATA_TOO_LARGE.
//
// Authorization (with authorizer.class.name set): Read on the group, else
// GROUP_AUTHORIZATION_FAILED for every partition and nothing committed; Read on each topic, else
// TOPIC_AUTHORIZATION_FAILED for its partitions.

import (
	"context"
	"strings"
	"time"

	"github.com/spoolmq/spool/broker/internal/group"
	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleOffsetCommit(s *Server, ctx context.Context, req *request) *pending {
	s.ensureOffsetsTopic(ctx) // on failure the coordinator answers NOT_COORDINATOR
	r := req.msg.(*wire.OffsetCommitRequest)
	cr := group.CommitRequest{
		GroupID:    strings.Clone(r.GroupId),
		MemberID:   strings.Clone(r.MemberId),
		InstanceID: clonePtr(r.GroupInstanceId),
		Generation: r.GenerationIdOrMemberEpoch,
		Retention:  -1,
	}
	if req.version <= 4 && r.RetentionTimeMs >= 0 {
		cr.Retention = time.Duration(r.RetentionTimeMs) * time.Millisecond
	}
	resp := &wire.OffsetCommitResponse{}
	resp.Default()
	type slot struct{ t, p int }
	var slots []slot
	for ti, t := range r.Topics {
		rt := wire.OffsetCommitResponseTopic{Name: strings.Clone(t.Name)}
		topic, known := s.md.Topic(t.Name)
		read := s.allowed(req, security.OpRead, security.ResourceTopic, t.Name)
		for pi, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, wire.OffsetCommitResponsePartition{PartitionIndex: p.PartitionIndex})
			c := group.Commit{Topic: rt.Name, Partition: p.PartitionIndex, Offset: p.CommittedOffset, LeaderEpoch: p.CommittedLeaderEpoch, Metadata: clonePtr(p.CommittedMetadata)}
			if req.version < 6 {
				c.LeaderEpoch = -1
			}
			if !read {
				c.Err = wire.ErrTopicAuthorizationFailed.Code
			} else if !known || p.PartitionIndex < 0 || int(p.PartitionIndex) >= len(topic.Partitions) {
				c.Err = wire.ErrUnknownTopicOrPartition.Code
			}
			cr.Commits = append(cr.Commits, c)
			slots = append(slots, slot{ti, pi})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if !s.allowed(req, security.OpRead, security.ResourceGroup, r.GroupId) {
		for ti := range resp.Topics {
			for pi := range resp.Topics[ti].Partitions {
				resp.Topics[ti].Partitions[pi].ErrorCode = wire.ErrGroupAuthorizationFailed.Code
			}
		}
		return ready(reply{msg: resp})
	}
	p := later()
	s.groups.Commit(cr, func(codes []int16) {
		for i, sl := range slots {
			resp.Topics[sl.t].Partitions[sl.p].ErrorCode = codes[i]
		}
		p.complete(reply{msg: resp})
	})
	return p
}

package server

// OffsetDelete (key 47), version 0; never flexible.
//
// Deletes a group's committed offsets for the named partitions (Java AdminClient
// deleteConsumerGroupOffsets). Group-level errors fill the top-level code and leave Topics
// empty: INVALID_GROUP_ID, GROUP_ID_NOT_FOUND for an unknown or dead group, NON_EMPTY_GROUP for
// an active group of another protocol type than "consumer". Per partition:
// UNKNOWN_TOPIC_OR_PARTITION for a partition that does not exist, GROUP_SUBSCRIBED_TO_TOPIC
// while a member of the active group subscribes to the topic, else NONE once the tombstones
// are durable in __consumer_offsets. A single node coordinates every group, so NOT_COORDINATOR
// does not arise here.
//
// Authorization (with authorizer.class.name set): Delete on the group, else
// GROUP_AUTHORIZATION_FAILED; Read on each topic, else TOPIC_AUTHORIZATION_FAILED for its
// partitions.

import (
	"context"
	"strings"

	"github.com/spoolmq/spool/broker/internal/group"
	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleOffsetDelete(s *Server, ctx context.Context, req *request) *pending {
	s.ensureOffsetsTopic(ctx) // on failure the coordinator answers NOT_COORDINATOR
	r := req.msg.(*wire.OffsetDeleteRequest)
	resp := &wire.OffsetDeleteResponse{}
	resp.Default()
	groupID := strings.Clone(r.GroupId)
	if !s.allowed(req, security.OpDelete, security.ResourceGroup, groupID) {
		resp.ErrorCode = wire.ErrGroupAuthorizationFailed.Code
		return ready(reply{msg: resp})
	}
	var dels []group.OffsetDeletion
	for _, t := range r.Topics {
		name := strings.Clone(t.Name)
		topic, known := s.md.Topic(name)
		rt := wire.OffsetDeleteResponseTopic{Name: name}
		read := s.allowed(req, security.OpRead, security.ResourceTopic, name)
		for _, p := range t.Partitions {
			d := group.OffsetDeletion{Topic: name, Partition: p.PartitionIndex}
			if !read {
				d.Err = wire.ErrTopicAuthorizationFailed.Code
			} else if !known || p.PartitionIndex < 0 || int(p.PartitionIndex) >= len(topic.Partitions) {
				d.Err = wire.ErrUnknownTopicOrPartition.Code
			}
			dels = append(dels, d)
			rt.Partitions = append(rt.Partitions, wire.OffsetDeleteResponsePartition{PartitionIndex: p.PartitionIndex})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	p := later()
	s.groups.DeleteOffsets(groupID, dels, func(code int16, codes []int16) {
		if code != 0 {
			resp.ErrorCode, resp.Topics = code, []wire.OffsetDeleteResponseTopic{}
			p.complete(reply{msg: resp})
			return
		}
		i := 0
		for ti := range resp.Topics {
			for pi := range resp.Topics[ti].Partitions {
				resp.Topics[ti].Partitions[pi].ErrorCode = codes[i]
				i++
			}
		}
		p.complete(reply{msg: resp})
	})
	return p
}

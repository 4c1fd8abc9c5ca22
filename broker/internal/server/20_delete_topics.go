package server

// DeleteTopics (key 20), versions 1-6; flexible from 4.
//
// Deletes topics by name (v1-5: TopicNames; v6: Topics with a name or a topic id) together
// with their data. Unknown names get UNKNOWN_TOPIC_OR_PARTITION, unknown ids UNKNOWN_TOPIC_ID;
// each topic succeeds or fails on its own. Deletion is immediate on a single node.
//
// Authorization (with authorizer.class.name set): Delete on each topic, else
// TOPIC_AUTHORIZATION_FAILED for it.

import (
	"context"

	"github.com/spoolmq/spool/broker/internal/cluster"
	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleDeleteTopics(s *Server, ctx context.Context, req *request) *pending {
	r := req.msg.(*wire.DeleteTopicsRequest)
	resp := &wire.DeleteTopicsResponse{}
	resp.Default()
	type target struct {
		name string
		id   wire.UUID
	}
	var targets []target
	for _, n := range r.TopicNames {
		targets = append(targets, target{name: n})
	}
	for _, t := range r.Topics {
		tg := target{id: t.TopicId}
		if t.Name != nil {
			tg.name = *t.Name
		}
		targets = append(targets, tg)
	}
	for _, tg := range targets {
		var res wire.DeleteTopicsResponseDeletableTopicResult
		res.Default()
		name := tg.name
		var err error
		if name == "" && tg.id != (wire.UUID{}) {
			if t, ok := s.md.TopicByID(tg.id); ok {
				name = t.Name
			} else {
				err = wire.ErrUnknownTopicId
			}
		}
		if err == nil && !s.allowed(req, security.OpDelete, security.ResourceTopic, name) {
			err = wire.ErrTopicAuthorizationFailed
		}
		if err == nil {
			var deleted cluster.Topic
			deleted, err = s.deleteTopic(ctx, name)
			res.TopicId = deleted.ID
		}
		if name != "" {
			res.Name = &name
		}
		res.ErrorCode = errCode(err)
		res.ErrorMessage = errMessage(err)
		resp.Responses = append(resp.Responses, res)
	}
	return ready(reply{msg: resp})
}

package server

// CreateTopics (key 19), versions 2-7; flexible from 5.
//
// Creates each topic with its partition count and replication factor (-1 means the broker
// defaults, v4+) and topic-level configs, validated by name and value (INVALID_CONFIG).
// Manual replica assignments are refused with INVALID_REQUEST on a single node unless they
// name only this broker. ValidateOnly checks without creating. v5+ returns the resolved
// configs, partition count and replication factor; v7 the topic id. A topic that exists gets
// TOPIC_ALREADY_EXISTS; each topic succeeds or fails on its own.
//
// Authorization (with authorizer.class.name set): Create on the cluster or on the topic, else
// TOPIC_AUTHORIZATION_FAILED for it.

import (
	"context"
	"fmt"
	"sort"

	"github.com/spoolmq/spool/broker/internal/cluster"
	"github.com/spoolmq/spool/broker/internal/config"
	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleCreateTopics(s *Server, ctx context.Context, req *request) *pending {
	r := req.msg.(*wire.CreateTopicsRequest)
	resp := &wire.CreateTopicsResponse{}
	resp.Default()
	seen := map[string]int{}
	for _, t := range r.Topics {
		seen[t.Name]++
	}
	for _, rt := range r.Topics {
		var res wire.CreateTopicsResponseCreatableTopicResult
		res.Default()
		res.Name = rt.Name
		var err error
		if !s.allowedCluster(req, security.OpCreate) && !s.allowed(req, security.OpCreate, security.ResourceTopic, rt.Name) {
			err = fmt.Errorf("%w: creating topic %s needs Create on the cluster or the topic", wire.ErrTopicAuthorizationFailed, rt.Name)
		} else {
			err = s.createOne(ctx, rt, r.ValidateOnly, seen[rt.Name] > 1, &res, req.version)
		}
		if err != nil {
			res.ErrorCode = errCode(err)
			res.ErrorMessage = errMessage(err)
			res.NumPartitions, res.ReplicationFactor, res.Configs = -1, -1, nil
		}
		resp.Topics = append(resp.Topics, res)
	}
	return ready(reply{msg: resp})
}

func (s *Server) createOne(ctx context.Context, rt wire.CreateTopicsRequestCreatableTopic, validateOnly, duplicate bool, res *wire.CreateTopicsResponseCreatableTopicResult, version int16) error {
	if duplicate {
		return fmt.Errorf("%w: topic %s appears more than once in the request", wire.ErrInvalidRequest, rt.Name)
	}
	partitions, rf := rt.NumPartitions, rt.ReplicationFactor
	if len(rt.Assignments) > 0 {
		if partitions != -1 || rf != -1 {
			return fmt.Errorf("%w: give either replica assignments or partitions and replication factor", wire.ErrInvalidRequest)
		}
		for _, a := range rt.Assignments {
			if len(a.BrokerIds) != 1 || a.BrokerIds[0] != s.self.NodeID {
				return fmt.Errorf("%w: replica assignments may only name broker %d", wire.ErrInvalidReplicaAssignment, s.self.NodeID)
			}
		}
		partitions, rf = int32(len(rt.Assignments)), 1
	}
	if partitions == -1 {
		partitions = s.cfg.numPartitions
	}
	if rf == -1 {
		rf = s.cfg.replication
	}
	configs := map[string]string{}
	for _, c := range rt.Configs {
		if c.Value == nil {
			continue // null means the default
		}
		configs[c.Name] = *c.Value
	}
	t, err := s.createTopic(ctx, rt.Name, partitions, rf, configs, validateOnly)
	if err != nil {
		return err
	}
	res.TopicId = t.ID
	res.NumPartitions = int32(len(t.Partitions))
	res.ReplicationFactor = rf
	if version >= 5 {
		res.Configs = s.topicConfigEntries(t)
	}
	return nil
}

// topicConfigEntries lists every topic config with its effective value, for CreateTopics v5+.
func (s *Server) topicConfigEntries(t cluster.Topic) []wire.CreateTopicsResponseCreatableTopicConfigs {
	var out []wire.CreateTopicsResponseCreatableTopicConfigs
	for _, d := range config.TopicDefs {
		v, src := s.topicValue(t, d.Name)
		out = append(out, wire.CreateTopicsResponseCreatableTopicConfigs{Name: d.Name, Value: &v, ConfigSource: int8(src)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

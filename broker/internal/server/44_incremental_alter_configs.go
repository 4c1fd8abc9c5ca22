package server

// IncrementalAlterConfigs (key 44), versions 0-1; flexible from 1.
//
// Alters topic-level configs: SET (0), DELETE (1, back to the broker default), APPEND (2) and
// SUBTRACT (3) for list configs (cleanup.policy). Names and values are validated
// (INVALID_CONFIG); all of a resource's changes apply together or not at all, and take effect
// on open logs at once. ValidateOnly checks without changing anything. Broker configs are
// static (set by file and flags), altering them gets INVALID_REQUEST, except the replication
// throttles (broker_dynamic_configs.go).
//
// Authorization (with authorizer.class.name set): AlterConfigs on the topic (else
// TOPIC_AUTHORIZATION_FAILED) or, for a broker, on the cluster (else
// CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spoolmq/spool/broker/internal/config"
	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// Config operations.
const (
	opSet int8 = iota
	opDelete
	opAppend
	opSubtract
)

func handleIncrementalAlterConfigs(s *Server, ctx context.Context, req *request) *pending {
	r := req.msg.(*wire.IncrementalAlterConfigsRequest)
	resp := &wire.IncrementalAlterConfigsResponse{}
	resp.Default()
	for _, res := range r.Resources {
		var out wire.IncrementalAlterConfigsResponseAlterConfigsResourceResponse
		out.Default()
		out.ResourceType, out.ResourceName = res.ResourceType, res.ResourceName
		err := s.configAllowed(req, security.OpAlterConfigs, res.ResourceType, res.ResourceName)
		if err == nil {
			err = s.alterResource(ctx, res, r.ValidateOnly)
		}
		out.ErrorCode = errCode(err)
		out.ErrorMessage = errMessage(err)
		resp.Responses = append(resp.Responses, out)
	}
	return ready(reply{msg: resp})
}

func (s *Server) alterResource(ctx context.Context, res wire.IncrementalAlterConfigsRequestAlterConfigsResource, validateOnly bool) error {
	switch res.ResourceType {
	case resourceTopic:
	case resourceBroker:
		return s.alterBrokerConfigs(ctx, res, validateOnly)
	default:
		return fmt.Errorf("%w: resource type %d is not supported", wire.ErrInvalidRequest, res.ResourceType)
	}
	s.createMu.Lock()
	defer s.createMu.Unlock()
	t, ok := s.md.Topic(res.ResourceName)
	if !ok {
		return fmt.Errorf("%w: topic %s", wire.ErrUnknownTopicOrPartition, res.ResourceName)
	}
	configs := maps.Clone(t.Configs)
	if configs == nil {
		configs = map[string]string{}
	}
	for _, c := range res.Configs {
		d := config.LookupTopic(c.Name)
		if d == nil {
			return fmt.Errorf("%w: unknown topic config %q", wire.ErrInvalidConfig, c.Name)
		}
		value := ""
		if c.Value != nil {
			value = *c.Value
		}
		switch c.ConfigOperation {
		case opSet:
			configs[c.Name] = value
		case opDelete:
			delete(configs, c.Name)
		case opAppend, opSubtract:
			if d.Type != config.List {
				return fmt.Errorf("%w: %s is not a list", wire.ErrInvalidConfig, c.Name)
			}
			current, _ := s.topicValue(t, c.Name)
			if v, ok := configs[c.Name]; ok {
				current = v
			}
			items := config.SplitList(current)
			for _, item := range config.SplitList(value) {
				if c.ConfigOperation == opAppend && !slices.Contains(items, item) {
					items = append(items, item)
				}
				if c.ConfigOperation == opSubtract {
					items = slices.DeleteFunc(items, func(x string) bool { return x == item })
				}
			}
			configs[c.Name] = strings.Join(items, ",")
		default:
			return fmt.Errorf("%w: unknown config operation %d", wire.ErrInvalidRequest, c.ConfigOperation)
		}
	}
	return s.setTopicConfigs(ctx, t, configs, validateOnly)
}

package server

// AlterConfigs (key 33), versions 0-2; flexible from 2.
//
// The non-incremental form of IncrementalAlterConfigs: a topic resource's dynamic configs
// become exactly the given set, so a config left out goes back to its broker default, and an
// empty set removes every override (Kafka's semantics). Each name must be a topic config and
// each value valid (INVALID_CONFIG, naming it); a null value or a name given twice is
// INVALID_REQUEST, as in Kafka; an unknown topic is UNKNOWN_TOPIC_OR_PARTITION. ValidateOnly
// checks without changing anything. A resource's change applies whole or not at all, through the
// metadata store (embedded, or /config/topics/<name> in ZooKeeper), and takes effect on open
// logs at once.
//
// Broker resources (type 4, a node id, or "" for the cluster-wide default): the broker's
// dynamic configs become exactly the given set, as in Kafka. Only the dynamic ones
// (broker_dynamic_configs.go: the replication throttles) may be named; a static config is
// INVALID_REQUEST, a bad value INVALID_CONFIG. Any other resource type (BROKER_LOGGER included,
// which Kafka refuses here too) is INVALID_REQUEST. The work runs on the connection's reader
// goroutine; in cluster mode it waits for ZooKeeper's write to come back through the watch.
// With authorizer.class.name set: AlterConfigs on the topic (else TOPIC_AUTHORIZATION_FAILED)
// or, for a broker, on the cluster (else CLUSTER_AUTHORIZATION_FAILED), as
// IncrementalAlterConfigs.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spoolmq/spool/broker/internal/cluster"
	"github.com/spoolmq/spool/broker/internal/config"
	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleAlterConfigs(s *Server, ctx context.Context, req *request) *pending {
	r := req.msg.(*wire.AlterConfigsRequest)
	resp := &wire.AlterConfigsResponse{}
	resp.Default()
	for _, res := range r.Resources {
		var out wire.AlterConfigsResponseResourceResponse
		out.Default()
		out.ResourceType, out.ResourceName = res.ResourceType, res.ResourceName
		err := s.configAllowed(req, security.OpAlterConfigs, res.ResourceType, res.ResourceName)
		if err == nil {
			err = s.replaceResourceConfigs(ctx, res, r.ValidateOnly)
		}
		out.ErrorCode = errCode(err)
		out.ErrorMessage = errMessage(err)
		resp.Responses = append(resp.Responses, out)
	}
	return ready(reply{msg: resp})
}

// replaceResourceConfigs applies one resource of an AlterConfigs request.
func (s *Server) replaceResourceConfigs(ctx context.Context, res wire.AlterConfigsRequestResource, validateOnly bool) error {
	configs := make(map[string]string, len(res.Configs))
	var nulls, dups []string
	for _, c := range res.Configs {
		if _, ok := configs[c.Name]; ok {
			dups = append(dups, c.Name)
		}
		if c.Value == nil {
			nulls = append(nulls, c.Name)
			continue
		}
		configs[c.Name] = *c.Value
	}
	if len(dups) > 0 {
		return fmt.Errorf("%w: duplicate config keys: %s", wire.ErrInvalidRequest, strings.Join(dups, ", "))
	}
	if len(nulls) > 0 {
		return fmt.Errorf("%w: null value not supported for: %s", wire.ErrInvalidRequest, strings.Join(nulls, ", "))
	}
	switch res.ResourceType {
	case resourceTopic:
	case resourceBroker:
		return s.replaceBrokerConfigs(ctx, res.ResourceName, configs, validateOnly)
	default:
		return fmt.Errorf("%w: resource type %d is not supported", wire.ErrInvalidRequest, res.ResourceType)
	}
	for _, name := range slices.Sorted(maps.Keys(configs)) {
		if config.LookupTopic(name) == nil {
			return fmt.Errorf("%w: unknown topic config %q", wire.ErrInvalidConfig, name)
		}
	}
	s.createMu.Lock()
	defer s.createMu.Unlock()
	t, ok := s.md.Topic(res.ResourceName)
	if !ok {
		return fmt.Errorf("%w: topic %s", wire.ErrUnknownTopicOrPartition, res.ResourceName)
	}
	return s.setTopicConfigs(ctx, t, configs, validateOnly)
}

// replaceBrokerConfigs makes configs the whole set of a broker's dynamic configs: the
// incremental form's checks and store (alterBrokerConfigs), asked to delete every current
// config and set the new ones.
func (s *Server) replaceBrokerConfigs(ctx context.Context, broker string, configs map[string]string, validateOnly bool) error {
	res := wire.IncrementalAlterConfigsRequestAlterConfigsResource{ResourceType: resourceBroker, ResourceName: broker}
	if broker != "" {
		if _, err := strconv.ParseInt(broker, 10, 32); err != nil {
			return fmt.Errorf("%w: broker resource %q is not a node id", wire.ErrInvalidRequest, broker)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.md.BrokerConfigs(broker))) {
		if _, ok := configs[name]; !ok {
			res.Configs = append(res.Configs, wire.IncrementalAlterConfigsRequestAlterableConfig{Name: name, ConfigOperation: opDelete})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(configs)) {
		v := configs[name]
		res.Configs = append(res.Configs, wire.IncrementalAlterConfigsRequestAlterableConfig{Name: name, ConfigOperation: opSet, Value: &v})
	}
	return s.alterBrokerConfigs(ctx, res, validateOnly)
}

// setTopicConfigs makes configs the whole set of t's overrides: validated, stored through the
// metadata store and applied to the open logs. Both config-altering APIs end here; the caller
// holds createMu.
func (s *Server) setTopicConfigs(ctx context.Context, t cluster.Topic, configs map[string]string, validateOnly bool) error {
	if err := validateTopicConfigs(configs); err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	if err := s.md.SetTopicConfigs(ctx, t.Name, configs); err != nil {
		return protocolError(err)
	}
	t.Configs = configs
	s.reconfigureTopic(t)
	s.log.Info("topic configs altered", "topic", t.Name, "configs", configs)
	return nil
}

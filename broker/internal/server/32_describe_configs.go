package server

// DescribeConfigs (key 32), versions 1-4; flexible from 4.
//
// Topic resources (type 2) list every topic-level config Spool honours with its effective
// value and source: TOPIC_CONFIG (1) for an override, else the broker property's source,
// STATIC_BROKER_CONFIG (4) or DEFAULT_CONFIG (5). Broker resources (type 4, name "" or this
// node id) list the broker properties. ConfigurationKeys null means all. With IncludeSynonyms
// a topic config lists the override and the broker property behind it, most specific first.
// v3+ adds the config type and, when asked, documentation. Unknown topics get
// UNKNOWN_TOPIC_OR_PARTITION; other resource types INVALID_REQUEST.
//
// Authorization (with authorizer.class.name set): DescribeConfigs on the topic (else
// TOPIC_AUTHORIZATION_FAILED) or, for a broker, on the cluster (else
// CLUSTER_AUTHORIZATION_FAILED).
//
// Who does the work: the handler, from one metadata image read once per request
// (cluster.Images.Current): the ACLs it authorizes with, the topics and their overrides, and
// the dynamic broker configs (this broker's and the default's, which the image holds) are of
// one version, so one answer never mixes a config from before a change with one after it.

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/spoolmq/spool/broker/internal/cluster"
	"github.com/spoolmq/spool/broker/internal/config"
	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// Resource types of the config APIs.
const (
	resourceTopic  int8 = 2
	resourceBroker int8 = 4
)

func handleDescribeConfigs(s *Server, _ context.Context, req *request) *pending {
	r := req.msg.(*wire.DescribeConfigsRequest)
	resp := &wire.DescribeConfigsResponse{}
	resp.Default()
	im := s.images.Current() // the one read of the metadata for this request
	for _, res := range r.Resources {
		var out wire.DescribeConfigsResponseResult
		out.Default()
		out.ResourceType, out.ResourceName = res.ResourceType, res.ResourceName
		var configs []wire.DescribeConfigsResponseResourceResult
		err := s.configAllowedIn(im, req, security.OpDescribeConfigs, res.ResourceType, res.ResourceName)
		if err == nil {
			configs, err = s.describeResource(im, res, r.IncludeSynonyms, r.IncludeDocumentation && req.version >= 3)
		}
		out.ErrorCode = errCode(err)
		out.ErrorMessage = errMessage(err)
		if err == nil {
			out.Configs = configs
		}
		resp.Results = append(resp.Results, out)
	}
	return ready(reply{msg: resp})
}

func (s *Server) describeResource(im *cluster.Image, res wire.DescribeConfigsRequestResource, synonyms, docs bool) ([]wire.DescribeConfigsResponseResourceResult, error) {
	want := func(name string) bool {
		return res.ConfigurationKeys == nil || slices.Contains(res.ConfigurationKeys, name)
	}
	var out []wire.DescribeConfigsResponseResourceResult
	entry := func(name, value string, src config.Source, typ config.Type, doc string) wire.DescribeConfigsResponseResourceResult {
		var e wire.DescribeConfigsResponseResourceResult
		e.Default()
		e.Name, e.ConfigSource, e.ConfigType = name, int8(src), int8(typ)
		e.Value = &value
		if docs {
			e.Documentation = &doc
		}
		return e
	}
	switch res.ResourceType {
	case resourceTopic:
		t, ok := im.Topic(res.ResourceName)
		if !ok {
			return nil, fmt.Errorf("%w: topic %s", wire.ErrUnknownTopicOrPartition, res.ResourceName)
		}
		for _, d := range config.TopicDefs {
			if !want(d.Name) {
				continue
			}
			v, src := s.topicValue(t, d.Name)
			e := entry(d.Name, v, src, d.Type, d.Doc)
			if synonyms {
				e.Synonyms = s.synonyms(t, d)
			}
			out = append(out, e)
		}
	case resourceBroker:
		if res.ResourceName != "" && res.ResourceName != strconv.Itoa(int(s.self.NodeID)) {
			return nil, fmt.Errorf("%w: this is broker %d, not %s", wire.ErrInvalidRequest, s.self.NodeID, res.ResourceName)
		}
		for _, d := range config.AllBrokerDefs() {
			if !want(d.Name) {
				continue
			}
			e := entry(d.Name, s.conf.Get(d.Name), s.conf.Source(d.Name), d.Type, d.Doc)
			e.ReadOnly = !slices.Contains(dynamicBrokerConfigs, d.Name)
			if v, src, ok := s.dynamicBrokerValueIn(im, d.Name); ok {
				e.Value, e.ConfigSource = &v, int8(src)
			}
			if d.Type == config.Password {
				e.Value, e.IsSensitive = nil, true
			}
			if synonyms {
				e.Synonyms = []wire.DescribeConfigsResponseSynonym{{Name: d.Name, Value: e.Value, Source: int8(s.conf.Source(d.Name))}}
			}
			out = append(out, e)
		}
		for _, name := range dynamicBrokerConfigs {
			if !want(name) || config.LookupBroker(name) != nil {
				continue
			}
			v, src, ok := s.dynamicBrokerValueIn(im, name)
			if !ok {
				v, src = unlimitedRate, config.SourceDefault // Kafka's default, Long.MAX_VALUE: no limit
			}
			e := entry(name, v, src, config.Long, "Bytes per second of throttled replication (the replicas the matching *.replication.throttled.replicas topic config names).")
			if synonyms {
				e.Synonyms = []wire.DescribeConfigsResponseSynonym{{Name: name, Value: e.Value, Source: int8(src)}}
			}
			out = append(out, e)
		}
	default:
		return nil, fmt.Errorf("%w: resource type %d is not supported", wire.ErrInvalidRequest, res.ResourceType)
	}
	return out, nil
}

// dynamicBrokerValueIn is dynamicBrokerValue read from im, which holds this broker's and the
// default's dynamic configs (the store's read when it does not: an image of a store that
// has not yet read them).
func (s *Server) dynamicBrokerValueIn(im *cluster.Image, key string) (string, config.Source, bool) {
	for _, b := range []struct {
		name string
		src  config.Source
	}{{strconv.Itoa(int(s.self.NodeID)), config.SourceDynamicBroker}, {"", config.SourceDynamicDefaultBroker}} {
		c, ok := im.BrokerConfigs(b.name)
		if !ok {
			c = s.md.BrokerConfigs(b.name)
		}
		if v, ok := c[key]; ok {
			return v, b.src, true
		}
	}
	return "", 0, false
}

// synonyms lists where a topic config's value may come from, most specific first.
func (s *Server) synonyms(t cluster.Topic, d config.TopicDef) []wire.DescribeConfigsResponseSynonym {
	var out []wire.DescribeConfigsResponseSynonym
	if v, ok := t.Configs[d.Name]; ok {
		out = append(out, wire.DescribeConfigsResponseSynonym{Name: d.Name, Value: &v, Source: int8(config.SourceTopic)})
	}
	if d.Broker == "" {
		return out
	}
	bv := s.conf.Get(d.Broker)
	out = append(out, wire.DescribeConfigsResponseSynonym{Name: d.Broker, Value: &bv, Source: int8(s.conf.Source(d.Broker))})
	return out
}

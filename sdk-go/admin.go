package spool

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// ErrTopicAlreadyExists is CreateTopic's error for a name that is taken; check it with
// errors.Is to make creating a topic idempotent.
var ErrTopicAlreadyExists = wire.ErrTopicAlreadyExists

// Admin wraps the cluster administration requests of a Client.
type Admin struct{ cl *Client }

// Admin returns the admin view of cl.
func (cl *Client) Admin() *Admin { return &Admin{cl} }

// TopicDetail describes one topic.
type TopicDetail struct {
	Name       string
	Internal   bool
	Partitions []PartitionDetail
	Err        error
}

// PartitionDetail describes one partition.
type PartitionDetail struct {
	Partition int32
	Leader    int32
	Replicas  []int32
	ISR       []int32
	Err       error
}

// BrokerDetail is one broker of the cluster.
type BrokerDetail struct {
	NodeID int32
	Host   string
	Port   int32
	Rack   string
}

// ClusterInfo is the cluster as metadata reports it.
type ClusterInfo struct {
	ClusterID  string
	Controller int32
	Brokers    []BrokerDetail
}

func (a *Admin) controller(ctx context.Context) (*conn, error) {
	m, err := a.cl.fetchMetadata(ctx, nil, false)
	if err != nil {
		return nil, err
	}
	if m.controller >= 0 {
		if c, err := a.cl.connToNode(ctx, m.controller); err == nil {
			return c, nil
		}
	}
	return a.cl.anyConn(ctx)
}

// controllerRequest sends req to the controller (any broker if it cannot be reached), with
// retries, and hands the response to check, whose error decides whether to retry.
func (a *Admin) controllerRequest(ctx context.Context, req, resp wire.Message, check func(again bool) error) error {
	sent := false // an earlier attempt's request may have reached the controller
	return a.cl.withRetries(ctx, func(ctx context.Context) error {
		c, err := a.controller(ctx)
		if err != nil {
			return err
		}
		again := sent
		sent = true
		if err := roundTrip(ctx, c, req, resp); err != nil {
			return err
		}
		return check(again)
	})
}

func strp(s string) *string { return &s }

// CreateTopic creates a topic with partitions and replication factor (-1 for the broker
// defaults) and configs.
func (a *Admin) CreateTopic(ctx context.Context, name string, partitions int32, replicationFactor int16, configs map[string]string) error {
	req := &wire.CreateTopicsRequest{}
	req.Default()
	req.TimeoutMs = int32(a.cl.cfg.requestTimeout / time.Millisecond)
	t := wire.CreateTopicsRequestCreatableTopic{Name: name, NumPartitions: partitions, ReplicationFactor: replicationFactor}
	keys := make([]string, 0, len(configs))
	for k := range configs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Configs = append(t.Configs, wire.CreateTopicsRequestCreatableTopicConfig{Name: k, Value: strp(configs[k])})
	}
	req.Topics = []wire.CreateTopicsRequestCreatableTopic{t}
	resp := &wire.CreateTopicsResponse{}
	err := a.controllerRequest(ctx, req, resp, func(again bool) error {
		for _, r := range resp.Topics {
			err := wire.ErrorForCode(r.ErrorCode)
			if again && errors.Is(err, wire.ErrTopicAlreadyExists) {
				// An earlier attempt timed out or lost its connection after the controller
				// got it, and went on to create the topic (a broker does not undo a creation
				// that outlasts the request's timeout).
				continue
			}
			if err != nil {
				return withMessage(err, r.ErrorMessage)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("spool: creating topic %q: %w", name, err)
	}
	return a.waitTopic(ctx, name, true)
}

// waitTopic waits until metadata shows the topic with leaders (exists) or without it.
func (a *Admin) waitTopic(ctx context.Context, name string, exists bool) error {
	for attempt := 0; ; attempt++ {
		m, err := a.cl.fetchMetadata(ctx, []string{name}, false)
		if err == nil {
			tm, ok := m.topics[name]
			if exists && ok && tm.err == nil && len(tm.partitions) > 0 {
				ready := true
				for _, p := range tm.partitions {
					ready = ready && p.leader >= 0
				}
				if ready {
					return nil
				}
			}
			if !exists && (!ok || errors.Is(tm.err, wire.ErrUnknownTopicOrPartition)) {
				return nil
			}
		}
		if err := sleepCtx(ctx, min(a.cl.backoff(attempt), 100*time.Millisecond)); err != nil {
			return err
		}
	}
}

func withMessage(err error, msg *string) error {
	if err == nil || msg == nil || *msg == "" {
		return err
	}
	// Brokers (Spool's among them) often start the message with the error's own text; say
	// only what the message adds.
	m := *msg
	var we *wire.Error
	if errors.As(err, &we) {
		m = strings.TrimPrefix(strings.TrimPrefix(m, we.Error()), ": ")
	}
	if m == "" {
		return err
	}
	return fmt.Errorf("%w (%s)", err, m)
}

// DeleteTopics deletes topics.
func (a *Admin) DeleteTopics(ctx context.Context, names ...string) error {
	req := &wire.DeleteTopicsRequest{}
	req.Default()
	req.TimeoutMs = int32(a.cl.cfg.requestTimeout / time.Millisecond)
	req.TopicNames = names
	for i := range names {
		req.Topics = append(req.Topics, wire.DeleteTopicsRequestDeleteTopicState{Name: &names[i]})
	}
	resp := &wire.DeleteTopicsResponse{}
	err := a.controllerRequest(ctx, req, resp, func(again bool) error {
		var errs []error
		for _, r := range resp.Responses {
			if err := wire.ErrorForCode(r.ErrorCode); err != nil {
				if again && errors.Is(err, wire.ErrUnknownTopicOrPartition) {
					continue // deleted by an earlier attempt, as CreateTopic's retries
				}
				n := ""
				if r.Name != nil {
					n = *r.Name
				}
				if errors.Is(err, wire.ErrUnknownTopicOrPartition) {
					err = finalError{err}
				}
				errs = append(errs, fmt.Errorf("topic %q: %w", n, withMessage(err, r.ErrorMessage)))
			}
		}
		return errors.Join(errs...)
	})
	if err != nil {
		return fmt.Errorf("spool: deleting topics: %w", err)
	}
	for _, n := range names {
		if err := a.waitTopic(ctx, n, false); err != nil {
			return err
		}
	}
	return nil
}

// ListTopics returns the names of all topics, sorted.
func (a *Admin) ListTopics(ctx context.Context) ([]string, error) {
	m, err := a.cl.fetchMetadata(ctx, nil, true)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(m.topics))
	for n := range m.topics {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// DescribeTopics returns details of the named topics, or of all topics when none are named.
func (a *Admin) DescribeTopics(ctx context.Context, names ...string) ([]TopicDetail, error) {
	req := &wire.MetadataRequest{}
	req.Default()
	if len(names) > 0 {
		req.Topics = make([]wire.MetadataRequestTopic, len(names))
		for i := range names {
			req.Topics[i].Name = &names[i]
		}
	} else {
		req.Topics = nil
	}
	req.AllowAutoTopicCreation = false
	resp := &wire.MetadataResponse{}
	if err := a.cl.withRetries(ctx, func(ctx context.Context) error { return a.cl.Request(ctx, req, resp) }); err != nil {
		return nil, err
	}
	out := make([]TopicDetail, 0, len(resp.Topics))
	for _, t := range resp.Topics {
		d := TopicDetail{Internal: t.IsInternal, Err: wire.ErrorForCode(t.ErrorCode)}
		if t.Name != nil {
			d.Name = *t.Name
		}
		for _, p := range t.Partitions {
			d.Partitions = append(d.Partitions, PartitionDetail{Partition: p.PartitionIndex, Leader: p.LeaderId,
				Replicas: p.ReplicaNodes, ISR: p.IsrNodes, Err: wire.ErrorForCode(p.ErrorCode)})
		}
		sort.Slice(d.Partitions, func(i, j int) bool { return d.Partitions[i].Partition < d.Partitions[j].Partition })
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Cluster returns the cluster id, controller and brokers.
func (a *Admin) Cluster(ctx context.Context) (ClusterInfo, error) {
	req := &wire.MetadataRequest{}
	req.Default()
	req.Topics = []wire.MetadataRequestTopic{}
	req.AllowAutoTopicCreation = false
	resp := &wire.MetadataResponse{}
	if err := a.cl.withRetries(ctx, func(ctx context.Context) error { return a.cl.Request(ctx, req, resp) }); err != nil {
		return ClusterInfo{}, err
	}
	ci := ClusterInfo{Controller: resp.ControllerId}
	if resp.ClusterId != nil {
		ci.ClusterID = *resp.ClusterId
	}
	for _, b := range resp.Brokers {
		bd := BrokerDetail{NodeID: b.NodeId, Host: b.Host, Port: b.Port}
		if b.Rack != nil {
			bd.Rack = *b.Rack
		}
		ci.Brokers = append(ci.Brokers, bd)
	}
	sort.Slice(ci.Brokers, func(i, j int) bool { return ci.Brokers[i].NodeID < ci.Brokers[j].NodeID })
	return ci, nil
}

// CreatePartitions raises the partition count of topic to total.
func (a *Admin) CreatePartitions(ctx context.Context, topic string, total int32) error {
	req := &wire.CreatePartitionsRequest{}
	req.Default()
	req.TimeoutMs = int32(a.cl.cfg.requestTimeout / time.Millisecond)
	req.Topics = []wire.CreatePartitionsRequestTopic{{Name: topic, Count: total}}
	resp := &wire.CreatePartitionsResponse{}
	err := a.controllerRequest(ctx, req, resp, func(bool) error {
		for _, r := range resp.Results {
			if err := wire.ErrorForCode(r.ErrorCode); err != nil {
				if errors.Is(err, wire.ErrUnknownTopicOrPartition) {
					err = finalError{err}
				}
				return withMessage(err, r.ErrorMessage)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("spool: creating partitions of %q: %w", topic, err)
	}
	for attempt := 0; ; attempt++ {
		m, err := a.cl.fetchMetadata(ctx, []string{topic}, false)
		if err == nil {
			if tm := m.topics[topic]; tm != nil && len(tm.partitions) >= int(total) {
				a.cl.triggerRefresh()
				return nil
			}
		}
		if err := sleepCtx(ctx, min(a.cl.backoff(attempt), 100*time.Millisecond)); err != nil {
			return err
		}
	}
}

// ConfigEntry is one configuration value of a resource.
type ConfigEntry struct {
	Name string
	// Value is nil for a sensitive config (a password), which brokers do not reveal.
	Value    *string
	ReadOnly bool
	// Default is set when the value is the built-in default (Source ConfigSourceDefault):
	// nobody set it, not for the resource and not in the broker's properties.
	Default   bool
	Sensitive bool
	// Source is where the value comes from, one of the ConfigSource constants.
	Source int8
}

// Where a config value comes from (ConfigEntry.Source), as Kafka numbers them.
const (
	ConfigSourceUnknown              int8 = 0
	ConfigSourceDynamicTopic         int8 = 1 // set for this topic
	ConfigSourceDynamicBroker        int8 = 2 // set at run time for this broker (Kafka)
	ConfigSourceDynamicDefaultBroker int8 = 3 // set at run time for every broker (Kafka)
	ConfigSourceStaticBroker         int8 = 4 // the broker's properties file or flags
	ConfigSourceDefault              int8 = 5 // the built-in default
)

// ConfigResourceType is the kind of resource configs belong to, Kafka's ConfigResource.Type.
type ConfigResourceType int8

// The config resource types Spool serves.
const (
	ConfigResourceTopic  ConfigResourceType = 2
	ConfigResourceBroker ConfigResourceType = 4
)

func (t ConfigResourceType) String() string {
	switch t {
	case ConfigResourceTopic:
		return "topic"
	case ConfigResourceBroker:
		return "broker"
	}
	return "resource type " + strconv.Itoa(int(t))
}

// ConfigResource names what DescribeConfigs and AlterConfigs read or change.
type ConfigResource struct {
	Type ConfigResourceType
	// Name is the topic name, or the broker id in decimal. An empty broker name is the
	// cluster-wide default on Kafka, and the broker that answers on Spool.
	Name string
}

// TopicResource is the configs of a topic.
func TopicResource(name string) ConfigResource {
	return ConfigResource{Type: ConfigResourceTopic, Name: name}
}

// BrokerResource is the configs of broker id. Requests about it go to that broker, as
// Kafka's Admin sends them: a broker describes only its own configs.
func BrokerResource(id int32) ConfigResource {
	return ConfigResource{Type: ConfigResourceBroker, Name: strconv.Itoa(int(id))}
}

func (r ConfigResource) String() string { return fmt.Sprintf("%s %q", r.Type, r.Name) }

// DescribeConfigs returns the configs of res, sorted by name: the keys named, or every config
// the broker knows for res when none are. Each entry says whether it is the built-in default
// and where its value comes from.
func (a *Admin) DescribeConfigs(ctx context.Context, res ConfigResource, keys ...string) ([]ConfigEntry, error) {
	req := &wire.DescribeConfigsRequest{}
	req.Default()
	req.Resources = []wire.DescribeConfigsRequestResource{{ResourceType: int8(res.Type), ResourceName: res.Name, ConfigurationKeys: keys}}
	resp := &wire.DescribeConfigsResponse{}
	err := a.configRequest(ctx, res, req, resp, func() error {
		for _, r := range resp.Results {
			if err := wire.ErrorForCode(r.ErrorCode); err != nil {
				return withMessage(adminErr(err), r.ErrorMessage)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("spool: describing configs of %v: %w", res, err)
	}
	var out []ConfigEntry
	for _, r := range resp.Results {
		for _, c := range r.Configs {
			out = append(out, ConfigEntry{Name: c.Name, Value: c.Value, ReadOnly: c.ReadOnly, Sensitive: c.IsSensitive,
				Source: c.ConfigSource, Default: c.ConfigSource == ConfigSourceDefault})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// AlterConfigs sets (non-nil value) or deletes (nil value: back to the default) configs of
// res with IncrementalAlterConfigs; the changes apply together or not at all. Spool's broker
// configs are static (its properties file and flags) except the replication throttles, so
// altering others fails with INVALID_REQUEST there; Kafka accepts its dynamic broker configs.
func (a *Admin) AlterConfigs(ctx context.Context, res ConfigResource, set map[string]*string) error {
	req := &wire.IncrementalAlterConfigsRequest{}
	req.Default()
	r := wire.IncrementalAlterConfigsRequestAlterConfigsResource{ResourceType: int8(res.Type), ResourceName: res.Name}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		op := int8(0) // SET
		if set[k] == nil {
			op = 1 // DELETE
		}
		r.Configs = append(r.Configs, wire.IncrementalAlterConfigsRequestAlterableConfig{Name: k, ConfigOperation: op, Value: set[k]})
	}
	req.Resources = []wire.IncrementalAlterConfigsRequestAlterConfigsResource{r}
	resp := &wire.IncrementalAlterConfigsResponse{}
	err := a.configRequest(ctx, res, req, resp, func() error {
		for _, r := range resp.Responses {
			if err := wire.ErrorForCode(r.ErrorCode); err != nil {
				return withMessage(adminErr(err), r.ErrorMessage)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("spool: altering configs of %v: %w", res, err)
	}
	return nil
}

// DescribeTopicConfigs is DescribeConfigs of TopicResource(topic).
func (a *Admin) DescribeTopicConfigs(ctx context.Context, topic string, keys ...string) ([]ConfigEntry, error) {
	return a.DescribeConfigs(ctx, TopicResource(topic), keys...)
}

// AlterTopicConfigs is AlterConfigs of TopicResource(topic).
func (a *Admin) AlterTopicConfigs(ctx context.Context, topic string, set map[string]*string) error {
	return a.AlterConfigs(ctx, TopicResource(topic), set)
}

// configRequest sends a config request about res with retries: to the broker a broker
// resource names, else to any broker.
func (a *Admin) configRequest(ctx context.Context, res ConfigResource, req, resp wire.Message, check func() error) error {
	if res.Type != ConfigResourceBroker || res.Name == "" {
		return a.cl.requestChecked(ctx, req, resp, check)
	}
	id, err := strconv.ParseInt(res.Name, 10, 32)
	if err != nil || id < 0 {
		return fmt.Errorf("broker resource name %q: want a broker id", res.Name)
	}
	return a.cl.withRetries(ctx, func(ctx context.Context) error {
		m, err := a.cl.fetchMetadata(ctx, nil, false)
		if err != nil {
			return err
		}
		if _, ok := m.brokers[int32(id)]; !ok {
			return finalError{fmt.Errorf("no broker %d in the cluster: %w", id, wire.ErrBrokerNotAvailable)}
		}
		if err := a.cl.RequestNode(ctx, int32(id), req, resp); err != nil {
			return err
		}
		return check()
	})
}

// Special timestamps for ListOffsets.
const (
	// OffsetEarliest asks for the log start offset.
	OffsetEarliest int64 = -2
	// OffsetLatest asks for the log end offset (high watermark).
	OffsetLatest int64 = -1
)

// ListOffsets returns, per partition of topic, the first offset whose timestamp is at or
// after ts (a Unix millisecond time), or the earliest/latest offset for OffsetEarliest and
// OffsetLatest. A partition with no such record gets -1.
func (a *Admin) ListOffsets(ctx context.Context, topic string, ts int64) (map[int32]int64, error) {
	tm, err := a.cl.topic(ctx, topic)
	if err != nil {
		return nil, err
	}
	ps := make(map[int32]int64, len(tm.partitions))
	for i := range tm.partitions {
		ps[int32(i)] = ts
	}
	return a.cl.listOffsets(ctx, topic, ps)
}

// listOffsets asks each partition's leader for the offset of a timestamp.
func (cl *Client) listOffsets(ctx context.Context, topic string, ts map[int32]int64) (map[int32]int64, error) {
	out := make(map[int32]int64, len(ts))
	err := cl.withRetries(ctx, func(ctx context.Context) error {
		if _, err := cl.topic(ctx, topic); err != nil {
			return err
		}
		byLeader := map[int32]*wire.ListOffsetsRequest{}
		for p, t := range ts {
			if _, ok := out[p]; ok {
				continue
			}
			l := cl.leaderOf(topic, p)
			if l < 0 {
				return fmt.Errorf("spool: %s[%d]: %w", topic, p, wire.ErrLeaderNotAvailable)
			}
			req := byLeader[l]
			if req == nil {
				req = &wire.ListOffsetsRequest{}
				req.Default()
				req.ReplicaId = -1
				req.IsolationLevel = int8(cl.cfg.isolation)
				req.Topics = []wire.ListOffsetsRequestTopic{{Name: topic}}
				byLeader[l] = req
			}
			req.Topics[0].Partitions = append(req.Topics[0].Partitions, wire.ListOffsetsRequestPartition{PartitionIndex: p, CurrentLeaderEpoch: -1, Timestamp: t})
		}
		for l, req := range byLeader {
			resp := &wire.ListOffsetsResponse{}
			if err := cl.RequestNode(ctx, l, req, resp); err != nil {
				return err
			}
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if err := wire.ErrorForCode(p.ErrorCode); err != nil {
						return fmt.Errorf("spool: list offsets %s[%d]: %w", topic, p.PartitionIndex, err)
					}
					out[p.PartitionIndex] = p.Offset
				}
			}
		}
		return nil
	})
	return out, err
}

// adminErr makes UNKNOWN_TOPIC_OR_PARTITION in an admin response final: the broker answered
// for the topic, so retrying does not help.
func adminErr(err error) error {
	if errors.Is(err, wire.ErrUnknownTopicOrPartition) {
		return finalError{err}
	}
	return err
}

// requestChecked sends req to any broker with retries; check reads the error codes of resp
// after each attempt, and a retriable one makes the call try again.
func (cl *Client) requestChecked(ctx context.Context, req, resp wire.Message, check func() error) error {
	return cl.withRetries(ctx, func(ctx context.Context) error {
		if err := cl.Request(ctx, req, resp); err != nil {
			return err
		}
		return check()
	})
}

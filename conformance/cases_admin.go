package conformance

import (
	"fmt"
	"slices"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// Metadata and administration: SPEC.md §8.4, §8.11, §8.12, §8.15, §8.16, §8.18, §8.20.

// metadata asks for the given topics (nil: all) at the highest version.
func (t *T) metadata(c *Conn, autoCreate bool, topics ...string) wire.MetadataResponse {
	req := def[wire.MetadataRequest]()
	req.AllowAutoTopicCreation = autoCreate
	if topics != nil {
		req.Topics = []wire.MetadataRequestTopic{}
		for _, n := range topics {
			req.Topics = append(req.Topics, wire.MetadataRequestTopic{Name: ptr(n)})
		}
	}
	var resp wire.MetadataResponse
	t.Do(c, req, &resp, maxV(wire.KeyMetadata))
	return resp
}

// alterTopic changes one topic config with IncrementalAlterConfigs (op 0 set, 1 delete) and
// returns the error code.
func (t *T) alterTopic(topic string, validateOnly bool, op int8, name string, value *string) int16 {
	var resp wire.IncrementalAlterConfigsResponse
	t.Do(t.Conn(), &wire.IncrementalAlterConfigsRequest{ValidateOnly: validateOnly, Resources: []wire.IncrementalAlterConfigsRequestAlterConfigsResource{{
		ResourceType: 2, ResourceName: topic, Configs: []wire.IncrementalAlterConfigsRequestAlterableConfig{{Name: name, ConfigOperation: op, Value: value}},
	}}}, &resp, maxV(wire.KeyIncrementalAlterConfigs))
	if len(resp.Responses) != 1 {
		t.Fatalf("IncrementalAlterConfigs: %d results", len(resp.Responses))
	}
	return resp.Responses[0].ErrorCode
}

// metadataTopic asks for one topic and returns its entry, failing when it is missing.
func (t *T) metadataTopic(c *Conn, autoCreate bool, name string) *wire.MetadataResponseTopic {
	tp := findTopic(t.metadata(c, autoCreate, name), name)
	if tp == nil {
		t.Fatalf("topic %q not in the Metadata answer", name)
	}
	return tp
}

// createTopic sends one CreateTopics request for a topic and returns its result.
func (t *T) createTopic(c *Conn, name string, partitions int32, rf int16, validateOnly bool, configs ...string) wire.CreateTopicsResponseCreatableTopicResult {
	req := def[wire.CreateTopicsRequest]()
	req.ValidateOnly = validateOnly
	topic := wire.CreateTopicsRequestCreatableTopic{Name: name, NumPartitions: partitions, ReplicationFactor: rf}
	for i := 0; i+1 < len(configs); i += 2 {
		topic.Configs = append(topic.Configs, wire.CreateTopicsRequestCreatableTopicConfig{Name: configs[i], Value: ptr(configs[i+1])})
	}
	req.Topics = []wire.CreateTopicsRequestCreatableTopic{topic}
	var resp wire.CreateTopicsResponse
	t.Do(c, req, &resp, maxV(wire.KeyCreateTopics))
	if len(resp.Topics) != 1 {
		t.Fatalf("CreateTopics: %d results, want 1", len(resp.Topics))
	}
	if resp.Topics[0].ErrorCode == 0 && !validateOnly {
		t.Cleanup(func() { t.deleteTopics(name) })
	}
	return resp.Topics[0]
}

// topicConfigs describes a topic's configs (keys nil: all).
func (t *T) topicConfigs(c *Conn, topic string, keys ...string) (int16, map[string]string) {
	var resp wire.DescribeConfigsResponse
	t.Do(c, &wire.DescribeConfigsRequest{Resources: []wire.DescribeConfigsRequestResource{{ResourceType: 2, ResourceName: topic, ConfigurationKeys: keys}}},
		&resp, maxV(wire.KeyDescribeConfigs))
	if len(resp.Results) != 1 {
		t.Fatalf("DescribeConfigs: %d results, want 1", len(resp.Results))
	}
	out := map[string]string{}
	for _, e := range resp.Results[0].Configs {
		if e.Value != nil {
			out[e.Name] = *e.Value
		}
	}
	return resp.Results[0].ErrorCode, out
}

func init() {
	register(&Case{ID: "metadata/topic", Spec: "§8.4",
		Desc: "Metadata lists a topic with its partitions, each led by a listed broker that is in its replicas and ISR, and a non-zero topic id",
		Run: func(t *T) {
			topic := t.Topic(3)
			c := t.Conn()
			resp := t.metadata(c, false, topic)
			tp := findTopic(resp, topic)
			if tp == nil || tp.ErrorCode != 0 {
				t.Fatalf("topic %s: %+v", topic, tp)
			}
			if tp.TopicId == (wire.UUID{}) || tp.IsInternal {
				t.Errorf("topic id %v internal %v, want non-zero and false", tp.TopicId, tp.IsInternal)
			}
			if len(tp.Partitions) != 3 {
				t.Fatalf("%d partitions, want 3", len(tp.Partitions))
			}
			brokers := map[int32]bool{}
			for _, b := range resp.Brokers {
				brokers[b.NodeId] = true
			}
			for _, p := range tp.Partitions {
				if !brokers[p.LeaderId] || !slices.Contains(p.ReplicaNodes, p.LeaderId) || !slices.Contains(p.IsrNodes, p.LeaderId) || p.LeaderEpoch < 0 {
					t.Errorf("partition %d: leader %d epoch %d replicas %v isr %v", p.PartitionIndex, p.LeaderId, p.LeaderEpoch, p.ReplicaNodes, p.IsrNodes)
				}
			}
		}})
	register(&Case{ID: "metadata/cluster", Spec: "§8.4",
		Desc: "Metadata names a cluster id, a controller among the brokers, and the broker the client connected to",
		Run: func(t *T) {
			resp := t.metadata(t.Conn(), false)
			if resp.ClusterId == nil || *resp.ClusterId == "" {
				t.Errorf("no cluster id")
			}
			found, controller := false, false
			for _, b := range resp.Brokers {
				found = found || fmt.Sprintf("%s:%d", b.Host, b.Port) == t.Bootstrap
				controller = controller || b.NodeId == resp.ControllerId
			}
			if !found {
				t.Errorf("brokers %+v do not include the bootstrap address %s", resp.Brokers, t.Bootstrap)
			}
			if !controller {
				t.Errorf("controller %d is not a listed broker", resp.ControllerId)
			}
		}})
	register(&Case{ID: "metadata/null-is-all-empty-is-none", Spec: "§8.4",
		Desc: "Metadata v1+: null topics means all topics, an empty list means none",
		Run: func(t *T) {
			topic := t.Topic(1)
			c := t.Conn()
			if findTopic(t.metadata(c, false), topic) == nil {
				t.Errorf("all topics: %s missing", topic)
			}
			if n := len(t.metadata(c, false, []string{}...).Topics); n != 0 {
				t.Errorf("empty list: %d topics, want 0", n)
			}
		}})
	register(&Case{ID: "metadata/unknown-topic-no-autocreate", Spec: "§8.4",
		Desc: "an unknown topic with AllowAutoTopicCreation false gets UNKNOWN_TOPIC_OR_PARTITION and is not created",
		Run: func(t *T) {
			c := t.Conn()
			name := t.Name("missing")
			for range 2 {
				t.wantCode("Metadata", t.metadataTopic(c, false, name).ErrorCode, wire.ErrUnknownTopicOrPartition)
			}
		}})
	register(&Case{ID: "metadata/auto-create", Spec: "§8.4",
		Desc: "an unknown topic with AllowAutoTopicCreation true is created (auto.create.topics.enable defaults to true)",
		Run: func(t *T) {
			c := t.Conn()
			name := t.Name("auto")
			t.Cleanup(func() { t.deleteTopics(name) })
			t.waitFor("auto-created "+name, func() (bool, string) {
				tp := t.metadataTopic(c, true, name)
				// LEADER_NOT_AVAILABLE while the new topic's partitions get leaders; Kafka also
				// answers UNKNOWN_TOPIC_OR_PARTITION while its creation is in flight. Another
				// error means it will not be created.
				switch tp.ErrorCode {
				case 0, wire.CodeOf(wire.ErrLeaderNotAvailable), wire.CodeOf(wire.ErrUnknownTopicOrPartition):
				default:
					t.Fatalf("Metadata: %s", codeName(tp.ErrorCode))
				}
				return tp.ErrorCode == 0 && len(tp.Partitions) > 0, codeName(tp.ErrorCode)
			})
		}})
	register(&Case{ID: "metadata/invalid-name", Spec: "§8.4",
		Desc: "a topic name with invalid characters gets INVALID_TOPIC_EXCEPTION, even with auto-creation",
		Run: func(t *T) {
			name := "bad name!"
			t.wantCode("Metadata", t.metadataTopic(t.Conn(), true, name).ErrorCode, wire.ErrInvalidTopicException)
		}})
	register(&Case{ID: "admin/create-topic", Spec: "§8.11",
		Desc: "CreateTopics creates a topic with the requested partitions and returns its id and settings",
		Run: func(t *T) {
			c := t.Conn()
			name := t.Name("t")
			r := t.createTopic(c, name, 4, 1, false)
			t.wantCode("CreateTopics", r.ErrorCode, nil)
			if r.NumPartitions != 4 || r.ReplicationFactor != 1 || r.TopicId == (wire.UUID{}) {
				t.Errorf("result: %d partitions, rf %d, id %v", r.NumPartitions, r.ReplicationFactor, r.TopicId)
			}
			t.waitTopic(c, name, 4)
		}})
	register(&Case{ID: "admin/create-existing", Spec: "§8.11",
		Desc: "creating a topic that exists gets TOPIC_ALREADY_EXISTS",
		Run: func(t *T) {
			topic := t.Topic(1)
			t.wantCode("CreateTopics", t.createTopic(t.Conn(), topic, 1, 1, false).ErrorCode, wire.ErrTopicAlreadyExists)
		}})
	register(&Case{ID: "admin/create-invalid-name", Spec: "§8.11",
		Desc: "creating a topic with an invalid name gets INVALID_TOPIC_EXCEPTION",
		Run: func(t *T) {
			t.wantCode("CreateTopics", t.createTopic(t.Conn(), "no/slashes", 1, 1, false).ErrorCode, wire.ErrInvalidTopicException)
		}})
	register(&Case{ID: "admin/create-invalid-partitions", Spec: "§8.11",
		Desc: "creating a topic with 0 partitions gets INVALID_PARTITIONS",
		Run: func(t *T) {
			t.wantCode("CreateTopics", t.createTopic(t.Conn(), t.Name("t"), 0, 1, false).ErrorCode, wire.ErrInvalidPartitions)
		}})
	register(&Case{ID: "admin/create-replication-too-high", Spec: "§8.11",
		Desc: "a replication factor above the number of brokers gets INVALID_REPLICATION_FACTOR",
		Run: func(t *T) {
			n := len(t.metadata(t.Conn(), false).Brokers)
			t.wantCode("CreateTopics", t.createTopic(t.Conn(), t.Name("t"), 1, int16(n+1), false).ErrorCode, wire.ErrInvalidReplicationFactor)
		}})
	register(&Case{ID: "admin/create-invalid-config", Spec: "§8.11",
		Desc: "an unknown topic config gets INVALID_CONFIG",
		Run: func(t *T) {
			t.wantCode("CreateTopics", t.createTopic(t.Conn(), t.Name("t"), 1, 1, false, "no.such.config", "1").ErrorCode, wire.ErrInvalidConfig)
		}})
	register(&Case{ID: "admin/create-validate-only", Spec: "§8.11",
		Desc: "CreateTopics with ValidateOnly succeeds without creating the topic",
		Run: func(t *T) {
			c := t.Conn()
			name := t.Name("t")
			t.wantCode("CreateTopics", t.createTopic(c, name, 2, 1, true).ErrorCode, nil)
			t.wantCode("Metadata afterwards", t.metadataTopic(c, false, name).ErrorCode, wire.ErrUnknownTopicOrPartition)
		}})
	register(&Case{ID: "admin/create-with-config", Spec: "§8.11",
		Desc: "configs given at creation are reported by DescribeConfigs",
		Run: func(t *T) {
			topic := t.Topic(1, "retention.ms", "123456", "cleanup.policy", "compact")
			code, got := t.topicConfigs(t.Conn(), topic)
			t.wantCode("DescribeConfigs", code, nil)
			if got["retention.ms"] != "123456" || got["cleanup.policy"] != "compact" {
				t.Errorf("retention.ms=%q cleanup.policy=%q, want 123456 and compact", got["retention.ms"], got["cleanup.policy"])
			}
		}})
	register(&Case{ID: "admin/delete-topic", Spec: "§8.12",
		Desc: "DeleteTopics removes a topic: Metadata then reports it unknown",
		Run: func(t *T) {
			topic := t.Topic(1)
			c := t.Conn()
			var resp wire.DeleteTopicsResponse
			t.Do(c, &wire.DeleteTopicsRequest{TopicNames: []string{topic}, TimeoutMs: 30000}, &resp, 5)
			if len(resp.Responses) != 1 {
				t.Fatalf("DeleteTopics: %d results", len(resp.Responses))
			}
			t.wantCode("DeleteTopics", resp.Responses[0].ErrorCode, nil)
			t.waitFor(topic+" gone", func() (bool, string) {
				tp := findTopic(t.metadata(c, false, topic), topic)
				return tp != nil && tp.ErrorCode == wire.CodeOf(wire.ErrUnknownTopicOrPartition), fmt.Sprintf("%+v", tp)
			})
		}})
	register(&Case{ID: "admin/delete-unknown", Spec: "§8.12",
		Desc: "deleting a topic that does not exist gets UNKNOWN_TOPIC_OR_PARTITION",
		Run: func(t *T) {
			var resp wire.DeleteTopicsResponse
			t.Do(t.Conn(), &wire.DeleteTopicsRequest{TopicNames: []string{t.Name("missing")}, TimeoutMs: 30000}, &resp, 5)
			t.wantCode("DeleteTopics", resp.Responses[0].ErrorCode, wire.ErrUnknownTopicOrPartition)
		}})
	createPartitions := func(t *T, topic string, count int32) int16 {
		var resp wire.CreatePartitionsResponse
		t.Do(t.Conn(), &wire.CreatePartitionsRequest{Topics: []wire.CreatePartitionsRequestTopic{{Name: topic, Count: count}}, TimeoutMs: 30000},
			&resp, maxV(wire.KeyCreatePartitions))
		if len(resp.Results) != 1 {
			t.Fatalf("CreatePartitions: %d results", len(resp.Results))
		}
		return resp.Results[0].ErrorCode
	}
	register(&Case{ID: "admin/create-partitions", Spec: "§8.16",
		Desc: "CreatePartitions grows a topic, and the new partitions take writes",
		Run: func(t *T) {
			topic := t.Topic(2)
			t.wantCode("CreatePartitions 2 -> 5", createPartitions(t, topic, 5), nil)
			c := t.Conn()
			t.waitTopic(c, topic, 5)
			t.produceOK(c, topic, 4, plain, values("new", 1)...)
		}})
	register(&Case{ID: "admin/create-partitions-decrease", Spec: "§8.16",
		Desc: "CreatePartitions to fewer or the same number of partitions gets INVALID_PARTITIONS",
		Run: func(t *T) {
			topic := t.Topic(3)
			t.wantCode("CreatePartitions 3 -> 2", createPartitions(t, topic, 2), wire.ErrInvalidPartitions)
			t.wantCode("CreatePartitions 3 -> 3", createPartitions(t, topic, 3), wire.ErrInvalidPartitions)
		}})
	register(&Case{ID: "admin/create-partitions-unknown", Spec: "§8.16",
		Desc: "CreatePartitions on a topic that does not exist gets UNKNOWN_TOPIC_OR_PARTITION",
		Run: func(t *T) {
			t.wantCode("CreatePartitions", createPartitions(t, t.Name("missing"), 3), wire.ErrUnknownTopicOrPartition)
		}})
	register(&Case{ID: "admin/describe-configs-defaults", Spec: "§8.15",
		Desc: "DescribeConfigs of a new topic reports Kafka's defaults (retention.ms 604800000, cleanup.policy delete)",
		Run: func(t *T) {
			topic := t.Topic(1)
			code, got := t.topicConfigs(t.Conn(), topic, "retention.ms", "cleanup.policy")
			t.wantCode("DescribeConfigs", code, nil)
			if got["retention.ms"] != "604800000" || got["cleanup.policy"] != "delete" {
				t.Errorf("retention.ms=%q cleanup.policy=%q, want 604800000 and delete", got["retention.ms"], got["cleanup.policy"])
			}
			if len(got) != 2 {
				t.Errorf("asked for 2 keys, got %d: %v", len(got), got)
			}
		}})
	register(&Case{ID: "admin/describe-configs-unknown-topic", Spec: "§8.15",
		Desc: "DescribeConfigs of a topic that does not exist gets UNKNOWN_TOPIC_OR_PARTITION",
		Run: func(t *T) {
			code, _ := t.topicConfigs(t.Conn(), t.Name("missing"))
			t.wantCode("DescribeConfigs", code, wire.ErrUnknownTopicOrPartition)
		}})
	register(&Case{ID: "admin/alter-configs", Spec: "§8.18",
		Desc: "IncrementalAlterConfigs sets (op 0) and deletes (op 1) a topic config; DescribeConfigs follows",
		Run: func(t *T) {
			topic := t.Topic(1)
			c := t.Conn()
			t.wantCode("set retention.ms", t.alterTopic(topic, false, 0, "retention.ms", ptr("7200000")), nil)
			t.waitFor("retention.ms=7200000", func() (bool, string) {
				_, got := t.topicConfigs(c, topic, "retention.ms")
				return got["retention.ms"] == "7200000", got["retention.ms"]
			})
			t.wantCode("delete retention.ms", t.alterTopic(topic, false, 1, "retention.ms", nil), nil)
			t.waitFor("retention.ms back to its default", func() (bool, string) {
				_, got := t.topicConfigs(c, topic, "retention.ms")
				return got["retention.ms"] == "604800000", got["retention.ms"]
			})
		}})
	register(&Case{ID: "admin/alter-configs-invalid", Spec: "§8.18",
		Desc: "IncrementalAlterConfigs with an unknown config name gets INVALID_CONFIG",
		Run: func(t *T) {
			topic := t.Topic(1)
			t.wantCode("set no.such.config", t.alterTopic(topic, false, 0, "no.such.config", ptr("1")), wire.ErrInvalidConfig)
		}})
	register(&Case{ID: "admin/describe-cluster", Spec: "§8.20",
		Desc: "DescribeCluster agrees with Metadata on the cluster id, controller and brokers",
		Run: func(t *T) {
			c := t.Conn()
			var dc wire.DescribeClusterResponse
			t.Do(c, def[wire.DescribeClusterRequest](), &dc, maxV(wire.KeyDescribeCluster))
			t.wantCode("DescribeCluster", dc.ErrorCode, nil)
			md := t.metadata(c, false)
			if md.ClusterId == nil || dc.ClusterId != *md.ClusterId || len(dc.Brokers) != len(md.Brokers) {
				t.Errorf("DescribeCluster %q with %d brokers, Metadata %v with %d", dc.ClusterId, len(dc.Brokers), md.ClusterId, len(md.Brokers))
			}
		}})
}

func init() {
	register(&Case{ID: "metadata/v3-implicit-auto-create", Spec: "§8.4",
		Desc: "Metadata v0-3 (no AllowAutoTopicCreation field) auto-creates a requested unknown topic",
		Run: func(t *T) {
			c := t.Conn()
			name := t.Name("auto")
			t.Cleanup(func() { t.deleteTopics(name) })
			t.waitFor("auto-created "+name, func() (bool, string) {
				var resp wire.MetadataResponse
				t.Do(c, &wire.MetadataRequest{Topics: []wire.MetadataRequestTopic{{Name: ptr(name)}}}, &resp, 3)
				tp := findTopic(resp, name)
				if tp == nil {
					t.Fatalf("topic %s not in the Metadata v3 answer", name)
				}
				return tp.ErrorCode == 0 && len(tp.Partitions) > 0, codeName(tp.ErrorCode)
			})
		}})
}

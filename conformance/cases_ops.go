package conformance

import (
	"bytes"
	"fmt"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// Limits of the log that Kafka checks at produce time, and the operations APIs of the window:
// AlterConfigs (33), DescribeLogDirs (35), ElectLeaders (43), AlterPartitionReassignments
// (45) and ListPartitionReassignments (46), their answers on a healthy single partition and
// their error codes for unknown topics and partitions. SPEC.md §5.6, §8.1, §8.22, §8.23.

// alterConfigs sends one non-incremental AlterConfigs for a topic: its dynamic configs become
// exactly configs (name, value pairs). It returns the resource's error code.
func (t *T) alterConfigs(topic string, validateOnly bool, configs ...string) int16 {
	res := wire.AlterConfigsRequestResource{ResourceType: 2, ResourceName: topic}
	for i := 0; i+1 < len(configs); i += 2 {
		res.Configs = append(res.Configs, wire.AlterConfigsRequestAlterableConfig{Name: configs[i], Value: ptr(configs[i+1])})
	}
	var resp wire.AlterConfigsResponse
	t.Do(t.ControllerConn(), &wire.AlterConfigsRequest{ValidateOnly: validateOnly, Resources: []wire.AlterConfigsRequestResource{res}}, &resp, maxV(wire.KeyAlterConfigs))
	if len(resp.Responses) != 1 || resp.Responses[0].ResourceName != topic {
		t.Fatalf("AlterConfigs: want one result for %s, got %+v", topic, resp.Responses)
	}
	return resp.Responses[0].ErrorCode
}

// electPreferred asks for a preferred-leader election of one partition and returns the
// top-level error code and the partition's, failing when the answer lacks it.
func (t *T) electPreferred(topic string, p int32) (int16, int16) {
	req := def[wire.ElectLeadersRequest]()
	req.ElectionType = 0
	req.TimeoutMs = 30000
	req.TopicPartitions = []wire.ElectLeadersRequestTopicPartitions{{Topic: topic, Partitions: []int32{p}}}
	var resp wire.ElectLeadersResponse
	t.Do(t.ControllerConn(), req, &resp, maxV(wire.KeyElectLeaders))
	for _, r := range resp.ReplicaElectionResults {
		for _, pr := range r.PartitionResult {
			if r.Topic == topic && pr.PartitionId == p {
				return resp.ErrorCode, pr.ErrorCode
			}
		}
	}
	t.Fatalf("ElectLeaders: %s-%d not in the answer (top-level %s, %+v)", topic, p, codeName(resp.ErrorCode), resp.ReplicaElectionResults)
	return 0, 0
}

// reassign sends AlterPartitionReassignments for one partition (replicas nil: cancel) and
// returns the top-level and the partition's error code.
func (t *T) reassign(topic string, p int32, replicas []int32) (int16, int16) {
	req := def[wire.AlterPartitionReassignmentsRequest]()
	req.TimeoutMs = 30000
	req.Topics = []wire.AlterPartitionReassignmentsRequestReassignableTopic{{Name: topic,
		Partitions: []wire.AlterPartitionReassignmentsRequestReassignablePartition{{PartitionIndex: p, Replicas: replicas}}}}
	var resp wire.AlterPartitionReassignmentsResponse
	t.Do(t.ControllerConn(), req, &resp, maxV(wire.KeyAlterPartitionReassignments))
	for _, r := range resp.Responses {
		for _, pr := range r.Partitions {
			if r.Name == topic && pr.PartitionIndex == p {
				return resp.ErrorCode, pr.ErrorCode
			}
		}
	}
	t.Fatalf("AlterPartitionReassignments: %s-%d not in the answer (top-level %s, %+v)", topic, p, codeName(resp.ErrorCode), resp.Responses)
	return 0, 0
}

func init() {
	register(&Case{ID: "produce/larger-than-segment", Spec: "§5.6",
		Desc: "a batch within max.message.bytes but larger than the topic's segment.bytes gets RECORD_LIST_TOO_LARGE (no segment can hold it), and nothing is appended",
		Run: func(t *T) {
			topic := t.Topic(1, "segment.bytes", "1024")
			c := t.Conn()
			big := rec{value: bytes.Repeat([]byte("x"), 4000)}
			r := t.produce(c, topic, 0, 1, t.makeBatch(plain, big), maxV(wire.KeyProduce))
			t.wantCode("Produce 4 KB into segment.bytes=1024", r.ErrorCode, wire.ErrRecordListTooLarge)
			t.wantLogEnd(c, topic, 0, 0, "the refused batch")
			small := t.produce(c, topic, 0, 1, t.makeBatch(plain, values("s", 1)...), maxV(wire.KeyProduce))
			t.wantCode("Produce a small batch afterwards", small.ErrorCode, nil)
		}})
	register(&Case{ID: "produce/min-insync-above-replicas", Spec: "§8.1",
		Desc: "a topic whose min.insync.replicas (2) exceeds its replication factor (1) is created, and acks=all to it is taken with the high watermark past it: the minimum is capped at the partition's replica count (Kafka's effective min ISR)",
		Run: func(t *T) {
			topic := t.Topic(1, "min.insync.replicas", "2")
			c := t.Conn()
			code := t.produceWithin(c, topic, 0, -1, t.makeBatch(plain, values("all", 1)...), 10000)
			t.wantCode("acks=all with min.insync.replicas 2 over 1 replica", code, nil)
			t.wantLogEnd(c, topic, 0, 1, "the acks=all batch")
			one := t.produce(c, topic, 0, 1, t.makeBatch(plain, values("one", 1)...), maxV(wire.KeyProduce))
			t.wantCode("acks=1", one.ErrorCode, nil)
			t.wantLogEnd(c, topic, 0, 2, "the acks=1 batch")
		}})

	register(&Case{ID: "admin/legacy-alter-configs-replaces", Spec: "§8.23",
		Desc: "AlterConfigs (non-incremental) makes a topic's dynamic configs exactly the set given: the named one changes, one left out goes back to its default",
		Run: func(t *T) {
			topic := t.Topic(1, "cleanup.policy", "compact", "retention.ms", "3600000")
			t.wantCode("AlterConfigs retention.ms only", t.alterConfigs(topic, false, "retention.ms", "7200000"), nil)
			t.waitFor("DescribeConfigs to show the new set", func() (bool, string) {
				code, cfg := t.topicConfigs(t.Conn(), topic, "retention.ms", "cleanup.policy")
				return code == 0 && cfg["retention.ms"] == "7200000" && cfg["cleanup.policy"] == "delete",
					fmt.Sprintf("%s retention.ms=%q cleanup.policy=%q, want 7200000 and the default delete", codeName(code), cfg["retention.ms"], cfg["cleanup.policy"])
			})
		}})
	register(&Case{ID: "admin/legacy-alter-configs-validate-only", Spec: "§8.23",
		Desc: "AlterConfigs with ValidateOnly answers without error and changes nothing",
		Run: func(t *T) {
			topic := t.Topic(1, "retention.ms", "3600000")
			t.wantCode("AlterConfigs ValidateOnly", t.alterConfigs(topic, true, "retention.ms", "7200000"), nil)
			code, cfg := t.topicConfigs(t.Conn(), topic, "retention.ms")
			if code != 0 || cfg["retention.ms"] != "3600000" {
				t.Errorf("after ValidateOnly: %s retention.ms=%q, want 3600000 unchanged", codeName(code), cfg["retention.ms"])
			}
		}})
	register(&Case{ID: "admin/legacy-alter-configs-errors", Spec: "§8.23",
		Desc: "AlterConfigs: an unknown topic is UNKNOWN_TOPIC_OR_PARTITION, a bad value INVALID_CONFIG (and the topic keeps its configs)",
		Run: func(t *T) {
			t.wantCode("AlterConfigs of an unknown topic", t.alterConfigs(t.Name("missing"), false, "retention.ms", "7200000"), wire.ErrUnknownTopicOrPartition)
			topic := t.Topic(1, "retention.ms", "3600000")
			t.wantCode("AlterConfigs retention.ms=not-a-number", t.alterConfigs(topic, false, "retention.ms", "not-a-number"), wire.ErrInvalidConfig)
			code, cfg := t.topicConfigs(t.Conn(), topic, "retention.ms")
			if code != 0 || cfg["retention.ms"] != "3600000" {
				t.Errorf("after the refused change: %s retention.ms=%q, want 3600000", codeName(code), cfg["retention.ms"])
			}
		}})

	register(&Case{ID: "admin/describe-log-dirs", Spec: "§8.23",
		Desc: "DescribeLogDirs lists a written partition in one log dir with its size above zero and no lag; a partition the topic does not have, and an unknown topic, are left out, not errors",
		Run: func(t *T) {
			topic := t.Topic(1)
			c := t.Conn()
			t.produceOK(c, topic, 0, plain, values("d", 5)...)
			req := &wire.DescribeLogDirsRequest{Topics: []wire.DescribeLogDirsRequestDescribableLogDirTopic{
				{Topic: topic, Partitions: []int32{0, 7}}, {Topic: t.Name("missing"), Partitions: []int32{0}}}}
			var found []string
			t.waitFor("DescribeLogDirs to report the written partition's size", func() (bool, string) {
				var resp wire.DescribeLogDirsResponse
				t.Do(c, req, &resp, maxV(wire.KeyDescribeLogDirs))
				if resp.ErrorCode != 0 {
					t.Fatalf("DescribeLogDirs: top-level %s", codeName(resp.ErrorCode))
				}
				found = nil
				var size int64 = -1
				for _, d := range resp.Results {
					if d.ErrorCode != 0 {
						t.Fatalf("log dir %s: %s", d.LogDir, codeName(d.ErrorCode))
					}
					for _, tp := range d.Topics {
						for _, p := range tp.Partitions {
							found = append(found, fmt.Sprintf("%s-%d", tp.Name, p.PartitionIndex))
							if tp.Name == topic && p.PartitionIndex == 0 {
								size = p.PartitionSize
								if p.OffsetLag != 0 || p.IsFutureKey {
									t.Errorf("%s-0: offset lag %d, future %v, want 0 and false", topic, p.OffsetLag, p.IsFutureKey)
								}
							}
						}
					}
				}
				return size > 0, fmt.Sprintf("%s-0 size %d (-1: not listed), listed %v", topic, size, found)
			})
			if len(found) != 1 {
				t.Errorf("listed %v, want only %s-0", found, topic)
			}
		}})

	register(&Case{ID: "admin/elect-leaders-basics", Spec: "§8.22",
		Desc: "ElectLeaders (preferred): a partition already led by its preferred replica gets ELECTION_NOT_NEEDED, an unknown partition of a topic and an unknown topic UNKNOWN_TOPIC_OR_PARTITION",
		Run: func(t *T) {
			topic := t.Topic(1)
			top, code := t.electPreferred(topic, 0)
			t.wantCode("ElectLeaders top level", top, nil)
			t.wantCode("preferred election of a partition its preferred replica leads", code, wire.ErrElectionNotNeeded)
			_, code = t.electPreferred(topic, 5)
			t.wantCode("preferred election of partition 5 of a 1-partition topic", code, wire.ErrUnknownTopicOrPartition)
			_, code = t.electPreferred(t.Name("missing"), 0)
			t.wantCode("preferred election in an unknown topic", code, wire.ErrUnknownTopicOrPartition)
		}})
	register(&Case{ID: "admin/reassignments-basics", Spec: "§8.22",
		Desc: "AlterPartitionReassignments: cancelling where nothing moves is NO_REASSIGNMENT_IN_PROGRESS, an unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION; ListPartitionReassignments lists nothing for a partition that does not move",
		Run: func(t *T) {
			topic := t.Topic(1)
			top, code := t.reassign(topic, 0, nil)
			t.wantCode("AlterPartitionReassignments top level", top, nil)
			t.wantCode("cancelling a reassignment that is not in progress", code, wire.ErrNoReassignmentInProgress)
			leader := t.metadataTopic(t.Conn(), false, topic).Partitions[0].LeaderId
			_, code = t.reassign(t.Name("missing"), 0, []int32{leader})
			t.wantCode("reassigning a partition of an unknown topic", code, wire.ErrUnknownTopicOrPartition)
			_, code = t.reassign(topic, 5, []int32{leader})
			t.wantCode("reassigning partition 5 of a 1-partition topic", code, wire.ErrUnknownTopicOrPartition)

			req := def[wire.ListPartitionReassignmentsRequest]()
			req.TimeoutMs = 30000
			req.Topics = []wire.ListPartitionReassignmentsRequestTopics{{Name: topic, PartitionIndexes: []int32{0}}}
			var resp wire.ListPartitionReassignmentsResponse
			t.Do(t.ControllerConn(), req, &resp, maxV(wire.KeyListPartitionReassignments))
			t.wantCode("ListPartitionReassignments", resp.ErrorCode, nil)
			for _, tp := range resp.Topics {
				if tp.Name == topic && len(tp.Partitions) > 0 {
					t.Errorf("ListPartitionReassignments lists %s-%d moving (%+v) with no reassignment made", topic, tp.Partitions[0].PartitionIndex, tp.Partitions[0])
				}
			}
		}})
}

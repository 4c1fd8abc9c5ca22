package conformance

import (
	"strconv"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// More produce validation, admin and group cases: SPEC.md §5.6, §8.9-§8.11, §8.15, §8.18.

func init() {
	register(&Case{ID: "produce/timestamp-too-old", Spec: "§5.6",
		Desc: "a record older than the topic's message.timestamp.before.max.ms gets INVALID_TIMESTAMP; a recent one is accepted",
		Run: func(t *T) {
			topic := t.Topic(1, "message.timestamp.before.max.ms", "60000")
			c := t.Conn()
			old := time.Now().Add(-time.Hour).UnixMilli()
			r := t.produce(c, topic, 0, 1, t.makeBatch(plain, rec{value: []byte("old"), ts: old}), maxV(wire.KeyProduce))
			t.wantCode("a record an hour old", r.ErrorCode, wire.ErrInvalidTimestamp)
			r = t.produce(c, topic, 0, 1, t.makeBatch(plain, values("now", 1)...), maxV(wire.KeyProduce))
			t.wantCode("a record of now", r.ErrorCode, nil)
		}})
	register(&Case{ID: "produce/timestamp-too-new", Spec: "§5.6",
		Desc: "a record further in the future than message.timestamp.after.max.ms gets INVALID_TIMESTAMP",
		Run: func(t *T) {
			topic := t.Topic(1, "message.timestamp.after.max.ms", "60000")
			future := time.Now().Add(time.Hour).UnixMilli()
			r := t.produce(t.Conn(), topic, 0, 1, t.makeBatch(plain, rec{value: []byte("future"), ts: future}), maxV(wire.KeyProduce))
			t.wantCode("a record an hour ahead", r.ErrorCode, wire.ErrInvalidTimestamp)
		}})
	register(&Case{ID: "produce/compacted-null-key", Spec: "§5.6",
		Desc: "a record without a key on a compacted topic gets INVALID_RECORD; keyed records are accepted",
		Run: func(t *T) {
			topic := t.Topic(1, "cleanup.policy", "compact")
			c := t.Conn()
			r := t.produce(c, topic, 0, 1, t.makeBatch(plain, rec{value: []byte("no key")}), maxV(wire.KeyProduce))
			t.wantCode("null key on a compacted topic", r.ErrorCode, wire.ErrInvalidRecord)
			r = t.produce(c, topic, 0, 1, t.makeBatch(plain, rec{key: []byte("k"), value: []byte("v")}), maxV(wire.KeyProduce))
			t.wantCode("keyed record", r.ErrorCode, nil)
		}})
	register(&Case{ID: "admin/create-broker-defaults", Spec: "§8.11",
		Desc: "CreateTopics v4+ with -1 partitions and -1 replication factor uses the broker's defaults",
		Run: func(t *T) {
			c := t.Conn()
			name := t.Name("t")
			r := t.createTopic(c, name, -1, -1, false)
			t.wantCode("CreateTopics", r.ErrorCode, nil)
			if r.NumPartitions < 1 || r.ReplicationFactor < 1 {
				t.Errorf("created with %d partitions and replication factor %d, want the broker's defaults (>= 1)", r.NumPartitions, r.ReplicationFactor)
			}
			t.waitTopic(c, name, r.NumPartitions)
		}})
	register(&Case{ID: "admin/create-duplicate-in-request", Spec: "§8.11",
		Desc: "a topic named twice in one CreateTopics request gets INVALID_REQUEST and is not created",
		Run: func(t *T) {
			c := t.Conn()
			name := t.Name("t")
			topic := wire.CreateTopicsRequestCreatableTopic{Name: name, NumPartitions: 1, ReplicationFactor: 1}
			req := def[wire.CreateTopicsRequest]()
			req.Topics = []wire.CreateTopicsRequestCreatableTopic{topic, topic}
			var resp wire.CreateTopicsResponse
			t.Do(c, req, &resp, maxV(wire.KeyCreateTopics))
			t.Cleanup(func() { t.deleteTopics(name) })
			if len(resp.Topics) == 0 {
				t.Fatalf("no results")
			}
			for _, r := range resp.Topics {
				t.wantCode("CreateTopics", r.ErrorCode, wire.ErrInvalidRequest)
			}
			t.wantCode("Metadata afterwards", t.metadataTopic(c, false, name).ErrorCode, wire.ErrUnknownTopicOrPartition)
		}})
	register(&Case{ID: "admin/alter-configs-validate-only", Spec: "§8.18",
		Desc: "IncrementalAlterConfigs with ValidateOnly answers without changing the config",
		Run: func(t *T) {
			topic := t.Topic(1)
			c := t.Conn()
			t.wantCode("IncrementalAlterConfigs ValidateOnly", t.alterTopic(topic, true, 0, "retention.ms", ptr("1000")), nil)
			if _, got := t.topicConfigs(c, topic, "retention.ms"); got["retention.ms"] != "604800000" {
				t.Errorf("retention.ms=%q after a validate-only change, want the default 604800000", got["retention.ms"])
			}
		}})
	register(&Case{ID: "admin/describe-broker-configs", Spec: "§8.15",
		Desc: "DescribeConfigs of a broker resource (type 4, its node id) answers with its configs",
		Run: func(t *T) {
			c := t.Conn()
			md := t.metadata(c, false)
			if len(md.Brokers) == 0 {
				t.Fatalf("no brokers")
			}
			id := md.Brokers[0].NodeId
			var resp wire.DescribeConfigsResponse
			t.Do(c, &wire.DescribeConfigsRequest{Resources: []wire.DescribeConfigsRequestResource{{ResourceType: 4, ResourceName: strconv.Itoa(int(id))}}}, &resp, maxV(wire.KeyDescribeConfigs))
			if len(resp.Results) != 1 {
				t.Fatalf("%d results", len(resp.Results))
			}
			t.wantCode("DescribeConfigs broker", resp.Results[0].ErrorCode, nil)
			found := false
			for _, e := range resp.Results[0].Configs {
				found = found || e.Name == "num.partitions"
			}
			if !found {
				t.Errorf("broker %d's %d configs lack num.partitions", id, len(resp.Results[0].Configs))
			}
		}})
	register(&Case{ID: "groups/join-no-protocols", Spec: "§8.8",
		Desc: "JoinGroup with an empty protocol list gets INCONSISTENT_GROUP_PROTOCOL",
		Run: func(t *T) {
			c, group := t.newGroup()
			req := joinReq(group, "", protoType)
			req.Protocols = nil
			var resp wire.JoinGroupResponse
			t.Do(c, req, &resp, 3)
			t.wantCode("JoinGroup without protocols", resp.ErrorCode, wire.ErrInconsistentGroupProtocol)
		}})
	register(&Case{ID: "groups/describe-members", Spec: "§8.9",
		Desc: "DescribeGroups shows a stable group's member with its client id, host, metadata and assignment",
		Run: func(t *T) {
			group := t.Name("g")
			m := t.join(group)
			if code, _ := t.sync(m, m.generation, m.id, []byte("assigned")); code != 0 {
				t.Fatalf("SyncGroup: %s", codeName(code))
			}
			d := t.describeGroup(m.c, group)
			if len(d.Members) != 1 {
				t.Fatalf("%d members, want 1", len(d.Members))
			}
			mem := d.Members[0]
			if mem.MemberId != m.id || mem.ClientId != "spool-conformance" || mem.ClientHost == "" ||
				string(mem.MemberMetadata) != "meta" || string(mem.MemberAssignment) != "assigned" {
				t.Errorf("member %q client %q host %q metadata %q assignment %q", mem.MemberId, mem.ClientId, mem.ClientHost, mem.MemberMetadata, mem.MemberAssignment)
			}
		}})
	register(&Case{ID: "groups/list-groups-states-filter", Spec: "§8.10",
		Desc: "ListGroups v4 with a states filter lists only groups in those states",
		Run: func(t *T) {
			m := t.stable(t.Name("g"))
			list := func(states ...string) bool {
				var resp wire.ListGroupsResponse
				t.Do(m.c, &wire.ListGroupsRequest{StatesFilter: states}, &resp, 4)
				t.wantCode("ListGroups", resp.ErrorCode, nil)
				for _, g := range resp.Groups {
					if g.GroupId == m.group {
						return true
					}
				}
				return false
			}
			if !list("Stable") {
				t.Errorf("the stable group is missing under the filter Stable")
			}
			if list("Empty") {
				t.Errorf("the stable group is listed under the filter Empty")
			}
		}})
}

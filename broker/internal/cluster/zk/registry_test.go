package zk

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/spoolmq/spool/broker/internal/cluster"
)

// Znodes as Kafka 3.9 writes them in ZooKeeper mode read back as Spool's registry sees them,
// and what Spool writes reads back the same.
func TestRegistryReadsKafkasZnodes(t *testing.T) {
	kafkaBroker := []byte(`{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT","SSL":"SSL"},"endpoints":["PLAINTEXT://kafka-2:9092","SSL://kafka-2:9093"],"jmx_port":-1,"port":9092,"host":"kafka-2","version":5,"timestamp":"1700000000000","rack":"r1"}`)
	b, err := decodeBroker(2, kafkaBroker, "PLAINTEXT")
	if err != nil || b.NodeID != 2 || b.Host != "kafka-2" || b.Port != 9092 || b.Rack == nil || *b.Rack != "r1" {
		t.Fatalf("broker: %+v %v", b, err)
	}
	wantEps := []cluster.Endpoint{{Listener: "PLAINTEXT", Protocol: "PLAINTEXT", Host: "kafka-2", Port: 9092}, {Listener: "SSL", Protocol: "SSL", Host: "kafka-2", Port: 9093}}
	if !slices.Equal(b.Endpoints, wantEps) {
		t.Fatalf("broker endpoints: %+v", b.Endpoints)
	}
	// The inter-broker listener picks the address peers use.
	if b, err := decodeBroker(2, kafkaBroker, "SSL"); err != nil || b.Host != "kafka-2" || b.Port != 9093 {
		t.Fatalf("broker on SSL: %+v %v", b, err)
	}
	ta, err := decodeTopic("orders", []byte(`{"partitions":{"1":[2,3,1],"0":[1,2,3]},"topic_id":"gnE0f8I3QZyYZyWw3JVtJw","adding_replicas":{},"removing_replicas":{},"version":3}`))
	a := ta.Replicas
	if err != nil || len(a) != 2 || !slices.Equal(a[0], []int32{1, 2, 3}) || !slices.Equal(a[1], []int32{2, 3, 1}) || encodeUUID(ta.ID) != "gnE0f8I3QZyYZyWw3JVtJw" || ta.moving(0) || ta.moving(1) {
		t.Fatalf("topic: %v %v %v", encodeUUID(ta.ID), a, err)
	}
	// A move in progress, as Kafka writes it: partition 0 goes from [1,2,3] to [4,2,3].
	ta, err = decodeTopic("orders", []byte(`{"partitions":{"0":[4,2,3,1]},"topic_id":"gnE0f8I3QZyYZyWw3JVtJw","adding_replicas":{"0":[4]},"removing_replicas":{"0":[1]},"version":3}`))
	if err != nil || !ta.moving(0) || !slices.Equal(ta.target(0), []int32{4, 2, 3}) || !slices.Equal(ta.original(0), []int32{2, 3, 1}) {
		t.Fatalf("topic moving: %+v %v", ta, err)
	}
	if back, err := decodeTopic("orders", encodeTopic(ta)); err != nil || !slices.Equal(back.Adding[0], []int32{4}) || !slices.Equal(back.Removing[0], []int32{1}) {
		t.Fatalf("moving round trip: %+v %v", back, err)
	}
	st, err := decodePartitionState([]byte(`{"controller_epoch":4,"leader":3,"version":1,"leader_epoch":7,"isr":[3,1]}`), 12)
	if err != nil || st.Leader != 3 || st.LeaderEpoch != 7 || st.ControllerEpoch != 4 || !slices.Equal(st.ISR, []int32{3, 1}) || st.ZkVersion != 12 {
		t.Fatalf("partition state: %+v %v", st, err)
	}
	if c, err := decodeController([]byte(`{"version":2,"brokerid":3,"timestamp":"1700000000000","kraftControllerEpoch":-1}`)); err != nil || c != 3 {
		t.Fatalf("controller: %d %v", c, err)
	}
	if e, err := decodeControllerEpoch([]byte("17")); err != nil || e != 17 {
		t.Fatalf("controller epoch: %d %v", e, err)
	}
	if cfg, err := decodeConfig([]byte(`{"version":1,"config":{"retention.ms":"1000"}}`)); err != nil || cfg["retention.ms"] != "1000" {
		t.Fatalf("config: %v %v", cfg, err)
	}
	if end, err := decodeProducerIDBlock([]byte(`{"version":1,"broker":1,"block_start":"1000","block_end":"1999"}`)); err != nil || end != 1999 {
		t.Fatalf("producer id block: %d %v", end, err)
	}

	// Round trips of what Spool writes.
	self := cluster.Broker{NodeID: 5, Host: "127.0.0.1", Port: 19092, Rack: rack("x")}
	if got, err := decodeBroker(5, encodeBroker(self), "PLAINTEXT"); err != nil || got.Host != self.Host || got.Port != self.Port || *got.Rack != "x" {
		t.Fatalf("broker round trip: %+v %v", got, err)
	}
	// Several listeners: every endpoint is registered with its protocol, host and port are the
	// PLAINTEXT one's, and the inter-broker listener picks the peers' address.
	multi := cluster.Broker{NodeID: 6, Host: "10.0.0.6", Port: 9094, Endpoints: []cluster.Endpoint{
		{Listener: "SSL", Protocol: "SSL", Host: "b6.example", Port: 9093},
		{Listener: "INTERNAL", Protocol: "PLAINTEXT", Host: "10.0.0.6", Port: 9094}}}
	raw := encodeBroker(multi)
	var z brokerZNode
	if err := json.Unmarshal(raw, &z); err != nil || z.Host == nil || *z.Host != "10.0.0.6" || z.Port != 9094 ||
		!slices.Equal(z.Endpoints, []string{"SSL://b6.example:9093", "INTERNAL://10.0.0.6:9094"}) ||
		!maps.Equal(z.ListenerSecurityProtocolMap, map[string]string{"SSL": "SSL", "INTERNAL": "PLAINTEXT"}) {
		t.Fatalf("multi-listener registration: %s (%v)", raw, err)
	}
	if got, err := decodeBroker(6, raw, "INTERNAL"); err != nil || got.Host != "10.0.0.6" || got.Port != 9094 || !slices.Equal(got.Endpoints, multi.Endpoints) {
		t.Fatalf("multi-listener round trip: %+v %v", got, err)
	}
	// No PLAINTEXT endpoint: host is null and port -1, as Kafka writes.
	if err := json.Unmarshal(encodeBroker(cluster.Broker{NodeID: 7, Endpoints: multi.Endpoints[:1]}), &z); err != nil || z.Host != nil || z.Port != -1 {
		t.Fatalf("SSL-only registration: %+v %v", z, err)
	}
	tid := cluster.NewTopicID()
	if got, err := decodeTopic("t", encodeTopic(topicAssignment{ID: tid, Replicas: assignment{{1, 2}, {2, 1}}})); err != nil || got.ID != tid || !slices.Equal(got.Replicas[1], []int32{2, 1}) {
		t.Fatalf("topic round trip: %v %v", got, err)
	}
	ps := partitionState{Leader: 1, LeaderEpoch: 2, ISR: []int32{1, 2}, ControllerEpoch: 3}
	if got, err := decodePartitionState(encodePartitionState(ps), 0); err != nil || got.Leader != 1 || got.LeaderEpoch != 2 || !slices.Equal(got.ISR, ps.ISR) {
		t.Fatalf("state round trip: %+v %v", got, err)
	}
	if f, err := decodeFenced(encodeFenced(3, []int32{4, 2})); err != nil || !f[2] || !f[4] || len(f) != 2 {
		t.Fatalf("fenced round trip: %v %v", f, err)
	}
}

package zk

// The registry: the znode paths of the cluster's state (cluster id, brokers, topics and
// partition states, controller and its epoch, topic and broker configs, admin requests,
// producer id blocks, Spool's own broker sessions) and their JSON encodings. Not all paths are
// here: the ACL trees and their change notifications are in acls.go, the SCRAM credentials
// (/config/users) and the config change notifications (/config/changes) in scram.go, the
// sequential notification nodes' naming in notifications.go. The layout and encodings are Apache Kafka's (ZkData.scala, ZooKeeper mode), so
// a Kafka operator's tools and habits (zookeeper-shell, `get /brokers/ids/1`) work unchanged.
// Fields Kafka writes that Spool does not use are written with Kafka's values and ignored on
// read; unknown fields are ignored, so a newer writer does not break an older reader.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spoolmq/spool/broker/internal/cluster"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// Paths, relative to the chroot.
const (
	clusterIDPath        = "/cluster/id"
	brokerIDsPath        = "/brokers/ids"
	topicsPath           = "/brokers/topics"
	controllerPath       = "/controller"
	controllerEpochPath  = "/controller_epoch"
	configTopicsPath     = "/config/topics"
	configBrokersPath    = "/config/brokers" // dynamic broker configs: /config/brokers/<id> and /config/brokers/<default>
	deleteTopicsPath     = "/admin/delete_topics"
	producerIDBlockPath  = "/latest_producer_id_block"
	electionPath         = "/admin/preferred_replica_election"
	brokerSessionsPrefix = "/spool/broker_sessions" // Spool's own: the ZooKeeper session of each broker's last registration
	fencedBrokersPath    = "/spool/fenced_brokers"  // Spool's own: registered brokers the controller found dead
)

// persistentPaths are created at startup when missing, as Kafka's brokers do.
var persistentPaths = []string{"/cluster", "/brokers", brokerIDsPath, topicsPath, "/config", configTopicsPath, configBrokersPath, "/admin", deleteTopicsPath, "/spool", brokerSessionsPrefix}

func brokerPath(id int32) string        { return brokerIDsPath + "/" + strconv.Itoa(int(id)) }
func brokerSessionPath(id int32) string { return brokerSessionsPrefix + "/" + strconv.Itoa(int(id)) }
func topicPath(t string) string         { return topicsPath + "/" + t }
func partitionsPath(t string) string    { return topicPath(t) + "/partitions" }
func partitionPath(t string, p int32) string {
	return partitionsPath(t) + "/" + strconv.Itoa(int(p))
}
func partitionStatePath(t string, p int32) string { return partitionPath(t, p) + "/state" }
func topicConfigPath(t string) string             { return configTopicsPath + "/" + t }
func deleteTopicPath(t string) string             { return deleteTopicsPath + "/" + t }

// brokerConfigPath is broker's dynamic config znode; broker "" is the cluster-wide default.
func brokerConfigPath(broker string) string {
	if broker == "" {
		broker = "<default>"
	}
	return configBrokersPath + "/" + broker
}

// clusterIDZNode is /cluster/id: {"version":"1","id":"..."}.
type clusterIDZNode struct {
	Version string `json:"version"`
	ID      string `json:"id"`
}

// brokerZNode is /brokers/ids/N, version 5 (endpoints, rack, features).
type brokerZNode struct {
	Version                     int               `json:"version"`
	Host                        *string           `json:"host"`
	Port                        int32             `json:"port"`
	JMXPort                     int               `json:"jmx_port"`
	Timestamp                   string            `json:"timestamp"`
	Endpoints                   []string          `json:"endpoints"`
	ListenerSecurityProtocolMap map[string]string `json:"listener_security_protocol_map"`
	Rack                        *string           `json:"rack,omitempty"`
	Features                    map[string]any    `json:"features"`
}

// encodeBroker writes every endpoint of b (one PLAINTEXT endpoint at Host:Port when it lists
// none) with its listener's protocol. As Kafka does, host and port are those of the first
// PLAINTEXT endpoint, or null and -1 when there is none.
func encodeBroker(b cluster.Broker) []byte {
	eps := b.Endpoints
	if len(eps) == 0 {
		eps = []cluster.Endpoint{{Listener: "PLAINTEXT", Protocol: "PLAINTEXT", Host: b.Host, Port: b.Port}}
	}
	z := brokerZNode{Version: 5, Port: -1, JMXPort: -1, Timestamp: nowMs(), ListenerSecurityProtocolMap: map[string]string{},
		Rack: b.Rack, Features: map[string]any{}}
	for _, e := range eps {
		z.Endpoints = append(z.Endpoints, e.Listener+"://"+joinAddr(e.Host, e.Port))
		z.ListenerSecurityProtocolMap[e.Listener] = e.Protocol
		if e.Protocol == "PLAINTEXT" && z.Host == nil {
			z.Host, z.Port = &e.Host, e.Port
		}
	}
	return mustJSON(z)
}

// decodeBroker reads a registration with all its endpoints; Host and Port are those of the
// endpoint named listener (the inter-broker listener), or of the first one.
func decodeBroker(id int32, data []byte, listener string) (cluster.Broker, error) {
	var z brokerZNode
	if err := json.Unmarshal(data, &z); err != nil {
		return cluster.Broker{}, fmt.Errorf("broker %d registration: %w", id, err)
	}
	b := cluster.Broker{NodeID: id, Port: z.Port, Rack: z.Rack}
	if z.Host != nil {
		b.Host = *z.Host
	}
	for _, ep := range z.Endpoints {
		name, hostPort, ok := strings.Cut(ep, "://")
		if !ok {
			continue
		}
		host, port, err := net.SplitHostPort(hostPort)
		if err != nil {
			continue
		}
		p, err := strconv.ParseUint(port, 10, 16)
		if err != nil {
			continue
		}
		proto := z.ListenerSecurityProtocolMap[name]
		if proto == "" {
			proto = name
		}
		b.Endpoints = append(b.Endpoints, cluster.Endpoint{Listener: name, Protocol: proto, Host: host, Port: int32(p)})
	}
	if len(b.Endpoints) > 0 {
		b.Host, b.Port = b.Endpoints[0].Host, b.Endpoints[0].Port
		b.Host, b.Port, _ = b.Addr(listener)
	}
	return b, nil
}

// topicZNode is /brokers/topics/T, version 3: the replica assignment and the topic id.
type topicZNode struct {
	Version          int                `json:"version"`
	TopicID          string             `json:"topic_id,omitempty"`
	Partitions       map[string][]int32 `json:"partitions"`
	AddingReplicas   map[string][]int32 `json:"adding_replicas"`
	RemovingReplicas map[string][]int32 `json:"removing_replicas"`
}

// assignment is a topic's replica lists by partition index.
type assignment [][]int32

// topicAssignment is a decoded /brokers/topics/T: the replica lists, and for the partitions
// being reassigned the replicas being added and removed. During a move a partition's replica
// list is the target followed by the original replicas not in it (Kafka's order), so the
// target's first replica is the preferred leader from the start.
type topicAssignment struct {
	ID       wire.UUID
	Replicas assignment
	Adding   map[int32][]int32
	Removing map[int32][]int32
}

// target is the replica list partition p is moving to: its replicas without those being
// removed (its replicas when it is not moving).
func (a topicAssignment) target(p int32) []int32 {
	var out []int32
	for _, r := range a.Replicas[p] {
		if !slices.Contains(a.Removing[p], r) {
			out = append(out, r)
		}
	}
	return out
}

// original is the replica list partition p had before its move: its replicas without those
// being added.
func (a topicAssignment) original(p int32) []int32 {
	var out []int32
	for _, r := range a.Replicas[p] {
		if !slices.Contains(a.Adding[p], r) {
			out = append(out, r)
		}
	}
	return out
}

// moving reports whether partition p is being reassigned.
func (a topicAssignment) moving(p int32) bool { return len(a.Adding[p]) > 0 || len(a.Removing[p]) > 0 }

func encodeTopic(a topicAssignment) []byte {
	z := topicZNode{Version: 3, TopicID: encodeUUID(a.ID), Partitions: map[string][]int32{},
		AddingReplicas: map[string][]int32{}, RemovingReplicas: map[string][]int32{}}
	for i, replicas := range a.Replicas {
		z.Partitions[strconv.Itoa(i)] = replicas
		if len(a.Adding[int32(i)]) > 0 {
			z.AddingReplicas[strconv.Itoa(i)] = a.Adding[int32(i)]
		}
		if len(a.Removing[int32(i)]) > 0 {
			z.RemovingReplicas[strconv.Itoa(i)] = a.Removing[int32(i)]
		}
	}
	return mustJSON(z)
}

func decodeTopic(name string, data []byte) (topicAssignment, error) {
	var z topicZNode
	if err := json.Unmarshal(data, &z); err != nil {
		return topicAssignment{}, fmt.Errorf("topic %s: %w", name, err)
	}
	id, err := decodeUUID(z.TopicID)
	if err != nil {
		return topicAssignment{}, fmt.Errorf("topic %s id: %w", name, err)
	}
	a := topicAssignment{ID: id, Replicas: make(assignment, len(z.Partitions)), Adding: map[int32][]int32{}, Removing: map[int32][]int32{}}
	index := func(k string) (int32, error) {
		i, err := strconv.Atoi(k)
		if err != nil || i < 0 || i >= len(z.Partitions) {
			return 0, fmt.Errorf("topic %s: partition %q out of 0..%d", name, k, len(z.Partitions)-1)
		}
		return int32(i), nil
	}
	for k, replicas := range z.Partitions {
		i, err := index(k)
		if err != nil {
			return topicAssignment{}, err
		}
		a.Replicas[i] = replicas
	}
	for _, m := range []struct {
		from map[string][]int32
		to   map[int32][]int32
	}{{z.AddingReplicas, a.Adding}, {z.RemovingReplicas, a.Removing}} {
		for k, replicas := range m.from {
			i, err := index(k)
			if err != nil {
				return topicAssignment{}, err
			}
			if len(replicas) > 0 {
				m.to[i] = replicas
			}
		}
	}
	return a, nil
}

// partitionStateZNode is /brokers/topics/T/partitions/P/state, version 1.
type partitionStateZNode struct {
	ControllerEpoch int32   `json:"controller_epoch"`
	Leader          int32   `json:"leader"`
	Version         int     `json:"version"`
	LeaderEpoch     int32   `json:"leader_epoch"`
	ISR             []int32 `json:"isr"`
}

// partitionState is a decoded partition state with its znode version.
type partitionState struct {
	Leader          int32
	LeaderEpoch     int32
	ISR             []int32
	ControllerEpoch int32
	ZkVersion       int32
}

func encodePartitionState(s partitionState) []byte {
	isr := s.ISR
	if isr == nil {
		isr = []int32{}
	}
	return mustJSON(partitionStateZNode{ControllerEpoch: s.ControllerEpoch, Leader: s.Leader, Version: 1, LeaderEpoch: s.LeaderEpoch, ISR: isr})
}

func decodePartitionState(data []byte, zkVersion int32) (partitionState, error) {
	var z partitionStateZNode
	if err := json.Unmarshal(data, &z); err != nil {
		return partitionState{}, fmt.Errorf("partition state: %w", err)
	}
	return partitionState{Leader: z.Leader, LeaderEpoch: z.LeaderEpoch, ISR: z.ISR, ControllerEpoch: z.ControllerEpoch, ZkVersion: zkVersion}, nil
}

// controllerZNode is /controller, version 1.
type controllerZNode struct {
	Version   int    `json:"version"`
	BrokerID  int32  `json:"brokerid"`
	Timestamp string `json:"timestamp"`
}

func encodeController(id int32) []byte {
	return mustJSON(controllerZNode{Version: 1, BrokerID: id, Timestamp: nowMs()})
}

func decodeController(data []byte) (int32, error) {
	var z controllerZNode
	if err := json.Unmarshal(data, &z); err != nil {
		return -1, fmt.Errorf("controller: %w", err)
	}
	return z.BrokerID, nil
}

// /controller_epoch holds the epoch as a decimal number.
func encodeControllerEpoch(e int32) []byte { return []byte(strconv.Itoa(int(e))) }

func decodeControllerEpoch(data []byte) (int32, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("controller epoch %q: %w", data, err)
	}
	return int32(n), nil
}

// configZNode is /config/topics/T, version 1.
type configZNode struct {
	Version int               `json:"version"`
	Config  map[string]string `json:"config"`
}

func encodeConfig(c map[string]string) []byte {
	if c == nil {
		c = map[string]string{}
	}
	return mustJSON(configZNode{Version: 1, Config: c})
}

func decodeConfig(data []byte) (map[string]string, error) {
	var z configZNode
	if err := json.Unmarshal(data, &z); err != nil {
		return nil, fmt.Errorf("topic config: %w", err)
	}
	return z.Config, nil
}

// producerIDBlockZNode is /latest_producer_id_block, version 1: the last block handed out.
type producerIDBlockZNode struct {
	Version    int    `json:"version"`
	Broker     int32  `json:"broker"`
	BlockStart string `json:"block_start"`
	BlockEnd   string `json:"block_end"`
}

func encodeProducerIDBlock(broker int32, start, end int64) []byte {
	return mustJSON(producerIDBlockZNode{Version: 1, Broker: broker, BlockStart: strconv.FormatInt(start, 10), BlockEnd: strconv.FormatInt(end, 10)})
}

// decodeProducerIDBlock returns the block's last id.
func decodeProducerIDBlock(data []byte) (int64, error) {
	var z producerIDBlockZNode
	if err := json.Unmarshal(data, &z); err != nil {
		return 0, fmt.Errorf("producer id block: %w", err)
	}
	end, err := strconv.ParseInt(z.BlockEnd, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("producer id block end %q: %w", z.BlockEnd, err)
	}
	return end, nil
}

// Kafka writes topic ids as URL-safe base64 without padding (Uuid.toString).
func encodeUUID(u wire.UUID) string { return base64.RawURLEncoding.EncodeToString(u[:]) }

func decodeUUID(s string) (wire.UUID, error) {
	var u wire.UUID
	if s == "" {
		return u, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return u, fmt.Errorf("bad topic id %q", s)
	}
	copy(u[:], b)
	return u, nil
}

func nowMs() string { return strconv.FormatInt(time.Now().UnixMilli(), 10) }

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("zk registry: encoding %T: %v", v, err)) // plain structs and maps: cannot fail
	}
	return b
}

func sortedIDs(ids []int32) []int32 {
	out := append([]int32(nil), ids...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// fencedBrokersZNode is /spool/fenced_brokers: the registered brokers the controller's probes
// found dead (their ZooKeeper sessions may live on for a while). Clients are not told about
// them, as KRaft does not list fenced brokers.
type fencedBrokersZNode struct {
	Version         int     `json:"version"`
	ControllerEpoch int32   `json:"controller_epoch"`
	Brokers         []int32 `json:"brokers"`
}

func encodeFenced(epoch int32, ids []int32) []byte {
	if ids == nil {
		ids = []int32{}
	}
	return mustJSON(fencedBrokersZNode{Version: 1, ControllerEpoch: epoch, Brokers: sortedIDs(ids)})
}

func decodeFenced(data []byte) (map[int32]bool, error) {
	var z fencedBrokersZNode
	if err := json.Unmarshal(data, &z); err != nil {
		return nil, fmt.Errorf("fenced brokers: %w", err)
	}
	out := map[int32]bool{}
	for _, id := range z.Brokers {
		out[id] = true
	}
	return out, nil
}

// electionZNode is /admin/preferred_replica_election, version 1: partitions whose leader
// elections an admin asked for, which the controller runs and then deletes the znode. Kafka
// writes preferred elections only; Spool marks an unclean one with "election_type": 1 (a
// field Kafka's reader ignores).
type electionZNode struct {
	Version    int                  `json:"version"`
	Partitions []electionZNodeEntry `json:"partitions"`
}

type electionZNodeEntry struct {
	Topic        string `json:"topic"`
	Partition    int32  `json:"partition"`
	ElectionType int8   `json:"election_type,omitempty"`
}

// electionRequest is one partition's requested election.
type electionRequest struct {
	Topic     string
	Partition int32
	Type      cluster.ElectionType
}

func encodeElections(reqs []electionRequest) []byte {
	z := electionZNode{Version: 1, Partitions: []electionZNodeEntry{}}
	for _, r := range reqs {
		z.Partitions = append(z.Partitions, electionZNodeEntry{Topic: r.Topic, Partition: r.Partition, ElectionType: int8(r.Type)})
	}
	return mustJSON(z)
}

func decodeElections(data []byte) ([]electionRequest, error) {
	var z electionZNode
	if err := json.Unmarshal(data, &z); err != nil {
		return nil, fmt.Errorf("leader elections: %w", err)
	}
	out := make([]electionRequest, 0, len(z.Partitions))
	for _, e := range z.Partitions {
		out = append(out, electionRequest{Topic: e.Topic, Partition: e.Partition, Type: cluster.ElectionType(e.ElectionType)})
	}
	return out, nil
}

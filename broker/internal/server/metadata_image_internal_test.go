package server

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/spoolmq/spool/broker/internal/cluster"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// movingStore is a metadata store whose state moves on while a request reads it: each of its
// first races reads changes it (a new version, Changes closed), as a ZooKeeper watch firing
// between two reads of one request does. Version v has the one broker v (on the PLAINTEXT
// listener), the controller v and topic "t" led by v. Methods a Metadata request does not
// call are the nil embedded interface's.
type movingStore struct {
	cluster.Metadata
	mu      sync.Mutex
	version int32
	races   int
	changed chan struct{}
}

func (m *movingStore) read() int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	v := m.version
	if m.races > 0 {
		m.races--
		m.version++
		close(m.changed)
		m.changed = make(chan struct{})
	}
	return v
}

func (m *movingStore) ClusterID() string   { return "moving" }
func (m *movingStore) ControllerID() int32 { return m.read() }
func (m *movingStore) Brokers() []cluster.Broker {
	v := m.read()
	return []cluster.Broker{{NodeID: v, Host: "127.0.0.1", Port: 9000 + v,
		Endpoints: []cluster.Endpoint{{Listener: "PLAINTEXT", Protocol: "PLAINTEXT", Host: "127.0.0.1", Port: 9000 + v}}}}
}
func (m *movingStore) Topics() []cluster.Topic { return []cluster.Topic{movingTopic(m.read())} }
func (m *movingStore) Topic(string) (cluster.Topic, bool) {
	return movingTopic(m.read()), true
}
func (m *movingStore) TopicByID(wire.UUID) (cluster.Topic, bool) {
	return movingTopic(m.read()), true
}
func (m *movingStore) DynamicBrokerConfigs() map[string]map[string]string { return nil }
func (m *movingStore) Changes() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

func movingTopic(v int32) cluster.Topic {
	return cluster.Topic{Name: "t", ID: wire.UUID{7}, Partitions: []cluster.Partition{{Index: 0, Leader: v, LeaderEpoch: v, Replicas: []int32{v}, ISR: []int32{v}}}}
}

// TestMetadataRequestReadsOneVersion: a Metadata answer is built from one version of the
// metadata even when the store changes between the reads it takes: the controller, the broker
// listed and the partition's leader are the same node, and the leader is listed (no
// LEADER_NOT_AVAILABLE from a broker list older than the leaders).
func TestMetadataRequestReadsOneVersion(t *testing.T) {
	name := "t"
	for _, c := range []struct {
		rule   string
		topics []wire.MetadataRequestTopic
	}{
		{"all topics: brokers, controller and leaders of one version", nil},
		{"a topic by name: its leader is a broker of the same answer", []wire.MetadataRequestTopic{{Name: &name}}},
		{"a topic by id: its leader is a broker of the same answer", []wire.MetadataRequestTopic{{TopicId: wire.UUID{7}}}},
	} {
		md := &movingStore{version: 1, races: 3, changed: make(chan struct{})}
		s := &Server{md: md, images: cluster.NewImages(md), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		msg := &wire.MetadataRequest{Topics: c.topics}
		p := handleMetadata(s, context.Background(), &request{msg: msg, version: 12, listener: "PLAINTEXT"})
		resp := p.reply.msg.(*wire.MetadataResponse)
		if len(resp.Brokers) != 1 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Errorf("%s: answer with brokers %+v, topics %+v", c.rule, resp.Brokers, resp.Topics)
			continue
		}
		broker, part := resp.Brokers[0].NodeId, resp.Topics[0].Partitions[0]
		if resp.ControllerId != broker || part.LeaderId != broker || part.ErrorCode != 0 || part.LeaderEpoch != broker {
			t.Errorf("%s: controller %d, broker %d, leader %d (epoch %d, error %v): want one version throughout",
				c.rule, resp.ControllerId, broker, part.LeaderId, part.LeaderEpoch, wire.ErrorForCode(part.ErrorCode))
		}
	}
}

// TestDescribeClusterReadsOneVersion: DescribeCluster's controller and brokers come from one
// image even when the store changes between the reads it takes (read from the store one by
// one, the controller would be of one version and the broker list of the next).
func TestDescribeClusterReadsOneVersion(t *testing.T) {
	md := &movingStore{version: 1, races: 3, changed: make(chan struct{})}
	s := &Server{md: md, images: cluster.NewImages(md), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	p := handleDescribeCluster(s, context.Background(), &request{msg: &wire.DescribeClusterRequest{EndpointType: 1}, version: 1, listener: "PLAINTEXT"})
	resp := p.reply.msg.(*wire.DescribeClusterResponse)
	if resp.ErrorCode != 0 || len(resp.Brokers) != 1 || resp.Brokers[0].BrokerId != resp.ControllerId {
		t.Fatalf("controller %d, brokers %+v (error %v): want the controller and the broker list of one version", resp.ControllerId, resp.Brokers, wire.ErrorForCode(resp.ErrorCode))
	}
}

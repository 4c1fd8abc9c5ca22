// Package cluster holds the broker's view of cluster metadata: brokers, topics, their
// partitions and configs. One interface, two implementations: Embedded (one node, state in the
// data directory) and, in cluster mode, ZooKeeper with Kafka's znode layout.
package cluster

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// Broker is one broker as clients see it. Host and Port are the address other brokers use
// (the inter-broker listener); Endpoints are every listener's advertised address.
type Broker struct {
	NodeID    int32
	Host      string
	Port      int32
	Rack      *string
	Endpoints []Endpoint
}

// Endpoint is one listener's advertised address, as in Kafka's broker registration.
type Endpoint struct {
	Listener string // the listener name, upper case (PLAINTEXT, SSL, CLIENT, ...)
	Protocol string // its security protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
	Host     string
	Port     int32
}

// Addr is the broker's address on a listener: the endpoint of that name, or Host and Port
// when it lists no endpoints. ok is false when it lists others only (then Host and Port).
func (b Broker) Addr(listener string) (host string, port int32, ok bool) {
	for _, e := range b.Endpoints {
		if e.Listener == listener {
			return e.Host, e.Port, true
		}
	}
	return b.Host, b.Port, len(b.Endpoints) == 0
}

// Partition is one partition's placement.
type Partition struct {
	Index       int32
	Leader      int32
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32
	// Offline lists the replicas on brokers that are not alive.
	Offline []int32
	// Adding and Removing are the replicas a reassignment in progress adds and removes;
	// Replicas holds both until the move completes.
	Adding, Removing []int32
	// Version is the version of the partition's state in the store (the ZooKeeper znode
	// version), the condition an ISR change is written under; 0 in the embedded store.
	Version int32
}

// Has reports whether id is in ids.
func Has(ids []int32, id int32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// Topic is a topic's metadata.
type Topic struct {
	Name       string
	ID         wire.UUID
	Internal   bool
	Partitions []Partition
	// Configs holds the topic-level overrides only; defaults come from the broker config.
	Configs map[string]string
}

// Errors shared by implementations; the broker maps them to protocol error codes.
var (
	ErrTopicExists            = errors.New("topic already exists")
	ErrUnknownTopic           = errors.New("unknown topic")
	ErrInvalidPartitions      = errors.New("invalid number of partitions")
	ErrInvalidReplication     = errors.New("invalid replication factor")
	ErrInvalidTopic           = errors.New("invalid topic name")
	ErrInvalidConfig          = errors.New("invalid config")
	ErrTopicDeletionDisabled  = errors.New("topic deletion is disabled")
	ErrNotController          = errors.New("not the controller")
	ErrMetadataStoreNotLoaded = errors.New("metadata store not loaded")
	// ErrStaleState: a conditional write lost to a newer partition state (a new leader or the
	// controller's change); re-read and decide again.
	ErrStaleState = errors.New("partition state changed since it was read")
	// ErrNoLiveBrokers: not enough live brokers for the replication factor asked.
	ErrNoLiveBrokers = errors.New("not enough live brokers")
	// Reassignment and election outcomes, per partition.
	ErrInvalidReplicaAssignment    = errors.New("invalid replica assignment")
	ErrNoReassignment              = errors.New("no reassignment in progress")
	ErrElectionNotNeeded           = errors.New("the partition already has the leader asked for")
	ErrPreferredLeaderNotAvailable = errors.New("the preferred replica is not alive or not in the ISR")
	ErrEligibleLeadersNotAvailable = errors.New("no live replica can lead the partition")
)

// ElectionType is ElectLeaders' election type.
type ElectionType int8

const (
	// ElectPreferred puts a partition's first replica (its preferred leader) in the lead, if it
	// is alive and in sync.
	ElectPreferred ElectionType = 0
	// ElectUnclean elects the first live replica of a partition that has no live in-sync one
	// (acknowledged records may be lost).
	ElectUnclean ElectionType = 1
)

// Metadata is what the broker needs from a metadata store. Implementations are safe for
// concurrent use. Returned values are copies the caller may keep.
type Metadata interface {
	ClusterID() string
	ControllerID() int32
	Brokers() []Broker
	Topics() []Topic
	Topic(name string) (Topic, bool)
	TopicByID(id wire.UUID) (Topic, bool)
	// CreateTopic creates a topic; validateOnly checks without creating.
	CreateTopic(ctx context.Context, name string, partitions int32, replicationFactor int16, configs map[string]string, validateOnly bool) (Topic, error)
	DeleteTopic(ctx context.Context, name string) (Topic, error)
	// CreatePartitions grows a topic to total partitions.
	CreatePartitions(ctx context.Context, name string, total int32, validateOnly bool) error
	// SetTopicConfigs replaces the topic-level overrides with configs.
	SetTopicConfigs(ctx context.Context, name string, configs map[string]string) error
	// AlterISR records the in-sync replica set a partition's leader decided on, written only
	// if the partition state is still at version and leaderEpoch (the state the leader acts
	// on); it returns the new version. ErrStaleState means the state moved on: the leader
	// takes the new state from Topics and decides again.
	AlterISR(ctx context.Context, topic string, partition int32, leaderEpoch int32, isr []int32, version int32) (int32, error)
	// Reassign starts moving partitions of topic to the target replica lists of targets (a
	// nil target cancels the partition's move in progress). New replicas copy the log from the
	// leader and join the ISR; then the controller drops the replicas not in the target. It
	// returns once the move is recorded, with an error per partition (nil: started or
	// cancelled); the error is for the whole topic.
	Reassign(ctx context.Context, topic string, targets map[int32][]int32) (map[int32]error, error)
	// ElectLeaders runs elections of typ for partitions of topic and waits for their outcome
	// until ctx ends, with an error per partition (nil: elected).
	ElectLeaders(ctx context.Context, typ ElectionType, topic string, partitions []int32) (map[int32]error, error)
	// BrokerConfigs are the dynamic configs of broker (a node id in decimal, or "" for the
	// cluster-wide default), as Kafka's IncrementalAlterConfigs sets them.
	BrokerConfigs(broker string) map[string]string
	// DynamicBrokerConfigs are the dynamic broker configs the store keeps in memory, by
	// broker as BrokerConfigs: the embedded store all of them, the ZooKeeper store this
	// broker's and the default's, which it follows (another broker's BrokerConfigs reads
	// from ZooKeeper). A change of them closes Changes. A copy.
	DynamicBrokerConfigs() map[string]map[string]string
	// SetBrokerConfigs replaces broker's dynamic configs.
	SetBrokerConfigs(ctx context.Context, broker string, configs map[string]string) error
	// AllocateProducerIDs reserves a block of n producer ids no other broker of the cluster
	// will hand out, and returns its first id.
	AllocateProducerIDs(ctx context.Context, n int64) (int64, error)
	// Changes is closed at the next metadata change.
	Changes() <-chan struct{}
	Close() error
}

// NewClusterID returns a random 22-character base64url id, as Kafka's cluster ids are.
func NewClusterID() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// NewTopicID returns a random version-4 UUID, never the zero UUID (Kafka's "no id").
func NewTopicID() wire.UUID {
	var u wire.UUID
	rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u
}

// ValidTopicName applies Kafka's rules: 1-249 characters of [a-zA-Z0-9._-], not "." or "..".
func ValidTopicName(name string) bool {
	if name == "" || len(name) > 249 || name == "." || name == ".." {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

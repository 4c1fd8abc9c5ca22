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

// Broker is one broker as clients see it.
type Broker struct {
	NodeID int32
	Host   string
	Port   int32
	Rack   *string
}

// Partition is one partition's placement.
type Partition struct {
	Index       int32
	Leader      int32
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32
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

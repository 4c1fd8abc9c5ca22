package cluster

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/spoolmq/spool/broker/internal/fsutil"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// StateFile is the embedded store's file in the data directory.
const StateFile = "spool-metadata.json"

// MetaPropertiesFile is Kafka's broker identity file in the data directory.
const MetaPropertiesFile = "meta.properties"

// Embedded is the single-node metadata store: this broker is the only broker, the controller
// and the leader of every partition. State is a JSON file in the data directory, rewritten
// atomically on every change.
type Embedded struct {
	dir  string
	self Broker

	mu        sync.RWMutex
	clusterID string
	topics    map[string]*Topic
	brokerCfg map[string]map[string]string
	changed   chan struct{}

	pidMu sync.Mutex // serialises producer id blocks
	aclMu sync.Mutex // serialises ACL and SCRAM updates (embedded_acls.go, embedded_scram.go)
}

type embeddedState struct {
	Version   int             `json:"version"`
	ClusterID string          `json:"cluster_id"`
	Topics    []embeddedTopic `json:"topics"`
	// BrokerConfigs are dynamic broker configs by broker ("" the default).
	BrokerConfigs map[string]map[string]string `json:"broker_configs,omitempty"`
}

type embeddedTopic struct {
	Name       string            `json:"name"`
	ID         string            `json:"id"`
	Internal   bool              `json:"internal,omitempty"`
	Partitions int32             `json:"partitions"`
	Configs    map[string]string `json:"configs,omitempty"`
}

// OpenEmbedded loads (or creates) the store in dir for the broker self. A data directory that
// belongs to another node id is refused, as Kafka does through meta.properties.
func OpenEmbedded(dir string, self Broker) (*Embedded, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating data directory: %w", err)
	}
	e := &Embedded{dir: dir, self: self, topics: map[string]*Topic{}, changed: make(chan struct{})}
	b, err := os.ReadFile(filepath.Join(dir, StateFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		e.clusterID = NewClusterID()
		if err := e.persistLocked(); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("reading metadata: %w", err)
	default:
		var st embeddedState
		if err := json.Unmarshal(b, &st); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", StateFile, err)
		}
		e.clusterID = st.ClusterID
		e.brokerCfg = st.BrokerConfigs
		for _, t := range st.Topics {
			id, err := hex.DecodeString(t.ID)
			if err != nil || len(id) != 16 {
				return nil, fmt.Errorf("parsing %s: topic %s has a bad id %q", StateFile, t.Name, t.ID)
			}
			topic := &Topic{Name: t.Name, Internal: t.Internal, Configs: t.Configs}
			copy(topic.ID[:], id)
			topic.Partitions = e.placements(0, t.Partitions)
			e.topics[t.Name] = topic
		}
	}
	if err := e.checkMetaProperties(); err != nil {
		return nil, err
	}
	return e, nil
}

// checkMetaProperties writes meta.properties on first start and refuses a directory written
// by another node or cluster.
func (e *Embedded) checkMetaProperties() error {
	path := filepath.Join(e.dir, MetaPropertiesFile)
	want := fmt.Sprintf("#Written by spoold\nversion=1\ncluster.id=%s\nnode.id=%d\n", e.clusterID, e.self.NodeID)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return fsutil.WriteFileAtomic(path, []byte(want), 0o644)
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	props := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && !strings.HasPrefix(k, "#") {
			props[k] = v
		}
	}
	if id := props["node.id"]; id != fmt.Sprint(e.self.NodeID) {
		return fmt.Errorf("%s belongs to node.id %s, this broker is %d", path, id, e.self.NodeID)
	}
	if cid := props["cluster.id"]; cid != e.clusterID {
		return fmt.Errorf("%s belongs to cluster %s, the metadata here is cluster %s", path, cid, e.clusterID)
	}
	return nil
}

func (e *Embedded) placements(from, to int32) []Partition {
	ps := make([]Partition, 0, to-from)
	for i := from; i < to; i++ {
		ps = append(ps, Partition{Index: i, Leader: e.self.NodeID, Replicas: []int32{e.self.NodeID}, ISR: []int32{e.self.NodeID}})
	}
	return ps
}

// persistLocked writes the state file; e.mu is held (or e is not yet shared).
func (e *Embedded) persistLocked() error {
	st := embeddedState{Version: 1, ClusterID: e.clusterID, BrokerConfigs: e.brokerCfg}
	for _, name := range slices.Sorted(maps.Keys(e.topics)) {
		t := e.topics[name]
		st.Topics = append(st.Topics, embeddedTopic{Name: t.Name, ID: hex.EncodeToString(t.ID[:]), Internal: t.Internal,
			Partitions: int32(len(t.Partitions)), Configs: t.Configs})
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding metadata: %w", err)
	}
	return fsutil.WriteFileAtomic(filepath.Join(e.dir, StateFile), b, 0o644)
}

// notifyLocked wakes every Changes waiter.
func (e *Embedded) notifyLocked() {
	close(e.changed)
	e.changed = make(chan struct{})
}

func copyTopic(t *Topic) Topic {
	c := *t
	c.Configs = maps.Clone(t.Configs)
	c.Partitions = slices.Clone(t.Partitions)
	return c
}

// ClusterID implements Metadata.
func (e *Embedded) ClusterID() string { return e.clusterID }

// ControllerID implements Metadata: the only broker is the controller.
func (e *Embedded) ControllerID() int32 { return e.self.NodeID }

// Brokers implements Metadata.
func (e *Embedded) Brokers() []Broker {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return []Broker{e.self}
}

// Topics implements Metadata, sorted by name.
func (e *Embedded) Topics() []Topic {
	e.mu.RLock()
	defer e.mu.RUnlock()
	out := make([]Topic, 0, len(e.topics))
	for _, name := range slices.Sorted(maps.Keys(e.topics)) {
		out = append(out, copyTopic(e.topics[name]))
	}
	return out
}

// Topic implements Metadata.
func (e *Embedded) Topic(name string) (Topic, bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	t, ok := e.topics[name]
	if !ok {
		return Topic{}, false
	}
	return copyTopic(t), true
}

// TopicByID implements Metadata.
func (e *Embedded) TopicByID(id wire.UUID) (Topic, bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, t := range e.topics {
		if t.ID == id {
			return copyTopic(t), true
		}
	}
	return Topic{}, false
}

// CreateTopic implements Metadata.
func (e *Embedded) CreateTopic(_ context.Context, name string, partitions int32, rf int16, configs map[string]string, validateOnly bool) (Topic, error) {
	if !ValidTopicName(name) {
		return Topic{}, fmt.Errorf("%w: %q", ErrInvalidTopic, name)
	}
	if partitions < 1 {
		return Topic{}, fmt.Errorf("%w: %d", ErrInvalidPartitions, partitions)
	}
	if rf != 1 {
		return Topic{}, fmt.Errorf("%w: %d, a single node holds one replica", ErrInvalidReplication, rf)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.topics[name]; ok {
		return Topic{}, fmt.Errorf("%w: %s", ErrTopicExists, name)
	}
	if clash := e.collidingLocked(name); clash != "" {
		return Topic{}, fmt.Errorf("%w: %s collides with %s ('.' and '_' are interchangeable in metric names)", ErrInvalidTopic, name, clash)
	}
	t := &Topic{Name: name, ID: NewTopicID(), Internal: strings.HasPrefix(name, "__"), Configs: maps.Clone(configs),
		Partitions: e.placements(0, partitions)}
	if validateOnly {
		return copyTopic(t), nil
	}
	e.topics[name] = t
	if err := e.persistLocked(); err != nil {
		delete(e.topics, name)
		return Topic{}, err
	}
	e.notifyLocked()
	return copyTopic(t), nil
}

// collidingLocked finds an existing topic whose name differs only by '.' versus '_', which
// Kafka refuses.
func (e *Embedded) collidingLocked(name string) string {
	norm := strings.ReplaceAll(name, ".", "_")
	for other := range e.topics {
		if strings.ReplaceAll(other, ".", "_") == norm {
			return other
		}
	}
	return ""
}

// DeleteTopic implements Metadata.
func (e *Embedded) DeleteTopic(_ context.Context, name string) (Topic, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.topics[name]
	if !ok {
		return Topic{}, fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	delete(e.topics, name)
	if err := e.persistLocked(); err != nil {
		e.topics[name] = t
		return Topic{}, err
	}
	e.notifyLocked()
	return copyTopic(t), nil
}

// CreatePartitions implements Metadata.
func (e *Embedded) CreatePartitions(_ context.Context, name string, total int32, validateOnly bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.topics[name]
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	have := int32(len(t.Partitions))
	if total <= have {
		return fmt.Errorf("%w: topic %s has %d partitions, cannot go to %d", ErrInvalidPartitions, name, have, total)
	}
	if validateOnly {
		return nil
	}
	old := t.Partitions
	t.Partitions = append(slices.Clone(old), e.placements(have, total)...)
	if err := e.persistLocked(); err != nil {
		t.Partitions = old
		return err
	}
	e.notifyLocked()
	return nil
}

// SetTopicConfigs implements Metadata.
func (e *Embedded) SetTopicConfigs(_ context.Context, name string, configs map[string]string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.topics[name]
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	old := t.Configs
	t.Configs = maps.Clone(configs)
	if err := e.persistLocked(); err != nil {
		t.Configs = old
		return err
	}
	e.notifyLocked()
	return nil
}

// Changes implements Metadata.
func (e *Embedded) Changes() <-chan struct{} {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.changed
}

// Close implements Metadata.
func (e *Embedded) Close() error { return nil }

// SetSelf updates this broker's advertised endpoint, once its listener is bound.
func (e *Embedded) SetSelf(b Broker) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.self = b
}

// AlterISR implements Metadata: a single node's ISR is itself, always.
func (e *Embedded) AlterISR(_ context.Context, topic string, partition int32, _ int32, isr []int32, version int32) (int32, error) {
	if len(isr) != 1 || isr[0] != e.self.NodeID {
		return 0, fmt.Errorf("%w: %s-%d on a single node has the ISR [%d]", ErrStaleState, topic, partition, e.self.NodeID)
	}
	return version, nil
}

// ProducerIDFile records the first producer id not yet handed out, so that ids never repeat
// across restarts while the file is written once per block, not per id.
const ProducerIDFile = "producer-id-block"

// AllocateProducerIDs implements Metadata through ProducerIDFile.
func (e *Embedded) AllocateProducerIDs(_ context.Context, n int64) (int64, error) {
	e.pidMu.Lock()
	defer e.pidMu.Unlock()
	path := filepath.Join(e.dir, ProducerIDFile)
	var next int64
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return 0, fmt.Errorf("reading %s: %w", path, err)
	default:
		next, err = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || next < 0 {
			return 0, fmt.Errorf("%s holds %q, not a producer id", path, strings.TrimSpace(string(b)))
		}
	}
	if err := fsutil.WriteFileAtomic(path, []byte(strconv.FormatInt(next+n, 10)+"\n"), 0o644); err != nil {
		return 0, fmt.Errorf("reserving producer ids: %w", err)
	}
	return next, nil
}

// Reassign implements Metadata. A single node holds every replica: the only valid target is
// the node itself, which is where every partition already is, so nothing moves.
func (e *Embedded) Reassign(_ context.Context, topic string, targets map[int32][]int32) (map[int32]error, error) {
	t, ok := e.Topic(topic)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownTopic, topic)
	}
	out := map[int32]error{}
	for p, target := range targets {
		if target == nil {
			out[p] = fmt.Errorf("%w: %s-%d", ErrNoReassignment, topic, p)
			continue
		}
		out[p] = CheckTarget(t, p, target, e.Brokers())
	}
	return out, nil
}

// ElectLeaders implements Metadata: a single node leads every partition already.
func (e *Embedded) ElectLeaders(_ context.Context, typ ElectionType, topic string, partitions []int32) (map[int32]error, error) {
	t, ok := e.Topic(topic)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownTopic, topic)
	}
	out := map[int32]error{}
	for _, p := range partitions {
		if p < 0 || int(p) >= len(t.Partitions) {
			out[p] = fmt.Errorf("%w: %s has no partition %d", ErrUnknownTopic, topic, p)
			continue
		}
		out[p] = ElectionNeed(t.Partitions[p], typ, func(id int32) bool { return id == e.self.NodeID })
	}
	return out, nil
}

// BrokerConfigs implements Metadata.
func (e *Embedded) BrokerConfigs(broker string) map[string]string {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return maps.Clone(e.brokerCfg[broker])
}

// DynamicBrokerConfigs implements Metadata: every broker's, the default's and this node's
// always listed (nil when none).
func (e *Embedded) DynamicBrokerConfigs() map[string]map[string]string {
	e.mu.RLock()
	defer e.mu.RUnlock()
	out := cloneConfigSets(e.brokerCfg)
	for _, b := range []string{"", strconv.Itoa(int(e.self.NodeID))} {
		if _, ok := out[b]; !ok {
			out[b] = nil
		}
	}
	return out
}

// cloneConfigSets copies a map of config maps.
func cloneConfigSets(m map[string]map[string]string) map[string]map[string]string {
	out := make(map[string]map[string]string, len(m))
	for k, v := range m {
		out[k] = maps.Clone(v)
	}
	return out
}

// SetBrokerConfigs implements Metadata; the configs are kept in the state file.
func (e *Embedded) SetBrokerConfigs(_ context.Context, broker string, configs map[string]string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.brokerCfg == nil {
		e.brokerCfg = map[string]map[string]string{}
	}
	old := e.brokerCfg[broker]
	if len(configs) == 0 {
		delete(e.brokerCfg, broker)
	} else {
		e.brokerCfg[broker] = maps.Clone(configs)
	}
	if err := e.persistLocked(); err != nil {
		e.brokerCfg[broker] = old
		return err
	}
	e.notifyLocked()
	return nil
}

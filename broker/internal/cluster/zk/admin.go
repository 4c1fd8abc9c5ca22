package zk

// Writes any broker makes: topic creation, deletion, partition growth and configs (which the
// controller completes), a leader's ISR changes, and producer id blocks.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/spoolmq/spool/broker/internal/cluster"
)

// defaultWait bounds how long a write waits for its effect when the caller's context has no
// deadline.
const defaultWait = 30 * time.Second

// waitFor waits until cond holds in the image, or ctx (or defaultWait) ends.
func (s *Store) waitFor(ctx context.Context, what string, cond func() bool) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultWait)
		defer cancel()
	}
	for {
		changed := s.Changes()
		if cond() {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-s.ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, cluster.ErrMetadataStoreNotLoaded)
		}
	}
}

// liveBrokers are the registered brokers, for placing replicas.
func (s *Store) liveBrokers() []cluster.Broker { return s.Brokers() }

// Assign places partitions [from, to) with rf replicas each over brokers: rack-alternating
// order (consecutive brokers in different racks where racks allow), each partition's replicas
// consecutive in that order from a start that rotates by partition, so leaders and replicas
// spread evenly and each partition spans as many racks as it can. start shifts the whole
// placement (random in production, so topics do not all lead on the same broker).
func Assign(brokers []cluster.Broker, from, to int32, rf int, start int) ([][]int32, error) {
	if rf < 1 || rf > len(brokers) {
		return nil, fmt.Errorf("%w: replication factor %d with %d live brokers", cluster.ErrInvalidReplication, rf, len(brokers))
	}
	byRack := map[string][]int32{}
	for _, b := range brokers {
		rack := ""
		if b.Rack != nil {
			rack = *b.Rack
		}
		byRack[rack] = append(byRack[rack], b.NodeID)
	}
	racks := slices.Sorted(maps.Keys(byRack))
	for _, r := range racks {
		slices.Sort(byRack[r])
	}
	var order []int32
	for i := 0; len(order) < len(brokers); i++ {
		for _, r := range racks {
			if i < len(byRack[r]) {
				order = append(order, byRack[r][i])
			}
		}
	}
	n := len(order)
	rackOf := map[int32]string{}
	for r, ids := range byRack {
		for _, id := range ids {
			rackOf[id] = r
		}
	}
	out := make([][]int32, 0, to-from)
	for p := from; p < to; p++ {
		// The leader is the partition's start in the order; followers come after it, skipping
		// brokers whose rack holds a replica already until every rack holds one (as Kafka's
		// rack-aware placement does), which matters when racks have unequal broker counts.
		first := start + int(p)
		replicas := []int32{order[first%n]}
		used := map[string]bool{rackOf[replicas[0]]: true}
		for pass := 0; len(replicas) < rf; pass++ {
			for k := 1; k < n && len(replicas) < rf; k++ {
				id := order[(first+k)%n]
				if slices.Contains(replicas, id) || pass == 0 && used[rackOf[id]] && len(used) < len(racks) {
					continue
				}
				replicas = append(replicas, id)
				used[rackOf[id]] = true
			}
		}
		out = append(out, replicas)
	}
	return out, nil
}

// CreateTopic implements cluster.Metadata: it writes the config and the assignment (the
// controller then elects leaders) and waits until every partition has a leader.
func (s *Store) CreateTopic(ctx context.Context, name string, partitions int32, rf int16, configs map[string]string, validateOnly bool) (cluster.Topic, error) {
	if !cluster.ValidTopicName(name) {
		return cluster.Topic{}, fmt.Errorf("%w: %q", cluster.ErrInvalidTopic, name)
	}
	if partitions < 1 {
		return cluster.Topic{}, fmt.Errorf("%w: %d", cluster.ErrInvalidPartitions, partitions)
	}
	if _, ok := s.Topic(name); ok {
		return cluster.Topic{}, fmt.Errorf("%w: %s", cluster.ErrTopicExists, name)
	}
	if clash := s.colliding(name); clash != "" {
		return cluster.Topic{}, fmt.Errorf("%w: %s collides with %s ('.' and '_' are interchangeable in metric names)", cluster.ErrInvalidTopic, name, clash)
	}
	a, err := Assign(s.liveBrokers(), 0, partitions, int(rf), rand.IntN(1<<16))
	if err != nil {
		return cluster.Topic{}, err
	}
	id := cluster.NewTopicID()
	t := cluster.Topic{Name: name, ID: id, Internal: strings.HasPrefix(name, "__"), Configs: maps.Clone(configs)}
	for i, r := range a {
		t.Partitions = append(t.Partitions, cluster.Partition{Index: int32(i), Leader: r[0], Replicas: r, ISR: r})
	}
	if validateOnly {
		return t, nil
	}
	acl := zk.WorldACL(zk.PermAll)
	ops := []any{}
	if _, _, err := s.conn.Get(s.p(topicConfigPath(name))); err == nil {
		ops = append(ops, &zk.SetDataRequest{Path: s.p(topicConfigPath(name)), Data: encodeConfig(configs), Version: -1})
	} else {
		ops = append(ops, &zk.CreateRequest{Path: s.p(topicConfigPath(name)), Data: encodeConfig(configs), Acl: acl})
	}
	ops = append(ops, &zk.CreateRequest{Path: s.p(topicPath(name)), Data: encodeTopic(topicAssignment{ID: id, Replicas: a}), Acl: acl})
	if _, err := s.conn.Multi(ops...); err != nil {
		if errors.Is(err, zk.ErrNodeExists) {
			return cluster.Topic{}, fmt.Errorf("%w: %s", cluster.ErrTopicExists, name)
		}
		return cluster.Topic{}, fmt.Errorf("writing topic %s: %w", name, err)
	}
	err = s.waitFor(ctx, "leaders of topic "+name, func() bool {
		got, ok := s.Topic(name)
		if !ok || got.ID != id || len(got.Partitions) != int(partitions) {
			return false
		}
		for _, p := range got.Partitions {
			if p.Leader < 0 {
				return false
			}
		}
		t = got
		return true
	})
	return t, err
}

func (s *Store) colliding(name string) string {
	norm := strings.ReplaceAll(name, ".", "_")
	s.mu.RLock()
	defer s.mu.RUnlock()
	for other := range s.topics {
		if other != name && strings.ReplaceAll(other, ".", "_") == norm {
			return other
		}
	}
	return ""
}

// DeleteTopic implements cluster.Metadata: it marks the topic for deletion, as Kafka's
// /admin/delete_topics does, and waits until the controller removed it.
func (s *Store) DeleteTopic(ctx context.Context, name string) (cluster.Topic, error) {
	t, ok := s.Topic(name)
	if !ok {
		return cluster.Topic{}, fmt.Errorf("%w: %s", cluster.ErrUnknownTopic, name)
	}
	_, err := s.conn.Create(s.p(deleteTopicPath(name)), nil, 0, zk.WorldACL(zk.PermAll))
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return cluster.Topic{}, fmt.Errorf("marking topic %s for deletion: %w", name, err)
	}
	err = s.waitFor(ctx, "deletion of topic "+name, func() bool {
		got, ok := s.Topic(name)
		return !ok || got.ID != t.ID
	})
	return t, err
}

// CreatePartitions implements cluster.Metadata: the assignment grows (conditional on the
// version read), and the controller elects the new partitions' leaders.
func (s *Store) CreatePartitions(ctx context.Context, name string, total int32, validateOnly bool) error {
	data, stat, err := s.conn.Get(s.p(topicPath(name)))
	if errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("%w: %s", cluster.ErrUnknownTopic, name)
	}
	if err != nil {
		return fmt.Errorf("reading topic %s: %w", name, err)
	}
	ta, err := decodeTopic(name, data)
	if err != nil {
		return err
	}
	a := ta.Replicas
	have := int32(len(a))
	if total <= have {
		return fmt.Errorf("%w: topic %s has %d partitions, cannot go to %d", cluster.ErrInvalidPartitions, name, have, total)
	}
	more, err := Assign(s.liveBrokers(), have, total, len(a[0]), rand.IntN(1<<16))
	if err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	if _, err := s.conn.Set(s.p(topicPath(name)), encodeTopic(topicAssignment{ID: ta.ID, Replicas: append(a, more...), Adding: ta.Adding, Removing: ta.Removing}), stat.Version); err != nil {
		if errors.Is(err, zk.ErrBadVersion) {
			return fmt.Errorf("%w: topic %s changed meanwhile; retry", cluster.ErrInvalidPartitions, name)
		}
		return fmt.Errorf("growing topic %s: %w", name, err)
	}
	return s.waitFor(ctx, "leaders of the new partitions of "+name, func() bool {
		t, ok := s.Topic(name)
		if !ok || len(t.Partitions) != int(total) {
			return false
		}
		for _, p := range t.Partitions {
			if p.Leader < 0 && p.LeaderEpoch < 0 {
				return false
			}
		}
		return true
	})
}

// SetTopicConfigs implements cluster.Metadata.
func (s *Store) SetTopicConfigs(ctx context.Context, name string, configs map[string]string) error {
	if _, ok := s.Topic(name); !ok {
		return fmt.Errorf("%w: %s", cluster.ErrUnknownTopic, name)
	}
	_, err := s.conn.Set(s.p(topicConfigPath(name)), encodeConfig(configs), -1)
	if errors.Is(err, zk.ErrNoNode) {
		_, err = s.conn.Create(s.p(topicConfigPath(name)), encodeConfig(configs), 0, zk.WorldACL(zk.PermAll))
	}
	if err != nil {
		return fmt.Errorf("writing the config of topic %s: %w", name, err)
	}
	return s.waitFor(ctx, "the config of topic "+name, func() bool {
		t, ok := s.Topic(name)
		return !ok || maps.Equal(t.Configs, configs) || len(configs) == 0 && len(t.Configs) == 0
	})
}

// AlterISR implements cluster.Metadata with a write conditional on the state's znode version,
// as Kafka's leaders did before AlterPartition.
func (s *Store) AlterISR(ctx context.Context, topic string, partition int32, leaderEpoch int32, isr []int32, version int32) (int32, error) {
	s.mu.RLock()
	entry, ok := s.topics[topic]
	var st partitionState
	if ok {
		st, ok = entry.states[partition]
	}
	s.mu.RUnlock()
	if !ok || st.ZkVersion != version || st.LeaderEpoch != leaderEpoch {
		return 0, fmt.Errorf("%w: %s-%d", cluster.ErrStaleState, topic, partition)
	}
	st.ISR = sortedIDs(isr)
	stat, err := s.conn.Set(s.p(partitionStatePath(topic, partition)), encodePartitionState(st), version)
	if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) {
		return 0, fmt.Errorf("%w: %s-%d", cluster.ErrStaleState, topic, partition)
	}
	if err != nil {
		return 0, fmt.Errorf("writing the ISR of %s-%d: %w", topic, partition, err)
	}
	return stat.Version, nil
}

// AllocateProducerIDs implements cluster.Metadata through /latest_producer_id_block, a
// read-modify-write conditional on its version, as Kafka's ZooKeeper mode does.
func (s *Store) AllocateProducerIDs(ctx context.Context, n int64) (int64, error) {
	path := s.p(producerIDBlockPath)
	for ctx.Err() == nil {
		data, stat, err := s.conn.Get(path)
		var start int64
		switch {
		case errors.Is(err, zk.ErrNoNode):
			_, err = s.conn.Create(path, encodeProducerIDBlock(s.self.NodeID, 0, n-1), 0, zk.WorldACL(zk.PermAll))
			if err == nil {
				return 0, nil
			}
			if errors.Is(err, zk.ErrNodeExists) {
				continue
			}
			return 0, fmt.Errorf("creating %s: %w", producerIDBlockPath, err)
		case err != nil:
			return 0, fmt.Errorf("reading %s: %w", producerIDBlockPath, err)
		}
		end, err := decodeProducerIDBlock(data)
		if err != nil {
			return 0, err
		}
		start = end + 1
		_, err = s.conn.Set(path, encodeProducerIDBlock(s.self.NodeID, start, start+n-1), stat.Version)
		if err == nil {
			return start, nil
		}
		if !errors.Is(err, zk.ErrBadVersion) {
			return 0, fmt.Errorf("writing %s: %w", producerIDBlockPath, err)
		}
	}
	return 0, fmt.Errorf("allocating producer ids: %w", ctx.Err())
}

var _ cluster.Metadata = (*Store)(nil)

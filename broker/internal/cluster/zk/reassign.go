package zk

// Moving replicas and leaders: partition reassignment, requested leader elections and the
// controller's automatic preferred-leader rebalance.
//
// # Reassignment
//
// Any broker records a move (Reassign), as Kafka's AlterPartitionReassignments does in
// ZooKeeper mode: the topic znode's replica list becomes the target followed by the original
// replicas not in it, with adding_replicas and removing_replicas beside it. From then on the
// move is state in ZooKeeper, not in any process, so it survives the controller's and any
// broker's failure:
//   - every broker reconciles its replicas with the replica list, so the added ones open
//     their logs and follow the leader, which adds them to the ISR once they have caught up
//     (the leader's usual ISR expansion);
//   - once every target replica is in the ISR, the controller completes the move in one
//     fenced multi that checks both znodes' versions: the partition state (ISR cut to the
//     target; a new leader from the target, with a new leader epoch, if the leader is being
//     removed) and the topic znode (the target alone, the move's lists cleared);
//   - the removed replicas' brokers then drop and delete their copies.
// A record acknowledged before completion was in every ISR member's log, the new replicas
// included, and a new leader is elected from the ISR, so completion loses nothing. A cancel
// restores the original list; the controller's usual rule drops the added replicas from the
// ISR and elects again if the leader was one of them.
//
// # Elections
//
// ElectLeaders records the partitions in /admin/preferred_replica_election (Kafka's znode;
// an unclean election carries "election_type": 1). The controller runs them in its next pass
// and deletes the znode, conditional on its version so that a request added meanwhile is
// kept. The caller waits until the image shows the outcome.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/spoolmq/spool/broker/internal/cluster"
	"github.com/spoolmq/spool/broker/internal/metrics"
)

// Reassign implements cluster.Metadata. The write is conditional on the topic znode's
// version and retried on a concurrent change.
func (s *Store) Reassign(ctx context.Context, topic string, targets map[int32][]int32) (map[int32]error, error) {
	for attempt := 0; ; attempt++ {
		m, err := s.planMove(topic, targets)
		if err != nil || len(m.lists) == 0 {
			return m.results, err
		}
		_, err = s.conn.Set(s.p(topicPath(topic)), encodeTopic(m.next), m.version)
		if errors.Is(err, zk.ErrBadVersion) && attempt < 10 {
			continue
		}
		if errors.Is(err, zk.ErrNoNode) {
			return nil, fmt.Errorf("%w: %s", cluster.ErrUnknownTopic, topic)
		}
		if err != nil {
			return nil, fmt.Errorf("recording the reassignment of %s: %w", topic, err)
		}
		s.log.Info("partition reassignment recorded", "topic", topic, "partitions", slices.Sorted(maps.Keys(m.lists)))
		// Recorded once the image no longer shows a changed partition on its original list (it
		// shows the new list, or the move already completed).
		err = s.waitFor(ctx, "the reassignment of "+topic, func() bool {
			t, ok := s.Topic(topic)
			if !ok {
				return true
			}
			for p, list := range m.lists {
				if int(p) >= len(t.Partitions) {
					return false
				}
				if got := t.Partitions[p].Replicas; !slices.Equal(got, list) && slices.Equal(got, m.before[p]) {
					return false
				}
			}
			return true
		})
		return m.results, err
	}
}

// move is a reassignment applied to a topic znode read at version: the result per partition
// asked for, the new assignment, and the changed partitions' replica lists before and after.
type move struct {
	results map[int32]error
	next    topicAssignment
	version int32
	before  map[int32][]int32
	lists   map[int32][]int32
}

// planMove reads the topic znode and applies targets to it.
func (s *Store) planMove(topic string, targets map[int32][]int32) (move, error) {
	data, stat, err := s.conn.Get(s.p(topicPath(topic)))
	if errors.Is(err, zk.ErrNoNode) {
		return move{}, fmt.Errorf("%w: %s", cluster.ErrUnknownTopic, topic)
	}
	if err != nil {
		return move{}, fmt.Errorf("reading topic %s: %w", topic, err)
	}
	ta, err := decodeTopic(topic, data)
	if err != nil {
		return move{}, err
	}
	t, ok := s.Topic(topic)
	if !ok {
		return move{}, fmt.Errorf("%w: %s", cluster.ErrUnknownTopic, topic)
	}
	live := s.Brokers()
	m := move{results: map[int32]error{}, next: ta, version: stat.Version, before: map[int32][]int32{}, lists: map[int32][]int32{}}
	for p, target := range targets {
		if p < 0 || int(p) >= len(ta.Replicas) {
			m.results[p] = fmt.Errorf("%w: %s has no partition %d", cluster.ErrUnknownTopic, topic, p)
			continue
		}
		orig := ta.original(p)
		if target == nil {
			if !ta.moving(p) {
				m.results[p] = fmt.Errorf("%w: %s-%d", cluster.ErrNoReassignment, topic, p)
				continue
			}
			target = orig
		} else if err := cluster.CheckTarget(t, p, target, live); err != nil {
			m.results[p] = err
			continue
		}
		// The whole list during the move: the target, then the original replicas leaving.
		full := slices.Clone(target)
		var adding, removing []int32
		for _, r := range target {
			if !slices.Contains(orig, r) {
				adding = append(adding, r)
			}
		}
		for _, r := range orig {
			if !slices.Contains(target, r) {
				full = append(full, r)
				removing = append(removing, r)
			}
		}
		m.before[p] = ta.Replicas[p]
		ta.Replicas[p] = full
		ta.Adding[p], ta.Removing[p] = adding, removing
		if len(adding) == 0 {
			delete(ta.Adding, p)
		}
		if len(removing) == 0 {
			delete(ta.Removing, p)
		}
		m.results[p] = nil
		m.lists[p] = full
	}
	m.next = ta
	return m, nil
}

// ElectLeaders implements cluster.Metadata.
func (s *Store) ElectLeaders(ctx context.Context, typ cluster.ElectionType, topic string, partitions []int32) (map[int32]error, error) {
	t, ok := s.Topic(topic)
	if !ok {
		return nil, fmt.Errorf("%w: %s", cluster.ErrUnknownTopic, topic)
	}
	alive := s.isLive
	results := map[int32]error{}
	var reqs []electionRequest
	for _, p := range partitions {
		if p < 0 || int(p) >= len(t.Partitions) {
			results[p] = fmt.Errorf("%w: %s has no partition %d", cluster.ErrUnknownTopic, topic, p)
			continue
		}
		if err := cluster.ElectionNeed(t.Partitions[p], typ, alive); err != nil {
			results[p] = fmt.Errorf("%w: %s-%d", err, topic, p)
			continue
		}
		reqs = append(reqs, electionRequest{Topic: topic, Partition: p, Type: typ})
	}
	if len(reqs) == 0 {
		return results, nil
	}
	if err := s.requestElections(reqs); err != nil {
		return nil, err
	}
	err := s.waitFor(ctx, "leader elections in "+topic, func() bool {
		t, ok := s.Topic(topic)
		if !ok {
			return true
		}
		for _, r := range reqs {
			if cluster.ElectionNeed(t.Partitions[r.Partition], typ, alive) == nil {
				return false
			}
		}
		return true
	})
	if err != nil {
		for _, r := range reqs {
			results[r.Partition] = err
		}
		return results, nil
	}
	t, _ = s.Topic(topic)
	for _, r := range reqs {
		p := t.Partitions[r.Partition]
		switch need := cluster.ElectionNeed(p, typ, alive); {
		case errors.Is(need, cluster.ErrElectionNotNeeded):
			results[r.Partition] = nil
		case need == nil:
			results[r.Partition] = fmt.Errorf("%w: %s-%d", cluster.ErrPreferredLeaderNotAvailable, topic, r.Partition)
		default:
			results[r.Partition] = fmt.Errorf("%w: %s-%d", need, topic, r.Partition)
		}
	}
	return results, nil
}

// isLive reports whether broker id is registered and not fenced.
func (s *Store) isLive(id int32) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.brokers[id]
	return ok && !s.fenced[id]
}

// requestElections adds reqs to /admin/preferred_replica_election (creating it, or
// conditional on the version read).
func (s *Store) requestElections(reqs []electionRequest) error {
	path := s.p(electionPath)
	for attempt := 0; attempt < 10; attempt++ {
		data, stat, err := s.conn.Get(path)
		if errors.Is(err, zk.ErrNoNode) {
			_, err = s.conn.Create(path, encodeElections(reqs), 0, zk.WorldACL(zk.PermAll))
			if errors.Is(err, zk.ErrNodeExists) {
				continue
			}
			if err != nil {
				return fmt.Errorf("asking for leader elections: %w", err)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", electionPath, err)
		}
		have, err := decodeElections(data)
		if err != nil {
			have = nil // a broken request: replace it
		}
		for _, r := range reqs {
			if !slices.Contains(have, r) {
				have = append(have, r)
			}
		}
		_, err = s.conn.Set(path, encodeElections(have), stat.Version)
		if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return fmt.Errorf("asking for leader elections: %w", err)
		}
		return nil
	}
	return fmt.Errorf("asking for leader elections: %s kept changing", electionPath)
}

// completeMoves finishes every reassignment whose target replicas are all in the ISR (see
// the file comment). A topic's completed partitions go in one multi with its znode.
func (c *controller) completeMoves(alive func(int32) bool) error {
	s := c.s
	type done struct {
		p    int32
		old  partitionState
		next partitionState
	}
	var errs []error
	s.mu.RLock()
	type moving struct {
		name    string
		ta      topicAssignment
		version int32
		states  map[int32]partitionState
	}
	var todo []moving
	for name, t := range s.topics {
		if len(t.moves.Adding) == 0 && len(t.moves.Removing) == 0 || t.assign == nil {
			continue
		}
		todo = append(todo, moving{name: name, ta: t.moves, version: t.version, states: maps.Clone(t.states)})
	}
	s.mu.RUnlock()
	for _, m := range todo {
		var finished []done
		ta := topicAssignment{ID: m.ta.ID, Replicas: slices.Clone(m.ta.Replicas), Adding: maps.Clone(m.ta.Adding), Removing: maps.Clone(m.ta.Removing)}
		for i := range m.ta.Replicas {
			p := int32(i)
			st, has := m.states[p]
			if !m.ta.moving(p) || !has {
				continue
			}
			next, ok := completion(m.ta.target(p), st, alive)
			if !ok {
				continue
			}
			next.ControllerEpoch = c.epoch
			finished = append(finished, done{p: p, old: st, next: next})
			ta.Replicas[p] = m.ta.target(p)
			delete(ta.Adding, p)
			delete(ta.Removing, p)
		}
		if len(finished) == 0 {
			continue
		}
		began := time.Now()
		ops := []any{&zk.SetDataRequest{Path: s.p(topicPath(m.name)), Data: encodeTopic(ta), Version: m.version}}
		for _, f := range finished {
			ops = append(ops, &zk.SetDataRequest{Path: s.p(partitionStatePath(m.name, f.p)), Data: encodePartitionState(f.next), Version: f.old.ZkVersion})
		}
		if err := c.write(ops...); err != nil {
			if errors.Is(err, errFenced) {
				return err
			}
			if errors.Is(err, zk.ErrBadVersion) {
				continue // a leader's ISR change or another write came first: next pass
			}
			errs = append(errs, fmt.Errorf("completing the reassignment of %s: %w", m.name, err))
			continue
		}
		for _, f := range finished {
			if f.next.Leader != f.old.Leader {
				metrics.LeaderElected(time.Since(began))
			}
			metrics.ISRChanged(len(f.old.ISR), len(f.next.ISR))
			s.log.Info("partition reassignment completed", "topic", m.name, "partition", f.p, "replicas", ta.Replicas[f.p],
				"leader", f.next.Leader, "leader_epoch", f.next.LeaderEpoch, "isr", f.next.ISR)
		}
	}
	return errors.Join(errs...)
}

// completion is the state a moving partition takes when its move completes, or false while
// a target replica is not yet in the ISR (or no target replica can lead).
func completion(target []int32, st partitionState, alive func(int32) bool) (partitionState, bool) {
	for _, r := range target {
		if !slices.Contains(st.ISR, r) {
			return partitionState{}, false
		}
	}
	var isr []int32
	for _, r := range st.ISR {
		if slices.Contains(target, r) {
			isr = append(isr, r)
		}
	}
	next := st
	next.ISR = sortedIDs(isr)
	if slices.Contains(target, st.Leader) && alive(st.Leader) {
		return next, true
	}
	for _, r := range target {
		if alive(r) {
			next.Leader, next.LeaderEpoch = r, st.LeaderEpoch+1
			return next, true
		}
	}
	return partitionState{}, false
}

// runElections runs the elections asked for in /admin/preferred_replica_election and then
// deletes it (conditional on the version read: a request added meanwhile stays for the next
// pass).
func (c *controller) runElections(alive func(int32) bool) error {
	s := c.s
	s.mu.RLock()
	reqs, version := slices.Clone(s.elections), s.electionsVersion
	s.mu.RUnlock()
	if version < 0 {
		return nil
	}
	var errs []error
	var writes []stateWrite
	for _, r := range reqs {
		if w, ok := c.election(r.Topic, r.Partition, r.Type, alive); ok {
			writes = append(writes, w)
		}
	}
	if err := c.writeStates(writes); errors.Is(err, errFenced) {
		return err
	} else if err != nil {
		errs = append(errs, err)
	}
	err := c.write(&zk.DeleteRequest{Path: s.p(electionPath), Version: version})
	if err != nil && !errors.Is(err, zk.ErrBadVersion) && !errors.Is(err, zk.ErrNoNode) {
		errs = append(errs, fmt.Errorf("clearing the leader elections asked for: %w", err))
		if errors.Is(err, errFenced) {
			return err
		}
	}
	return errors.Join(errs...)
}

// election decides one requested election: the state to write, or false when it is not
// needed (any more).
func (c *controller) election(topic string, p int32, typ cluster.ElectionType, alive func(int32) bool) (stateWrite, bool) {
	s := c.s
	t, ok := s.Topic(topic)
	st, has := s.state(topic, p)
	if !ok || !has || int(p) >= len(t.Partitions) {
		return stateWrite{}, false
	}
	part := t.Partitions[p]
	if cluster.ElectionNeed(part, typ, alive) != nil {
		return stateWrite{}, false
	}
	next := st
	next.ControllerEpoch, next.LeaderEpoch = c.epoch, st.LeaderEpoch+1
	switch typ {
	case cluster.ElectPreferred:
		next.Leader = part.Replicas[0]
	case cluster.ElectUnclean:
		for _, r := range part.Replicas {
			if alive(r) {
				next.Leader, next.ISR = r, []int32{r}
				break
			}
		}
	}
	return stateWrite{topic: topic, partition: p, old: st, has: true, next: next}, true
}

// rebalanceLeaders is Kafka's automatic preferred-leader rebalance: for each broker, the
// share of the partitions it is the preferred leader of that another broker leads; above
// the imbalance percentage, those partitions go back to it where it is in sync.
func (c *controller) rebalanceLeaders(alive func(int32) bool) error {
	s := c.s
	type tp struct {
		topic string
		p     int32
	}
	preferred := map[int32][]tp{}
	misled := map[int32][]tp{}
	for _, t := range s.Topics() {
		for _, p := range t.Partitions {
			if len(p.Replicas) == 0 || len(p.Adding)+len(p.Removing) > 0 {
				continue
			}
			pref := p.Replicas[0]
			preferred[pref] = append(preferred[pref], tp{t.Name, p.Index})
			if p.Leader != pref {
				misled[pref] = append(misled[pref], tp{t.Name, p.Index})
			}
		}
	}
	var writes []stateWrite
	for id, all := range preferred {
		if !alive(id) || len(misled[id])*100 <= len(all)*s.cfg.LeaderImbalancePercent {
			continue
		}
		for _, x := range misled[id] {
			if w, ok := c.election(x.topic, x.p, cluster.ElectPreferred, alive); ok {
				writes = append(writes, w)
			}
		}
	}
	return c.writeStates(writes)
}

// rebalanceDue reports whether the automatic leader rebalance should run now, and notes it.
func (c *controller) rebalanceDue(now time.Time) bool {
	if s := c.s; s.cfg.LeaderRebalanceInterval <= 0 || now.Sub(c.lastRebalance) < s.cfg.LeaderRebalanceInterval {
		return false
	}
	c.lastRebalance = now
	return true
}

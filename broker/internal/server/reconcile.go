package server

// Reconciliation: the server makes its local replicas match the metadata image. On every
// change (and after each admin call on this broker) it opens the log of every partition that
// names this broker as a replica and hands the replica its state: a leader stops fetching and
// serves, a follower fetches from its leader; a replica whose topic is gone is stopped and its
// data deleted. Admin handlers only call the metadata store; this is the one place where
// metadata becomes local state. A single node reconciles too: it leads every partition, alone
// in its ISR.

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spoolmq/spool/broker/internal/cluster"
	"github.com/spoolmq/spool/broker/internal/group"
	"github.com/spoolmq/spool/broker/internal/partition"
	"github.com/spoolmq/spool/broker/internal/replication"
	"github.com/spoolmq/spool/broker/internal/txn"
)

// reconcileWorkers bounds the replicas a reconcile pass opens or hands a new state at once.
// Both are mostly waiting for the disk (creating files; a new leader's epoch checkpoint is
// fsynced), which overlaps concurrent work; each blocked call holds an OS thread.
const reconcileWorkers = 16

// reconcile applies the current image. It is serialised by reconcileMu, which only
// reconcile takes (it is held across the pass's I/O, never by a request's path).
//
// A pass has three steps so that thousands of new replicas (a topic created, a broker
// started) cost the slowest disk call of a few batches, not the sum of every replica's:
//  1. the logs of replicas new here are opened, reconcileWorkers at a time (storage.Manager
//     opens different partitions in parallel, and a new log costs no fsync);
//  2. every replica whose state changed takes it, reconcileWorkers at a time (a new leader
//     records its epoch, an fsync; Replica.Apply holds only that replica's lock); a replica
//     about to lead stops fetching first, as Kafka's makeLeaders does, so that no follower
//     append lands after it leads;
//  3. one after the other, in the image's order: fetchers follow or stop, consumer groups
//     load or unload, the summary is logged.
func (s *Server) reconcile() error {
	s.reconcileMu.Lock()
	defer s.reconcileMu.Unlock()
	var failed map[topicPartition]error // replicas offline after this pass (scale.go)
	fail := func(tp topicPartition, err error) {
		if failed == nil {
			failed = map[topicPartition]error{}
		}
		failed[tp] = err
	}
	topics := s.md.Topics()
	cfgs := make([]partition.LogConfig, len(topics))
	byName := make(map[string]*cluster.Topic, len(topics))

	// Step 1: open the logs of new replicas.
	type openJob struct {
		topic, partition int // indexes in topics and its Partitions
		log              *partition.Log
		err              error
	}
	var opens []openJob
	for ti, t := range topics {
		cfgs[ti] = s.logConfig(t)
		byName[t.Name] = &topics[ti]
		for pi, p := range t.Partitions {
			if !cluster.Has(p.Replicas, s.self.NodeID) {
				continue
			}
			if s.parts.Get(t.Name, p.Index) == nil {
				opens = append(opens, openJob{topic: ti, partition: pi})
			}
		}
	}
	partition.Parallel(len(opens), reconcileWorkers, func(i int) {
		j := &opens[i]
		t := &topics[j.topic]
		j.log, j.err = s.logs.Open(t.Name, t.Partitions[j.partition].Index, cfgs[j.topic])
	})
	justOpened := make(map[topicPartition]bool, len(opens))
	for _, j := range opens {
		t := &topics[j.topic]
		index := t.Partitions[j.partition].Index
		tp := topicPartition{t.Name, index}
		if j.err != nil {
			fail(tp, fmt.Errorf("opening the log of %s-%d: %w", t.Name, index, j.err))
			continue
		}
		s.parts.Put(partition.New(t.Name, index, j.log, s.repl))
		justOpened[tp] = true
	}

	// Step 2: hand the replicas their states.
	type applyJob struct {
		part    *partition.Partition
		topic   int
		p       cluster.Partition
		state   replication.State
		role    replication.Role
		changed bool
		err     error
	}
	var applies []applyJob
	for ti, t := range topics {
		minISR := s.minISR(t)
		for _, p := range t.Partitions {
			if !cluster.Has(p.Replicas, s.self.NodeID) {
				continue
			}
			part := s.parts.Get(t.Name, p.Index)
			if part == nil {
				continue // its log failed to open: offline, retried next pass
			}
			if !justOpened[topicPartition{t.Name, p.Index}] {
				part.Log().SetConfigIfChanged(cfgs[ti]) // configs altered through another broker
			}
			part.SetThrottled(throttledReplica(t.Configs["leader.replication.throttled.replicas"], p.Index, s.self.NodeID),
				throttledReplica(t.Configs["follower.replication.throttled.replicas"], p.Index, s.self.NodeID))
			if p.LeaderEpoch < 0 {
				continue // no state yet: the controller has not elected a leader
			}
			st := replication.State{Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, Replicas: p.Replicas, ISR: p.ISR,
				Version: p.Version, MinISR: minISR}
			if part.Replica().Holds(st) {
				continue // most replicas on most passes: nothing to do, nothing allocated
			}
			if p.Leader == s.self.NodeID {
				if leader, epoch := part.Replica().Leader(); p.LeaderEpoch >= epoch && (leader != p.Leader || epoch != p.LeaderEpoch) {
					s.fetchers.Stop(part.Replica()) // about to lead: no follower append after
				}
			}
			applies = append(applies, applyJob{part: part, topic: ti, p: p, state: st})
		}
	}
	partition.Parallel(len(applies), reconcileWorkers, func(i int) {
		j := &applies[i]
		j.role, j.changed, j.err = j.part.Replica().Apply(j.state)
	})

	// Step 3: fetchers, groups and the summary, in order.
	var roles roleChanges
	for _, j := range applies {
		t, p, part := &topics[j.topic], j.p, j.part
		if j.err != nil {
			fail(topicPartition{t.Name, p.Index}, fmt.Errorf("applying the state of %s-%d: %w", t.Name, p.Index, j.err))
			continue
		}
		if !j.changed {
			continue
		}
		switch {
		case j.role == replication.RoleLeader:
			s.fetchers.Stop(part.Replica())
			if t.Name == group.Topic {
				if err := s.groups.OnElection(p.Index, int32(len(t.Partitions)), offsetsPartition{part: part, epoch: p.LeaderEpoch}); err != nil {
					s.log.Error("loading consumer groups", "partition", p.Index, "err", err)
				}
			}
			if t.Name == txn.Topic {
				s.txnElected(p.Index, int32(len(t.Partitions)), part, p.LeaderEpoch)
			}
			roles.add(s.log, &roles.leading, "leading partition", t.Name, p.Index, p.Leader, p.LeaderEpoch)
		case p.Leader >= 0:
			s.resign(part)
			s.fetchers.Follow(part.Replica(), p.Leader)
			roles.add(s.log, &roles.following, "following partition", t.Name, p.Index, p.Leader, p.LeaderEpoch)
		default:
			s.resign(part)
			s.fetchers.Stop(part.Replica())
			roles.add(s.log, &roles.stopped, "partition without a leader", t.Name, p.Index, p.Leader, p.LeaderEpoch)
		}
	}
	for _, part := range s.parts.All() {
		if assignedHere(byName[part.Topic], part.Index, s.self.NodeID) {
			continue
		}
		s.resign(part)
		s.fetchers.Stop(part.Replica())
		s.parts.Drop(part)
		if err := s.logs.Remove(part.Topic, part.Index); err != nil {
			s.log.Error("deleting a replica", "topic", part.Topic, "partition", part.Index, "err", err)
		}
	}
	roles.log(s.log, s.clustered)
	// A replica that stays offline is reported once, not on every pass: the error returned is
	// that of a replica newly offline.
	return s.noteOffline(failed)
}

// assignedHere reports whether partition index of t (nil: no such topic) has a replica on
// broker self.
func assignedHere(t *cluster.Topic, index, self int32) bool {
	if t == nil {
		return false
	}
	if int(index) < len(t.Partitions) && t.Partitions[index].Index == index { // partitions in order
		return cluster.Has(t.Partitions[index].Replicas, self)
	}
	for _, p := range t.Partitions {
		if p.Index == index {
			return cluster.Has(p.Replicas, self)
		}
	}
	return false
}

// resign hands a partition's consumer groups away when it stops leading here.
func (s *Server) resign(part *partition.Partition) {
	if part.Topic == group.Topic {
		s.groups.OnResignation(part.Index)
	}
	if part.Topic == txn.Topic {
		s.txn.coord.OnResignation(part.Index)
	}
}

// minISR is a topic's min.insync.replicas.
func (s *Server) minISR(t cluster.Topic) int {
	v, _ := s.topicValue(t, "min.insync.replicas")
	n, _ := strconv.Atoi(v)
	return max(n, 1)
}

// runReconciler reconciles on every metadata change, and checks leaders' ISRs for lagging
// followers, until ctx ends.
func (s *Server) runReconciler(ctx context.Context) {
	lag := s.repl.LagMax
	tick := time.NewTicker(max(lag/4, 50*time.Millisecond))
	defer tick.Stop()
	for {
		changed := s.md.Changes()
		if err := s.reconcile(); err != nil {
			s.log.Warn("reconciling replicas", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case now := <-tick.C:
			for _, part := range s.parts.All() {
				part.Replica().MaybeShrinkISR(now)
			}
		}
	}
}

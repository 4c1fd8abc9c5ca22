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

// reconcile applies the current image. It is serialised by reconcileMu.
func (s *Server) reconcile() error {
	s.reconcileMu.Lock()
	defer s.reconcileMu.Unlock()
	want := map[topicPartition]bool{}
	var failed map[topicPartition]error // replicas offline after this pass (scale.go)
	fail := func(tp topicPartition, err error) {
		if failed == nil {
			failed = map[topicPartition]error{}
		}
		failed[tp] = err
	}
	var roles roleChanges
	for _, t := range s.md.Topics() {
		var cfg = s.logConfig(t)
		minISR := s.minISR(t)
		for _, p := range t.Partitions {
			if !cluster.Has(p.Replicas, s.self.NodeID) {
				continue
			}
			tp := topicPartition{t.Name, p.Index}
			want[tp] = true
			part := s.parts.Get(t.Name, p.Index)
			if part == nil {
				l, err := s.logs.Open(t.Name, p.Index, cfg)
				if err != nil {
					fail(tp, fmt.Errorf("opening the log of %s-%d: %w", t.Name, p.Index, err))
					continue
				}
				part = partition.New(t.Name, p.Index, l, s.repl)
				s.parts.Put(part)
			} else {
				part.Log().SetConfigIfChanged(cfg) // configs altered through another broker
			}
			part.SetThrottled(throttledReplica(t.Configs["leader.replication.throttled.replicas"], p.Index, s.self.NodeID),
				throttledReplica(t.Configs["follower.replication.throttled.replicas"], p.Index, s.self.NodeID))
			if p.LeaderEpoch < 0 {
				continue // no state yet: the controller has not elected a leader
			}
			role, changed, err := part.Replica().Apply(replication.State{Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
				Replicas: p.Replicas, ISR: p.ISR, Version: p.Version, MinISR: minISR})
			if err != nil {
				fail(tp, fmt.Errorf("applying the state of %s-%d: %w", t.Name, p.Index, err))
				continue
			}
			if !changed {
				continue
			}
			switch {
			case role == replication.RoleLeader:
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
	}
	for _, part := range s.parts.All() {
		if want[topicPartition{part.Topic, part.Index}] {
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

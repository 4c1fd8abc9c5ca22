package zk

// The controller: one broker, elected through the ephemeral /controller znode, owns every
// partition state change except a leader's own ISR changes. It
//   - initialises the states of new partitions (leader: the first live replica, ISR: the live
//     replicas),
//   - elects a new leader from the live ISR, in replica order, when a leader is lost (bumping
//     the leader epoch; with no live ISR member the partition goes offline, leader -1, unless
//     the topic allows unclean election),
//   - removes lost followers from ISRs (never the last member),
//   - completes topic deletions, partition reassignments and requested leader elections,
//     and puts preferred leaders back when leadership is out of balance (reassign.go).
//
// It works by reconciliation: each pass compares the image with the live brokers and writes
// what differs, so a pass after a failover or a lost write simply finishes the job. Every
// write is a multi that checks /controller_epoch's version, so a deposed controller (paused,
// or cut off from ZooKeeper past its session) cannot write.
//
// A broker is live when it is registered and answers the controller's probes (liveness.go):
// a killed broker's connection closes at once, so its partitions move within a probe
// interval, long before its ZooKeeper session would expire; a paused one is dropped after
// LivenessTimeout. Every broker also probes the controller and, finding it dead, removes the
// stale /controller znode so that the election does not wait for the session to expire.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

type controller struct {
	s            *Store
	epoch        int32
	epochVersion int32
	cancel       context.CancelFunc
	done         chan struct{}
	live         *liveness
	// lastRebalance is when the automatic leader rebalance last ran (or the controller
	// started: the first check waits one interval, as in Kafka).
	lastRebalance time.Time
	// pending are the states this controller wrote that its image does not show yet (batch.go),
	// so that the passes the image's catching up triggers do not write them again.
	pendingMu sync.Mutex
	pending   map[partitionKey]pendingWrite
}

// startElection tries to become the controller if there is none.
func (s *Store) startElection() {
	s.mu.RLock()
	started, ctrl := s.started, s.ctrl
	s.mu.RUnlock()
	if !started || ctrl != nil || s.ctx.Err() != nil {
		return
	}
	_, err := s.conn.Create(s.p(controllerPath), encodeController(s.self.NodeID), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	if err != nil {
		if !errors.Is(err, zk.ErrNodeExists) {
			s.log.Warn("standing for controller", "err", err)
		}
		return
	}
	epoch, version, err := s.bumpControllerEpoch()
	if err != nil {
		s.log.Error("becoming controller", "err", err)
		s.conn.Delete(s.p(controllerPath), -1)
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	c := &controller{s: s, epoch: epoch, epochVersion: version, cancel: cancel, done: make(chan struct{}), lastRebalance: time.Now()}
	c.live = newLiveness(ctx, s, c.wake)
	s.mu.Lock()
	if s.ctrl != nil || !s.started {
		s.mu.Unlock()
		cancel()
		return
	}
	s.ctrl = c
	s.mu.Unlock()
	s.log.Info("became the controller", "controller_epoch", epoch)
	go c.run(ctx)
}

// stopController ends this broker's controller role, if it has it.
func (s *Store) stopController() {
	s.mu.Lock()
	c := s.ctrl
	s.ctrl = nil
	s.mu.Unlock()
	if c != nil {
		c.cancel()
		<-c.done
		// Resign: remove our /controller znode (only ours), so the others elect at once
		// instead of waiting for our session to end.
		if _, stat, err := s.conn.Get(s.p(controllerPath)); err == nil && stat.EphemeralOwner == s.conn.SessionID() {
			s.conn.Delete(s.p(controllerPath), stat.Version)
		}
		s.log.Info("stopped being the controller", "controller_epoch", c.epoch)
	}
}

// controllerChanged runs on every change of /controller: a broker without a controller
// stands for election; one that sees another controller probes it; a controller that sees
// another broker's znode steps down.
func (s *Store) controllerChanged() {
	s.mu.RLock()
	id, self, ctrl := s.controller, s.self.NodeID, s.ctrl
	s.mu.RUnlock()
	switch {
	case id < 0:
		go s.startElection()
	case id == self:
	default:
		if ctrl != nil {
			go s.stopController()
		}
		s.watchController(id)
	}
}

func (c *controller) wake() {
	c.s.mu.Lock()
	c.s.notifyLocked()
	c.s.mu.Unlock()
}

// bumpControllerEpoch increments /controller_epoch (creating it at 1), returning the new
// epoch and the znode version that fences this controller's writes.
func (s *Store) bumpControllerEpoch() (int32, int32, error) {
	path := s.p(controllerEpochPath)
	for {
		data, stat, err := s.conn.Get(path)
		if errors.Is(err, zk.ErrNoNode) {
			_, err = s.conn.Create(path, encodeControllerEpoch(1), 0, zk.WorldACL(zk.PermAll))
			if err == nil {
				return 1, 0, nil
			}
			if errors.Is(err, zk.ErrNodeExists) {
				continue
			}
			return 0, 0, fmt.Errorf("creating %s: %w", controllerEpochPath, err)
		}
		if err != nil {
			return 0, 0, fmt.Errorf("reading %s: %w", controllerEpochPath, err)
		}
		epoch, err := decodeControllerEpoch(data)
		if err != nil {
			return 0, 0, err
		}
		st, err := s.conn.Set(path, encodeControllerEpoch(epoch+1), stat.Version)
		if errors.Is(err, zk.ErrBadVersion) {
			continue
		}
		if err != nil {
			return 0, 0, fmt.Errorf("writing %s: %w", controllerEpochPath, err)
		}
		return epoch + 1, st.Version, nil
	}
}

// errFenced: this controller was deposed (the epoch moved on).
var errFenced = errors.New("controller epoch moved on: deposed")

// errSuperseded: a partition state changed between the read and the write.
var errSuperseded = errors.New("partition state changed meanwhile")

// write runs ops as one multi fenced by the controller epoch.
func (c *controller) write(ops ...any) error {
	all := append([]any{&zk.CheckVersionRequest{Path: c.s.p(controllerEpochPath), Version: c.epochVersion}}, ops...)
	res, err := c.s.conn.Multi(all...)
	if err == nil {
		return nil
	}
	if len(res) > 0 && errors.Is(res[0].Error, zk.ErrBadVersion) {
		return errFenced
	}
	return err
}

func (c *controller) run(ctx context.Context) {
	defer close(c.done)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		changed := c.s.Changes()
		if err := c.reconcile(); errors.Is(err, errFenced) {
			c.s.log.Warn("deposed as controller", "controller_epoch", c.epoch)
			go c.s.stopController()
			return
		} else if err != nil && ctx.Err() == nil {
			c.s.log.Warn("controller pass", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-tick.C:
		}
	}
}

// reconcile is one controller pass over the image.
func (c *controller) reconcile() error {
	s := c.s
	s.mu.RLock()
	deleting := make([]string, 0, len(s.deleting))
	for t := range s.deleting {
		deleting = append(deleting, t)
	}
	registered := map[int32]bool{}
	for id := range s.brokers {
		registered[id] = true
	}
	s.mu.RUnlock()
	c.live.track(s.registeredBrokers())
	alive := func(id int32) bool { return registered[id] && (id == s.self.NodeID || c.live.alive(id)) }

	var errs []error
	if err := c.publishFenced(registered, alive); err != nil {
		if errors.Is(err, errFenced) {
			return err
		}
		errs = append(errs, err)
	}
	for _, name := range deleting {
		errs = append(errs, c.deleteTopic(name))
	}
	var writes []stateWrite
	c.pendingMu.Lock()
	pending := c.pending
	c.pending = map[partitionKey]pendingWrite{}
	c.pendingMu.Unlock()
	kept := map[partitionKey]pendingWrite{}
	for _, t := range s.Topics() {
		if slices.Contains(deleting, t.Name) {
			continue
		}
		unclean := s.cfg.Unclean != nil && s.cfg.Unclean(t.Configs)
		for _, p := range t.Partitions {
			st, has := s.state(t.Name, p.Index)
			if pw, ok := pending[partitionKey{t.Name, p.Index}]; ok && pw.replaces(st, has) {
				kept[partitionKey{t.Name, p.Index}] = pw // written, not in the image yet
				continue
			}
			next, ok := decide(p.Replicas, st, has, alive, unclean)
			if !ok {
				continue
			}
			next.ControllerEpoch = c.epoch
			writes = append(writes, stateWrite{topic: t.Name, partition: p.Index, old: st, has: has, next: next})
		}
	}
	c.pendingMu.Lock()
	for k, pw := range kept {
		if _, ok := c.pending[k]; !ok {
			c.pending[k] = pw
		}
	}
	c.pendingMu.Unlock()
	if err := c.writeStates(writes); errors.Is(err, errFenced) {
		return err
	} else if err != nil {
		errs = append(errs, err)
	}
	for _, step := range []func(func(int32) bool) error{c.completeMoves, c.runElections} {
		if err := step(alive); errors.Is(err, errFenced) {
			return err
		} else if err != nil {
			errs = append(errs, err)
		}
	}
	if c.rebalanceDue(time.Now()) {
		if err := c.rebalanceLeaders(alive); errors.Is(err, errFenced) {
			return err
		} else if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// publishFenced writes the registered brokers that are not alive to /spool/fenced_brokers
// when that differs from what the image holds, so that every broker leaves them out of the
// metadata it gives clients.
func (c *controller) publishFenced(registered map[int32]bool, alive func(int32) bool) error {
	var dead []int32
	for id := range registered {
		if !alive(id) {
			dead = append(dead, id)
		}
	}
	c.s.mu.RLock()
	same := len(dead) == len(c.s.fenced)
	for _, id := range dead {
		same = same && c.s.fenced[id]
	}
	c.s.mu.RUnlock()
	if same {
		return nil
	}
	path := c.s.p(fencedBrokersPath)
	op := any(&zk.SetDataRequest{Path: path, Data: encodeFenced(c.epoch, dead), Version: -1})
	if ok, _, _ := c.s.conn.Exists(path); !ok {
		op = &zk.CreateRequest{Path: path, Data: encodeFenced(c.epoch, dead), Acl: zk.WorldACL(zk.PermAll)}
	}
	if err := c.write(op); err != nil {
		if errors.Is(err, errFenced) {
			return err
		}
		return fmt.Errorf("writing the fenced brokers: %w", err)
	}
	return nil
}

// decide is the controller's rule for one partition: the state it should have, or false when
// it is fine as it is. has reports whether the partition has a state at all.
func decide(replicas []int32, st partitionState, has bool, alive func(int32) bool, unclean bool) (partitionState, bool) {
	var live []int32
	for _, r := range replicas {
		if alive(r) {
			live = append(live, r)
		}
	}
	if !has {
		if len(live) == 0 {
			return partitionState{}, false
		}
		return partitionState{Leader: live[0], LeaderEpoch: 0, ISR: sortedIDs(live)}, true
	}
	// The live ISR: members that are alive and still replicas (a cancelled move leaves the
	// replicas it was adding in the ISR until here).
	var liveISR []int32
	for _, r := range st.ISR {
		if alive(r) && slices.Contains(replicas, r) {
			liveISR = append(liveISR, r)
		}
	}
	if st.Leader >= 0 && alive(st.Leader) && slices.Contains(replicas, st.Leader) {
		if len(liveISR) == len(st.ISR) || len(liveISR) == 0 {
			return partitionState{}, false
		}
		next := st
		next.ISR = sortedIDs(liveISR)
		return next, true
	}
	// The leader is lost (or the partition is offline): the first live ISR member in replica
	// order takes over.
	for _, r := range replicas {
		if slices.Contains(liveISR, r) {
			return partitionState{Leader: r, LeaderEpoch: st.LeaderEpoch + 1, ISR: sortedIDs(liveISR)}, true
		}
	}
	if unclean && len(live) > 0 {
		return partitionState{Leader: live[0], LeaderEpoch: st.LeaderEpoch + 1, ISR: []int32{live[0]}}, true
	}
	if st.Leader == -1 {
		return partitionState{}, false
	}
	// Offline: no leader; the ISR keeps its members, so the first of them to come back leads.
	return partitionState{Leader: -1, LeaderEpoch: st.LeaderEpoch + 1, ISR: st.ISR}, true
}

func (s *Store) state(topic string, p int32) (partitionState, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.topics[topic]
	if !ok {
		return partitionState{}, false
	}
	st, ok := t.states[p]
	return st, ok
}

// writeState creates or updates (conditional on the version read) a partition state.
func (c *controller) writeState(topic string, p int32, old partitionState, has bool, next partitionState) error {
	acl := zk.WorldACL(zk.PermAll)
	data := encodePartitionState(next)
	if has {
		err := c.write(&zk.SetDataRequest{Path: c.s.p(partitionStatePath(topic, p)), Data: data, Version: old.ZkVersion})
		if errors.Is(err, zk.ErrBadVersion) {
			// The leader changed the ISR meanwhile: its write is in the image soon, and the
			// pass it triggers decides again.
			return errSuperseded
		}
		if err != nil && !errors.Is(err, errFenced) {
			return fmt.Errorf("writing the state of %s-%d: %w", topic, p, err)
		}
		return err
	}
	var ops []any
	if ok, _, _ := c.s.conn.Exists(c.s.p(partitionsPath(topic))); !ok {
		ops = append(ops, &zk.CreateRequest{Path: c.s.p(partitionsPath(topic)), Acl: acl})
	}
	if ok, _, _ := c.s.conn.Exists(c.s.p(partitionPath(topic, p))); !ok {
		ops = append(ops, &zk.CreateRequest{Path: c.s.p(partitionPath(topic, p)), Acl: acl})
	}
	ops = append(ops, &zk.CreateRequest{Path: c.s.p(partitionStatePath(topic, p)), Data: data, Acl: acl})
	err := c.write(ops...)
	if errors.Is(err, zk.ErrNodeExists) {
		return errSuperseded // an earlier pass created it; the image has not caught up yet
	}
	if err != nil && !errors.Is(err, errFenced) {
		return fmt.Errorf("creating the state of %s-%d: %w", topic, p, err)
	} else if err != nil {
		return err
	}
	return nil
}

// deleteTopic removes a topic's znodes (states, partitions, assignment, config) and its
// deletion marker in one fenced multi. Brokers delete their replicas when the topic leaves
// their image.
func (c *controller) deleteTopic(name string) error {
	s := c.s
	var ops []any
	parts, _, err := s.conn.Children(s.p(partitionsPath(name)))
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("listing the partitions of %s: %w", name, err)
	}
	for _, p := range parts {
		base := s.p(partitionsPath(name) + "/" + p)
		if ok, _, _ := s.conn.Exists(base + "/state"); ok {
			ops = append(ops, &zk.DeleteRequest{Path: base + "/state", Version: -1})
		}
		ops = append(ops, &zk.DeleteRequest{Path: base, Version: -1})
	}
	if err == nil {
		ops = append(ops, &zk.DeleteRequest{Path: s.p(partitionsPath(name)), Version: -1})
	}
	for _, path := range []string{topicPath(name), topicConfigPath(name)} {
		if ok, _, _ := s.conn.Exists(s.p(path)); ok {
			ops = append(ops, &zk.DeleteRequest{Path: s.p(path), Version: -1})
		}
	}
	ops = append(ops, &zk.DeleteRequest{Path: s.p(deleteTopicPath(name)), Version: -1})
	if err := c.write(ops...); err != nil {
		if errors.Is(err, errFenced) {
			return err
		}
		if errors.Is(err, zk.ErrNoNode) {
			// An earlier pass deleted it all (the multi is atomic) and this pass's image had
			// not caught up yet: nothing is left to do.
			return nil
		}
		return fmt.Errorf("deleting topic %s: %w", name, err)
	}
	s.log.Info("topic deleted by the controller", "topic", name)
	return nil
}

// watchController probes the current controller from this broker; finding it dead, it
// deletes the stale /controller znode (only the incarnation it saw) so a new election starts
// at once.
func (s *Store) watchController(id int32) {
	s.ctrlProbeMu.Lock()
	defer s.ctrlProbeMu.Unlock()
	if s.ctrlProbe != nil {
		if s.ctrlProbeID == id {
			return
		}
		s.ctrlProbe()
	}
	ctx, cancel := context.WithCancel(s.ctx)
	s.ctrlProbe, s.ctrlProbeID = cancel, id
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_, stat, err := s.conn.Get(s.p(controllerPath))
		if err != nil {
			return
		}
		czxid := stat.Czxid
		addr := func() string {
			s.mu.RLock()
			defer s.mu.RUnlock()
			b, ok := s.brokers[id]
			if !ok {
				return ""
			}
			return joinAddr(b.broker.Host, b.broker.Port)
		}
		if !probeUntilDead(ctx, addr, s.cfg.ProbeInterval, s.cfg.LivenessTimeout, s.cfg.PeerSecurity) {
			return
		}
		_, stat, err = s.conn.Get(s.p(controllerPath))
		if err != nil || stat.Czxid != czxid {
			return
		}
		if err := s.conn.Delete(s.p(controllerPath), stat.Version); err == nil {
			s.log.Warn("the controller stopped answering; removed its znode to elect a new one", "controller", id)
		}
	}()
}

// ctrlProbeState is a broker's probe of the current controller.
type ctrlProbeState struct {
	ctrlProbeMu sync.Mutex
	ctrlProbe   context.CancelFunc
	ctrlProbeID int32
}

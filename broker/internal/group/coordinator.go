// Package group is the broker's group coordinator: Kafka's classic group protocol (JoinGroup,
// SyncGroup, Heartbeat, LeaveGroup with the state machine Empty → PreparingRebalance →
// CompletingRebalance → Stable → Dead) and committed offsets, persisted as records of the
// compacted internal topic __consumer_offsets in Kafka's layouts (records.go).
//
// Ownership: a group belongs to the __consumer_offsets partition its id hashes to
// (PartitionFor), and is coordinated by that partition's leader. The coordinator serves only
// the groups of the partitions it was given with OnElection, which loads them from the
// partition's log; OnResignation drops them (their pending joins and syncs answer
// NOT_COORDINATOR, so members find the new coordinator). Callers check Owns first and answer
// NOT_COORDINATOR otherwise; a group of a partition not owned is never created.
//
// Concurrency: the coordinator's map of groups has its own lock (c.mu: the map, the owned and
// loading partitions; held for map operations only, never across I/O: a partition's replay
// runs on a goroutine OnElection starts, without it, and the caller of OnElection does not
// wait for it); each group has a lock (g.mu) that every operation on it
// holds. Under g.mu a group's records are appended as the partition's leader (append: one
// write(2), no fsync, so a group's records keep their order); the commit wait (durable by the
// flush policy, then on every in-sync replica, up to 30 s with a lagging follower) never runs
// under any lock: Commit, storeGroup, Delete and DeleteOffsets wait on a goroutine of their own
// (or, Delete, after unlocking) and re-take g.mu to act on the outcome, checking the
// generation and state. A heartbeat takes g.mu only: it never waits on disk or a follower
// (TestGroupKeepsMembersWhileACommitWaitsForACutOffFollower and
// TestGroupHeartbeatsAnsweredWhileAGroupRecordWaitsForAFollower in package server). Callbacks handed to Join and Sync (and the completion of
// commits) are called with the group lock held or from timer goroutines: they must not block
// and must not call back into the coordinator. Timers come from the Clock (Config.Clock, the
// wall clock unless a test gives a fake one) and are checked against a sequence number when
// they fire, so a stale timer does nothing. The transitions themselves are Step (machine.go),
// which takes the time as an input.
package group

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spoolmq/spool/broker/internal/storage"
	"github.com/spoolmq/spool/protocol-spec/wire"
	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

// Topic is the internal topic holding offsets and group metadata.
const Topic = "__consumer_offsets"

// State is a group's state.
type State int

const (
	Empty State = iota
	PreparingRebalance
	CompletingRebalance
	Stable
	Dead
)

func (s State) String() string {
	return [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}[s]
}

// Config configures a coordinator.
type Config struct {
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms.
	InitialRebalanceDelay time.Duration
	// OffsetsRetention is offsets.retention.minutes; RetentionCheckInterval how often expired
	// offsets are removed.
	OffsetsRetention       time.Duration
	RetentionCheckInterval time.Duration
	// MinSessionTimeout and MaxSessionTimeout bound the session timeouts of members
	// (group.min/max.session.timeout.ms).
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// MaxMetadataBytes is offset.metadata.max.bytes.
	MaxMetadataBytes int
	Log              *slog.Logger
	// Clock is the coordinator's time; nil is the wall clock.
	Clock Clock
}

// Partition is a __consumer_offsets partition this broker leads: where the coordinator
// writes the records of its groups.
type Partition interface {
	// Append appends records (one batch) as the partition's leader.
	Append(records []byte) (storage.AppendResult, error)
	// Wait returns once everything below end is committed: durable, and in a cluster on
	// every in-sync replica.
	Wait(ctx context.Context, end int64) error
	// EachBatchRecord replays the partition's log from its start, when the partition is
	// loaded, with each record's batch header (transactional offsets and their markers).
	EachBatchRecord(fn func(batch.Header, batch.Record)) error
}

// LogPartition is a Partition on a log alone (one node, no replication).
func LogPartition(l *storage.Log) Partition { return logPartition{l} }

type logPartition struct{ l *storage.Log }

func (p logPartition) Append(records []byte) (storage.AppendResult, error) {
	return p.l.Append(records, storage.AppendOptions{AssignOffsets: true})
}
func (p logPartition) Wait(ctx context.Context, end int64) error { return p.l.WaitDurable(ctx, end) }
func (p logPartition) EachBatchRecord(fn func(batch.Header, batch.Record)) error {
	return p.l.EachBatchRecord(fn)
}

// Protocol is one protocol a member supports, with its opaque metadata.
type Protocol struct {
	Name     string
	Metadata []byte
}

// MemberInfo is a member as the leader and DescribeGroups see it.
type MemberInfo struct {
	MemberID, ClientID, ClientHost string
	InstanceID                     *string
	Metadata, Assignment           []byte
}

type offsetEntry struct {
	offset      int64
	leaderEpoch int32
	metadata    string
	commitTime  int64 // ms
	expireTime  int64 // ms, -1: none
	seq         int64 // log offset of the record that set it
}

type tp struct {
	topic     string
	partition int32
}

type member struct {
	id                               string
	instanceID                       *string
	clientID, clientHost             string
	sessionTimeout, rebalanceTimeout time.Duration
	protocolType                     string
	protocols                        []Protocol
	assignment                       []byte
	joinCb                           func(JoinResult)
	syncCb                           func(SyncResult)
	timer                            Timer
	timerSeq                         uint64
}

func (m *member) metadata(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

type group struct {
	mu           sync.Mutex
	id           string
	state        State
	protocolType string
	protocol     string
	generation   int32
	leader       string
	stateTime    time.Time
	// rebalanceStart is when the current rebalance began (the rebalance log lines' duration).
	rebalanceStart time.Time
	members        map[string]*member
	order          []string // member ids in join order
	pending        map[string]Timer
	static         map[string]string // instance id -> member id
	offsets        map[tp]offsetEntry

	joinTimer       Timer
	joinSeq         uint64
	initialDelay    bool
	delayRemaining  time.Duration
	newMemberAdded  bool
	syncTimer       Timer
	syncSeq         uint64
	pendingSync     map[string]bool
	partitionLoaded bool
}

// Coordinator coordinates every group on this broker.
type Coordinator struct {
	cfg    Config
	log    *slog.Logger
	clock  Clock
	mu     sync.Mutex
	groups map[string]*group
	owned  map[int32]Partition // the __consumer_offsets partitions led here and loaded
	// loading holds the partitions being loaded (OnElection), by a token that a resignation
	// meanwhile withdraws: their groups answer COORDINATOR_LOAD_IN_PROGRESS.
	loading   map[int32]uint64
	loadToken uint64
	// loads are the last load OnElection started per partition, for WaitLoad.
	loads  map[int32]*loadRun
	nparts int32 // __consumer_offsets' partition count
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed bool
	expiry Timer
	txn    txnOffsets // offsets of open transactions (txn_offsets.go)
}

// New creates a coordinator that owns no partition yet (see OnElection).
func New(cfg Config) (*Coordinator, error) {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.MinSessionTimeout == 0 {
		cfg.MinSessionTimeout = 6 * time.Second
	}
	if cfg.MaxSessionTimeout == 0 {
		cfg.MaxSessionTimeout = 30 * time.Minute
	}
	if cfg.MaxMetadataBytes == 0 {
		cfg.MaxMetadataBytes = 4096
	}
	if cfg.RetentionCheckInterval == 0 {
		cfg.RetentionCheckInterval = 10 * time.Minute
	}
	if cfg.Clock == nil {
		cfg.Clock = realClock{}
	}
	c := &Coordinator{cfg: cfg, log: cfg.Log, clock: cfg.Clock, groups: map[string]*group{}, owned: map[int32]Partition{}, loading: map[int32]uint64{}, loads: map[int32]*loadRun{}}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.scheduleExpiry()
	return c, nil
}

// PartitionFor is the __consumer_offsets partition of a group, as Kafka computes it.
func PartitionFor(groupID string, partitions int32) int32 { return partitionFor(groupID, partitions) }

// Owns reports whether this coordinator serves the group (it leads its partition and has
// loaded it).
func (c *Coordinator) Owns(groupID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ownsLocked(groupID)
}

func (c *Coordinator) ownsLocked(groupID string) bool {
	if c.nparts == 0 {
		return false
	}
	_, ok := c.owned[partitionFor(groupID, c.nparts)]
	return ok
}

// serving is nil when this coordinator serves the group, else the error to answer:
// COORDINATOR_LOAD_IN_PROGRESS while its partition loads, NOT_COORDINATOR when it is not led
// here.
func (c *Coordinator) serving(groupID string) *wire.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ownsLocked(groupID) {
		return nil
	}
	if c.nparts > 0 {
		if _, ok := c.loading[partitionFor(groupID, c.nparts)]; ok {
			return wire.ErrCoordinatorLoadInProgress
		}
	}
	return wire.ErrNotCoordinator
}

// OnElection makes the coordinator serve the groups of partition p (of n): it loads them
// from the partition's log, then takes requests for them. It returns at once: the replay runs
// on a goroutine of its own (Kafka's GroupMetadataManager loads on its scheduler thread), so
// the caller (reconcile, holding its lock) never waits on a log's reads, and without the
// coordinator's lock; meanwhile the partition's groups answer COORDINATOR_LOAD_IN_PROGRESS
// and every other group is served as usual. A resignation or a newer election during the load
// discards it; a load that fails is logged and leaves the partition unserved
// (NOT_COORDINATOR) until its next election. WaitLoad waits for the outcome. The error is
// for the call itself and is always nil today (kept for callers that log it).
func (c *Coordinator) OnElection(p, n int32, part Partition) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	if _, ok := c.owned[p]; ok {
		c.owned[p] = part
		return nil
	}
	c.nparts = n
	c.loadToken++
	token := c.loadToken
	c.loading[p] = token
	run := &loadRun{done: make(chan struct{})}
	c.loads[p] = run
	c.wg.Add(1) // under c.mu while not closed: Close's Wait sees it
	go func() {
		defer c.wg.Done()
		run.err = c.loadPartition(p, n, part, token)
		if run.err != nil {
			c.log.Error("loading consumer groups", "partition", p, "err", run.err)
		}
		close(run.done)
	}()
	return nil
}

// loadRun is one load of a partition started by OnElection: done closes when it has ended,
// err is its outcome (set before done closes).
type loadRun struct {
	done chan struct{}
	err  error
}

// WaitLoad waits until the last load of partition p that OnElection started has ended (at
// once when there was none) and returns its error, or ctx's.
func (c *Coordinator) WaitLoad(ctx context.Context, p int32) error {
	c.mu.Lock()
	run := c.loads[p]
	c.mu.Unlock()
	if run == nil {
		return nil
	}
	select {
	case <-run.done:
		return run.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// loadPartition replays partition p without any lock and installs its groups unless a
// resignation, a newer election (token) or Close came meanwhile. Runs on OnElection's
// goroutine.
func (c *Coordinator) loadPartition(p, n int32, part Partition, token uint64) error {
	start := c.clock.Now()
	groups, pend, err := c.load(part, func(id string) bool { return partitionFor(id, n) == p })
	c.mu.Lock()
	if c.loading[p] != token || c.closed {
		c.mu.Unlock()
		return nil // resigned, re-elected or closed meanwhile
	}
	delete(c.loading, p)
	if err != nil {
		c.mu.Unlock()
		return fmt.Errorf("loading %s-%d: %w", Topic, p, err)
	}
	for id, g := range groups {
		c.groups[id] = g
	}
	c.installPending(p, n, pend) // txn.mu is a leaf under c.mu
	c.owned[p] = part
	c.mu.Unlock()
	for _, g := range groups {
		g.mu.Lock()
		for _, m := range g.members {
			c.resetSession(g, m)
		}
		g.mu.Unlock()
	}
	if len(groups) > 0 {
		c.log.Info("loaded consumer groups", "partition", p, "groups", len(groups), "took", c.clock.Now().Sub(start).Round(time.Millisecond))
	}
	return nil
}

// OnResignation stops serving the groups of partition p: they leave memory, their members'
// pending joins and syncs answer NOT_COORDINATOR.
func (c *Coordinator) OnResignation(p int32) {
	c.mu.Lock()
	delete(c.loading, p)
	if _, ok := c.owned[p]; !ok {
		c.mu.Unlock()
		return
	}
	delete(c.owned, p)
	c.dropPendingPartition(p, c.nparts)
	var gone []*group
	for id, g := range c.groups {
		if partitionFor(id, c.nparts) == p {
			gone = append(gone, g)
			delete(c.groups, id)
		}
	}
	c.mu.Unlock()
	for _, g := range gone {
		g.mu.Lock()
		g.stopTimers()
		for _, m := range g.members {
			m.stopTimer()
			if m.joinCb != nil {
				m.joinCb(JoinResult{Err: wire.ErrNotCoordinator.Code, Generation: -1})
				m.joinCb = nil
			}
			if m.syncCb != nil {
				m.syncCb(SyncResult{Err: wire.ErrNotCoordinator.Code})
				m.syncCb = nil
			}
		}
		c.step(g, Unloaded, c.clock.Now())
		g.mu.Unlock()
	}
	if len(gone) > 0 {
		c.log.Info("unloaded consumer groups", "partition", p, "groups", len(gone))
	}
}

// Close stops the timers; pending joins and syncs are answered COORDINATOR_NOT_AVAILABLE.
func (c *Coordinator) Close() {
	c.mu.Lock()
	c.closed = true
	if c.expiry != nil {
		c.expiry.Stop()
	}
	groups := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		groups = append(groups, g)
	}
	c.mu.Unlock()
	c.cancel()
	for _, g := range groups {
		g.mu.Lock()
		g.stopTimers()
		for _, m := range g.members {
			m.stopTimer()
			if m.joinCb != nil {
				m.joinCb(JoinResult{Err: wire.ErrCoordinatorNotAvailable.Code, Generation: -1})
				m.joinCb = nil
			}
			if m.syncCb != nil {
				m.syncCb(SyncResult{Err: wire.ErrCoordinatorNotAvailable.Code})
				m.syncCb = nil
			}
		}
		g.mu.Unlock()
	}
	c.wg.Wait()
}

func (g *group) stopTimers() {
	if g.joinTimer != nil {
		g.joinTimer.Stop()
	}
	if g.syncTimer != nil {
		g.syncTimer.Stop()
	}
	for _, t := range g.pending {
		t.Stop()
	}
	g.joinSeq++
	g.syncSeq++
}

func (m *member) stopTimer() {
	if m.timer != nil {
		m.timer.Stop()
	}
	m.timerSeq++
}

func newGroup(id string, now time.Time) *group {
	return &group{id: id, members: map[string]*member{}, pending: map[string]Timer{},
		static: map[string]string{}, offsets: map[tp]offsetEntry{}, stateTime: now, generation: 0}
}

// lookup returns the group, locked, creating it (Empty) when create is set. It returns nil
// when the group does not exist.
func (c *Coordinator) lookup(id string, create bool) *group {
	for {
		c.mu.Lock()
		g := c.groups[id]
		if g == nil {
			if !create || c.closed || !c.ownsLocked(id) {
				c.mu.Unlock()
				return nil
			}
			g = newGroup(id, c.clock.Now())
			c.groups[id] = g
		}
		c.mu.Unlock()
		g.mu.Lock()
		if g.state == Dead && create {
			g.mu.Unlock()
			continue // deleted meanwhile; a new one is created
		}
		return g
	}
}

func newMemberID(prefix string) string {
	var b [16]byte
	rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return fmt.Sprintf("%s-%s-%s-%s-%s-%s", prefix, h[:8], h[8:12], h[12:16], h[16:20], h[20:])
}

// --- JoinGroup ---

// JoinRequest is a JoinGroup request. Byte slices must not alias buffers the caller reuses.
type JoinRequest struct {
	GroupID, MemberID                string
	InstanceID                       *string
	ClientID, ClientHost             string
	SessionTimeout, RebalanceTimeout time.Duration
	ProtocolType                     string
	Protocols                        []Protocol
	// RequireKnownMemberID: JoinGroup v4+, where a new member first gets MEMBER_ID_REQUIRED.
	RequireKnownMemberID bool
}

// JoinResult is a JoinGroup response.
type JoinResult struct {
	Err                    int16
	Generation             int32
	ProtocolType, Protocol string
	Leader, MemberID       string
	Members                []MemberInfo // the leader's only
}

// Join handles a JoinGroup; done is called once, maybe later.
func (c *Coordinator) Join(r JoinRequest, done func(JoinResult)) {
	fail := func(code int16) { done(JoinResult{Err: code, Generation: -1, MemberID: r.MemberID}) }
	if r.GroupID == "" {
		fail(wire.ErrInvalidGroupId.Code)
		return
	}
	if e := c.serving(r.GroupID); e != nil {
		fail(e.Code)
		return
	}
	if r.SessionTimeout < c.cfg.MinSessionTimeout || r.SessionTimeout > c.cfg.MaxSessionTimeout {
		fail(wire.ErrInvalidSessionTimeout.Code)
		return
	}
	g := c.lookup(r.GroupID, r.MemberID == "")
	if g == nil {
		fail(wire.ErrUnknownMemberId.Code)
		return
	}
	defer g.mu.Unlock()
	if g.state == Dead {
		fail(wire.ErrCoordinatorNotAvailable.Code)
		return
	}
	if !g.supports(r.ProtocolType, r.Protocols) {
		fail(wire.ErrInconsistentGroupProtocol.Code)
		return
	}
	if r.MemberID == "" {
		c.joinUnknown(g, r, done)
		return
	}
	c.joinKnown(g, r, done)
}

// supports is Kafka's supportsProtocols: a group with members accepts a member of the same
// protocol type sharing at least one protocol all members support.
func (g *group) supports(protocolType string, protocols []Protocol) bool {
	if len(g.members) == 0 {
		return protocolType != "" && len(protocols) > 0
	}
	if protocolType != g.protocolType {
		return false
	}
	cands := g.candidates()
	for _, p := range protocols {
		if cands[p.Name] {
			return true
		}
	}
	return false
}

// candidates are the protocols every member supports.
func (g *group) candidates() map[string]bool {
	count := map[string]int{}
	for _, m := range g.members {
		for _, p := range m.protocols {
			count[p.Name]++
		}
	}
	out := map[string]bool{}
	for n, k := range count {
		if k == len(g.members) {
			out[n] = true
		}
	}
	return out
}

// selectProtocol: each member votes for its first protocol among the candidates; most votes wins.
func (g *group) selectProtocol() string {
	cands := g.candidates()
	votes := map[string]int{}
	var order []string
	for _, id := range g.order {
		m := g.members[id]
		for _, p := range m.protocols {
			if cands[p.Name] {
				if votes[p.Name] == 0 {
					order = append(order, p.Name)
				}
				votes[p.Name]++
				break
			}
		}
	}
	best := ""
	for _, n := range order {
		if best == "" || votes[n] > votes[best] {
			best = n
		}
	}
	return best
}

func copyProtocols(ps []Protocol) []Protocol {
	out := make([]Protocol, len(ps))
	for i, p := range ps {
		out[i] = Protocol{Name: strings.Clone(p.Name), Metadata: slices.Clone(p.Metadata)}
		if out[i].Metadata == nil {
			out[i].Metadata = []byte{}
		}
	}
	return out
}

func (c *Coordinator) joinUnknown(g *group, r JoinRequest, done func(JoinResult)) {
	if r.InstanceID != nil {
		id := newMemberID(*r.InstanceID)
		if old, ok := g.static[*r.InstanceID]; ok && g.members[old] != nil {
			c.replaceStatic(g, g.members[old], id, r, done)
			return
		}
		c.addMember(g, id, r, done)
		return
	}
	id := newMemberID(r.ClientID)
	if r.RequireKnownMemberID {
		// KIP-394: the member must come back with this id; until then it holds up the join.
		g.pending[id] = c.memberTimer(g, func() {
			delete(g.pending, id)
			if g.state == PreparingRebalance {
				c.maybeCompleteJoin(g)
			}
		}, r.SessionTimeout)
		done(JoinResult{Err: wire.ErrMemberIdRequired.Code, Generation: -1, MemberID: id})
		return
	}
	c.addMember(g, id, r, done)
}

// memberTimer runs fn under the group lock after d unless the group moved on.
func (c *Coordinator) memberTimer(g *group, fn func(), d time.Duration) Timer {
	return c.clock.AfterFunc(d, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.state != Dead {
			fn()
		}
	})
}

func (c *Coordinator) joinKnown(g *group, r JoinRequest, done func(JoinResult)) {
	if t, ok := g.pending[r.MemberID]; ok {
		t.Stop()
		delete(g.pending, r.MemberID)
		c.addMember(g, r.MemberID, r, done)
		return
	}
	m := g.members[r.MemberID]
	if r.InstanceID != nil {
		if cur, ok := g.static[*r.InstanceID]; ok && cur != r.MemberID {
			done(JoinResult{Err: wire.ErrFencedInstanceId.Code, Generation: -1, MemberID: r.MemberID})
			return
		}
	}
	if m == nil {
		done(JoinResult{Err: wire.ErrUnknownMemberId.Code, Generation: -1, MemberID: r.MemberID})
		return
	}
	switch g.state {
	case PreparingRebalance:
		c.updateMember(g, m, r, done)
		c.maybeCompleteJoin(g)
	case CompletingRebalance:
		if sameProtocols(m.protocols, r.Protocols) {
			// A retried join: answer with the generation it is already in.
			c.resetSession(g, m)
			done(g.joinResult(m, m.id == g.leader))
			return
		}
		c.updateMember(g, m, r, done)
		c.prepareRebalance(g)
	case Stable:
		if m.id == g.leader || !sameProtocols(m.protocols, r.Protocols) {
			c.updateMember(g, m, r, done)
			c.prepareRebalance(g)
			return
		}
		c.resetSession(g, m)
		done(g.joinResult(m, false))
	default:
		done(JoinResult{Err: wire.ErrUnknownMemberId.Code, Generation: -1, MemberID: r.MemberID})
	}
}

func sameProtocols(a, b []Protocol) bool {
	return slices.EqualFunc(a, b, func(x, y Protocol) bool { return x.Name == y.Name && string(x.Metadata) == string(y.Metadata) })
}

func (g *group) joinResult(m *member, leader bool) JoinResult {
	res := JoinResult{Generation: g.generation, ProtocolType: g.protocolType, Protocol: g.protocol, Leader: g.leader, MemberID: m.id}
	if leader {
		for _, id := range g.order {
			o := g.members[id]
			res.Members = append(res.Members, MemberInfo{MemberID: o.id, InstanceID: o.instanceID, Metadata: o.metadata(g.protocol)})
		}
	}
	return res
}

func (c *Coordinator) addMember(g *group, id string, r JoinRequest, done func(JoinResult)) {
	m := &member{id: id, instanceID: r.InstanceID, clientID: r.ClientID, clientHost: r.ClientHost,
		sessionTimeout: r.SessionTimeout, rebalanceTimeout: r.RebalanceTimeout, protocolType: r.ProtocolType,
		protocols: copyProtocols(r.Protocols), joinCb: done}
	if len(g.members) == 0 {
		g.protocolType = r.ProtocolType
	}
	if g.leader == "" {
		g.leader = id
	}
	g.members[id] = m
	g.order = append(g.order, id)
	if r.InstanceID != nil {
		g.static[*r.InstanceID] = id
	}
	g.newMemberAdded = true
	c.resetSession(g, m)
	if g.state == PreparingRebalance {
		c.maybeCompleteJoin(g)
	} else {
		c.prepareRebalance(g)
	}
}

func (c *Coordinator) updateMember(g *group, m *member, r JoinRequest, done func(JoinResult)) {
	m.protocols = copyProtocols(r.Protocols)
	m.sessionTimeout, m.rebalanceTimeout = r.SessionTimeout, r.RebalanceTimeout
	m.clientID, m.clientHost = r.ClientID, r.ClientHost
	if m.joinCb != nil {
		m.joinCb(JoinResult{Err: wire.ErrUnknownMemberId.Code, Generation: -1, MemberID: m.id})
	}
	m.joinCb = done
	c.resetSession(g, m)
}

// replaceStatic gives a static member's place to the new member id (KIP-345): the old id is
// fenced. As Kafka's updateStaticMemberAndRebalance: a Stable group whose selected protocol
// stays keeps its assignment without a rebalance, and the reply names the leader as it was, so
// a replaced leader does not compute an assignment nobody would receive.
func (c *Coordinator) replaceStatic(g *group, old *member, id string, r JoinRequest, done func(JoinResult)) {
	currentLeader := g.leader
	old.stopTimer()
	if old.joinCb != nil {
		old.joinCb(JoinResult{Err: wire.ErrFencedInstanceId.Code, Generation: -1, MemberID: old.id})
		old.joinCb = nil
	}
	if old.syncCb != nil {
		old.syncCb(SyncResult{Err: wire.ErrFencedInstanceId.Code})
		old.syncCb = nil
	}
	oldID := old.id
	delete(g.members, oldID)
	g.order[slices.Index(g.order, oldID)] = id
	old.id = id
	g.members[id] = old
	g.static[*r.InstanceID] = id
	if g.leader == oldID || g.members[g.leader] == nil {
		g.leader = id
	}
	if g.pendingSync[oldID] {
		delete(g.pendingSync, oldID)
		g.pendingSync[id] = true
	}
	old.protocols = copyProtocols(r.Protocols)
	old.sessionTimeout, old.rebalanceTimeout = r.SessionTimeout, r.RebalanceTimeout
	old.clientID, old.clientHost = r.ClientID, r.ClientHost
	c.resetSession(g, old)
	switch g.state {
	case Stable:
		if g.selectProtocol() == g.protocol {
			res := g.joinResult(old, false)
			res.Leader = currentLeader
			// Answered once the group record is committed, as Kafka answers a static
			// member's rejoin from the store's callback.
			c.storeGroup(g, func(err error) {
				if err != nil {
					c.log.Warn("storing group", "group", g.id, "err", err)
				}
				done(res)
			})
			return
		}
		old.joinCb = done
		c.prepareRebalance(g)
	case PreparingRebalance:
		old.joinCb = done
		c.maybeCompleteJoin(g)
	default:
		old.joinCb = done
		c.prepareRebalance(g)
	}
}

// resetSession (re)starts a member's session timer: when it fires the member is removed,
// unless it is waiting in a join or sync, which the rebalance timeout governs.
func (c *Coordinator) resetSession(g *group, m *member) {
	m.stopTimer()
	seq := m.timerSeq
	m.timer = c.clock.AfterFunc(m.sessionTimeout, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if m.timerSeq != seq || g.members[m.id] != m || g.state == Dead {
			return
		}
		if m.joinCb != nil || m.syncCb != nil {
			c.resetSession(g, m)
			return
		}
		c.log.Info("member session expired, removing it", "group", g.id, "member", m.id, "client_id", m.clientID, "generation", g.generation)
		c.removeMember(g, m)
	})
}

func (g *group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

func (c *Coordinator) prepareRebalance(g *group) {
	if g.state == CompletingRebalance {
		for _, m := range g.members {
			m.assignment = nil
			if m.syncCb != nil {
				m.syncCb(SyncResult{Err: wire.ErrRebalanceInProgress.Code})
				m.syncCb = nil
			}
		}
	}
	if g.syncTimer != nil {
		g.syncTimer.Stop()
	}
	g.syncSeq++
	g.pendingSync = nil
	if g.joinTimer != nil {
		g.joinTimer.Stop()
	}
	g.joinSeq++
	seq := g.joinSeq
	from := g.state
	now := c.clock.Now()
	out, ok := c.step(g, RebalanceNeeded, now)
	if !ok {
		return
	}
	g.initialDelay = out.InitialDelay
	if out.InitialDelay {
		delay := c.cfg.InitialRebalanceDelay
		g.delayRemaining = max(g.rebalanceTimeout()-delay, 0)
		g.newMemberAdded = false
		g.joinTimer = c.clock.AfterFunc(out.JoinDeadline.Sub(now), func() { c.initialDelayExpired(g, seq, delay) })
	} else {
		g.joinTimer = c.clock.AfterFunc(out.JoinDeadline.Sub(now), func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			if g.joinSeq == seq && g.state == PreparingRebalance {
				c.completeJoin(g)
			}
		})
	}
	if from != PreparingRebalance {
		g.rebalanceStart = now
		c.log.Info("group rebalancing", "group", g.id, "from_state", from.String(), "generation", g.generation, "members", len(g.members))
	}
	c.maybeCompleteJoin(g)
}

// initialDelayExpired is Kafka's InitialDelayedJoin: while new members keep arriving the delay
// extends, up to the rebalance timeout.
func (c *Coordinator) initialDelayExpired(g *group, seq uint64, delay time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.joinSeq != seq || g.state != PreparingRebalance {
		return
	}
	if d, left := NextInitialDelay(g.newMemberAdded, g.delayRemaining, delay); d > 0 {
		g.newMemberAdded = false
		g.delayRemaining = left
		g.joinTimer = c.clock.AfterFunc(d, func() { c.initialDelayExpired(g, seq, delay) })
		return
	}
	g.initialDelay = false
	c.completeJoin(g)
}

func (c *Coordinator) maybeCompleteJoin(g *group) {
	if g.state != PreparingRebalance || g.initialDelay || len(g.pending) > 0 {
		return
	}
	for _, m := range g.members {
		if m.joinCb == nil {
			return
		}
	}
	c.completeJoin(g)
}

func (c *Coordinator) completeJoin(g *group) {
	if g.joinTimer != nil {
		g.joinTimer.Stop()
	}
	g.joinSeq++
	g.initialDelay = false
	for _, id := range slices.Clone(g.order) {
		m := g.members[id]
		if m.joinCb == nil && m.instanceID == nil {
			c.dropMember(g, m)
		}
	}
	g.generation++
	if len(g.members) == 0 {
		c.log.Info("group empty after rebalance", "group", g.id, "generation", g.generation)
		g.protocol, g.leader = "", ""
		c.step(g, JoinCompletedEmpty, c.clock.Now())
		c.storeGroup(g, func(err error) {
			if err != nil {
				c.log.Warn("storing group", "group", g.id, "err", err)
			}
		})
		return
	}
	if l := g.members[g.leader]; l == nil || l.joinCb == nil {
		for _, id := range g.order {
			if g.members[id].joinCb != nil {
				g.leader = id
				break
			}
		}
	}
	g.protocol = g.selectProtocol()
	c.log.Info("group joined, waiting for the leader's assignment", "group", g.id, "generation", g.generation,
		"members", len(g.members), "protocol", g.protocol, "leader", g.leader)
	now := c.clock.Now()
	out, ok := c.step(g, JoinCompleted, now)
	if !ok {
		return
	}
	g.pendingSync = map[string]bool{}
	for _, id := range g.order {
		m := g.members[id]
		g.pendingSync[id] = true
		if m.joinCb != nil {
			cb := m.joinCb
			m.joinCb = nil
			cb(g.joinResult(m, id == g.leader))
			c.resetSession(g, m)
		}
	}
	// Members that never sync are removed after the rebalance timeout (Kafka's pending sync).
	seq := g.syncSeq + 1
	g.syncSeq = seq
	gen := g.generation
	g.syncTimer = c.clock.AfterFunc(out.SyncDeadline.Sub(now), func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.syncSeq != seq || g.generation != gen || (g.state != CompletingRebalance && g.state != Stable) {
			return
		}
		var late []*member
		for id := range g.pendingSync {
			if m := g.members[id]; m != nil {
				late = append(late, m)
			}
		}
		g.pendingSync = nil
		for _, m := range late {
			c.dropMember(g, m)
		}
		if len(late) > 0 {
			c.afterRemoval(g)
		}
	})
}

// dropMember removes a member without changing the group's state.
func (c *Coordinator) dropMember(g *group, m *member) {
	m.stopTimer()
	if m.joinCb != nil {
		m.joinCb(JoinResult{Err: wire.ErrUnknownMemberId.Code, Generation: -1, MemberID: m.id})
		m.joinCb = nil
	}
	if m.syncCb != nil {
		m.syncCb(SyncResult{Err: wire.ErrUnknownMemberId.Code})
		m.syncCb = nil
	}
	delete(g.members, m.id)
	g.order = slices.DeleteFunc(g.order, func(id string) bool { return id == m.id })
	if m.instanceID != nil && g.static[*m.instanceID] == m.id {
		delete(g.static, *m.instanceID)
	}
	delete(g.pendingSync, m.id)
	if g.leader == m.id {
		g.leader = ""
		for _, id := range g.order {
			if g.members[id].joinCb != nil {
				g.leader = id
				break
			}
		}
		if g.leader == "" && len(g.order) > 0 {
			g.leader = g.order[0]
		}
	}
}

// afterRemoval moves the group on after members left.
func (c *Coordinator) afterRemoval(g *group) {
	switch g.state {
	case Stable, CompletingRebalance:
		c.prepareRebalance(g)
	case PreparingRebalance:
		c.maybeCompleteJoin(g)
	}
}

func (c *Coordinator) removeMember(g *group, m *member) {
	c.dropMember(g, m)
	c.afterRemoval(g)
}

// --- SyncGroup ---

// SyncRequest is a SyncGroup request.
type SyncRequest struct {
	GroupID, MemberID      string
	InstanceID             *string
	Generation             int32
	ProtocolType, Protocol *string
	Assignments            map[string][]byte // the leader's; copied by the caller
}

// SyncResult is a SyncGroup response.
type SyncResult struct {
	Err                    int16
	ProtocolType, Protocol string
	Assignment             []byte
}

// Sync handles a SyncGroup; done is called once, maybe later.
func (c *Coordinator) Sync(r SyncRequest, done func(SyncResult)) {
	fail := func(e *wire.Error) { done(SyncResult{Err: e.Code}) }
	if r.GroupID == "" {
		fail(wire.ErrInvalidGroupId)
		return
	}
	if e := c.serving(r.GroupID); e != nil {
		fail(e)
		return
	}
	g := c.lookup(r.GroupID, false)
	if g == nil {
		fail(wire.ErrUnknownMemberId)
		return
	}
	defer g.mu.Unlock()
	if g.state == Dead {
		fail(wire.ErrCoordinatorNotAvailable)
		return
	}
	if e := g.validateMember(r.MemberID, r.InstanceID, r.Generation); e != nil {
		fail(e)
		return
	}
	if (r.ProtocolType != nil && *r.ProtocolType != g.protocolType) || (r.Protocol != nil && *r.Protocol != g.protocol) {
		fail(wire.ErrInconsistentGroupProtocol)
		return
	}
	m := g.members[r.MemberID]
	switch g.state {
	case Empty:
		fail(wire.ErrUnknownMemberId)
	case PreparingRebalance:
		fail(wire.ErrRebalanceInProgress)
	case CompletingRebalance:
		delete(g.pendingSync, m.id)
		if m.syncCb != nil {
			m.syncCb(SyncResult{Err: wire.ErrUnknownMemberId.Code})
		}
		m.syncCb = done
		c.resetSession(g, m)
		if m.id != g.leader {
			return
		}
		for _, o := range g.members {
			o.assignment = r.Assignments[o.id]
			if o.assignment == nil {
				o.assignment = []byte{}
			}
		}
		// The assignment is answered once the group record is committed; the callback
		// re-takes the lock and acts only if this rebalance is still the current one.
		gen := g.generation
		c.storeGroup(g, func(err error) {
			if g.generation != gen || g.state != CompletingRebalance {
				return // a newer rebalance took over and answers the members itself
			}
			if err != nil {
				c.log.Warn("storing group", "group", g.id, "err", err)
				for _, o := range g.members {
					o.assignment = nil
					if o.syncCb != nil {
						o.syncCb(SyncResult{Err: wire.ErrCoordinatorNotAvailable.Code})
						o.syncCb = nil
					}
				}
				c.prepareRebalance(g)
				return
			}
			now := c.clock.Now()
			c.log.Info("group rebalance completed", "group", g.id, "generation", g.generation, "members", len(g.members),
				"protocol", g.protocol, "took", now.Sub(g.rebalanceStart).Round(time.Millisecond))
			c.step(g, AssignmentStored, now)
			for _, o := range g.members {
				if o.syncCb != nil {
					cb := o.syncCb
					o.syncCb = nil
					cb(SyncResult{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: o.assignment})
				}
			}
		})
	case Stable:
		delete(g.pendingSync, m.id)
		c.resetSession(g, m)
		done(SyncResult{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: m.assignment})
	}
}

// validateMember checks a member id, static instance id and generation (generation < -1
// skips the generation check).
func (g *group) validateMember(memberID string, instanceID *string, generation int32) *wire.Error {
	if instanceID != nil {
		if cur, ok := g.static[*instanceID]; ok && cur != memberID {
			return wire.ErrFencedInstanceId
		}
	}
	if g.members[memberID] == nil {
		return wire.ErrUnknownMemberId
	}
	if generation != g.generation {
		return wire.ErrIllegalGeneration
	}
	return nil
}

// --- Heartbeat ---

// Heartbeat handles a Heartbeat and returns its error code.
func (c *Coordinator) Heartbeat(groupID, memberID string, instanceID *string, generation int32) int16 {
	if e := c.serving(groupID); e != nil {
		return e.Code
	}
	g := c.lookup(groupID, false)
	if g == nil {
		return wire.ErrUnknownMemberId.Code
	}
	defer g.mu.Unlock()
	switch g.state {
	case Dead:
		return wire.ErrCoordinatorNotAvailable.Code
	case Empty:
		return wire.ErrUnknownMemberId.Code
	}
	if e := g.validateMember(memberID, instanceID, generation); e != nil {
		return e.Code
	}
	m := g.members[memberID]
	c.resetSession(g, m)
	if g.state == PreparingRebalance {
		return wire.ErrRebalanceInProgress.Code
	}
	return 0
}

// --- LeaveGroup ---

// Leaving is one member of a LeaveGroup request.
type Leaving struct {
	MemberID   string
	InstanceID *string
}

// Leave removes members; it returns a top-level error code and one code per member.
func (c *Coordinator) Leave(groupID string, members []Leaving) (int16, []int16) {
	codes := make([]int16, len(members))
	if e := c.serving(groupID); e != nil {
		return e.Code, codes
	}
	g := c.lookup(groupID, false)
	if g == nil {
		for i := range codes {
			codes[i] = wire.ErrUnknownMemberId.Code
		}
		return 0, codes
	}
	defer g.mu.Unlock()
	if g.state == Dead {
		return wire.ErrCoordinatorNotAvailable.Code, codes
	}
	removed := false
	for i, l := range members {
		var m *member
		if l.InstanceID != nil {
			cur, ok := g.static[*l.InstanceID]
			switch {
			case !ok:
				codes[i] = wire.ErrUnknownMemberId.Code
				continue
			case l.MemberID != "" && l.MemberID != cur:
				codes[i] = wire.ErrFencedInstanceId.Code
				continue
			}
			m = g.members[cur]
		} else {
			if t, ok := g.pending[l.MemberID]; ok {
				t.Stop()
				delete(g.pending, l.MemberID)
				removed = true
				continue
			}
			m = g.members[l.MemberID]
		}
		if m == nil {
			codes[i] = wire.ErrUnknownMemberId.Code
			continue
		}
		c.log.Info("member left", "group", g.id, "member", m.id, "generation", g.generation)
		c.dropMember(g, m)
		removed = true
	}
	if removed {
		c.afterRemoval(g)
	}
	return 0, codes
}

// --- Offsets ---

// Commit is one partition of an OffsetCommit.
type Commit struct {
	Topic       string
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    *string
	Err         int16 // set by the caller for partitions it refuses (unknown topic)
}

// CommitRequest is an OffsetCommit.
type CommitRequest struct {
	GroupID, MemberID string
	InstanceID        *string
	Generation        int32
	Retention         time.Duration // < 0: the broker's
	Commits           []Commit
}

// commitAnswers are a commit request's error codes, one per commit, and all, which answers
// every commit with code except those that carry an error of their own (OffsetCommit and
// TxnOffsetCommit alike).
func commitAnswers(commits []Commit) (codes []int16, all func(code int16) []int16) {
	codes = make([]int16, len(commits))
	return codes, func(code int16) []int16 {
		for i := range codes {
			if commits[i].Err != 0 {
				codes[i] = commits[i].Err
			} else {
				codes[i] = code
			}
		}
		return codes
	}
}

// admitCommit answers a commit whose group id is empty (INVALID_GROUP_ID) or whose group is
// not served here now (serving's code) and reports false; else it reports true.
func (c *Coordinator) admitCommit(groupID string, all func(int16) []int16, done func([]int16)) bool {
	if groupID == "" {
		done(all(wire.ErrInvalidGroupId.Code))
		return false
	}
	if e := c.serving(groupID); e != nil {
		done(all(e.Code))
		return false
	}
	return true
}

// Commit validates and stores offsets; done gets one error code per commit once the records
// are durable.
func (c *Coordinator) Commit(r CommitRequest, done func([]int16)) {
	codes, all := commitAnswers(r.Commits)
	if !c.admitCommit(r.GroupID, all, done) {
		return
	}
	g := c.lookup(r.GroupID, r.Generation < 0)
	if g == nil {
		done(all(wire.ErrIllegalGeneration.Code))
		return
	}
	locked := true
	defer func() {
		if locked {
			g.mu.Unlock()
		}
	}()
	switch {
	case g.state == Dead:
		done(all(wire.ErrCoordinatorNotAvailable.Code))
		return
	case r.Generation < 0 && g.state == Empty:
		// A standalone consumer: no membership to check.
	case g.state == CompletingRebalance:
		done(all(wire.ErrRebalanceInProgress.Code))
		return
	default:
		if g.state == Empty {
			done(all(wire.ErrUnknownMemberId.Code))
			return
		}
		if e := g.validateMember(r.MemberID, r.InstanceID, r.Generation); e != nil {
			done(all(e.Code))
			return
		}
		c.resetSession(g, g.members[r.MemberID])
	}
	now := c.clock.Now().UnixMilli()
	var kvs []kv
	var idx []int
	var entries []offsetEntry
	for i, cm := range r.Commits {
		if cm.Err != 0 {
			codes[i] = cm.Err
			continue
		}
		md := ""
		if cm.Metadata != nil {
			md = *cm.Metadata
		}
		if len(md) > c.cfg.MaxMetadataBytes {
			codes[i] = wire.ErrOffsetMetadataTooLarge.Code
			continue
		}
		o := offsetEntry{offset: cm.Offset, leaderEpoch: cm.LeaderEpoch, metadata: md, commitTime: now, expireTime: -1}
		if r.Retention >= 0 {
			o.expireTime = now + r.Retention.Milliseconds()
		}
		kvs = append(kvs, kv{key: offsetKey(g.id, cm.Topic, cm.Partition), value: offsetValue(o)})
		idx = append(idx, i)
		entries = append(entries, o)
	}
	if len(kvs) == 0 {
		done(codes)
		return
	}
	w, err := c.append(g.id, kvs)
	if err != nil {
		c.log.Warn("writing offsets", "group", g.id, "err", err)
		for _, i := range idx {
			codes[i] = wire.ErrCoordinatorNotAvailable.Code
		}
		done(codes)
		return
	}
	g.mu.Unlock()
	locked = false
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		err := w.wait(c.ctx)
		g.mu.Lock()
		defer g.mu.Unlock()
		for k, i := range idx {
			if err != nil {
				codes[i] = wire.ErrCoordinatorNotAvailable.Code
				continue
			}
			cm := r.Commits[i]
			e := entries[k]
			e.seq = w.base + int64(k)
			key := tp{cm.Topic, cm.Partition}
			if cur, ok := g.offsets[key]; !ok || cur.seq < e.seq {
				g.offsets[key] = e
			}
		}
		done(codes)
	}()
}

// FetchedOffset is one partition of an OffsetFetch answer; Offset -1 when none is committed.
type FetchedOffset struct {
	Topic       string
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    string
}

// TopicPartitions asks for these partitions of a topic.
type TopicPartitions struct {
	Topic      string
	Partitions []int32
}

// FetchOffsets returns committed offsets: of the given partitions, or every committed one when
// topics is nil; or NOT_COORDINATOR's code when the group is not coordinated here.
func (c *Coordinator) FetchOffsets(groupID string, topics []TopicPartitions, all bool) ([]FetchedOffset, int16) {
	if e := c.serving(groupID); e != nil {
		return nil, e.Code
	}
	var out []FetchedOffset
	g := c.lookup(groupID, false)
	var offsets map[tp]offsetEntry
	if g != nil {
		offsets = g.offsets
		defer g.mu.Unlock()
	}
	if all {
		for k, o := range offsets {
			out = append(out, FetchedOffset{Topic: k.topic, Partition: k.partition, Offset: o.offset, LeaderEpoch: o.leaderEpoch, Metadata: o.metadata})
		}
		sort.Slice(out, func(i, j int) bool {
			if out[i].Topic != out[j].Topic {
				return out[i].Topic < out[j].Topic
			}
			return out[i].Partition < out[j].Partition
		})
		return out, 0
	}
	for _, t := range topics {
		for _, p := range t.Partitions {
			f := FetchedOffset{Topic: t.Topic, Partition: p, Offset: -1, LeaderEpoch: -1}
			if o, ok := offsets[tp{t.Topic, p}]; ok {
				f.Offset, f.LeaderEpoch, f.Metadata = o.offset, o.leaderEpoch, o.metadata
			}
			out = append(out, f)
		}
	}
	return out, 0
}

// --- Describe, List, Delete ---

// Description is a DescribeGroups entry; Err is NOT_COORDINATOR's code for a group not
// coordinated here.
type Description struct {
	GroupID, State, ProtocolType, Protocol string
	Members                                []MemberInfo
	Err                                    int16
}

// Describe describes a group; an unknown group is Dead with no members, as Kafka answers.
func (c *Coordinator) Describe(groupID string) Description {
	d := Description{GroupID: groupID, State: Dead.String()}
	if e := c.serving(groupID); groupID != "" && e != nil {
		d.Err = e.Code
		return d
	}
	g := c.lookup(groupID, false)
	if g == nil {
		return d
	}
	defer g.mu.Unlock()
	d.State, d.ProtocolType = g.state.String(), g.protocolType
	if g.state == Stable {
		d.Protocol = g.protocol
	}
	for _, id := range g.order {
		m := g.members[id]
		mi := MemberInfo{MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost, Metadata: []byte{}, Assignment: []byte{}}
		if g.state == Stable {
			mi.Metadata, mi.Assignment = m.metadata(g.protocol), m.assignment
		}
		d.Members = append(d.Members, mi)
	}
	return d
}

// Listed is a ListGroups entry.
type Listed struct{ GroupID, ProtocolType, State string }

// List lists the groups, optionally only those in the given states (case-insensitive).
func (c *Coordinator) List(states []string) []Listed {
	c.mu.Lock()
	groups := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		groups = append(groups, g)
	}
	c.mu.Unlock()
	var out []Listed
	for _, g := range groups {
		g.mu.Lock()
		l := Listed{GroupID: g.id, ProtocolType: g.protocolType, State: g.state.String()}
		dead := g.state == Dead
		g.mu.Unlock()
		if dead {
			continue
		}
		if len(states) > 0 && !slices.ContainsFunc(states, func(s string) bool { return strings.EqualFold(s, l.State) }) {
			continue
		}
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GroupID < out[j].GroupID })
	return out
}

// Delete deletes an empty group and its offsets; it returns the error code.
func (c *Coordinator) Delete(ctx context.Context, groupID string) int16 {
	if groupID == "" {
		return wire.ErrInvalidGroupId.Code
	}
	if e := c.serving(groupID); e != nil {
		return e.Code
	}
	g := c.lookup(groupID, false)
	if g == nil {
		return wire.ErrGroupIdNotFound.Code
	}
	switch g.state {
	case Dead:
		g.mu.Unlock()
		return wire.ErrGroupIdNotFound.Code
	case Empty:
	default:
		g.mu.Unlock()
		return wire.ErrNonEmptyGroup.Code
	}
	kvs := []kv{{key: groupKey(g.id)}}
	for k := range g.offsets {
		kvs = append(kvs, kv{key: offsetKey(g.id, k.topic, k.partition)})
	}
	w, err := c.append(g.id, kvs)
	if err != nil {
		g.mu.Unlock()
		return wire.ErrCoordinatorNotAvailable.Code
	}
	g.stopTimers()
	c.step(g, Deleted, c.clock.Now())
	g.offsets = map[tp]offsetEntry{}
	g.mu.Unlock()
	c.mu.Lock()
	if c.groups[groupID] == g {
		delete(c.groups, groupID)
	}
	c.mu.Unlock()
	if err := w.wait(ctx); err != nil {
		return wire.ErrCoordinatorNotAvailable.Code
	}
	return 0
}

// --- persistence ---

type kv struct{ key, value []byte }

type written struct {
	part Partition
	base int64
	end  int64
}

func (w written) wait(ctx context.Context) error {
	if w.part == nil {
		return nil
	}
	return w.part.Wait(ctx, w.end)
}

// errNotOwned: the group's partition is not led here (any more).
var errNotOwned = errors.New("this broker does not coordinate the group")

// append writes records to the group's partition of __consumer_offsets. Callers hold the
// group lock, so a group's records keep their order.
func (c *Coordinator) append(groupID string, kvs []kv) (written, error) {
	return c.appendWith(groupID, kvs, nil)
}

// appendWith is append with the batch's producer fields set by setup (nil: none).
func (c *Coordinator) appendWith(groupID string, kvs []kv, setup func(*batch.Builder)) (written, error) {
	c.mu.Lock()
	var part Partition
	if c.nparts > 0 {
		part = c.owned[partitionFor(groupID, c.nparts)]
	}
	c.mu.Unlock()
	if part == nil {
		return written{}, fmt.Errorf("%w: %s", errNotOwned, groupID)
	}
	b := batch.NewBuilder()
	if setup != nil {
		setup(b)
	}
	now := c.clock.Now().UnixMilli()
	for _, r := range kvs {
		b.Append(now, r.key, r.value, nil)
	}
	recs, err := b.Finish()
	if err != nil {
		return written{}, err
	}
	res, err := part.Append(recs)
	if err != nil {
		return written{}, err
	}
	return written{part: part, base: res.BaseOffset, end: res.LastOffset + 1}, nil
}

// storeGroup appends the group's metadata record; then, once the record is committed
// (durable, and on every ISR member), it re-takes the group's lock and calls then with nil or
// the error. It is called with the group's lock held and never waits under it: a heartbeat
// is never behind a disk or a follower. then must check that the group is still in the state
// it stored (its generation) before acting. An append that fails calls then at once, with the
// lock still held.
func (c *Coordinator) storeGroup(g *group, then func(error)) {
	s := groupSnapshot{protocolType: g.protocolType, generation: g.generation, stateTime: g.stateTime.UnixMilli()}
	if g.protocol != "" {
		p := g.protocol
		s.protocol = &p
	}
	if g.leader != "" {
		l := g.leader
		s.leader = &l
	}
	for _, id := range g.order {
		m := g.members[id]
		s.members = append(s.members, memberSnapshot{id: m.id, instanceID: m.instanceID, clientID: m.clientID, clientHost: m.clientHost,
			rebalanceTimeout: int32(m.rebalanceTimeout.Milliseconds()), sessionTimeout: int32(m.sessionTimeout.Milliseconds()),
			subscription: m.metadata(g.protocol), assignment: m.assignment})
	}
	w, err := c.append(g.id, []kv{{key: groupKey(g.id), value: groupValue(s)}})
	if err != nil {
		then(err)
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
		err := w.wait(ctx)
		cancel()
		g.mu.Lock()
		defer g.mu.Unlock()
		then(err)
	}()
}

// load replays one partition's log into new groups, without any lock: only the groups mine
// picks are read, and none of them is served until the load is installed. It returns the
// groups that exist at the log's end, Stable when they have members (their session timers
// are started by the caller).
func (c *Coordinator) load(l Partition, mine func(string) bool) (map[string]*group, map[int64][]pendingOffset, error) {
	groups := map[string]*group{}
	pend := map[int64][]pendingOffset{} // transactional offsets without a marker yet (txn_offsets.go)
	err := l.EachBatchRecord(func(h batch.Header, r batch.Record) {
		if h.Attributes.Transactional() {
			c.replayTxn(groups, pend, h, r, mine)
			return
		}
		c.replay(groups, r, mine)
	})
	if err != nil {
		return nil, nil, err
	}
	now := c.clock.Now()
	for _, g := range groups {
		if len(g.members) > 0 {
			g.state = Stable
		}
		g.stateTime = now
	}
	return groups, pend, nil
}

// replay applies one __consumer_offsets record of a group mine picks to groups; it returns
// the group's id, or "" when the record was skipped.
func (c *Coordinator) replay(groups map[string]*group, r batch.Record, mine func(string) bool) string {
	k, err := parseKey(r.Key)
	if err != nil {
		c.log.Warn("skipping a __consumer_offsets record", "offset", r.Offset, "err", err)
		return ""
	}
	if !mine(k.group) {
		return ""
	}
	g := groups[k.group]
	if k.version <= 1 {
		if r.Value == nil {
			if g != nil {
				delete(g.offsets, tp{k.topic, k.partition})
			}
			return k.group
		}
		o, err := parseOffsetValue(r.Value)
		if err != nil {
			c.log.Warn("skipping an offset record", "offset", r.Offset, "err", err)
			return k.group
		}
		if g == nil {
			g = newGroup(k.group, c.clock.Now())
			groups[k.group] = g
		}
		o.seq = r.Offset
		g.offsets[tp{k.topic, k.partition}] = o
		return k.group
	}
	if r.Value == nil {
		delete(groups, k.group)
		return k.group
	}
	s, err := parseGroupValue(r.Value)
	if err != nil {
		c.log.Warn("skipping a group record", "offset", r.Offset, "err", err)
		return k.group
	}
	if g == nil {
		g = newGroup(k.group, c.clock.Now())
		groups[k.group] = g
	}
	g.protocolType, g.generation = s.protocolType, s.generation
	g.protocol, g.leader = "", ""
	if s.protocol != nil {
		g.protocol = *s.protocol
	}
	if s.leader != nil {
		g.leader = *s.leader
	}
	g.members, g.order, g.static = map[string]*member{}, nil, map[string]string{}
	for _, ms := range s.members {
		m := &member{id: ms.id, instanceID: ms.instanceID, clientID: ms.clientID, clientHost: ms.clientHost,
			sessionTimeout: time.Duration(ms.sessionTimeout) * time.Millisecond, rebalanceTimeout: time.Duration(ms.rebalanceTimeout) * time.Millisecond,
			protocolType: s.protocolType, protocols: []Protocol{{Name: g.protocol, Metadata: ms.subscription}}, assignment: ms.assignment}
		g.members[m.id] = m
		g.order = append(g.order, m.id)
		if m.instanceID != nil {
			g.static[*m.instanceID] = m.id
		}
	}
	g.state = Empty
	return k.group
}

// scheduleExpiry runs the offset retention check periodically.
func (c *Coordinator) scheduleExpiry() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.cfg.OffsetsRetention <= 0 {
		return
	}
	c.expiry = c.clock.AfterFunc(c.cfg.RetentionCheckInterval, func() {
		c.ExpireOffsets(c.clock.Now())
		c.scheduleExpiry()
	})
}

// ExpireOffsets removes offsets past retention as Kafka 2.1+ does: a consumer group's offsets
// expire offsets.retention.minutes after the group became Empty; a standalone committer's
// after their commit; an explicit retention time (OffsetCommit v2-4) overrides. A group left
// with no offsets and no members is deleted.
func (c *Coordinator) ExpireOffsets(now time.Time) {
	c.mu.Lock()
	groups := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		groups = append(groups, g)
	}
	c.mu.Unlock()
	nowMs := now.UnixMilli()
	ret := c.cfg.OffsetsRetention.Milliseconds()
	for _, g := range groups {
		g.mu.Lock()
		if g.state == Dead {
			g.mu.Unlock()
			continue
		}
		var expired []tp
		for k, o := range g.offsets {
			var exp bool
			switch {
			case o.expireTime >= 0:
				exp = nowMs >= o.expireTime
			case g.protocolType == "":
				exp = nowMs-o.commitTime >= ret
			case g.state == Empty:
				exp = nowMs-g.stateTime.UnixMilli() >= ret
			}
			if exp {
				expired = append(expired, k)
			}
		}
		var kvs []kv
		for _, k := range expired {
			kvs = append(kvs, kv{key: offsetKey(g.id, k.topic, k.partition)})
		}
		removeGroup := g.state == Empty && len(g.offsets) == len(expired) && len(g.members) == 0 && len(g.pending) == 0
		if removeGroup {
			kvs = append(kvs, kv{key: groupKey(g.id)})
		}
		if len(kvs) > 0 {
			if _, err := c.append(g.id, kvs); err != nil {
				c.log.Warn("expiring offsets", "group", g.id, "err", err)
				g.mu.Unlock()
				continue
			}
			for _, k := range expired {
				delete(g.offsets, k)
			}
		}
		if removeGroup {
			g.stopTimers()
			c.step(g, Deleted, now)
			c.mu.Lock()
			if c.groups[g.id] == g {
				delete(c.groups, g.id)
			}
			c.mu.Unlock()
		}
		g.mu.Unlock()
	}
}

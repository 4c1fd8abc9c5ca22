// Package replication owns each local partition replica: its log, its role (leader or
// follower), leader epoch, ISR and high watermark; the leader's view of its followers; and the
// followers' fetchers. A single node is the replication-factor-1 case of the same code: a
// leader whose ISR is itself.
//
// # Ownership and concurrency
//
// A Replica's role, epoch, ISR, state version and follower records are guarded by its mu;
// every exported method is safe for concurrent use. mu is held for arithmetic and for two
// local disk operations, on purpose: AppendAsLeader appends to the log under mu (one write(2),
// no fsync; a segment roll also creates files), so that no append lands after the role or
// epoch changed; and Apply, on becoming leader, records the new leader epoch in the log's
// leader-epoch checkpoint under mu (a small file written and fsynced, once per election), so
// the replica never leads without it. mu is never held across network I/O, a wait for
// durability (fsync rounds happen in storage's syncer, waited on without mu) or a wait for
// replication: the ISR write to the metadata store runs on its own goroutine with no lock
// held, one at a time per replica (isrWriting), and its result is applied only if the replica
// is still leader at the same epoch. The high watermark is an atomic read on the fetch path.
// The change hook (SetOnChange: the partition manager's wake-up of parked fetches) hears every
// high watermark advance and state change; it runs with mu held and takes only leaf locks.
//
// The log is the storage package's, shared: appends come from the produce path (leader) or
// the fetcher (follower), never both, because a role change happens under mu and each path
// checks the role first (AppendAsLeader under mu; the fetcher drops a partition before it
// becomes leader). Truncate (a follower diverged from its new leader) is the one operation
// that shortens the log; it runs only in the follower's fetcher.
//
// # Invariants
//
//   - The high watermark never decreases while a replica leads, and never exceeds the position
//     of any ISR member: an acknowledged acks=all write is on every ISR member's disk.
//   - While the ISR is smaller than min.insync.replicas, the high watermark does not move and
//     acks=all fails (NOT_ENOUGH_REPLICAS before the append, _AFTER_APPEND after). As in Kafka
//     (Partition.effectiveMinIsr), the minimum is capped at the number of replicas: a topic
//     with min.insync.replicas above its replication factor takes acks=all with a full ISR.
//   - A follower's fetch counts only when it carries the leader's epoch and does not diverge
//     from the leader's log; a follower truncates by leader epoch (never to the high watermark).
package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/broker/internal/metrics"
	"github.com/spoolmq/spool/broker/internal/storage"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// Role is a replica's role.
type Role int

const (
	// RoleFollower replicas fetch from the leader.
	RoleFollower Role = iota
	// RoleLeader replicas take produce requests and serve consumers.
	RoleLeader
)

// ISRWriter records a leader's ISR change in the metadata store, conditional on the state
// version the leader acts on; it returns the new version (cluster.Metadata.AlterISR).
type ISRWriter func(ctx context.Context, topic string, partition int32, leaderEpoch int32, isr []int32, version int32) (int32, error)

// Settings are the broker-wide replication settings.
type Settings struct {
	Self int32
	// LagMax is replica.lag.time.max.ms: a follower that has not caught up for this long
	// leaves the ISR.
	LagMax time.Duration
	// DurableOnly: positions count only fsynced data (spool.fsync=always), so an ISR write is
	// on disk everywhere before it is acknowledged.
	DurableOnly bool
	WriteISR    ISRWriter
	Log         *slog.Logger

	isrLog isrLog // the info log's summary of ISR changes (isrlog.go)
}

// State is a partition's state from the metadata store.
type State struct {
	Leader      int32
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32
	Version     int32
	MinISR      int
}

// Replica is one local replica of a partition.
type Replica struct {
	Topic string
	Index int32
	Log   *storage.Log
	set   *Settings

	hw atomic.Int64
	// throttled marks a replica whose fetching counts against the replication throttle
	// (follower.replication.throttled.replicas lists it).
	throttled atomic.Bool
	// reachedHW is set once, as a follower, the log reached the leader's high watermark
	// (readiness: caught up since the broker started).
	reachedHW atomic.Bool

	mu         sync.Mutex
	role       Role
	state      State
	epochStart int64 // the log end when this leadership began
	followers  map[int32]*Follower
	prevEnd    map[int32]int64     // leader end at each follower's previous fetch
	prevFetch  map[int32]time.Time // time of each follower's previous fetch
	isrWriting bool
	changed    chan struct{} // closed on a high watermark, ISR or role change
	// onChange, set once before use (SetOnChange), is told of every high watermark move
	// (ChangeHighWatermark, with the new high watermark) and role, epoch, ISR or min.insync.replicas change (ChangeState).
	// It runs with mu held and must take no lock but its own leaf locks.
	onChange func(Change, int64)
}

// Change is what moved in a replica, as its change hook hears it.
type Change int8

const (
	// ChangeHighWatermark: the high watermark advanced (what consumers may read grew).
	ChangeHighWatermark Change = iota
	// ChangeState: the role, leader epoch, ISR or min.insync.replicas changed.
	ChangeState
)

// SetOnChange installs the replica's change hook (the partition manager's wake-up of parked
// fetches). Call it once, before the replica is shared; fn runs with the replica's lock held
// and must only take leaf locks of its own.
func (r *Replica) SetOnChange(fn func(c Change, hw int64)) { r.onChange = fn }

// NewReplica wraps a log opened for a partition; it starts as a follower of nobody until
// Apply.
func NewReplica(topic string, index int32, log *storage.Log, set *Settings) *Replica {
	r := &Replica{Topic: topic, Index: index, Log: log, set: set, changed: make(chan struct{}), state: State{Leader: -1, LeaderEpoch: -1}}
	return r
}

// notifyLocked wakes the waiters of a change; r.mu is held.
func (r *Replica) notifyLocked() {
	r.wakeLocked()
	if r.onChange != nil {
		r.onChange(ChangeState, r.hw.Load())
	}
}

// wakeLocked wakes the waiters of WaitReplicated; r.mu is held.
func (r *Replica) wakeLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// Apply takes the partition's state from the metadata store. It returns the role the replica
// now has and whether the role or the leader epoch changed (the caller then starts or stops
// fetching).
func (r *Replica) Apply(st State) (Role, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	role := RoleFollower
	if st.Leader == r.set.Self {
		role = RoleLeader
	}
	changed := role != r.role || st.LeaderEpoch != r.state.LeaderEpoch || st.Leader != r.state.Leader
	if st.LeaderEpoch < r.state.LeaderEpoch {
		return r.role, false, nil // an older state arriving late
	}
	if !changed && r.sameStateLocked(st) {
		// Nothing to take (the reconciler hands every replica its state on each metadata
		// change): no wake-up of the partition's parked fetches either.
		return r.role, false, nil
	}
	if changed && role == RoleLeader {
		// Before any state is taken: a replica that cannot record its leader epoch stays as it
		// was (never a leader without its follower records), and the next Apply retries.
		if err := r.Log.AssignLeaderEpoch(st.LeaderEpoch); err != nil {
			return r.role, false, fmt.Errorf("becoming leader of %s-%d: %w", r.Topic, r.Index, err)
		}
	}
	r.state = st
	r.state.Replicas = slices.Clone(st.Replicas)
	r.state.ISR = slices.Clone(st.ISR)
	if r.state.MinISR < 1 {
		r.state.MinISR = 1
	}
	if changed {
		r.role = role
		if role == RoleLeader {
			r.epochStart = r.Log.LogEndOffset()
			r.followers = map[int32]*Follower{}
			r.prevEnd = map[int32]int64{}
			r.prevFetch = map[int32]time.Time{}
			now := time.Now()
			for _, id := range st.Replicas {
				if id != r.set.Self {
					// ISR members get a full lag period to show up under the new leader.
					r.followers[id] = &Follower{ID: id, CaughtUp: now}
				}
			}
		} else {
			r.followers = nil
		}
	} else if role == RoleLeader {
		r.syncFollowersLocked()
	}
	r.advanceLocked()
	r.notifyLocked()
	return role, changed, nil
}

// Holds reports whether the replica holds st already, so that Apply(st) would change nothing
// (a reconcile pass skips it without building its work).
func (r *Replica) Holds(st State) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return st.Leader == r.state.Leader && st.LeaderEpoch == r.state.LeaderEpoch && r.sameStateLocked(st)
}

// sameStateLocked reports whether st is the state the replica holds (leader and epoch
// compared by the caller). r.mu is held.
func (r *Replica) sameStateLocked(st State) bool {
	return st.Version == r.state.Version && max(st.MinISR, 1) == r.state.MinISR &&
		slices.Equal(st.ISR, r.state.ISR) && slices.Equal(st.Replicas, r.state.Replicas)
}

// SetThrottled marks the replica throttled or not (throttle.go).
func (r *Replica) SetThrottled(on bool) { r.throttled.Store(on) }

// Throttled reports whether the replica's fetching counts against the replication throttle.
func (r *Replica) Throttled() bool { return r.throttled.Load() }

// syncFollowersLocked makes the followers tracked match the replica list when it changes
// under the same leader epoch (a reassignment adds and removes replicas): an added replica is
// tracked from its first fetch, not yet caught up; a removed one is forgotten. r.mu is held.
func (r *Replica) syncFollowersLocked() {
	for _, id := range r.state.Replicas {
		if _, ok := r.followers[id]; !ok && id != r.set.Self {
			r.followers[id] = &Follower{ID: id}
		}
	}
	for id := range r.followers {
		if !slices.Contains(r.state.Replicas, id) {
			delete(r.followers, id)
			delete(r.prevEnd, id)
			delete(r.prevFetch, id)
		}
	}
}

// SetMinISR updates min.insync.replicas (a topic config change).
func (r *Replica) SetMinISR(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.state.MinISR = max(n, 1)
	r.advanceLocked()
	r.notifyLocked()
}

// Role returns the current role and leader epoch.
func (r *Replica) Role() (Role, int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.role, r.state.LeaderEpoch
}

// Leader returns the leader this replica follows (or itself) and the epoch.
func (r *Replica) Leader() (int32, int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state.Leader, r.state.LeaderEpoch
}

// HighWatermark is the offset below which consumers may read.
func (r *Replica) HighWatermark() int64 {
	if hw := r.hw.Load(); r.isSoleReplica() {
		// A leader alone in its ISR follows its own log without waiting for a pass of
		// advanceLocked after each fsync.
		return max(hw, r.selfPosition())
	}
	return r.hw.Load()
}

// OffsetsAvailable reports whether a client may be told where the log ends (see
// OffsetsAvailable the rule); true for a replica that does not lead, whose caller answers
// NOT_LEADER_OR_FOLLOWER anyway.
func (r *Replica) OffsetsAvailable() bool {
	hw := r.HighWatermark()
	r.mu.Lock()
	leader, start := r.role == RoleLeader, r.epochStart
	r.mu.Unlock()
	return !leader || OffsetsAvailable(hw, start)
}

func (r *Replica) isSoleReplica() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.role == RoleLeader && len(r.state.ISR) == 1 && r.state.ISR[0] == r.set.Self && r.minISRLocked() <= 1
}

// minISRLocked is the effective min.insync.replicas: the topic's, capped at the partition's
// replica count (Kafka's effectiveMinIsr). r.mu is held.
func (r *Replica) minISRLocked() int {
	return max(min(r.state.MinISR, len(r.state.Replicas)), 1)
}

// selfPosition is the leader's own position: its durable end, or its log end when
// durability is not per write.
func (r *Replica) selfPosition() int64 {
	if r.set.DurableOnly {
		return r.Log.DurableEndOffset()
	}
	return r.Log.LogEndOffset()
}

// advanceLocked recomputes the high watermark; r.mu is held.
func (r *Replica) advanceLocked() {
	cur := r.hw.Load()
	if r.role != RoleLeader {
		return
	}
	positions := []Position{{ID: r.set.Self, Offset: r.selfPosition(), Known: true}}
	for _, f := range r.followers {
		positions = append(positions, Position{ID: f.ID, Offset: f.Offset, Known: f.Known})
	}
	hw := HighWatermark(cur, r.state.ISR, positions, r.minISRLocked())
	if hw != cur {
		r.hw.Store(hw)
		if r.onChange != nil {
			r.onChange(ChangeHighWatermark, hw)
		}
	}
}

// Advance recomputes the high watermark after the leader's own position moved (its append
// became durable), waking the waiters of WaitReplicated if it advanced.
func (r *Replica) Advance() {
	r.mu.Lock()
	defer r.mu.Unlock()
	before := r.hw.Load()
	r.advanceLocked()
	if r.hw.Load() != before {
		r.wakeLocked()
	}
}

// Errors of the leader's produce path.
var (
	ErrNotLeader                    = errors.New("not the leader")
	ErrNotEnoughReplicas            = errors.New("ISR smaller than min.insync.replicas")
	ErrNotEnoughReplicasAfterAppend = errors.New("ISR fell below min.insync.replicas after the append")
)

// AppendAsLeader appends a produce batch if this replica leads; with acksAll it first checks
// the ISR against min.insync.replicas.
// It returns the leader epoch the append was made at.
func (r *Replica) AppendAsLeader(records []byte, acksAll bool, now time.Time) (storage.AppendResult, int32, error) {
	return r.appendAsLeader(records, acksAll, now, false)
}

// AppendMarkersAsLeader is AppendAsLeader of transaction markers (control batches), which
// only the transaction coordinator's path may append.
func (r *Replica) AppendMarkersAsLeader(records []byte, acksAll bool, now time.Time) (storage.AppendResult, int32, error) {
	return r.appendAsLeader(records, acksAll, now, true)
}

func (r *Replica) appendAsLeader(records []byte, acksAll bool, now time.Time, markers bool) (storage.AppendResult, int32, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.role != RoleLeader {
		return storage.AppendResult{}, -1, fmt.Errorf("%w: %s-%d is led by %d", ErrNotLeader, r.Topic, r.Index, r.state.Leader)
	}
	if minISR := r.minISRLocked(); acksAll && len(r.state.ISR) < minISR {
		return storage.AppendResult{}, -1, fmt.Errorf("%w: %s-%d has ISR %v, min.insync.replicas=%d", ErrNotEnoughReplicas, r.Topic, r.Index, r.state.ISR, minISR)
	}
	res, err := r.Log.Append(records, storage.AppendOptions{LeaderEpoch: r.state.LeaderEpoch, AssignOffsets: true, Now: now, Markers: markers})
	return res, r.state.LeaderEpoch, err
}

// WaitReplicated waits until the high watermark reaches end (acks=all), the leadership is
// lost (ErrNotLeader), the ISR falls below min.insync.replicas
// (ErrNotEnoughReplicasAfterAppend), or ctx ends.
func (r *Replica) WaitReplicated(ctx context.Context, epoch int32, end int64) error {
	for {
		r.mu.Lock()
		r.advanceLocked()
		hw, role, cur, isr, minISR := r.hw.Load(), r.role, r.state.LeaderEpoch, len(r.state.ISR), r.minISRLocked()
		changed := r.changed
		r.mu.Unlock()
		switch {
		case role != RoleLeader || cur != epoch:
			return fmt.Errorf("%w: %s-%d changed leader while waiting for replication", ErrNotLeader, r.Topic, r.Index)
		case hw >= end:
			return nil
		case isr < minISR:
			return fmt.Errorf("%w: %s-%d", ErrNotEnoughReplicasAfterAppend, r.Topic, r.Index)
		}
		select {
		case <-changed:
		case <-r.Log.Changed():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// FollowerFetch is a follower's fetch as the leader sees it.
type FollowerFetch struct {
	ID               int32
	CurrentEpoch     int32
	FetchOffset      int64
	LastFetchedEpoch int32
}

// Divergence tells a follower where its log leaves the leader's.
type Divergence struct {
	Epoch     int32
	EndOffset int64
}

// OnFollowerFetch records a follower's fetch on the leader. It returns a divergence when the
// follower's log diverges (nothing is recorded then), or an error for a fetch the leader must
// refuse: not the leader (NOT_LEADER_OR_FOLLOWER), an older epoch than the leader's
// (FENCED_LEADER_EPOCH), a newer one (UNKNOWN_LEADER_EPOCH: this leader has not learnt it yet).
func (r *Replica) OnFollowerFetch(f FollowerFetch, now time.Time) (*Divergence, error) {
	r.mu.Lock()
	if r.role != RoleLeader {
		r.mu.Unlock()
		return nil, fmt.Errorf("%w: %s-%d", wire.ErrNotLeaderOrFollower, r.Topic, r.Index)
	}
	if f.CurrentEpoch >= 0 && f.CurrentEpoch < r.state.LeaderEpoch {
		r.mu.Unlock()
		return nil, fmt.Errorf("%w: %s-%d is at epoch %d, the follower at %d", wire.ErrFencedLeaderEpoch, r.Topic, r.Index, r.state.LeaderEpoch, f.CurrentEpoch)
	}
	if f.CurrentEpoch > r.state.LeaderEpoch {
		r.mu.Unlock()
		return nil, fmt.Errorf("%w: %s-%d is at epoch %d, the follower at %d", wire.ErrUnknownLeaderEpoch, r.Topic, r.Index, r.state.LeaderEpoch, f.CurrentEpoch)
	}
	r.mu.Unlock()
	if f.LastFetchedEpoch >= 0 {
		e, end := r.Log.EndOffsetForEpoch(f.LastFetchedEpoch)
		if e != f.LastFetchedEpoch || end < f.FetchOffset {
			return &Divergence{Epoch: e, EndOffset: end}, nil
		}
	}
	leo := r.Log.LogEndOffset()
	r.mu.Lock()
	defer r.mu.Unlock()
	fl, ok := r.followers[f.ID]
	if r.role != RoleLeader || !ok {
		return nil, nil // not a replica of this partition (any more)
	}
	fl.CaughtUp = CaughtUp(fl.CaughtUp, f.FetchOffset, leo, r.prevEnd[f.ID], r.prevFetch[f.ID], now)
	fl.Offset, fl.Known = f.FetchOffset, true
	r.prevEnd[f.ID], r.prevFetch[f.ID] = leo, now
	before := r.hw.Load()
	r.advanceLocked()
	if r.hw.Load() != before {
		r.wakeLocked()
	}
	if !slices.Contains(r.state.ISR, f.ID) && CanJoin(*fl, r.hw.Load(), r.epochStart) {
		r.proposeISRLocked(append(slices.Clone(r.state.ISR), f.ID), "caught up")
	}
	return nil, nil
}

// MaybeShrinkISR drops followers that lag more than LagMax from the ISR (a leader's periodic
// check).
func (r *Replica) MaybeShrinkISR(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.role != RoleLeader {
		return
	}
	fs := make([]Follower, 0, len(r.followers))
	for _, f := range r.followers {
		fs = append(fs, *f)
	}
	next := Shrink(r.state.ISR, r.set.Self, fs, now, r.set.LagMax)
	if len(next) != len(r.state.ISR) {
		r.proposeISRLocked(next, "lagging follower")
	}
}

// proposeISRLocked writes a new ISR to the metadata store in the background; r.mu is held.
// The new ISR applies once written (the next Apply brings it too); a lost race (the state
// moved on) is dropped: the new state arrives through Apply.
func (r *Replica) proposeISRLocked(isr []int32, why string) {
	if r.isrWriting {
		return
	}
	r.isrWriting = true
	epoch, version, old := r.state.LeaderEpoch, r.state.Version, slices.Clone(r.state.ISR)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		v, err := r.set.WriteISR(ctx, r.Topic, r.Index, epoch, isr, version)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.isrWriting = false
		if err != nil {
			r.set.noteISR(err, false, "topic", r.Topic, "partition", r.Index, "isr", isr)
			return
		}
		if r.role != RoleLeader || r.state.LeaderEpoch != epoch || r.state.Version != version {
			return
		}
		r.state.ISR, r.state.Version = slices.Clone(isr), v
		r.set.noteISR(nil, len(isr) < len(old), "topic", r.Topic, "partition", r.Index, "from", old, "to", isr, "reason", why)
		metrics.ISRChanged(len(old), len(isr))
		r.advanceLocked()
		r.notifyLocked()
	}()
}

// SetFollowerHighWatermark takes the leader's high watermark from a fetch response.
func (r *Replica) SetFollowerHighWatermark(leaderHW int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.role == RoleLeader {
		return
	}
	leo := r.Log.LogEndOffset()
	if leo >= leaderHW {
		r.reachedHW.Store(true)
	}
	hw := min(leaderHW, leo)
	if hw > r.hw.Load() {
		r.hw.Store(hw)
	}
}

// CaughtUp reports whether the replica has been in sync since it was opened: it leads, or
// has no leader to follow, or the ISR it acts on holds this broker, or as a follower it has
// fetched up to its leader's high watermark at least once (the broker's readiness).
func (r *Replica) CaughtUp() bool {
	if r.reachedHW.Load() {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.role == RoleLeader || r.state.Leader < 0 || slices.Contains(r.state.ISR, r.set.Self)
}

// ISR returns the ISR the replica acts on.
func (r *Replica) ISR() []int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.state.ISR)
}

// truncated keeps the high watermark within the log after a follower's truncation.
func (r *Replica) truncated() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if leo := r.Log.LogEndOffset(); r.hw.Load() > leo {
		r.hw.Store(leo)
	}
}

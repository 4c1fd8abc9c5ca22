package partition

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/broker/internal/replication"
	"github.com/spoolmq/spool/broker/internal/storage"
	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

// Types the handlers use, so that they need not import storage.
type (
	// AppendResult is what an append assigned: offsets, timestamps, log start.
	AppendResult = storage.AppendResult
	// ReadResult is records as file ranges; the caller must Release it.
	ReadResult = storage.ReadResult
	// Chunk is one file range of a ReadResult.
	Chunk = storage.Chunk
)

// AbortedTxn is an aborted transaction of the partition (producer id, first offset, marker).
type AbortedTxn = storage.AbortedTxn

// Errors of the log, for the handlers' mapping to protocol errors.
var (
	ErrCorruptMessage       = storage.ErrCorruptMessage
	ErrInvalidRecord        = storage.ErrInvalidRecord
	ErrUnsupportedMagic     = storage.ErrUnsupportedMagic
	ErrMessageTooLarge      = storage.ErrMessageTooLarge
	ErrRecordListTooLarge   = storage.ErrRecordListTooLarge
	ErrOffsetOutOfRange     = storage.ErrOffsetOutOfRange
	ErrOutOfOrderSequence   = storage.ErrOutOfOrderSequence
	ErrInvalidProducerEpoch = storage.ErrInvalidProducerEpoch
	ErrInvalidTimestamp     = storage.ErrInvalidTimestamp
	ErrClosed               = storage.ErrClosed
)

// Reader is who reads a partition: it sets how far a read may go and which changes wake a
// parked fetch.
type Reader int8

const (
	// Consumer reads up to the high watermark (read_uncommitted) or the last stable offset
	// (read_committed); it is woken when those or the log start move.
	Consumer Reader = iota
	// Follower (another broker's replica fetcher) reads up to the log end; it is woken by
	// appends.
	Follower
)

// Isolation is a consumer's isolation.level.
type Isolation int8

const (
	// ReadUncommitted reads up to the high watermark.
	ReadUncommitted Isolation = 0
	// ReadCommitted reads up to the last stable offset.
	ReadCommitted Isolation = 1
)

// Offsets are a partition's positions as one read saw them.
type Offsets struct {
	HighWatermark int64
	// LastStable is the last stable offset: the high watermark, or the first offset of the
	// oldest open transaction if lower (read_committed consumers read up to it).
	LastStable int64
	LogStart   int64
	LogEnd     int64
}

// Partition is one local replica of a partition: its log, its replica (role, epoch, ISR,
// high watermark) and the signals of what its readers may see.
type Partition struct {
	Topic string
	Index int32

	log     *storage.Log
	replica *replication.Replica
	// leaderThrottled: followers' fetches of this partition count against the leader's
	// replication throttle (leader.replication.throttled.replicas names this broker's
	// replica); the follower side is the replica's (Replica.Throttled).
	leaderThrottled atomic.Bool

	consumers signal // high watermark, last stable offset, log start, role and epoch
	followers signal // log end, role and epoch
	// visible is the high watermark consumers were last told of.
	visible atomic.Int64
}

// New wraps a log opened for a partition; its replica starts as a follower of nobody until
// its first state is applied (Replica().Apply).
func New(topic string, index int32, log *storage.Log, set *replication.Settings) *Partition {
	p := &Partition{Topic: topic, Index: index, log: log}
	p.replica = replication.NewReplica(topic, index, log, set)
	p.replica.SetOnChange(p.onReplicaChange)
	return p
}

// onReplicaChange runs with the replica's lock held: it only swaps channels.
func (p *Partition) onReplicaChange(c replication.Change, hw int64) {
	if c == replication.ChangeState {
		p.visible.Store(hw)
		p.followers.raise()
	} else {
		p.advanceVisible(hw)
	}
	p.consumers.raise()
}

// advanceVisible raises the high watermark consumers were told of to hw; it reports whether
// it moved.
func (p *Partition) advanceVisible(hw int64) bool {
	for {
		cur := p.visible.Load()
		if hw <= cur {
			return false
		}
		if p.visible.CompareAndSwap(cur, hw) {
			return true
		}
	}
}

// announce wakes consumers if the high watermark moved since they were last told.
func (p *Partition) announce() {
	if p.advanceVisible(p.replica.HighWatermark()) {
		p.consumers.raise()
	}
}

// Replica is the partition's replica, for reconciliation and the follower-fetch bookkeeping.
func (p *Partition) Replica() *replication.Replica { return p.replica }

// Log is the partition's log, for operations (sizes, configs, deletion); request handlers
// use the methods of Partition instead.
func (p *Partition) Log() *storage.Log { return p.log }

// SetThrottled applies the replication throttles to this partition: leader, followers'
// fetches of it here count against this broker's leader.replication.throttled.rate
// (leader.replication.throttled.replicas names it); follower, this replica's own fetching
// counts against follower.replication.throttled.rate.
func (p *Partition) SetThrottled(leader, follower bool) {
	p.leaderThrottled.Store(leader)
	p.replica.SetThrottled(follower)
}

// LeaderThrottled reports whether followers' fetches count against the leader's throttle.
func (p *Partition) LeaderThrottled() bool { return p.leaderThrottled.Load() }

// IsLeader reports whether this replica leads, and at which epoch.
func (p *Partition) IsLeader() (bool, int32) {
	role, epoch := p.replica.Role()
	return role == replication.RoleLeader, epoch
}

// LeaderEpoch is the leader epoch this replica acts on.
func (p *Partition) LeaderEpoch() int32 {
	_, epoch := p.replica.Leader()
	return epoch
}

// Changed returns a channel closed at the next change of what reader may see (see the
// package comment). Take it before checking the state, then re-check after each wake-up:
// a change between the two is never missed.
func (p *Partition) Changed(reader Reader) <-chan struct{} {
	if reader == Follower {
		return p.followers.wait()
	}
	return p.consumers.wait()
}

// Offsets returns the partition's positions now.
func (p *Partition) Offsets() Offsets {
	hw := p.replica.HighWatermark()
	lso := min(hw, p.log.FirstUnstableOffset())
	return Offsets{HighWatermark: hw, LastStable: lso, LogStart: p.log.LogStartOffset(), LogEnd: p.log.LogEndOffset()}
}

// OffsetsAvailable is false while this new leader's high watermark has not reached the start
// of its leadership (replication.OffsetsAvailable): ListOffsets then answers that the offsets
// are not available yet instead of an end that may move backwards.
func (p *Partition) OffsetsAvailable() bool { return p.replica.OffsetsAvailable() }

// OffsetForTimestamp finds the first offset whose batch's timestamp is at least ts, below the
// high watermark (ListOffsets by time); ok is false when there is none.
func (p *Partition) OffsetForTimestamp(ts int64) (offset, timestamp int64, ok bool, err error) {
	off, t, ok, err := p.log.OffsetForTimestamp(ts)
	if err != nil || !ok || off >= p.replica.HighWatermark() {
		return -1, -1, false, err
	}
	return off, t, true, nil
}

// Read returns whole batches from the one holding offset, up to maxBytes (the first batch
// whole even if larger), never past what reader may see: the log end for a follower, else
// the high watermark (or the last stable offset with ReadCommitted). An offset outside
// [log start, log end] fails with ErrOffsetOutOfRange; an offset at or past the limit gives
// no records. A negative maxBytes reads nothing and only checks the offset. The caller must
// Release the result.
func (p *Partition) Read(offset int64, maxBytes int32, iso Isolation, reader Reader) (ReadResult, Offsets, error) {
	o := p.Offsets()
	limit := o.HighWatermark
	switch {
	case reader == Follower:
		limit = o.LogEnd
	case iso == ReadCommitted:
		limit = o.LastStable
	}
	if offset < o.LogStart || offset > o.LogEnd {
		return ReadResult{}, o, fmt.Errorf("%w: offset %d is outside [%d, %d] of %s-%d", ErrOffsetOutOfRange, offset, o.LogStart, o.LogEnd, p.Topic, p.Index)
	}
	if offset >= limit || maxBytes < 0 {
		return ReadResult{}, o, nil
	}
	res, err := p.log.Read(offset, maxBytes, limit)
	if err != nil {
		return ReadResult{}, o, fmt.Errorf("reading %s-%d: %w", p.Topic, p.Index, err)
	}
	return res, o, nil
}

// Appended is one appended range whose commit a writer waits for.
type Appended struct {
	Part *Partition
	// End is the offset after the append's last record.
	End int64
	// Epoch is the leader epoch the append was made at.
	Epoch int32
	// AcksAll: the commit also waits for the ISR (acks=-1).
	AcksAll bool
}

// AppendAsLeader appends one batch if this replica leads (with acksAll, only while the ISR
// holds min.insync.replicas). It wakes followers' parked fetches, and consumers' if the high
// watermark moved. The returned Appended is what Commit waits on.
func (p *Partition) AppendAsLeader(records []byte, acksAll bool, now time.Time) (AppendResult, Appended, error) {
	res, epoch, err := p.replica.AppendAsLeader(records, acksAll, now)
	if err != nil {
		return res, Appended{}, err
	}
	p.followers.raise()
	p.announce()
	return res, Appended{Part: p, End: res.LastOffset + 1, Epoch: epoch, AcksAll: acksAll}, nil
}

// Commit waits until each append is durable by the flush policy (all of them in one shared
// sync round: group commit across partitions and requests) and then, for those with
// AcksAll, until the high watermark covers it. failed is called, one at a time, for each
// append that did not commit: ctx's error, a storage error, replication.ErrNotLeader (the
// leadership moved) or replication.ErrNotEnoughReplicasAfterAppend. Commit blocks.
func Commit(ctx context.Context, appends []Appended, failed func(i int, err error)) {
	var buf [8]storage.DurableTarget
	var badBuf [8]bool
	targets, bad := buf[:0], badBuf[:0]
	for _, a := range appends {
		targets = append(targets, storage.DurableTarget{Log: a.Part.log, Offset: a.End})
		bad = append(bad, false)
	}
	storage.WaitAllDurable(ctx, targets, func(i int, err error) {
		bad[i] = true
		failed(i, fmt.Errorf("making %s-%d durable: %w", appends[i].Part.Topic, appends[i].Part.Index, err))
	})
	for i, a := range appends {
		if bad[i] {
			continue
		}
		// The leader's own position moved: with fsync before ack the high watermark follows it.
		a.Part.replica.Advance()
		a.Part.announce()
	}
	for i, a := range appends {
		if bad[i] || !a.AcksAll {
			continue
		}
		if err := a.Part.replica.WaitReplicated(ctx, a.Epoch, a.End); err != nil {
			failed(i, err)
		}
	}
}

// AppendMarker appends a transaction marker (a control batch: commit or abort) for a
// producer's transaction if this replica leads, on the transaction coordinator's behalf
// (WriteTxnMarkers; on a single node the coordinator calls it directly). The marker must not
// be of an epoch older than the producer's newest here (ErrInvalidProducerEpoch). Like
// AppendAsLeader it does one write; Commit waits for it.
func (p *Partition) AppendMarker(producerID int64, producerEpoch int16, commit bool, coordinatorEpoch int32, acksAll bool, now time.Time) (AppendResult, Appended, error) {
	b := batch.NewBuilder()
	b.SetProducer(producerID, producerEpoch, -1)
	ct := batch.ControlAbort
	if commit {
		ct = batch.ControlCommit
	}
	if err := b.AppendControl(ct, coordinatorEpoch, now.UnixMilli()); err != nil {
		return AppendResult{}, Appended{}, err
	}
	records, err := b.Finish()
	if err != nil {
		return AppendResult{}, Appended{}, fmt.Errorf("building a %v marker: %w", ct, err)
	}
	res, epoch, err := p.replica.AppendMarkersAsLeader(records, acksAll, now)
	if err != nil {
		return res, Appended{}, err
	}
	p.followers.raise()
	p.announce()
	return res, Appended{Part: p, End: res.LastOffset + 1, Epoch: epoch, AcksAll: acksAll}, nil
}

// AbortedTransactions lists the aborted transactions whose records overlap [from, to), for a
// read_committed fetch (Kafka's collectAbortedTransactions); nil when there are none.
func (p *Partition) AbortedTransactions(from, to int64) []AbortedTxn {
	return p.log.AbortedTransactions(from, to)
}

// ProducerInfo is one producer of the partition (DescribeProducers).
type ProducerInfo = storage.ProducerInfo

// Producers lists the producers the partition's log remembers.
func (p *Partition) Producers() []ProducerInfo { return p.log.Producers() }

// OngoingTransactions returns the producers with an open transaction here and the first
// offset of each (a copy).
func (p *Partition) OngoingTransactions() map[int64]int64 { return p.log.OngoingTransactions() }

// HasOngoingTransaction reports whether the producer has an open transaction here.
func (p *Partition) HasOngoingTransaction(producerID int64) bool {
	return p.log.HasOngoingTransaction(producerID)
}

// CommitAsync is Commit of one append on a goroutine of its own: done gets nil once it
// committed, or the error.
func CommitAsync(ctx context.Context, a Appended, done func(error)) {
	go func() {
		var err error
		Commit(ctx, []Appended{a}, func(_ int, e error) { err = e })
		done(err)
	}()
}

// signal is a channel closed at the next raise.
type signal struct {
	mu sync.Mutex
	ch chan struct{}
}

func (s *signal) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// raise wakes the waiters; it costs a mutex when nobody waits.
func (s *signal) raise() {
	s.mu.Lock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
	s.mu.Unlock()
}

// Manager owns the local partitions by topic and index.
type Manager struct {
	mu sync.RWMutex
	m  map[key]*Partition
}

type key struct {
	topic string
	index int32
}

// NewManager returns an empty manager.
func NewManager() *Manager { return &Manager{m: map[key]*Partition{}} }

// Get returns the local partition, or nil.
func (m *Manager) Get(topic string, index int32) *Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.m[key{topic, index}]
}

// Put adds a partition.
func (m *Manager) Put(p *Partition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.m[key{p.Topic, p.Index}] = p
}

// All lists the local partitions.
func (m *Manager) All() []*Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*Partition, 0, len(m.m))
	for _, p := range m.m {
		out = append(out, p)
	}
	return out
}

// Drop removes a partition (if still the one registered) and wakes its parked fetches, which
// then find it gone and answer at once.
func (m *Manager) Drop(p *Partition) {
	m.mu.Lock()
	if m.m[key{p.Topic, p.Index}] == p {
		delete(m.m, key{p.Topic, p.Index})
	}
	m.mu.Unlock()
	p.consumers.raise()
	p.followers.raise()
}

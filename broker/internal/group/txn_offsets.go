package group

// Offsets committed inside a transaction (TxnOffsetCommit, KIP-447's member checks), as
// Kafka's GroupMetadataManager keeps them: TxnCommit appends them to the group's
// __consumer_offsets partition as a transactional batch of the producer (its id and epoch, no
// sequence) and keeps them pending per producer id; they become the group's committed
// offsets when the transaction's COMMIT marker is committed in that partition (CompleteTxn,
// called by the marker path on the partition's leader), and are dropped at an ABORT marker.
// Loading a partition (OnElection) replays its log the same way: offsets of transactional
// batches are pending until a marker of their producer follows; those still pending at the
// log's end stay pending for the marker to come. OffsetFetch with require_stable answers
// UNSTABLE_OFFSET_COMMIT for a partition with pending offsets. Between a committed and a
// transactional offset of a partition, the record later in the log wins (seq).
//
// Ownership and concurrency: txnOffsets.mu is a leaf lock. TxnCommit takes it under the
// group's lock (register, then fix up the log offsets after the append); nothing takes a
// group's lock while holding it. The commit wait of TxnCommit runs on a goroutine tracked by
// the coordinator's wg, with no lock held. An offset is registered before its record is
// appended, so a marker that lands after the append always finds it.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/spoolmq/spool/broker/internal/storage"
	"github.com/spoolmq/spool/protocol-spec/wire"
	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

type pendingOffset struct {
	group string
	key   tp
	entry offsetEntry // entry.seq: the log offset of its record, -1 while being appended
	token uint64      // the TxnCommit that added it
}

type txnOffsets struct {
	mu    sync.Mutex
	byPID map[int64][]pendingOffset
	next  uint64
}

// TxnCommitRequest is a TxnOffsetCommit.
type TxnCommitRequest struct {
	GroupID, MemberID string
	InstanceID        *string
	Generation        int32 // -1: not checked (v0-2, or a producer outside the group)
	ProducerID        int64
	ProducerEpoch     int16
	Commits           []Commit
}

// TxnCommit validates transactional offsets, appends them to the group's partition as a
// transactional batch of the producer and, once that is committed, answers; they stay
// pending until the transaction's marker. done gets one error code per commit.
func (c *Coordinator) TxnCommit(r TxnCommitRequest, done func([]int16)) {
	codes, all := commitAnswers(r.Commits)
	if !c.admitCommit(r.GroupID, all, done) {
		return
	}
	g := c.lookup(r.GroupID, true)
	if g == nil {
		done(all(wire.ErrNotCoordinator.Code))
		return
	}
	if r.Generation >= 0 || r.MemberID != "" {
		// KIP-447: a zombie member of an older generation is fenced.
		if g.state == Empty || g.state == Dead {
			g.mu.Unlock()
			done(all(wire.ErrUnknownMemberId.Code))
			return
		}
		if e := g.validateMember(r.MemberID, r.InstanceID, r.Generation); e != nil {
			g.mu.Unlock()
			done(all(e.Code))
			return
		}
	}
	now := c.clock.Now().UnixMilli()
	var add []pendingOffset
	var kvs []kv
	var idx []int
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
		e := offsetEntry{offset: cm.Offset, leaderEpoch: cm.LeaderEpoch, metadata: md, commitTime: now, expireTime: -1, seq: -1}
		add = append(add, pendingOffset{group: r.GroupID, key: tp{cm.Topic, cm.Partition}, entry: e})
		kvs = append(kvs, kv{key: offsetKey(r.GroupID, cm.Topic, cm.Partition), value: offsetValue(e)})
		idx = append(idx, i)
	}
	if len(add) == 0 {
		g.mu.Unlock()
		done(codes)
		return
	}
	token := c.registerPending(r.ProducerID, add)
	w, err := c.appendTxn(r.GroupID, kvs, r.ProducerID, r.ProducerEpoch)
	if err != nil {
		g.mu.Unlock()
		c.dropPending(r.ProducerID, token)
		c.log.Warn("writing transactional offsets", "group", r.GroupID, "producer_id", r.ProducerID, "err", err)
		code := txnAppendCode(err)
		for _, i := range idx {
			codes[i] = code
		}
		done(codes)
		return
	}
	c.txn.mu.Lock()
	n := int64(0)
	for i := range c.txn.byPID[r.ProducerID] {
		if p := &c.txn.byPID[r.ProducerID][i]; p.token == token {
			p.entry.seq = w.base + n
			n++
		}
	}
	c.txn.mu.Unlock()
	g.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
		err := w.wait(ctx)
		cancel()
		if err != nil {
			// The client is told the commit failed and aborts; the record, if it survives,
			// is resolved by that abort's marker on load.
			c.dropPending(r.ProducerID, token)
			for _, i := range idx {
				codes[i] = wire.ErrCoordinatorNotAvailable.Code
			}
		}
		done(codes)
	}()
}

// txnAppendCode is the answer for a transactional offset batch the log refused.
func txnAppendCode(err error) int16 {
	switch {
	case errors.Is(err, errNotOwned):
		return wire.ErrNotCoordinator.Code
	case errors.Is(err, storage.ErrInvalidProducerEpoch):
		return wire.ErrProducerFenced.Code
	}
	return wire.ErrCoordinatorNotAvailable.Code
}

// appendTxn appends offset records as one transactional batch of the producer (no sequence,
// as Kafka writes them). The caller holds the group's lock.
func (c *Coordinator) appendTxn(groupID string, kvs []kv, pid int64, epoch int16) (written, error) {
	return c.appendWith(groupID, kvs, func(b *batch.Builder) {
		b.SetProducer(pid, epoch, -1)
		b.SetTransactional(true)
	})
}

// registerPending adds offsets to the producer's pending ones under a new token.
func (c *Coordinator) registerPending(pid int64, add []pendingOffset) uint64 {
	c.txn.mu.Lock()
	defer c.txn.mu.Unlock()
	c.txn.next++
	token := c.txn.next
	if c.txn.byPID == nil {
		c.txn.byPID = map[int64][]pendingOffset{}
	}
	for i := range add {
		add[i].token = token
	}
	c.txn.byPID[pid] = append(c.txn.byPID[pid], add...)
	return token
}

// dropPending forgets the offsets one TxnCommit registered.
func (c *Coordinator) dropPending(pid int64, token uint64) {
	c.txn.mu.Lock()
	defer c.txn.mu.Unlock()
	keep := c.txn.byPID[pid][:0]
	for _, p := range c.txn.byPID[pid] {
		if p.token != token {
			keep = append(keep, p)
		}
	}
	if len(keep) == 0 {
		delete(c.txn.byPID, pid)
	} else {
		c.txn.byPID[pid] = keep
	}
}

// errNotLoaded: the partition's groups are not served here (yet); the marker path retries.
var errNotLoaded = errors.New("the __consumer_offsets partition is not loaded here")

// CompleteTxn settles a producer's pending offsets in __consumer_offsets partition part once
// the transaction's marker is committed there: with commit they become the groups' committed
// offsets (unless a later record of the same partition overrides them), otherwise they are
// dropped. It fails while the partition is not loaded here: its load replays the marker.
func (c *Coordinator) CompleteTxn(pid int64, part int32, commit bool) error {
	c.mu.Lock()
	_, owned := c.owned[part]
	n := c.nparts
	c.mu.Unlock()
	if !owned {
		return fmt.Errorf("%w: %s-%d", errNotLoaded, Topic, part)
	}
	c.txn.mu.Lock()
	var settle, keep []pendingOffset
	for _, p := range c.txn.byPID[pid] {
		if partitionFor(p.group, n) == part {
			settle = append(settle, p)
		} else {
			keep = append(keep, p)
		}
	}
	if len(keep) == 0 {
		delete(c.txn.byPID, pid)
	} else {
		c.txn.byPID[pid] = keep
	}
	c.txn.mu.Unlock()
	if !commit {
		return nil
	}
	for len(settle) > 0 {
		id := settle[0].group
		var rest []pendingOffset
		g := c.lookup(id, true)
		for _, p := range settle {
			if p.group != id {
				rest = append(rest, p)
				continue
			}
			if g != nil {
				applyTxnOffset(g.offsets, p)
			}
		}
		if g != nil {
			g.mu.Unlock()
		}
		settle = rest
	}
	return nil
}

// applyTxnOffset makes a committed transaction's offset the group's, unless the partition's
// offset was set by a later record.
func applyTxnOffset(offsets map[tp]offsetEntry, p pendingOffset) {
	if cur, ok := offsets[p.key]; !ok || cur.seq < p.entry.seq {
		offsets[p.key] = p.entry
	}
}

// PendingTxnOffset reports whether a transaction holds an uncommitted offset of the group's
// partition (OffsetFetch require_stable: UNSTABLE_OFFSET_COMMIT).
func (c *Coordinator) PendingTxnOffset(groupID, topic string, partition int32) bool {
	c.txn.mu.Lock()
	defer c.txn.mu.Unlock()
	for _, ps := range c.txn.byPID {
		for _, p := range ps {
			if p.group == groupID && p.key.topic == topic && p.key.partition == partition {
				return true
			}
		}
	}
	return false
}

// replayTxn applies one record of a transactional batch to a load: an offset record of a
// group mine picks becomes pending for its producer; a marker settles the producer's pending
// offsets into groups (commit) or drops them (abort).
func (c *Coordinator) replayTxn(groups map[string]*group, pend map[int64][]pendingOffset, h batch.Header, r batch.Record, mine func(string) bool) {
	pid := h.ProducerID
	if h.Attributes.Control() {
		cr, err := batch.ParseControlRecord(r.Key, r.Value)
		if err != nil {
			c.log.Warn("skipping a __consumer_offsets marker", "offset", r.Offset, "err", err)
			return
		}
		if cr.Type != batch.ControlCommit && cr.Type != batch.ControlAbort {
			return
		}
		if cr.Type == batch.ControlCommit {
			for _, p := range pend[pid] {
				g := groups[p.group]
				if g == nil {
					g = newGroup(p.group, c.clock.Now())
					groups[p.group] = g
				}
				applyTxnOffset(g.offsets, p)
			}
		}
		delete(pend, pid)
		return
	}
	k, err := parseKey(r.Key)
	if err != nil {
		c.log.Warn("skipping a __consumer_offsets record", "offset", r.Offset, "err", err)
		return
	}
	if !mine(k.group) || k.version > 1 || r.Value == nil {
		return
	}
	o, err := parseOffsetValue(r.Value)
	if err != nil {
		c.log.Warn("skipping a transactional offset record", "offset", r.Offset, "err", err)
		return
	}
	o.seq = r.Offset
	pend[pid] = append(pend[pid], pendingOffset{group: k.group, key: tp{k.topic, k.partition}, entry: o})
}

// installPending replaces the pending offsets of partition p (of n) with those its load
// found still open.
func (c *Coordinator) installPending(p, n int32, pend map[int64][]pendingOffset) {
	c.txn.mu.Lock()
	defer c.txn.mu.Unlock()
	c.dropPartitionLocked(p, n)
	if len(pend) == 0 {
		return
	}
	if c.txn.byPID == nil {
		c.txn.byPID = map[int64][]pendingOffset{}
	}
	for pid, ps := range pend {
		c.txn.byPID[pid] = append(c.txn.byPID[pid], ps...)
	}
}

// dropPendingPartition forgets the pending offsets of partition p's groups (a resignation).
func (c *Coordinator) dropPendingPartition(p, n int32) {
	c.txn.mu.Lock()
	defer c.txn.mu.Unlock()
	c.dropPartitionLocked(p, n)
}

func (c *Coordinator) dropPartitionLocked(p, n int32) {
	for pid, ps := range c.txn.byPID {
		keep := ps[:0]
		for _, o := range ps {
			if partitionFor(o.group, n) != p {
				keep = append(keep, o)
			}
		}
		if len(keep) == 0 {
			delete(c.txn.byPID, pid)
		} else {
			c.txn.byPID[pid] = keep
		}
	}
}

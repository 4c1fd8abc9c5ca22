package group

// Offsets committed inside a transaction (TxnOffsetCommit, KIP-447's member checks): pending
// until the transaction ends; at the commit they are written to __consumer_offsets and become
// the group's committed offsets, at an abort they are dropped. OffsetFetch with require_stable
// answers UNSTABLE_OFFSET_COMMIT for a partition with pending offsets.
//
// Ownership and concurrency: txnOffsets.mu (a leaf lock, never held with a group's lock or
// the coordinator's) guards the pending offsets by producer id. Completion runs on the
// transaction coordinator's marker goroutine and blocks until the offsets are committed.
//
// Known gap (this slice): pending offsets live in memory only, so a broker restart between
// TxnOffsetCommit and the commit's completion loses them (Kafka writes them as transactional
// records of __consumer_offsets, resolved by the marker on load).

import (
	"sync"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

type pendingOffset struct {
	group string
	key   tp
	entry offsetEntry
}

type txnOffsets struct {
	mu    sync.Mutex
	byPID map[int64][]pendingOffset
}

// TxnCommitRequest is a TxnOffsetCommit.
type TxnCommitRequest struct {
	GroupID, MemberID string
	InstanceID        *string
	Generation        int32 // -1: not checked (v0-2, or a producer outside the group)
	ProducerID        int64
	Commits           []Commit
}

// TxnCommit validates transactional offsets and keeps them pending for the producer's
// transaction; done gets one error code per commit.
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
	g.mu.Unlock()
	now := c.clock.Now().UnixMilli()
	var add []pendingOffset
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
		add = append(add, pendingOffset{group: r.GroupID, key: tp{cm.Topic, cm.Partition},
			entry: offsetEntry{offset: cm.Offset, leaderEpoch: cm.LeaderEpoch, metadata: md, commitTime: now, expireTime: -1}})
	}
	c.txn.mu.Lock()
	if c.txn.byPID == nil {
		c.txn.byPID = map[int64][]pendingOffset{}
	}
	c.txn.byPID[r.ProducerID] = append(c.txn.byPID[r.ProducerID], add...)
	c.txn.mu.Unlock()
	done(codes)
}

// CompleteTxn ends a producer's transaction on its pending offsets: with commit they are
// written to __consumer_offsets (durable, and in a cluster on every ISR member) and become
// the groups' committed offsets; otherwise they are dropped. It blocks; an error leaves them
// pending for a retry.
func (c *Coordinator) CompleteTxn(pid int64, commit bool) error {
	c.txn.mu.Lock()
	pend := c.txn.byPID[pid]
	c.txn.mu.Unlock()
	if commit && len(pend) > 0 {
		byGroup := map[string][]pendingOffset{}
		for _, p := range pend {
			byGroup[p.group] = append(byGroup[p.group], p)
		}
		for id, ps := range byGroup {
			kvs := make([]kv, len(ps))
			for i, p := range ps {
				kvs[i] = kv{key: offsetKey(id, p.key.topic, p.key.partition), value: offsetValue(p.entry)}
			}
			w, err := c.append(id, kvs)
			if err == nil {
				err = w.wait(c.ctx)
			}
			if err != nil {
				return err
			}
			if g := c.lookup(id, true); g != nil {
				for i, p := range ps {
					e := p.entry
					e.seq = w.base + int64(i)
					if cur, ok := g.offsets[p.key]; !ok || cur.seq < e.seq {
						g.offsets[p.key] = e
					}
				}
				g.mu.Unlock()
			}
		}
	}
	c.txn.mu.Lock()
	delete(c.txn.byPID, pid)
	c.txn.mu.Unlock()
	return nil
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

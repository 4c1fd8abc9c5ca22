package storage

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

// Transactions on the partition side (Kafka's ProducerStateManager and UnifiedLog).
//
// A transactional producer's first data batch in a partition opens its transaction there; a
// control batch (a commit or abort marker the coordinator had the leader append) closes it.
// While a transaction is open its first offset holds the first unstable offset: the last
// stable offset (LSO) a read_committed consumer may read up to is the smaller of the high
// watermark and the first offset of the oldest open transaction. An aborted transaction is
// remembered as (producer id, first offset, marker offset), so that a read_committed fetch can
// tell the consumer which records to drop.
//
// # Ownership and concurrency
//
// txnState is part of the producer state and changes only under the Log's appendMu (appends,
// replay on open and truncation). Readers (fetches, the partition's LSO) never take appendMu:
// the first unstable offset is published in an atomic, and the aborted list is guarded by mu,
// a leaf lock held for slice operations only. The whole state is in the producer snapshot
// (version 2), so a restart replays at most the batches after the newest snapshot.

// AbortedTxn is one aborted transaction of a partition: its records are those of ProducerID
// from FirstOffset up to the abort marker at LastOffset.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
}

type txnState struct {
	ongoing map[int64]int64 // producer id -> first offset of its open transaction; appendMu
	// firstUnstable is the smallest first offset in ongoing, math.MaxInt64 when none.
	firstUnstable atomic.Int64

	mu      sync.RWMutex
	aborted []AbortedTxn // by LastOffset
}

func newTxnState() *txnState {
	t := &txnState{ongoing: map[int64]int64{}}
	t.firstUnstable.Store(math.MaxInt64)
	return t
}

// reset forgets everything (appendMu held).
func (t *txnState) reset(ongoing map[int64]int64, aborted []AbortedTxn) {
	if ongoing == nil {
		ongoing = map[int64]int64{}
	}
	t.ongoing = ongoing
	t.publish()
	t.mu.Lock()
	t.aborted = aborted
	t.mu.Unlock()
}

func (t *txnState) publish() {
	first := int64(math.MaxInt64)
	for _, o := range t.ongoing {
		first = min(first, o)
	}
	t.firstUnstable.Store(first)
}

// track applies one transactional batch (appendMu held): data opens the producer's
// transaction at base if none is open; a marker closes it, and an abort marker records it.
func (t *txnState) track(pid int64, control bool, ct batch.ControlType, base, last int64) {
	first, open := t.ongoing[pid]
	if !control {
		if !open {
			t.ongoing[pid] = base
			if base < t.firstUnstable.Load() {
				t.firstUnstable.Store(base)
			}
		}
		return
	}
	if !open {
		return // a marker of a transaction that wrote nothing here
	}
	delete(t.ongoing, pid)
	t.publish()
	if ct == batch.ControlAbort {
		t.mu.Lock()
		t.aborted = append(t.aborted, AbortedTxn{ProducerID: pid, FirstOffset: first, LastOffset: last})
		t.mu.Unlock()
	}
}

// collect returns the aborted transactions whose records overlap [from, to).
func (t *txnState) collect(from, to int64) []AbortedTxn {
	t.mu.RLock()
	defer t.mu.RUnlock()
	i, _ := slices.BinarySearchFunc(t.aborted, from, func(a AbortedTxn, o int64) int {
		switch {
		case a.LastOffset < o:
			return -1
		case a.LastOffset > o:
			return 1
		}
		return 0
	})
	var out []AbortedTxn
	for _, a := range t.aborted[i:] {
		if a.FirstOffset < to {
			out = append(out, a)
		}
	}
	return out
}

// snapshotAborted is the aborted list without transactions wholly below logStart.
func (t *txnState) snapshotAborted(logStart int64) []AbortedTxn {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]AbortedTxn, 0, len(t.aborted))
	for _, a := range t.aborted {
		if a.LastOffset >= logStart {
			out = append(out, a)
		}
	}
	return out
}

// controlType reads the type of a control batch's record from the whole batch b.
func controlType(b []byte) (batch.ControlType, error) {
	var it batch.Iterator
	if err := it.Reset(b, len(b)); err != nil {
		return 0, err
	}
	if !it.Next() {
		if err := it.Err(); err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("%w: a control batch without record", ErrInvalidRecord)
	}
	r := it.Record()
	c, err := batch.ParseControlRecord(r.Key, r.Value)
	if err != nil {
		return 0, err
	}
	return c.Type, nil
}

// FirstUnstableOffset is the first offset of the oldest open transaction, or math.MaxInt64
// when none is open. It never blocks.
func (l *Log) FirstUnstableOffset() int64 { return l.producers.txn.firstUnstable.Load() }

// AbortedTransactions lists the aborted transactions whose records overlap [from, to), for a
// read_committed fetch of that range.
func (l *Log) AbortedTransactions(from, to int64) []AbortedTxn {
	return l.producers.txn.collect(from, to)
}

// OngoingTransactions returns the producer ids with an open transaction and their first
// offsets (a copy).
func (l *Log) OngoingTransactions() map[int64]int64 {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	out := make(map[int64]int64, len(l.producers.txn.ongoing))
	for k, v := range l.producers.txn.ongoing {
		out[k] = v
	}
	return out
}

// HasOngoingTransaction reports whether the producer has an open transaction here.
func (l *Log) HasOngoingTransaction(producerID int64) bool {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	_, ok := l.producers.txn.ongoing[producerID]
	return ok
}

// ProducerInfo is one producer of a partition as DescribeProducers shows it.
type ProducerInfo struct {
	ProducerID    int64
	Epoch         int16
	LastSequence  int32
	LastTimestamp int64
	// TxnStartOffset is the first offset of its open transaction, -1 when none.
	TxnStartOffset int64
}

// Producers lists the producers the log remembers, by producer id.
func (l *Log) Producers() []ProducerInfo {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	out := make([]ProducerInfo, 0, len(l.producers.producers))
	for pid, e := range l.producers.producers {
		first, open := l.producers.txn.ongoing[pid]
		if !open {
			first = -1
		}
		out = append(out, ProducerInfo{ProducerID: pid, Epoch: e.epoch, LastSequence: e.lastSeq(), LastTimestamp: e.lastTimestamp, TxnStartOffset: first})
	}
	slices.SortFunc(out, func(a, b ProducerInfo) int { return cmp.Compare(a.ProducerID, b.ProducerID) })
	return out
}

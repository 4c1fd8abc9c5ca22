package spool

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// The transactional producer (TransactionalID): Kafka's transaction protocol as the Java
// client speaks it with transaction.version 1 (KIP-98 with KIP-447's group metadata in
// TxnOffsetCommit and KIP-360's epoch bump after an aborted transaction whose sequence
// numbers broke).
//
// Who does what:
//   - The user's calls (InitTransactions, BeginTransaction, SendOffsetsToTransaction,
//     CommitTransaction, AbortTransaction) run on the caller's goroutine, one at a time
//     (txnManager.op), and talk to the transaction coordinator themselves.
//   - The sender goroutine (producer.run) adds the partitions records went to
//     (AddPartitionsToTxn) before it sends their first batch of the transaction: a partition
//     whose partBuf.txnAdded is not the running transaction's number is not sent
//     (collectAndSend), it is noted instead, and the next pass of the sender adds the noted
//     partitions in one request.
//   - While aborting, the sender drops every batch not yet sent (it was never numbered:
//     transactional batches are numbered only when sent, see encodeEarly), so the abort waits
//     only for batches in flight.
//
// Locks: txnManager.mu guards its fields and is never held across I/O. A partBuf's mu may be
// held when taking txnManager.mu (collectAndSend notes partitions so), never the other way.
// txnManager.op serializes the user's calls and is held across their I/O; the sender never
// takes it.

// DefaultTransactionTimeout is transaction.timeout.ms's default, the Java client's.
const DefaultTransactionTimeout = time.Minute

// Highest versions the transactional producer sends. AddPartitionsToTxn v4+ is for brokers
// (KIP-890's batched verification), so producers stay at v3, as the Java client does.
const maxAddPartitionsToTxnVersion = 3

type txnManager struct {
	cl      *Client
	id      string
	timeout time.Duration

	op sync.Mutex // serializes the user's calls; held across their I/O

	mu      sync.Mutex
	state   txnState
	err     error // the *TxnError that put the producer in AbortableError or Fatal
	num     uint64
	pending map[tp]struct{} // partitions with records in this transaction, not yet added
	added   int             // partitions added to this transaction
	groups  map[string]bool // groups whose offsets joined this transaction (AddOffsetsToTxn)
	coord   string          // the coordinator's address; "" when it must be looked up

	// numA is num and stateA is state, for the sender and Produce to read without mu.
	numA     atomic.Uint64
	stateA   atomic.Int32
	aborting atomic.Bool
	// retryAt is when the sender may try AddPartitionsToTxn again after a retriable error,
	// attempts how many failed in a row (sender goroutine only).
	retryAt  time.Time
	attempts int
}

func newTxnManager(cl *Client) *txnManager {
	return &txnManager{cl: cl, id: cl.cfg.txnID, timeout: cl.cfg.txnTimeout, pending: map[tp]struct{}{}, groups: map[string]bool{}}
}

// txn returns the client's transaction manager, or an error for a client without
// TransactionalID.
func (cl *Client) txn() (*txnManager, error) {
	if t := cl.prod.txn; t != nil {
		return t, nil
	}
	return nil, errors.New("spool: not a transactional producer (set TransactionalID / transactional.id)")
}

// step applies ev under t.mu; a refused step returns the error that the caller returns.
// From AbortableError and Fatal, the error that caused the state is returned instead.
func (t *txnManager) step(op string, ev txnEvent) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stepLocked(op, ev)
}

func (t *txnManager) stepLocked(op string, ev txnEvent) error {
	next, err := txnStep(t.state, ev)
	if err != nil {
		if t.err != nil && (t.state == txnFatal || t.state == txnAbortableError) {
			return t.err
		}
		return fmt.Errorf("spool: %s: %w", op, err)
	}
	t.state = next
	t.stateA.Store(int32(next))
	return nil
}

// fail puts the producer in AbortableError or Fatal for err (classified by txnClass; a
// *TxnError keeps its class) and returns the *TxnError. A retriable error changes nothing.
func (t *txnManager) fail(op string, err error) error {
	class := txnClass(err)
	var te *TxnError
	if !errors.As(err, &te) {
		te = &TxnError{Op: op, Class: class, Err: err}
	}
	if class == TxnRetriable {
		return te
	}
	t.mu.Lock()
	ev := evAbortable
	if class == TxnFatal {
		ev = evFatal
	}
	if next, e := txnStep(t.state, ev); e == nil {
		t.state = next
		t.stateA.Store(int32(next))
		if t.err == nil || class == TxnFatal {
			t.err = te
		}
	}
	t.mu.Unlock()
	t.cl.prod.batchDone() // wake a commit waiting for the flush
	return te
}

// failed is the error that put the producer in AbortableError or Fatal, or nil.
func (t *txnManager) failed() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state == txnAbortableError || t.state == txnFatal {
		return t.err
	}
	return nil
}

// admit checks that a record may join the transaction now (Produce); it reads only atomics.
func (t *txnManager) admit() error {
	if txnState(t.stateA.Load()) == txnInTransaction {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, err := txnStep(t.state, evProduce); err != nil {
		if t.err != nil {
			return t.err
		}
		return fmt.Errorf("spool: Produce: %w", err)
	}
	return nil
}

// recordFailed is told the outcome of every record of a failed batch (producer.finish): a
// record that did not make it dooms the transaction.
func (t *txnManager) recordFailed(err error) {
	if errors.Is(err, ErrTransactionAborted) || t.aborting.Load() {
		return
	}
	if txnClass(err) == TxnRetriable {
		// It ran out of retries (delivery timeout): the transaction cannot commit.
		err = &TxnError{Op: "Produce", Class: TxnAbortable, Err: err}
	}
	t.fail("Produce", err)
}

// errSequenceBroke dooms a transaction in which a batch was refused so that the partition's
// sequence numbers can only go on under a new epoch.
var errSequenceBroke = errors.New("spool: a partition's sequence numbers broke (OUT_OF_ORDER_SEQUENCE_NUMBER): the transaction must be aborted")

// sequenceBroke is called by the sender while the producer id needs replacing: within a
// transaction that takes an abort (which bumps the epoch).
func (t *txnManager) sequenceBroke() {
	if s := txnState(t.stateA.Load()); s == txnInTransaction || s == txnCommitting {
		t.fail("Produce", &TxnError{Op: "Produce", Class: TxnAbortable, Err: errSequenceBroke})
	}
}

// note records that a partition has records to send in the running transaction, and
// reports whether it was not noted yet; the partition's mu is held.
func (t *txnManager) note(k tp) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state != txnInTransaction && t.state != txnCommitting {
		return false
	}
	if _, ok := t.pending[k]; ok {
		return false
	}
	t.pending[k] = struct{}{}
	return true
}

// InitTransactions registers the transactional.id with its transaction coordinator
// (FindCoordinator with key type 1, then InitProducerId), which gives this producer its
// producer id and a new epoch: a previous producer with the same id is fenced from now on,
// and a transaction it left open is aborted first. Call it once, before the first
// BeginTransaction. Retriable errors (COORDINATOR_LOAD_IN_PROGRESS, CONCURRENT_TRANSACTIONS,
// NOT_COORDINATOR, connections) are retried until ctx (or the client's API timeout) ends;
// after a retriable error InitTransactions may be called again.
func (cl *Client) InitTransactions(ctx context.Context) error {
	t, err := cl.txn()
	if err != nil {
		return err
	}
	t.op.Lock()
	defer t.op.Unlock()
	if err := t.step("InitTransactions", evInit); err != nil {
		return err
	}
	id, err := t.initProducerID(ctx, nil)
	if err != nil {
		if e := t.fail("InitTransactions", err); IsFatal(e) {
			return e
		}
		t.step("InitTransactions", evInitFailed) //nolint:errcheck // Initializing accepts it
		return &TxnError{Op: "InitTransactions", Class: TxnRetriable, Err: err}
	}
	t.install(id)
	return t.step("InitTransactions", evInitDone)
}

// install makes id the producer id batches are numbered with, under a new generation, so
// every partition's sequence starts again at 0.
func (t *txnManager) install(id *producerIdent) {
	p := t.cl.prod
	id.gen = p.pidGen() + 1
	p.ident.Store(id)
	p.needPID.Store(false)
	p.wake()
}

// initProducerID asks the coordinator for the producer id; with cur, it asks for cur's epoch
// to be bumped (KIP-360), which needs InitProducerId v3.
func (t *txnManager) initProducerID(ctx context.Context, cur *producerIdent) (*producerIdent, error) {
	req := &wire.InitProducerIdRequest{}
	req.Default()
	req.TransactionalId = &t.id
	req.TransactionTimeoutMs = int32(t.timeout / time.Millisecond)
	minV := int16(0)
	if cur != nil {
		req.ProducerId, req.ProducerEpoch = cur.id, cur.epoch
		minV = 3
	}
	resp := &wire.InitProducerIdResponse{}
	err := t.coordRequest(ctx, req, resp, minV, 99, func() error { return wire.ErrorForCode(resp.ErrorCode) })
	if err != nil {
		return nil, fmt.Errorf("InitProducerId for transactional id %q: %w", t.id, err)
	}
	return &producerIdent{id: resp.ProducerId, epoch: resp.ProducerEpoch}, nil
}

// coordRequest sends req to the transaction coordinator at a version in [minV, maxV] with
// retries, looking the coordinator up again after NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE
// or a broken connection; check reads resp's error codes after each attempt.
func (t *txnManager) coordRequest(ctx context.Context, req, resp wire.Message, minV, maxV int16, check func() error) error {
	cl := t.cl
	return cl.withRetries(ctx, func(ctx context.Context) error {
		err := t.coordOnce(ctx, req, resp, minV, maxV, check)
		if errors.Is(err, wire.ErrNotCoordinator) || errors.Is(err, wire.ErrCoordinatorNotAvailable) || isLeadershipErr(err) {
			t.mu.Lock()
			t.coord = ""
			t.mu.Unlock()
		}
		return err
	})
}

func (t *txnManager) coordOnce(ctx context.Context, req, resp wire.Message, minV, maxV int16, check func() error) error {
	cl := t.cl
	t.mu.Lock()
	addr := t.coord
	t.mu.Unlock()
	if addr == "" {
		fc := &wire.FindCoordinatorRequest{}
		fc.Default()
		fc.Key, fc.KeyType = t.id, 1
		fr := &wire.FindCoordinatorResponse{}
		if err := cl.Request(ctx, fc, fr); err != nil {
			return err
		}
		if err := wire.ErrorForCode(fr.ErrorCode); err != nil {
			return fmt.Errorf("finding the coordinator of transactional id %q: %w", t.id, withMessage(err, fr.ErrorMessage))
		}
		addr = net.JoinHostPort(fr.Host, strconv.Itoa(int(fr.Port)))
		t.mu.Lock()
		t.coord = addr
		t.mu.Unlock()
	}
	c, err := cl.connTo(ctx, addr)
	if err != nil {
		return err
	}
	if err := requestIn(ctx, c, req, resp, minV, maxV); err != nil {
		return err
	}
	return check()
}

// requestIn is roundTrip at the highest version both sides have that lies in [minV, maxV].
func requestIn(ctx context.Context, c *conn, req, resp wire.Message, minV, maxV int16) error {
	v, err := c.version(req.APIKey())
	if err != nil {
		return err
	}
	v = min(v, maxV)
	if v < minV {
		return fmt.Errorf("spool: broker %s offers %s up to v%d, v%d needed: %w", c.addr, apiName(req.APIKey()), v, minV, wire.ErrUnsupportedVersion)
	}
	err = c.do(ctx, &call{key: req.APIKey(), version: v, req: req, resp: resp})
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		c.close(fmt.Errorf("%s response timeout: %w", apiName(req.APIKey()), err))
	}
	return err
}

// BeginTransaction starts a transaction: records produced from now on belong to it until
// CommitTransaction or AbortTransaction. It talks to no broker (the transaction starts on the
// coordinator with its first partition or offsets, as in Kafka).
func (cl *Client) BeginTransaction() error {
	t, err := cl.txn()
	if err != nil {
		return err
	}
	t.op.Lock()
	defer t.op.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.stepLocked("BeginTransaction", evBegin); err != nil {
		return err
	}
	t.num++
	t.numA.Store(t.num)
	clear(t.pending)
	clear(t.groups)
	t.added = 0
	t.err = nil
	return nil
}

// addPending adds the noted partitions to the transaction (AddPartitionsToTxn); it runs on
// the sender goroutine and returns when the sender should call it again at the latest (zero:
// when woken).
func (t *txnManager) addPending() (retry time.Time) {
	if !t.retryAt.IsZero() && time.Now().Before(t.retryAt) {
		return t.retryAt
	}
	t.mu.Lock()
	if len(t.pending) == 0 || (t.state != txnInTransaction && t.state != txnCommitting) {
		t.mu.Unlock()
		return time.Time{}
	}
	num := t.num
	parts := slices.SortedFunc(maps.Keys(t.pending), func(a, b tp) int {
		if a.topic != b.topic {
			if a.topic < b.topic {
				return -1
			}
			return 1
		}
		return int(a.partition - b.partition)
	})
	t.mu.Unlock()
	id := t.cl.prod.ident.Load()
	req := &wire.AddPartitionsToTxnRequest{}
	req.Default()
	req.V3AndBelowTransactionalId, req.V3AndBelowProducerId, req.V3AndBelowProducerEpoch = t.id, id.id, id.epoch
	for _, k := range parts {
		if n := len(req.V3AndBelowTopics); n == 0 || req.V3AndBelowTopics[n-1].Name != k.topic {
			req.V3AndBelowTopics = append(req.V3AndBelowTopics, wire.AddPartitionsToTxnRequestV3Topic{Name: k.topic})
		}
		last := &req.V3AndBelowTopics[len(req.V3AndBelowTopics)-1]
		last.Partitions = append(last.Partitions, k.partition)
	}
	resp := &wire.AddPartitionsToTxnResponse{}
	ctx, cancel := context.WithTimeout(t.cl.ctx, t.cl.cfg.requestTimeout)
	err := t.coordOnce(ctx, req, resp, 0, maxAddPartitionsToTxnVersion, func() error {
		var first error
		for _, tr := range resp.ResultsByTopicV3AndBelow {
			for _, pr := range tr.ResultsByPartition {
				err := wire.ErrorForCode(pr.PartitionErrorCode)
				if err == nil || errors.Is(err, wire.ErrOperationNotAttempted) {
					continue
				}
				err = fmt.Errorf("AddPartitionsToTxn %s[%d]: %w", tr.Name, pr.PartitionIndex, err)
				if first == nil || (retriable(first) && !retriable(err)) {
					first = err
				}
			}
		}
		return first
	})
	cancel()
	if err != nil {
		if errors.Is(err, wire.ErrNotCoordinator) || errors.Is(err, wire.ErrCoordinatorNotAvailable) || isLeadershipErr(err) {
			t.mu.Lock()
			t.coord = ""
			t.mu.Unlock()
		}
		if txnClass(err) == TxnRetriable && !t.cl.closed() {
			t.retryAt = time.Now().Add(t.cl.backoff(t.attempts))
			t.attempts++
			return t.retryAt
		}
		t.attempts, t.retryAt = 0, time.Time{}
		t.fail("AddPartitionsToTxn", err)
		return time.Time{}
	}
	t.attempts, t.retryAt = 0, time.Time{}
	t.mu.Lock()
	if t.num != num {
		t.mu.Unlock()
		return time.Time{}
	}
	for _, k := range parts {
		delete(t.pending, k)
	}
	t.added += len(parts)
	t.mu.Unlock()
	p := t.cl.prod
	for _, k := range parts {
		pb := p.part(k.topic, k.partition)
		pb.mu.Lock()
		pb.txnAdded = num
		pb.mu.Unlock()
	}
	return time.Time{} // the pass that follows sends their batches
}

// GroupMetadata is what a consumer group member sends with its offsets in a transaction
// (KIP-447): the group coordinator refuses the offsets of a member that is no longer in the
// group's current generation, so a zombie cannot commit. Get it from the group consumer
// (Client.GroupMetadata) just before SendOffsetsToTransaction.
type GroupMetadata struct {
	GroupID         string
	GenerationID    int32
	MemberID        string
	GroupInstanceID string // empty for a dynamic member
}

// GroupMetadata returns the consumer group metadata of this client's group membership, for
// SendOffsetsToTransaction (the Java client's groupMetadata()).
func (cl *Client) GroupMetadata() (GroupMetadata, error) {
	g, err := cl.group()
	if err != nil {
		return GroupMetadata{}, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return GroupMetadata{GroupID: g.cfg.id, GenerationID: g.generation, MemberID: g.memberID, GroupInstanceID: g.cfg.instanceID}, nil
}

// SendOffsetsToTransaction adds the group's offsets (per topic and partition, the next offset
// to consume) to the running transaction: AddOffsetsToTxn to the transaction coordinator (once
// per group and transaction), then TxnOffsetCommit to the group coordinator with the group
// metadata (KIP-447). The offsets become visible to the group only if the transaction
// commits. A member no longer in the group's generation (ILLEGAL_GENERATION,
// UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID) makes the transaction abortable.
func (cl *Client) SendOffsetsToTransaction(ctx context.Context, offsets map[string]map[int32]int64, gm GroupMetadata) error {
	const op = "SendOffsetsToTransaction"
	t, err := cl.txn()
	if err != nil {
		return err
	}
	if gm.GroupID == "" {
		return errors.New("spool: SendOffsetsToTransaction: empty group id")
	}
	t.op.Lock()
	defer t.op.Unlock()
	if err := t.step(op, evProduce); err != nil {
		return err
	}
	id := cl.prod.ident.Load()
	t.mu.Lock()
	joined := t.groups[gm.GroupID]
	t.mu.Unlock()
	if !joined {
		req := &wire.AddOffsetsToTxnRequest{TransactionalId: t.id, ProducerId: id.id, ProducerEpoch: id.epoch, GroupId: gm.GroupID}
		resp := &wire.AddOffsetsToTxnResponse{}
		err := t.coordRequest(ctx, req, resp, 0, 99, func() error { return wire.ErrorForCode(resp.ErrorCode) })
		if err != nil {
			return t.fail(op, fmt.Errorf("AddOffsetsToTxn for group %q: %w", gm.GroupID, err))
		}
		t.mu.Lock()
		t.groups[gm.GroupID] = true
		t.mu.Unlock()
	}
	req := &wire.TxnOffsetCommitRequest{}
	req.Default()
	req.TransactionalId, req.GroupId, req.ProducerId, req.ProducerEpoch = t.id, gm.GroupID, id.id, id.epoch
	req.GenerationId, req.MemberId = gm.GenerationID, gm.MemberID
	if gm.GroupInstanceID != "" {
		req.GroupInstanceId = &gm.GroupInstanceID
	}
	for _, topic := range slices.Sorted(maps.Keys(offsets)) {
		rt := wire.TxnOffsetCommitRequestTopic{Name: topic}
		for _, part := range slices.Sorted(maps.Keys(offsets[topic])) {
			rp := wire.TxnOffsetCommitRequestPartition{}
			rp.Default()
			rp.PartitionIndex, rp.CommittedOffset = part, offsets[topic][part]
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp := &wire.TxnOffsetCommitResponse{}
	err = cl.groupRequest(ctx, gm.GroupID, req, resp, func() error {
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if err := wire.ErrorForCode(rp.ErrorCode); err != nil {
					return fmt.Errorf("TxnOffsetCommit %s[%d]: %w", rt.Name, rp.PartitionIndex, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return t.fail(op, fmt.Errorf("group %q: %w", gm.GroupID, err))
	}
	return nil
}

// CommitTransaction sends every record of the transaction, waits for their acknowledgements,
// and commits the transaction (EndTxn). When a record failed, or the transaction failed
// otherwise, it returns a TxnError for which TxnRequiresAbort is true: call AbortTransaction.
// A retriable error (ctx ended, a coordinator moving beyond the retries) leaves the commit to
// be called again.
func (cl *Client) CommitTransaction(ctx context.Context) error {
	return cl.endTransaction(ctx, true)
}

// AbortTransaction aborts the transaction: records not yet sent are dropped (their callbacks
// get ErrTransactionAborted), those in flight are waited for, and the coordinator writes abort
// markers (EndTxn) so read_committed consumers never see the transaction's records or
// offsets. If the transaction's sequence numbers broke (a record failed), the producer's epoch
// is bumped (InitProducerId, KIP-360) so the next transaction starts clean.
func (cl *Client) AbortTransaction(ctx context.Context) error {
	return cl.endTransaction(ctx, false)
}

func (cl *Client) endTransaction(ctx context.Context, commit bool) error {
	op, ev := "AbortTransaction", evAbort
	if commit {
		op, ev = "CommitTransaction", evCommit
	}
	t, err := cl.txn()
	if err != nil {
		return err
	}
	t.op.Lock()
	defer t.op.Unlock()
	if err := t.step(op, ev); err != nil {
		return err
	}
	p := cl.prod
	if !commit {
		t.aborting.Store(true)
		defer t.aborting.Store(false)
	}
	if err := t.drain(ctx, commit); err != nil {
		if commit {
			if e := t.failed(); e != nil {
				return e
			}
		}
		return &TxnError{Op: op, Class: TxnRetriable, Err: err}
	}
	if commit {
		if e := t.failed(); e != nil {
			return e
		}
	}
	t.mu.Lock()
	started := t.added > 0 || len(t.groups) > 0
	t.mu.Unlock()
	if started {
		id := p.ident.Load()
		req := &wire.EndTxnRequest{TransactionalId: t.id, ProducerId: id.id, ProducerEpoch: id.epoch, Committed: commit}
		resp := &wire.EndTxnResponse{}
		err := t.coordRequest(ctx, req, resp, 0, 99, func() error { return wire.ErrorForCode(resp.ErrorCode) })
		if err != nil {
			return t.fail(op, fmt.Errorf("EndTxn: %w", err))
		}
	}
	if !commit && p.needPID.Load() {
		// A batch failed and left a gap in a partition's sequence: only a new epoch lets the
		// next transaction's batches in.
		id, err := t.initProducerID(ctx, p.ident.Load())
		if err != nil {
			return t.fail(op, &TxnError{Op: op, Class: TxnFatal, Err: fmt.Errorf("bumping the epoch after an abort: %w", err)})
		}
		t.install(id)
	}
	return t.step(op, evEnded)
}

// drain waits until no record of the transaction is buffered or, for a commit, the
// transaction has failed.
func (t *txnManager) drain(ctx context.Context, commit bool) error {
	p := t.cl.prod
	p.flushing.Add(1)
	defer p.flushing.Add(-1)
	p.wake()
	for {
		p.doneMu.Lock()
		ch := p.doneCh
		p.doneMu.Unlock()
		if p.buffered.Load() == 0 || (commit && t.failed() != nil) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

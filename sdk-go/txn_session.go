package spool

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// TxnSession is exactly-once consume-transform-produce for a group member that is also a
// transactional producer (the model is franz-go's GroupTransactSession, read, not copied):
//
//	s, _ := spool.NewTxnSession(spool.TransactionalID("copier-1"), spool.ConsumerGroup("g"), spool.ConsumeTopics("in"))
//	s.Client().InitTransactions(ctx)
//	for {
//		rs, _ := s.Client().Poll(ctx)
//		s.Begin()
//		for _, r := range rs { s.Client().Produce(ctx, transform(r), nil) }
//		committed, err := s.End(ctx, true)
//		...
//	}
//
// End sends the offsets of every record Poll returned (with the member's group metadata,
// KIP-447) in the transaction and commits it. Rebalances are safe:
//   - A revocation waits for the running transaction (Begin to End) to end before the
//     partitions are given up, so its offsets commit under the generation that owned them.
//   - Records polled before a revocation or loss and not yet committed may belong to
//     partitions another member now owns: the next End aborts instead of committing
//     (committed is false, err nil), and every partition still assigned is rewound to its
//     committed offset, so Poll returns those records again.
//
// Auto commit is off in a session (offsets are committed only in transactions), and the
// consumer reads read_committed unless Isolation says otherwise.
type TxnSession struct {
	cl *Client
	// inTxn is held (a token in the channel) from Begin to End; a revocation takes it too, so
	// it waits for a running transaction to end. A channel, so the wait can end with ctx.
	inTxn chan struct{}

	mu      sync.Mutex
	revoked bool // partitions were revoked or lost since the last End
}

// NewTxnSession makes a client with opts, which must include TransactionalID, ConsumerGroup
// and the topics to consume, and wraps its OnRevoked and OnLost callbacks (the ones in opts
// still run, after the session's work).
func NewTxnSession(opts ...Opt) (*TxnSession, error) {
	s := &TxnSession{inTxn: make(chan struct{}, 1)}
	hooks := func(c *config) error {
		if c.txnID == "" || c.group.id == "" {
			return errors.New("NewTxnSession needs TransactionalID and ConsumerGroup")
		}
		c.group.autoCommit = false
		userRevoked, userLost := c.group.onRevoked, c.group.onLost
		c.group.onRevoked = func(ctx context.Context, ps map[string][]int32) {
			s.giveUp(ctx, true)
			if userRevoked != nil {
				userRevoked(ctx, ps)
			}
		}
		c.group.onLost = func(ctx context.Context, ps map[string][]int32) {
			s.giveUp(ctx, false)
			if userLost != nil {
				userLost(ctx, ps)
			}
		}
		return nil
	}
	all := append([]Opt{Isolation(ReadCommitted)}, opts...)
	cl, err := NewClient(append(all, hooks)...)
	if err != nil {
		return nil, err
	}
	s.cl = cl
	return s, nil
}

// Client is the session's client: Poll and Produce through it, and Close it when done.
func (s *TxnSession) Client() *Client { return s.cl }

// giveUp runs before partitions are revoked (wait) or after they are lost: a revocation waits
// for the running transaction to end; either way the next End aborts.
func (s *TxnSession) giveUp(ctx context.Context, wait bool) {
	held := false
	if wait {
		select {
		case s.inTxn <- struct{}{}:
			held = true
		case <-ctx.Done():
			s.cl.cfg.logger.Warn("transact session: the running transaction did not end before the revocation's deadline", "err", ctx.Err())
		}
	}
	// Marked while no transaction can begin: a transaction begun after the revocation holds
	// records polled before it, and must see the mark at its End.
	s.mu.Lock()
	s.revoked = true
	s.mu.Unlock()
	if held {
		<-s.inTxn
	}
}

// Begin starts a transaction (BeginTransaction); a revocation waits from now until End.
func (s *TxnSession) Begin() error {
	select {
	case s.inTxn <- struct{}{}:
	default:
		return errors.New("spool: TxnSession.Begin: a transaction is already running")
	}
	if err := s.cl.BeginTransaction(); err != nil {
		<-s.inTxn
		return err
	}
	return nil
}

// End ends the transaction that Begin started. With commit true, and no revocation since the
// last End, it sends the offsets of every record Poll returned to the transaction and commits
// it: committed is true. Otherwise, or when the commit fails with an abortable error, it aborts
// the transaction and rewinds every assigned partition to its committed offset: committed is
// false, and err is nil after a revocation or when the group refused the offsets (a
// rebalance: ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, REBALANCE_IN_PROGRESS),
// the abortable error otherwise. A fatal error
// (IsFatal) means the client must be closed.
func (s *TxnSession) End(ctx context.Context, commit bool) (committed bool, err error) {
	select {
	case <-s.inTxn:
	default:
		return false, errors.New("spool: TxnSession.End: no transaction is running (Begin)")
	}
	s.mu.Lock()
	revoked := s.revoked
	s.revoked = false
	s.mu.Unlock()
	g, err := s.cl.group()
	if err != nil {
		return false, err
	}
	var cause error
	if commit && !revoked {
		offsets := s.polledOffsets(g)
		if len(offsets) > 0 {
			gm, _ := s.cl.GroupMetadata()
			cause = s.cl.SendOffsetsToTransaction(ctx, offsets, gm)
		}
		if cause == nil {
			cause = s.cl.CommitTransaction(ctx)
		}
		if cause == nil {
			g.mu.Lock()
			for t, ps := range offsets {
				for p, o := range ps {
					g.committed[tp{t, p}] = o
				}
			}
			g.mu.Unlock()
			return true, nil
		}
		if !TxnRequiresAbort(cause) {
			return false, cause // fatal, or retriable: CommitTransaction may be called again
		}
		if groupFenced(cause) {
			// The group moved on (a rebalance this member has not seen yet): as after a
			// revocation, the records are polled again from the committed offsets.
			s.cl.cfg.logger.Info("transact session: the group refused the offsets; aborting", "err", cause)
			cause = nil
		}
	}
	if err := s.cl.AbortTransaction(ctx); err != nil {
		return false, err
	}
	if err := s.rewind(ctx, g); err != nil {
		return false, fmt.Errorf("spool: TxnSession.End: after the abort: %w", err)
	}
	return false, cause
}

// groupFenced reports whether err says the member's generation is no longer the group's.
func groupFenced(err error) bool {
	return errors.Is(err, wire.ErrIllegalGeneration) || errors.Is(err, wire.ErrUnknownMemberId) ||
		errors.Is(err, wire.ErrFencedInstanceId) || errors.Is(err, wire.ErrRebalanceInProgress)
}

// polledOffsets is what Poll returned, per partition (the offset after the last record), of
// the assigned partitions and of those being revoked.
func (s *TxnSession) polledOffsets(g *grouper) map[string]map[int32]int64 {
	polled := s.cl.cons.polledOffsets(nil)
	g.mu.Lock()
	for k, o := range g.releasing {
		polled[k] = o
	}
	for k, o := range polled {
		if c, ok := g.committed[k]; ok && c == o {
			delete(polled, k)
		}
	}
	g.mu.Unlock()
	out := map[string]map[int32]int64{}
	for k, o := range polled {
		if out[k.topic] == nil {
			out[k.topic] = map[int32]int64{}
		}
		out[k.topic][k.partition] = o
	}
	return out
}

// rewind moves every assigned partition back to its committed offset (or the reset policy
// without one), so the records of an aborted transaction are polled again.
func (s *TxnSession) rewind(ctx context.Context, g *grouper) error {
	g.mu.Lock()
	ps := clonePartitions(g.assigned)
	g.mu.Unlock()
	if len(ps) == 0 {
		return nil
	}
	offs, err := g.fetchCommitted(ctx, ps)
	if err != nil {
		return err
	}
	for t, parts := range ps {
		for _, p := range parts {
			o := Offset{kind: 4} // AutoOffsetReset
			if c, ok := offs[tp{t, p}]; ok {
				o = OffsetAt(c)
			}
			// A partition revoked meanwhile is not assigned any more: nothing to rewind.
			_ = s.cl.Seek(t, p, o)
		}
	}
	return nil
}

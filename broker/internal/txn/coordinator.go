package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/spoolmq/spool/broker/internal/storage"
	"github.com/spoolmq/spool/protocol-spec/wire"
	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

// Config configures a coordinator.
type Config struct {
	// MaxTimeout is transaction.max.timeout.ms: InitProducerId asking for more gets
	// INVALID_TRANSACTION_TIMEOUT.
	MaxTimeout time.Duration
	// AbortInterval is transaction.abort.timed.out.transaction.cleanup.interval.ms: how often
	// open transactions are checked against their timeout.
	AbortInterval time.Duration
	// NewProducerID hands out a cluster-wide unique producer id.
	NewProducerID func(ctx context.Context) (int64, error)
	// Markers writes the commit or abort markers of a transaction to its partitions.
	Markers MarkerWriter
	Log     *slog.Logger
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
}

// Partition is a __transaction_state partition this broker leads.
type Partition interface {
	// Append appends records (one batch) as the partition's leader: one write, no wait.
	Append(records []byte) (storage.AppendResult, error)
	// Wait returns once everything below end is committed: durable, and in a cluster on
	// every in-sync replica.
	Wait(ctx context.Context, end int64) error
	// EachRecord replays the partition's log from its start, when the partition is loaded.
	EachRecord(fn func(batch.Record)) error
}

// Markers is one transaction's decision to write to its partitions.
type Markers struct {
	TransactionalID  string
	ProducerID       int64
	Epoch            int16
	Commit           bool
	CoordinatorEpoch int32
	Partitions       []TopicPartition
}

// MarkerWriter writes a transaction's markers: it returns nil once every partition has its
// marker committed, or an error (the coordinator retries). On a single node the server
// appends them through the partition manager; in a cluster it will send WriteTxnMarkers to
// each partition's leader.
type MarkerWriter interface {
	WriteMarkers(ctx context.Context, m Markers) error
}

// entry is one transactional id's metadata; busy while a record of it is being committed.
type entry struct {
	meta Meta
	busy bool
}

// owned is a __transaction_state partition led and loaded here; gen changes with each
// election, so a completion from an earlier leadership is recognised and dropped.
type owned struct {
	part  Partition
	epoch int32 // the partition's leader epoch: the coordinator epoch of markers
	gen   uint64
}

// Coordinator is the transaction coordinator of the __transaction_state partitions this
// broker leads.
//
// Concurrency: mu guards the maps and every entry. It is held for the pure Step and for one
// append (a write, no wait), never across a commit wait, a producer id allocation or a marker
// write: those run unlocked on goroutines the coordinator tracks (wg), and their completions
// re-take mu and check that the partition is still owned by the same election (gen) before
// they apply anything. An id whose record is being committed is busy: requests for it answer
// CONCURRENT_TRANSACTIONS, which clients retry.
type Coordinator struct {
	cfg     Config
	log     *slog.Logger
	mu      sync.Mutex
	txns    map[string]*entry
	owned   map[int32]owned
	loading map[int32]uint64
	gen     uint64
	nparts  int32
	closed  bool
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// New creates a coordinator that owns no partition yet (see OnElection).
func New(cfg Config) *Coordinator {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxTimeout == 0 {
		cfg.MaxTimeout = 15 * time.Minute
	}
	if cfg.AbortInterval == 0 {
		cfg.AbortInterval = 10 * time.Second
	}
	c := &Coordinator{cfg: cfg, log: cfg.Log, txns: map[string]*entry{}, owned: map[int32]owned{}, loading: map[int32]uint64{}}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.wg.Add(1)
	go c.expireLoop()
	return c
}

// Close stops the coordinator's goroutines and waits for them.
func (c *Coordinator) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
}

// servingLocked is nil when the id's partition is led and loaded here, else the error to
// answer: COORDINATOR_LOAD_IN_PROGRESS while it loads, NOT_COORDINATOR otherwise.
func (c *Coordinator) servingLocked(id string) (int32, *wire.Error) {
	if c.nparts == 0 {
		return -1, wire.ErrNotCoordinator
	}
	p := PartitionFor(id, c.nparts)
	if _, ok := c.owned[p]; ok {
		return p, nil
	}
	if _, ok := c.loading[p]; ok {
		return p, wire.ErrCoordinatorLoadInProgress
	}
	return p, wire.ErrNotCoordinator
}

// Serving is nil when this coordinator serves the transactional id, else the error to answer.
func (c *Coordinator) Serving(id string) *wire.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, e := c.servingLocked(id)
	return e
}

// InitProducerID is InitProducerId with a transactional id; done gets the producer id and
// epoch, or the error.
func (c *Coordinator) InitProducerID(id string, timeoutMs int32, pid int64, epoch int16, done func(int64, int16, *wire.Error)) {
	if timeoutMs <= 0 || time.Duration(timeoutMs)*time.Millisecond > c.cfg.MaxTimeout {
		done(-1, -1, wire.ErrInvalidTransactionTimeout)
		return
	}
	c.apply(id, Input{Event: Init, ProducerID: pid, Epoch: epoch, TimeoutMs: timeoutMs}, func(m Meta, e *wire.Error) {
		if e != nil {
			done(-1, -1, e)
			return
		}
		done(m.ProducerID, m.Epoch, nil)
	})
}

// AddPartitions is AddPartitionsToTxn (and AddOffsetsToTxn with the group's partition).
func (c *Coordinator) AddPartitions(id string, pid int64, epoch int16, parts []TopicPartition, done func(*wire.Error)) {
	c.apply(id, Input{Event: AddPartitions, ProducerID: pid, Epoch: epoch, Partitions: parts}, func(_ Meta, e *wire.Error) { done(e) })
}

// EndTxn is EndTxn: done is called once the decision is durable; the markers follow.
func (c *Coordinator) EndTxn(id string, pid int64, epoch int16, commit bool, done func(*wire.Error)) {
	c.apply(id, Input{Event: End, ProducerID: pid, Epoch: epoch, Commit: commit}, func(_ Meta, e *wire.Error) { done(e) })
}

// Verify is KIP-890's check of a transactional produce: the producer must be the id's
// current one, with an open transaction that holds the partition. Its answer for a stale
// epoch is PRODUCER_FENCED (the produce handler maps it to what the client understands); for
// a partition not in the transaction INVALID_TXN_STATE.
func (c *Coordinator) Verify(id string, pid int64, epoch int16, tp TopicPartition) *wire.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, e := c.servingLocked(id); e != nil {
		return e
	}
	en := c.txns[id]
	switch {
	case en == nil || en.meta.ProducerID != pid:
		return wire.ErrInvalidProducerIdMapping
	case epoch < en.meta.Epoch:
		return wire.ErrProducerFenced
	case epoch > en.meta.Epoch:
		return wire.ErrInvalidProducerEpoch
	case en.meta.State != Ongoing:
		return wire.ErrInvalidTxnState
	}
	if _, ok := sort.Find(len(en.meta.Partitions), func(i int) int { return compareTP(tp, en.meta.Partitions[i]) }); !ok {
		return wire.ErrInvalidTxnState
	}
	return nil
}

var errNotOwned = errors.New("the transaction's partition is not led here")

// apply runs one event through Step and carries out its effects; reply is called once.
func (c *Coordinator) apply(id string, in Input, reply func(Meta, *wire.Error)) {
	havePID := false
	for {
		c.mu.Lock()
		p, serr := c.servingLocked(id)
		if serr != nil {
			c.mu.Unlock()
			reply(Meta{}, serr)
			return
		}
		en := c.txns[id]
		if en != nil && en.busy {
			c.mu.Unlock()
			reply(Meta{}, wire.ErrConcurrentTransactions)
			return
		}
		found := en != nil
		m := Meta{ID: id}
		if found {
			m = en.meta
		}
		if in.Event == Init && !havePID && (!found || m.Epoch >= maxEpoch) {
			// A new producer id is needed: allocate it unlocked (the store may be remote),
			// then start over.
			c.mu.Unlock()
			pid, err := c.cfg.NewProducerID(c.ctx)
			if err != nil {
				c.log.Error("allocating a producer id", "transactional_id", id, "err", err)
				reply(Meta{}, wire.ErrCoordinatorNotAvailable)
				return
			}
			in.NewProducerID, havePID = pid, true
			continue
		}
		out := Step(m, found, in, c.cfg.Now().UnixMilli())
		if out.Effects&Persist == 0 {
			c.mu.Unlock()
			reply(out.Next, out.Err)
			return
		}
		own := c.owned[p]
		end, err := c.appendLocked(own, out.Next)
		if err != nil {
			c.mu.Unlock()
			c.log.Warn("writing transaction state", "transactional_id", id, "err", err)
			reply(Meta{}, wire.ErrNotCoordinator)
			return
		}
		if en == nil {
			en = &entry{meta: out.Next}
			c.txns[id] = en
		}
		en.busy = true
		c.wg.Add(1)
		c.mu.Unlock()
		go func() {
			defer c.wg.Done()
			err := own.part.Wait(c.ctx, end)
			c.mu.Lock()
			if cur, ok := c.owned[p]; !ok || cur.gen != own.gen || c.txns[id] != en {
				c.mu.Unlock()
				reply(Meta{}, wire.ErrNotCoordinator) // resigned meanwhile: the new owner decides
				return
			}
			en.busy = false
			if err != nil {
				if !found {
					delete(c.txns, id)
				}
				c.mu.Unlock()
				c.log.Warn("committing transaction state", "transactional_id", id, "err", err)
				reply(Meta{}, wire.ErrNotCoordinator)
				return
			}
			en.meta = out.Next
			c.mu.Unlock()
			if out.Effects&WriteMarkers == 0 {
				reply(out.Next, out.Err)
				return
			}
			// The decision is durable. The answer waits for the markers when they go through
			// at once (so the producer's next transaction does not meet
			// CONCURRENT_TRANSACTIONS, and a read_committed consumer sees the commit when
			// the producer does), but not for their retries.
			c.writeMarkers(p, own, out.Next, func() { reply(out.Next, out.Err) })
		}()
		return
	}
}

// appendLocked appends m's record to its partition; it returns the end offset to wait for.
func (c *Coordinator) appendLocked(own owned, m Meta) (int64, error) {
	if own.part == nil {
		return 0, errNotOwned
	}
	b := batch.NewBuilder()
	b.Append(c.cfg.Now().UnixMilli(), Key(m.ID), Value(m), nil)
	recs, err := b.Finish()
	if err != nil {
		return 0, err
	}
	res, err := own.part.Append(recs)
	if err != nil {
		return 0, err
	}
	return res.LastOffset + 1, nil
}

// writeMarkers writes a prepared transaction's markers, retrying until they are written or
// the partition's leadership here ends, then completes the transaction. first, if not nil, is
// called once: when the transaction completed, or after the first attempt failed (the retries
// go on without anyone waiting). It runs on its own goroutine (the caller's, tracked by wg).
func (c *Coordinator) writeMarkers(p int32, own owned, m Meta, first func()) {
	once := func() {
		if first != nil {
			first()
			first = nil
		}
	}
	defer once()
	mk := Markers{TransactionalID: m.ID, ProducerID: m.ProducerID, Epoch: m.Epoch, Commit: m.State == PrepareCommit, CoordinatorEpoch: own.epoch, Partitions: m.Partitions}
	backoff := 20 * time.Millisecond
	for {
		err := c.cfg.Markers.WriteMarkers(c.ctx, mk)
		if err == nil {
			break
		}
		if c.ctx.Err() != nil {
			return // closing
		}
		c.log.Warn("writing transaction markers; retrying", "transactional_id", m.ID, "err", err)
		once()
		select {
		case <-c.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
		c.mu.Lock()
		cur, ok := c.owned[p]
		c.mu.Unlock()
		if !ok || cur.gen != own.gen {
			return // the new coordinator resumes them
		}
	}
	done := make(chan struct{})
	c.apply(m.ID, Input{Event: MarkersWritten}, func(_ Meta, e *wire.Error) {
		if e != nil && e != wire.ErrNotCoordinator {
			c.log.Warn("completing a transaction", "transactional_id", m.ID, "err", e)
		}
		close(done)
	})
	<-done
}

// OnElection makes the coordinator serve the transactional ids of partition p (of n), led
// here at leader epoch epoch: it loads them from the partition's log (meanwhile they answer
// COORDINATOR_LOAD_IN_PROGRESS), then resumes the markers of transactions left preparing.
func (c *Coordinator) OnElection(p, n int32, epoch int32, part Partition) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.nparts = n
	c.gen++
	token := c.gen
	if _, ok := c.owned[p]; ok {
		// Led again at a new epoch: what is in flight belongs to the old leadership (its
		// completions find the generation changed); start over from the log.
		c.dropLocked(p)
	}
	c.loading[p] = token
	c.mu.Unlock()

	start := time.Now()
	loaded, err := load(part, func(id string) bool { return PartitionFor(id, n) == p }, c.log)
	c.mu.Lock()
	if c.loading[p] != token || c.closed {
		c.mu.Unlock()
		return nil
	}
	delete(c.loading, p)
	if err != nil {
		c.mu.Unlock()
		return fmt.Errorf("loading %s-%d: %w", Topic, p, err)
	}
	own := owned{part: part, epoch: epoch, gen: token}
	var resume []Meta
	for id, m := range loaded {
		c.txns[id] = &entry{meta: m}
		if m.State == PrepareCommit || m.State == PrepareAbort {
			resume = append(resume, m)
		}
	}
	c.owned[p] = own
	c.wg.Add(len(resume))
	c.mu.Unlock()
	for _, m := range resume {
		go func() {
			defer c.wg.Done()
			c.writeMarkers(p, own, m, nil)
		}()
	}
	if len(loaded) > 0 {
		c.log.Info("loaded transactional ids", "partition", p, "ids", len(loaded), "resumed", len(resume), "took", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// OnResignation stops serving the ids of partition p.
func (c *Coordinator) OnResignation(p int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.loading, p)
	if _, ok := c.owned[p]; !ok {
		return
	}
	c.dropLocked(p)
}

// dropLocked forgets partition p and its ids (mu held).
func (c *Coordinator) dropLocked(p int32) {
	delete(c.owned, p)
	for id := range c.txns {
		if PartitionFor(id, c.nparts) == p {
			delete(c.txns, id)
		}
	}
}

// load reads the transactional ids mine picks from a __transaction_state log.
func load(l Partition, mine func(string) bool, log *slog.Logger) (map[string]Meta, error) {
	out := map[string]Meta{}
	err := l.EachRecord(func(r batch.Record) {
		id, err := DecodeKey(r.Key)
		if err != nil {
			log.Warn("skipping a "+Topic+" record", "offset", r.Offset, "err", err)
			return
		}
		if !mine(id) {
			return
		}
		if r.Value == nil {
			delete(out, id)
			return
		}
		m, err := DecodeValue(id, r.Value)
		if err != nil {
			log.Warn("skipping a "+Topic+" record", "offset", r.Offset, "err", err)
			return
		}
		out[id] = m
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// expireLoop aborts transactions past their timeout, every AbortInterval.
func (c *Coordinator) expireLoop() {
	defer c.wg.Done()
	t := time.NewTicker(c.cfg.AbortInterval)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
		c.ExpireNow()
	}
}

// ExpireNow aborts every open transaction past its timeout (the timer's work).
func (c *Coordinator) ExpireNow() {
	now := c.cfg.Now().UnixMilli()
	c.mu.Lock()
	var ids []string
	for id, en := range c.txns {
		if !en.busy && en.meta.State == Ongoing && now >= en.meta.StartMs+int64(en.meta.TimeoutMs) {
			ids = append(ids, id)
		}
	}
	c.mu.Unlock()
	for _, id := range ids {
		c.log.Info("aborting a transaction past its timeout", "transactional_id", id)
		c.apply(id, Input{Event: Expire}, func(_ Meta, e *wire.Error) {
			if e != nil && e != wire.ErrConcurrentTransactions {
				c.log.Warn("aborting an expired transaction", "transactional_id", id, "err", e)
			}
		})
	}
}

// Described is a transaction as DescribeTransactions and ListTransactions show it.
type Described struct {
	Meta
	Found bool
}

// Describe returns the id's metadata (Found false when unknown), or the serving error.
func (c *Coordinator) Describe(id string) (Described, *wire.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, e := c.servingLocked(id); e != nil {
		return Described{}, e
	}
	en := c.txns[id]
	if en == nil {
		return Described{}, nil
	}
	return Described{Meta: en.meta.Clone(), Found: true}, nil
}

// List returns the transactional ids of the partitions this coordinator serves, sorted by id.
func (c *Coordinator) List() []Meta {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Meta, 0, len(c.txns))
	for _, en := range c.txns {
		out = append(out, en.meta.Clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

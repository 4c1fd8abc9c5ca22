package spool

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
	"github.com/spoolmq/spool/protocol-spec/wire/batch"
	"github.com/spoolmq/spool/protocol-spec/wire/compress"
)

// ErrBufferFull is given to a record's callback when the buffer is full and
// BlockOnFullBuffer(false) is set.
var ErrBufferFull = errors.New("spool: produce buffer full")

// ErrRecordTooLarge is given for a record larger than MaxBatchBytes.
var ErrRecordTooLarge = errors.New("spool: record larger than MaxBatchBytes")

// promise is a record produced with Produce, waiting in its batch for the outcome.
type promise struct {
	r  *Record
	cb func(*Record, error)
}

// pbatch is one partition's batch: open while records are added, then sent (with the same
// bytes and sequence on every retry) until it is acknowledged or fails.
type pbatch struct {
	tp
	b       *batch.Builder
	proms   []promise    // Produce's records, in order
	tracked []trackedRec // ProduceTracked's records, in order (producer_tracked.go)
	// trackedSize is what the tracked records count against the buffer (Delivery.Bytes).
	trackedSize int64
	size        int
	created     time.Time
	data        []byte // the encoded batch, fixed once sent
	pidGen      uint64 // the producer id generation data was encoded with (idempotence)
	// delivery hands the tracked records to the DeliveryHandler; their keys and values are
	// in the batch's buffer, so the batch is recycled only once the delivery is released.
	delivery Delivery
	// early marks data encoded by Produce (see encodeEarly) and not sent yet: under
	// idempotence its numbers are only good while the producer id it used is current.
	early    bool
	attempts int
	lastErr  error
	inflight bool
	// done marks a batch whose outcome (base, err) is known but whose records wait for the
	// batches before it, so that callbacks run in produce order.
	done bool
	base int64
	err  error
}

type tp struct {
	topic     string
	partition int32
}

// partBuf is one partition's produce state. Sealed batches wait in queue, oldest first; the
// first sent of them have gone out in the current round (in flight, done, or failed and
// waiting to be resent).
type partBuf struct {
	tp
	mu       sync.Mutex
	cur      *pbatch
	lastSize int // bytes of the last batch sealed, the capacity a new one starts with
	queue    []*pbatch
	sent     int
	inflight int
	// delivering counts batches popped from queue whose callbacks are still running.
	delivering int
	leader     int32 // the broker the in-flight batches went to
	// rewind is set when a batch failed retriably: once nothing is in flight, every batch not
	// yet done is resent in order, with its original sequence numbers.
	rewind  bool
	retryAt time.Time
	// seqGap is set when a batch failed for good under idempotence: the batches encoded
	// behind it can never be accepted, so when refused (OUT_OF_ORDER_SEQUENCE_NUMBER) they are
	// renumbered under a new producer id. The first batch numbered under it clears seqGap.
	seqGap bool
	seq    int32
	pidGen uint64
	// ackedGen is the producer id generation of the last batch the broker acknowledged: from
	// then on the broker knows this producer on this partition and rejects any sequence but
	// the next one. Before that, Kafka (and we) accept any first sequence from an unknown
	// producer, so a later batch could be written ahead of an earlier one that failed
	// retriably, which then could never be written (OUT_OF_ORDER_SEQUENCE_NUMBER). Until then
	// the partition has one batch in flight at a time.
	ackedGen uint64
	// txnAdded is the number of the transaction this partition was added to
	// (AddPartitionsToTxn, txn.go); its batches are sent only while that transaction runs.
	txnAdded uint64
}

type producer struct {
	cl       *Client
	slots    bufferSlots
	mu       sync.RWMutex
	parts    map[tp]*partBuf
	byTopic  atomic.Pointer[map[string][]*partBuf] // parts by topic and partition, copy on write
	list     []*partBuf
	wakeCh   chan struct{}
	flushing atomic.Int32
	starved  atomic.Int32 // Produce calls waiting for buffer space
	hurry    atomic.Bool  // SendBuffered was called: the next pass sends without lingering
	buffered atomic.Int64
	doneMu   sync.Mutex
	doneCh   chan struct{}
	quit     chan struct{}
	quitOnce sync.Once
	wg       sync.WaitGroup
	start    sync.Once
	free     chan *pbatch    // recycled batches, whose buffers have grown
	pipes    map[int32]*pipe // per leader; touched only by the sender goroutine

	clock recordClock

	// peakInFlight is the most batches of one partition seen in flight at once (for tests).
	peakInFlight atomic.Int32

	// Records whose topic is not known yet, by topic (producer_wait.go); waitingTopics
	// counts the topics, so that Produce takes waitMu only when some wait.
	waitMu        sync.Mutex
	waiting       map[string][]waitingRec
	waitingTopics atomic.Int32

	// Idempotence state. ident is replaced by the sender goroutine only.
	ident   atomic.Pointer[producerIdent]
	needPID atomic.Bool
	idemp   atomic.Bool

	// txn is the transaction manager of a transactional producer (txn.go), nil otherwise.
	txn *txnManager
}

// producerIdent is the idempotent producer id in use and its generation (1 for the first id
// of the client, counting up): batches remember the generation they were numbered under.
type producerIdent struct {
	id    int64
	epoch int16
	gen   uint64
}

// pidGen is the generation of the producer id in use, 0 before the first.
func (p *producer) pidGen() uint64 {
	if id := p.ident.Load(); id != nil {
		return id.gen
	}
	return 0
}

func newProducer(cl *Client) *producer {
	p := &producer{
		cl: cl, parts: map[tp]*partBuf{},
		wakeCh: make(chan struct{}, 1), doneCh: make(chan struct{}), quit: make(chan struct{}),
		free: make(chan *pbatch, 256), pipes: map[int32]*pipe{},
	}
	p.slots.max, p.slots.maxBytes = int64(cl.cfg.maxBuffered), cl.cfg.maxBufBytes
	p.idemp.Store(cl.cfg.idempotent)
	p.needPID.Store(cl.cfg.idempotent)
	if cl.cfg.txnID != "" {
		p.txn = newTxnManager(cl)
	}
	return p
}

// recordClock stamps records. time.Now reads two clocks (wall and monotonic), which costs as
// much as a third of Produce on our VMs; this reads the monotonic one and adds it to a wall
// time re-read every second, so a step of the wall clock shows within a second.
type recordClock struct {
	anchor atomic.Pointer[time.Time]
}

const clockReanchor = time.Second

func (c *recordClock) now() time.Time {
	if a := c.anchor.Load(); a != nil {
		if d := time.Since(*a); d >= 0 && d < clockReanchor {
			return a.Add(d)
		}
	}
	t := time.Now()
	c.anchor.Store(&t)
	return t
}

func (p *producer) wake() {
	select {
	case p.wakeCh <- struct{}{}:
	default:
	}
}

// Produce buffers r for its topic and calls cb (which may be nil) once the record is
// acknowledged or has failed. It blocks only with BlockOnFullBuffer(true), while the buffer
// is full; ctx bounds that wait. A record whose topic the client does not know yet waits for
// the topic without blocking Produce (AllowAutoTopicCreation), and fails with
// wire.ErrUnknownTopicOrPartition if it still does not exist after DeliveryTimeout. Records of one
// partition are delivered in the order they were produced. cb runs on an internal goroutine
// and must not block for long.
func (cl *Client) Produce(ctx context.Context, r *Record, cb func(*Record, error)) {
	cl.produce(ctx, r, cb, false, 0)
}

// produce is Produce, and ProduceTracked when tracked (cb is nil then, and r the caller's,
// read only during the call).
func (cl *Client) produce(ctx context.Context, r *Record, cb func(*Record, error), tracked bool, token uint64) {
	p := cl.prod
	fail := func(err error) {
		if tracked {
			p.failTracked(r, token, err)
		} else if cb != nil {
			cb(r, err)
		}
	}
	if cl.closed() {
		fail(ErrClosed)
		return
	}
	if p.txn != nil {
		// Only while a transaction runs (BeginTransaction); reads an atomic when so.
		if err := p.txn.admit(); err != nil {
			fail(err)
			return
		}
	}
	size := recordSize(r)
	if err := p.acquireSlot(ctx, int64(size)); err != nil {
		fail(err)
		return
	}
	tm := cl.knownTopic(r.Topic)
	if tm == nil || p.waitingTopics.Load() > 0 {
		// A topic not known yet: the record waits for it (producer_wait.go), without
		// blocking, behind any record of the topic already waiting.
		if tm = p.park(ctx, r, cb, tracked, token, size); tm == nil {
			return
		}
	}
	if cb, err := p.appendRecord(ctx, r, cb, tracked, token, size, tm); err != nil {
		p.failRecord(r, cb, tracked, token, err)
	}
}

// failRecord gives r, which never joined a batch, its outcome err.
func (p *producer) failRecord(r *Record, cb func(*Record, error), tracked bool, token uint64, err error) {
	if tracked {
		p.failTracked(r, token, err)
	} else if cb != nil {
		cb(r, err)
	}
}

// appendRecord puts r, which holds size bytes of the buffer, into its partition's open batch,
// tm being its topic's metadata. If r cannot join a batch, it gives back r's room in the buffer
// and returns why, with the callback (cb, or the one ending r's producer span) that the caller
// then calls with the error, outside its locks.
func (p *producer) appendRecord(ctx context.Context, r *Record, cb func(*Record, error), tracked bool, token uint64, size int, tm *topicMeta) (func(*Record, error), error) {
	cl := p.cl
	n := len(tm.partitions)
	part := cl.cfg.partitioner.Partition(r, n)
	if part < 0 || part >= n {
		p.slots.release(1, int64(size))
		// The Kafka code for a partition the topic does not have, as a broker would answer.
		return cb, fmt.Errorf("spool: partitioner chose partition %d of %d for topic %q: %w", part, n, r.Topic, wire.ErrUnknownTopicOrPartition)
	}
	r.Partition = int32(part)
	if r.Timestamp.IsZero() {
		r.Timestamp = p.clock.now()
	}
	trackedSize := size // what the caller reserved, before a trace context joins the headers
	if cl.cfg.propagator != nil || cl.tel != nil {
		if !tracked {
			cb = cl.traceProduce(ctx, r, cb)
		} else if cl.cfg.propagator != nil {
			cl.injectTrace(ctx, r) // no span: a tracked record has no callback to end it
		}
		if n := recordSize(r); n != size { // the trace context went into the headers
			p.slots.usedBytes.Add(int64(n - size))
			size = n
		}
	}
	if size+batch.HeaderSize > cl.cfg.maxBatchBytes {
		p.slots.release(1, int64(size))
		return cb, ErrRecordTooLarge
	}
	p.start.Do(func() {
		p.wg.Add(1)
		go p.run()
	})
	pb := p.part(r.Topic, r.Partition)
	pb.mu.Lock()
	wake := false
	if pb.cur != nil && (pb.cur.size+size > cl.cfg.maxBatchBytes || pb.cur.b.NumRecords() >= cl.cfg.maxBatchRecords) {
		p.encodeEarly(pb, pb.seal())
		wake = true
	}
	if pb.cur == nil {
		var b *pbatch
		select {
		case b = <-p.free:
		default:
			b = &pbatch{b: batch.NewBuilder()}
		}
		b.b.Reset()
		b.b.Grow(pb.lastSize)
		b.b.SetCodecLevel(cl.cfg.codec, cl.cfg.codecLevels[cl.cfg.codec])
		b.b.SetSkipIneffectiveCompression(true)
		b.b.SetTransactional(p.txn != nil)
		b.created = time.Now()
		b.size = batch.HeaderSize
		b.tp = pb.tp
		pb.cur = b
		wake = true
	}
	b := pb.cur
	i := b.b.NumRecords()
	ts := r.Timestamp.UnixMilli()
	b.b.Append(ts, r.Key, r.Value, r.Headers)
	if tracked {
		b.tracked = append(b.tracked, newTrackedRec(i, b.b.Size(), r, token, ts))
		b.trackedSize += int64(trackedSize)
	} else {
		b.proms = append(b.proms, promise{r, cb})
	}
	b.size += size
	// A record joining an open batch needs no wake-up even without linger: the sender saw
	// the batch when it was opened and takes it once a request slot frees up.
	pb.mu.Unlock()
	p.buffered.Add(1)
	if wake {
		p.wake()
	}
	return nil, nil
}

// recordSize is what a record counts against MaxBatchBytes and MaxBufferedBytes: its bytes
// plus the most framing it may need in a batch.
func recordSize(r *Record) int {
	size := 21 + len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		size += 10 + len(h.Key) + len(h.Value)
	}
	return size
}

// ProduceSync produces the records and waits until all are acknowledged or failed, returning
// the first error, or until ctx ends, returning ctx's error: records already buffered then
// stay buffered and may still be delivered (as with Flush).
func (cl *Client) ProduceSync(ctx context.Context, rs ...*Record) error {
	if len(rs) == 0 {
		return nil
	}
	var (
		left  atomic.Int64
		done  = make(chan struct{})
		mu    sync.Mutex
		first error
	)
	left.Store(int64(len(rs)))
	cb := func(_ *Record, err error) {
		if err != nil {
			mu.Lock()
			if first == nil {
				first = err
			}
			mu.Unlock()
		}
		if left.Add(-1) == 0 {
			close(done)
		}
	}
	for _, r := range rs {
		cl.Produce(ctx, r, cb)
	}
	cl.prod.flushing.Add(1)
	defer cl.prod.flushing.Add(-1)
	cl.prod.wake()
	select {
	case <-done:
		mu.Lock()
		defer mu.Unlock()
		return first
	case <-ctx.Done():
		return fmt.Errorf("spool: waiting for %d record(s) to be acknowledged: %w", left.Load(), ctx.Err())
	}
}

// Flush sends every buffered record without waiting for linger and waits until all records
// produced before the call are acknowledged or failed, or ctx ends.
func (cl *Client) Flush(ctx context.Context) error {
	p := cl.prod
	p.flushing.Add(1)
	defer p.flushing.Add(-1)
	p.wake()
	for {
		p.doneMu.Lock()
		ch := p.doneCh
		p.doneMu.Unlock()
		if p.buffered.Load() == 0 {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// SendBuffered has every open batch sent as soon as a request slot allows, without waiting
// for linger, and returns at once. A caller that bounds its records itself (libspool, whose
// queue counts records until their reports are served) calls it when its bound is reached,
// as Produce does for itself when it waits for buffer space: records that nothing more will
// join gain nothing by lingering.
func (cl *Client) SendBuffered() {
	cl.prod.hurry.Store(true)
	cl.prod.wake()
}

// BufferedRecords is the number of records produced and not yet acknowledged or failed.
func (cl *Client) BufferedRecords() int64 { return cl.prod.buffered.Load() }

// seal queues the open batch for sending and returns it. Called with pb.mu held.
func (pb *partBuf) seal() *pbatch {
	b := pb.cur
	pb.lastSize = b.size
	pb.queue = append(pb.queue, b)
	pb.cur = nil
	return b
}

// encodeEarly encodes b, just sealed by Produce, on the producing goroutine while its records
// are still in this core's cache. Left to the sender, the checksum would read the batch back
// from memory once a request slot frees up, up to MaxBufferedRecords later: 0.22 µs per 1 KiB
// record there against 0.07 µs here (Finish's CRC-32C ran at 4.5 GB/s on the sender, 12% of
// the client's CPU in a 1 KiB produce; a batch checksummed right after being written runs at
// 7-11 GB/s on our VMs). Compressed batches stay with the sender, so that Produce does not
// stall for a codec. Under idempotence b is numbered only when the sender would give it the
// same sequence: the producer id is current and not being replaced, and every batch ahead
// of it is numbered under that id. Called with pb.mu held; b is pb's last queued batch.
func (p *producer) encodeEarly(pb *partBuf, b *pbatch) {
	if p.cl.cfg.codec != compress.None || p.txn != nil {
		// A transactional batch is numbered only when sent: an abort drops the batches not
		// sent, which then must hold no sequence numbers (txn.go).
		return
	}
	var id *producerIdent
	seq := pb.seq
	if p.idemp.Load() {
		id = p.ident.Load()
		if id == nil || p.needPID.Load() || pb.rewind {
			return
		}
		ahead := pb.queue[:len(pb.queue)-1]
		switch {
		case pb.pidGen != id.gen && len(ahead) == 0:
			seq = 0 // the partition's first batch under this id, as the sender would number it
		case pb.pidGen != id.gen || pb.seqGap:
			return
		}
		for _, q := range ahead {
			if q.data == nil || q.pidGen != id.gen {
				return
			}
		}
		b.b.SetProducer(id.id, id.epoch, seq)
	}
	data, err := b.b.Finish()
	if err != nil {
		return // the sender encodes it again and fails it in its place
	}
	if id != nil {
		b.pidGen = id.gen
		pb.pidGen, pb.seq, pb.seqGap = id.gen, seq+int32(b.b.NumRecords()), false
	}
	b.data, b.early = data, true
}

// part returns the state of one partition. It runs once per record, so the lookup reads a
// snapshot (byTopic) without locking; only a partition's first record takes p.mu.
func (p *producer) part(topic string, partition int32) *partBuf {
	if m := p.byTopic.Load(); m != nil {
		if ps := (*m)[topic]; int(partition) < len(ps) && ps[partition] != nil {
			return ps[partition]
		}
	}
	k := tp{topic, partition}
	p.mu.Lock()
	defer p.mu.Unlock()
	pb := p.parts[k]
	if pb != nil {
		return pb
	}
	pb = &partBuf{tp: k}
	p.parts[k] = pb
	p.list = append(p.list, pb)
	var m map[string][]*partBuf
	if old := p.byTopic.Load(); old != nil {
		m = maps.Clone(*old)
	} else {
		m = map[string][]*partBuf{}
	}
	ps := make([]*partBuf, max(len(m[topic]), int(partition)+1))
	copy(ps, m[topic])
	ps[partition] = pb
	m[topic] = ps
	p.byTopic.Store(&m)
	return pb
}

func (p *producer) close() {
	p.quitOnce.Do(func() { close(p.quit) })
	p.wg.Wait()
	// Fail whatever is left.
	p.mu.RLock()
	list := append([]*partBuf(nil), p.list...)
	p.mu.RUnlock()
	for _, pb := range list {
		pb.mu.Lock()
		bs := pb.queue
		if pb.cur != nil {
			bs = append(bs, pb.cur)
		}
		pb.queue, pb.cur = nil, nil
		pb.mu.Unlock()
		for _, b := range bs {
			if b.done {
				p.finish(b, b.base, b.err)
			} else {
				p.finish(b, -1, ErrClosed)
			}
		}
	}
	// Nothing is produced any more: let the recycled batches' buffers go.
	for {
		select {
		case <-p.free:
			continue
		default:
		}
		return
	}
}

// finish completes a batch's records and recycles it.
func (p *producer) finish(b *pbatch, base int64, err error) {
	n := b.b.NumRecords()
	if err != nil && p.txn != nil && n > 0 {
		p.txn.recordFailed(err)
	}
	if p.cl.tel != nil && err == nil && n > 0 {
		p.cl.tel.batchAcked(b.topic, n, b.size)
	}
	if len(b.proms) > 0 {
		next := 0 // of b.tracked: the records in between are b.proms's, in order
		k := 0
		for i := range n {
			if next < len(b.tracked) && b.tracked[next].index() == i {
				next++
				continue
			}
			pr := b.proms[k]
			k++
			if err == nil {
				if base >= 0 {
					pr.r.Offset = base + int64(i)
				} else {
					pr.r.Offset = -1
				}
			}
			if pr.cb != nil {
				pr.cb(pr.r, err)
			}
		}
	}
	d := b.deliver(p, base, err) // nil without tracked records or a handler for them
	p.slots.release(n, int64(b.size-batch.HeaderSize))
	p.buffered.Add(-int64(n))
	p.batchDone()
	if d != nil {
		d.Release() // finish's own share: the handler may have released its share already
		return
	}
	p.recycle(b)
}

// recycle empties a finished batch and keeps it for reuse.
func (p *producer) recycle(b *pbatch) {
	clear(b.proms)
	b.proms = b.proms[:0]
	b.tracked, b.trackedSize = b.tracked[:0], 0
	b.data, b.pidGen, b.early, b.attempts, b.lastErr = nil, 0, false, 0, nil
	b.inflight, b.done, b.base, b.err = false, false, 0, nil
	select {
	case p.free <- b:
	default:
	}
}

// batchDone wakes the Flush calls waiting for a batch to finish.
func (p *producer) batchDone() {
	p.doneMu.Lock()
	close(p.doneCh)
	p.doneCh = make(chan struct{})
	p.doneMu.Unlock()
}

// run is the sender: it collects ready batches into produce requests per leader (at most one
// batch per partition per request, at most MaxInFlight requests per leader outstanding) and
// hands them to the leaders' pipes.
func (p *producer) run() {
	defer p.wg.Done()
	cl := p.cl
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	pidAttempt := 0
	for {
		select {
		case <-p.quit:
			return
		case <-p.wakeCh:
		case <-timer.C:
		}
		var txnRetry time.Time
		if p.txn != nil {
			// A transactional producer's id comes from InitTransactions, and a new epoch
			// from AbortTransaction when a sequence broke: the sender waits for them. It
			// adds the partitions the last pass noted to the transaction first.
			if p.needPID.Load() {
				p.txn.sequenceBroke()
			}
			txnRetry = p.txn.addPending()
		} else if p.needPID.Load() {
			if err := p.initPID(); err != nil {
				cl.cfg.logger.Warn("InitProducerId failed", "err", err)
				d := cl.backoff(pidAttempt)
				pidAttempt++
				timer.Reset(d)
				continue
			}
			pidAttempt = 0
		}
		next := p.collectAndSend()
		if !txnRetry.IsZero() && (next.IsZero() || txnRetry.Before(next)) {
			next = txnRetry
		}
		if !next.IsZero() {
			timer.Reset(max(time.Until(next), 0))
		}
	}
}

func (p *producer) initPID() error {
	ctx, cancel := context.WithTimeout(p.cl.ctx, p.cl.cfg.requestTimeout)
	defer cancel()
	c, err := p.cl.anyConn(ctx)
	if err != nil {
		return err
	}
	if _, err := c.version(22); err != nil {
		// A broker without InitProducerId: produce without idempotence, as franz-go does.
		p.cl.cfg.logger.Warn("broker lacks InitProducerId; producing without idempotence")
		p.idemp.Store(false)
		p.needPID.Store(false)
		return nil
	}
	req := &wire.InitProducerIdRequest{}
	req.Default()
	req.TransactionalId = nil
	req.TransactionTimeoutMs = -1
	req.ProducerId, req.ProducerEpoch = -1, -1
	resp := &wire.InitProducerIdResponse{}
	if err := roundTrip(ctx, c, req, resp); err != nil {
		return err
	}
	if err := wire.ErrorForCode(resp.ErrorCode); err != nil {
		return err
	}
	p.ident.Store(&producerIdent{id: resp.ProducerId, epoch: resp.ProducerEpoch, gen: p.pidGen() + 1})
	p.needPID.Store(false)
	return nil
}

package spool

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

type sendItem struct {
	pb *partBuf
	b  *pbatch
}

// produceReq is one produce request on its way through a leader's pipe.
type produceReq struct {
	req    *wire.ProduceRequest
	resp   *wire.ProduceResponse // nil with acks=0
	items  []sendItem
	ctx    context.Context
	cancel context.CancelFunc
	conn   *conn
	call   *call
	err    error     // set when the request could not be sent
	sent   time.Time // when it was sent, for the latency metric (zero without one)
}

// pipe carries produce requests to one leader. The writer goroutine sends them in order
// without waiting for responses; the reader goroutine waits for the responses in the same
// order (brokers answer in request order) and handles them one at a time, so the results of
// one partition's batches are always seen in send order.
type pipe struct {
	leader   int32
	reqs     chan *produceReq
	sent     chan *produceReq
	inflight int // requests handed to the pipe and not yet handled; sender goroutine only
	handled  chan struct{}
}

func (p *producer) pipe(leader int32) *pipe {
	if pp := p.pipes[leader]; pp != nil {
		return pp
	}
	n := p.cl.cfg.maxInFlight
	pp := &pipe{
		leader: leader, reqs: make(chan *produceReq, n), sent: make(chan *produceReq, n),
		handled: make(chan struct{}, n),
	}
	p.pipes[leader] = pp
	p.wg.Add(2)
	go p.writePipe(pp)
	go p.readPipe(pp)
	return pp
}

// room is how many more requests may go to pp now.
func (pp *pipe) room(maxInFlight int) int {
	for {
		select {
		case <-pp.handled:
			pp.inflight--
			continue
		default:
		}
		return maxInFlight - pp.inflight
	}
}

func (p *producer) writePipe(pp *pipe) {
	defer p.wg.Done()
	cl := p.cl
	timeout := cl.cfg.requestTimeout + cl.cfg.produceTimeout
	for {
		var r *produceReq
		select {
		case r = <-pp.reqs:
		case <-p.quit:
			return
		}
		r.ctx, r.cancel = context.WithTimeout(cl.ctx, timeout)
		if cl.tel != nil {
			r.sent = time.Now()
		}
		r.err = p.sendReq(r, pp.leader)
		// Never blocks: at most MaxInFlight requests are in the pipe.
		pp.sent <- r
	}
}

func (p *producer) sendReq(r *produceReq, leader int32) error {
	c, err := p.cl.connToNode(r.ctx, leader)
	if err != nil {
		return err
	}
	v, err := c.version(0)
	if err != nil {
		return err
	}
	r.conn = c
	r.call = &call{key: 0, version: v, req: r.req, done: make(chan error, 1), splice: r.splice()}
	if r.resp != nil {
		r.call.resp = r.resp
	}
	return c.send(r.ctx, r.call)
}

// splice lists the request's batches in encoding order, for the connection to write them
// from the batches' own buffers. They stay unchanged until the call completes: a batch is
// recycled only after its request was answered or failed.
func (r *produceReq) splice() [][]byte {
	out := make([][]byte, 0, len(r.items))
	for _, t := range r.req.TopicData {
		for _, pd := range t.PartitionData {
			out = append(out, pd.Records)
		}
	}
	return out
}

func (p *producer) readPipe(pp *pipe) {
	defer p.wg.Done()
	for {
		var r *produceReq
		select {
		case r = <-pp.sent:
		case <-p.quit:
			return
		}
		err := r.err
		if err == nil {
			select {
			case err = <-r.call.done:
			case <-r.ctx.Done():
				// A broker that does not answer: drop the connection so that nothing sent on
				// it can land after a retry.
				r.conn.close(fmt.Errorf("produce response timeout: %w", r.ctx.Err()))
				err = <-r.call.done
			}
		}
		r.cancel()
		if err == nil && !r.sent.IsZero() {
			p.cl.tel.request("send", r.sent)
		}
		p.handle(r, err)
		pp.handled <- struct{}{}
		p.wake()
	}
}

// pendingReq is a request being filled by one collect pass.
type pendingReq struct {
	req   *wire.ProduceRequest
	items []sendItem
}

func (p *producer) newPending() *pendingReq {
	req := &wire.ProduceRequest{}
	req.Default()
	req.Acks = int16(p.cl.cfg.acks)
	req.TimeoutMs = int32(p.cl.cfg.produceTimeout / time.Millisecond)
	if p.txn != nil {
		req.TransactionalId = &p.txn.id
	}
	return &pendingReq{req: req}
}

func (pd *pendingReq) add(pb *partBuf, b *pbatch) {
	req := pd.req
	ti := -1
	for i := range req.TopicData {
		if req.TopicData[i].Name == pb.topic {
			ti = i
			break
		}
	}
	if ti < 0 {
		req.TopicData = append(req.TopicData, wire.ProduceRequestTopicProduceData{Name: pb.topic})
		ti = len(req.TopicData) - 1
	}
	req.TopicData[ti].PartitionData = append(req.TopicData[ti].PartitionData,
		wire.ProduceRequestPartitionProduceData{Index: pb.partition, Records: b.data})
	pd.items = append(pd.items, sendItem{pb, b})
}

// leaderPass is what one collect pass builds for one leader: requests in send order, the
// k-th carrying the k-th batch of each partition sent in this pass.
type leaderPass struct {
	pipe *pipe
	room int
	reqs []*pendingReq
}

func (p *producer) collectAndSend() (next time.Time) {
	cl := p.cl
	now := time.Now()
	flushing := p.flushing.Load() > 0 || p.starved.Load() > 0 || p.hurry.Swap(false)
	p.mu.RLock()
	list := p.list
	p.mu.RUnlock()
	var passes map[int32]*leaderPass
	var order []*leaderPass
	needMeta := false
	soonest := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	idemp := p.idemp.Load()
	ident := p.ident.Load()
	gen := p.pidGen()
	var txnNum uint64
	aborting := false
	if p.txn != nil {
		txnNum, aborting = p.txn.numA.Load(), p.txn.aborting.Load()
	}
	for _, pb := range list {
		pb.mu.Lock()
		if aborting {
			p.dropUnsent(pb)
		}
		if p.txn != nil && pb.txnAdded != txnNum {
			// Not in the running transaction yet: the sender adds it first (txn.go).
			if (pb.cur != nil || pb.sent < len(pb.queue)) && p.txn.note(pb.tp) {
				soonest(now)
			}
			ready := pb.popDone()
			pb.mu.Unlock()
			p.deliver(pb, ready)
			continue
		}
		busy := pb.inflight > 0 || pb.delivering > 0
		if pb.rewind {
			if busy {
				pb.mu.Unlock()
				continue
			}
			if pb.retryAt.After(now) {
				soonest(pb.retryAt)
				pb.mu.Unlock()
				continue
			}
			pb.rewind, pb.sent = false, 0
		}
		if !busy && len(pb.queue) > 0 {
			if b := pb.queue[0]; b.lastErr != nil && now.Sub(b.created) > cl.cfg.deliveryTimeout {
				pb.queue = pb.queue[1:]
				pb.sent = max(pb.sent-1, 0)
				if idemp {
					// Its sequence numbers may or may not have been written: only a new
					// producer id makes the partition's sequence consistent again.
					p.needPID.Store(true)
					pb.seqGap = true
				}
				pb.mu.Unlock()
				p.finish(b, -1, fmt.Errorf("spool: delivery timeout: %w", b.lastErr))
				soonest(now)
				continue
			}
		}
		leader := cl.leaderOf(pb.topic, pb.partition)
		if leader < 0 && !busy {
			// Nothing can be sent (a topic deleted, a partition without a leader): what has
			// waited past the delivery timeout fails, rather than waiting for ever.
			if expired := pb.expire(now, cl.cfg.deliveryTimeout); len(expired) > 0 {
				if idemp {
					p.needPID.Store(true)
					pb.seqGap = true
				}
				pb.mu.Unlock()
				err := fmt.Errorf("spool: delivery timeout: %s[%d]: %w", pb.topic, pb.partition, cl.partitionErr(pb.topic, pb.partition))
				for _, b := range expired {
					p.finish(b, -1, err)
				}
				soonest(now)
				continue
			}
		}
		if leader < 0 {
			if pb.sent < len(pb.queue) || pb.cur != nil {
				needMeta = true
				cl.addTopics(pb.topic)
				soonest(now.Add(cl.cfg.retryBackoff))
			}
			pb.mu.Unlock()
			continue
		}
		if busy && leader != pb.leader {
			// Let the batches on the old leader land first, so results stay in send order.
			pb.mu.Unlock()
			continue
		}
		lp := passes[leader]
		for k := 0; ; k++ {
			for pb.sent < len(pb.queue) && pb.queue[pb.sent].done {
				pb.sent++
			}
			open := pb.sent == len(pb.queue) // the next batch to send is the open one
			if open {
				if pb.cur == nil {
					break
				}
				if !flushing && cl.cfg.linger > 0 && now.Before(pb.cur.created.Add(cl.cfg.linger)) {
					soonest(pb.cur.created.Add(cl.cfg.linger))
					break
				}
			}
			if lp == nil {
				pp := p.pipe(leader)
				lp = &leaderPass{pipe: pp, room: pp.room(cl.cfg.maxInFlight)}
				if passes == nil {
					passes = map[int32]*leaderPass{}
				}
				passes[leader] = lp
				order = append(order, lp)
			}
			if k == len(lp.reqs) {
				if k >= lp.room {
					break
				}
				lp.reqs = append(lp.reqs, p.newPending())
			}
			if idemp && pb.inflight > 0 && pb.ackedGen != gen {
				break
			}
			if open {
				if idemp && p.needPID.Load() {
					break
				}
				// Sealed only now that it goes out: a batch sealed while it has to wait for
				// a request slot would wait smaller than it could have grown, and unencoded
				// ahead of the batches Produce seals, which then could not be encoded early.
				pb.seal()
			}
			b := pb.queue[pb.sent]
			if b.early && idemp && (b.pidGen != gen || p.needPID.Load()) {
				// Numbered by Produce under an id that is replaced or about to be, and never
				// sent: numbered again below, as a batch numbered now would be.
				b.data, b.early = nil, false
			}
			if b.data == nil && idemp && p.needPID.Load() {
				// A sequence broke since this pass began: number no batch under the old id.
				break
			}
			if b.data == nil {
				if idemp {
					if pb.pidGen != gen {
						pb.pidGen, pb.seq, pb.seqGap = gen, 0, false
					}
					b.b.SetProducer(ident.id, ident.epoch, pb.seq)
					b.pidGen = gen
					pb.seq += int32(b.b.NumRecords())
				}
				data, err := b.b.Finish()
				if err != nil {
					// Nothing was sent: fail just this batch, in its place in the order, and
					// give its sequence numbers to the next batch so the sequence has no gap.
					if idemp {
						pb.seq -= int32(b.b.NumRecords())
					}
					b.done, b.err = true, fmt.Errorf("spool: encoding batch for %s[%d]: %w", pb.topic, pb.partition, err)
					continue
				}
				b.data = data
			}
			b.inflight, b.early = true, false
			pb.sent++
			pb.inflight++
			pb.leader = leader
			if n := int32(pb.inflight); n > p.peakInFlight.Load() {
				p.peakInFlight.Store(n)
			}
			lp.reqs[k].add(pb, b)
		}
		ready := pb.popDone()
		pb.mu.Unlock()
		p.deliver(pb, ready)
	}
	if needMeta {
		cl.triggerRefresh()
	}
	for _, lp := range order {
		for _, pd := range lp.reqs {
			if len(pd.items) == 0 {
				continue
			}
			r := &produceReq{req: pd.req, items: pd.items}
			if pd.req.Acks != 0 {
				r.resp = &wire.ProduceResponse{}
			}
			lp.pipe.inflight++
			lp.pipe.reqs <- r
		}
	}
	return next
}

// popDone removes the done batches at the head of the queue; pb.mu must be held. The caller
// passes them to deliver once pb.mu is released.
func (pb *partBuf) popDone() []*pbatch {
	var ready []*pbatch
	for len(pb.queue) > 0 && pb.queue[0].done && !pb.queue[0].inflight {
		ready = append(ready, pb.queue[0])
		pb.queue[0] = nil
		pb.queue = pb.queue[1:]
		pb.sent = max(pb.sent-1, 0)
	}
	pb.delivering += len(ready)
	return ready
}

// deliver runs the callbacks of batches taken by popDone, in order.
func (p *producer) deliver(pb *partBuf, ready []*pbatch) {
	if len(ready) == 0 {
		return
	}
	for _, b := range ready {
		p.finish(b, b.base, b.err)
	}
	pb.mu.Lock()
	pb.delivering -= len(ready)
	pb.mu.Unlock()
}

type partResult struct {
	base int64
	err  error
}

func produceResults(resp *wire.ProduceResponse, n int) map[tp]partResult {
	results := make(map[tp]partResult, n)
	for _, t := range resp.Responses {
		for _, pr := range t.PartitionResponses {
			err := wire.ErrorForCode(pr.ErrorCode)
			if errors.Is(err, wire.ErrDuplicateSequenceNumber) {
				// Already written by an earlier attempt whose response was lost.
				err = nil
				pr.BaseOffset = -1
			}
			if err != nil {
				err = withMessage(err, pr.ErrorMessage)
			}
			results[tp{t.Name, pr.Index}] = partResult{pr.BaseOffset, err}
		}
	}
	return results
}

// handle applies one request's outcome to its batches. It runs on the leader's pipe reader,
// so for each partition it sees results in send order.
func (p *producer) handle(r *produceReq, reqErr error) {
	cl := p.cl
	var results map[tp]partResult
	if reqErr == nil && r.resp != nil {
		results = produceResults(r.resp, len(r.items))
	}
	refresh := false
	for _, it := range r.items {
		var res partResult
		switch {
		case reqErr != nil:
			res = partResult{-1, reqErr}
		case r.resp == nil:
			res = partResult{-1, nil}
		default:
			var ok bool
			if res, ok = results[it.pb.tp]; !ok {
				res = partResult{-1, fmt.Errorf("spool: produce response lacks %s[%d]: %w", it.pb.topic, it.pb.partition, wire.ErrUnknownServerError)}
			}
		}
		pb, b := it.pb, it.b
		pb.mu.Lock()
		b.inflight = false
		pb.inflight--
		switch {
		case res.err == nil:
			b.done, b.base = true, res.base
			if b.pidGen != 0 {
				pb.ackedGen = b.pidGen
			}
		case p.renumber(pb, b, res.err):
			// Refused, so not written: its records go out again, in their place, with the
			// sequence numbers of the current (or next) producer id.
			b.data = nil
			b.attempts++
			b.lastErr = res.err
			pb.rewind = true
			if b.pidGen == p.pidGen() {
				p.needPID.Store(true)
				pb.seqGap = true
			}
		case p.shouldRetry(pb, b, res.err):
			b.attempts++
			b.lastErr = res.err
			pb.rewind = true
			if at := time.Now().Add(cl.backoff(b.attempts - 1)); at.After(pb.retryAt) {
				pb.retryAt = at
			}
			if isLeadershipErr(res.err) {
				refresh = true
			}
		default:
			b.done, b.err = true, res.err
			if p.idemp.Load() {
				// The sequence of this partition now has a gap: start over with a new producer id.
				p.needPID.Store(true)
				pb.seqGap = true
			}
		}
		ready := pb.popDone()
		pb.mu.Unlock()
		p.deliver(pb, ready)
	}
	if refresh {
		cl.triggerRefresh()
	}
}

// renumber reports whether b, refused with OUT_OF_ORDER_SEQUENCE_NUMBER, goes out again
// under new sequence numbers; pb.mu is held. That is so when no batch before it is waiting to
// be resent (b is the oldest unsettled one, the batch before it failed for good, or b was
// numbered under an earlier producer id): its old sequence can never be accepted. A refused
// batch was not written, so renumbering it cannot duplicate it; a batch whose outcome is
// unknown (timeout, dropped connection) is never renumbered, only resent as it is.
func (p *producer) renumber(pb *partBuf, b *pbatch, err error) bool {
	if !p.idemp.Load() || !errors.Is(err, wire.ErrOutOfOrderSequenceNumber) ||
		p.cl.closed() || time.Since(b.created) >= p.cl.cfg.deliveryTimeout {
		return false
	}
	return pb.queue[0] == b || pb.seqGap || b.pidGen != p.pidGen()
}

// shouldRetry reports whether b goes out again after err; pb.mu is held.
func (p *producer) shouldRetry(pb *partBuf, b *pbatch, err error) bool {
	if p.cl.closed() || time.Since(b.created) >= p.cl.cfg.deliveryTimeout {
		return false
	}
	if retriable(err) {
		return true
	}
	// A batch sent behind one that failed retriably finds a gap in the sequence: it is resent
	// after its predecessor.
	return errors.Is(err, wire.ErrOutOfOrderSequenceNumber) && pb.queue[0] != b && !pb.seqGap
}

// expire removes and returns the batches of pb, oldest first, created more than timeout
// before now and not done, the open one included once none is queued ahead of it. Called
// with pb.mu held, nothing in flight.
func (pb *partBuf) expire(now time.Time, timeout time.Duration) []*pbatch {
	var out []*pbatch
	for len(pb.queue) > 0 && !pb.queue[0].done && now.Sub(pb.queue[0].created) > timeout {
		out = append(out, pb.queue[0])
		pb.queue = pb.queue[1:]
		pb.sent = max(pb.sent-1, 0)
	}
	if len(pb.queue) == 0 && pb.cur != nil && now.Sub(pb.cur.created) > timeout {
		out = append(out, pb.cur)
		pb.cur = nil
	}
	return out
}

// dropUnsent fails, with ErrTransactionAborted, the batches of pb that an abort need not wait
// for: those never sent (numbered only when sent, see encodeEarly), and every batch not in
// flight once a sequence broke (the abort bumps the epoch, and the numbers start again).
// pb.mu is held; popDone then delivers them in order.
func (p *producer) dropUnsent(pb *partBuf) {
	if pb.cur != nil {
		pb.seal()
	}
	broke := p.needPID.Load()
	for _, b := range pb.queue {
		if b.inflight || b.done || (b.data != nil && !broke) {
			continue
		}
		b.done, b.err = true, ErrTransactionAborted
	}
}

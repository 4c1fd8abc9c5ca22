package spool

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// A record produced to a topic the client has no metadata for waits here, as in librdkafka's
// unassigned queue, while a goroutine per topic looks the topic up (asking the broker to
// create it, with AllowAutoTopicCreation): once known, the topic's waiting records join their
// batches in produce order; a record still waiting after DeliveryTimeout fails with
// wire.ErrUnknownTopicOrPartition. Produce never blocks on the lookup, and the records count
// as buffered, so Flush waits for their outcome.

// waitingRec is a record waiting for its topic: the caller's (Produce) or a copy
// (ProduceTracked, whose record is the caller's only during the call).
type waitingRec struct {
	// ctx is the Produce call's, for the trace context only (the parent of the record's
	// producer span, and what is propagated in its headers).
	ctx      context.Context
	r        *Record
	cb       func(*Record, error)
	tracked  bool
	token    uint64
	size     int
	deadline time.Time
	err      error // why it could not join a batch, once its topic was known
}

// knownTopic returns the metadata of topic if the client has it with partitions, else nil.
func (cl *Client) knownTopic(topic string) *topicMeta {
	if m := cl.meta.Load(); m != nil {
		if tm, ok := m.topics[topic]; ok && tm.err == nil && len(tm.partitions) > 0 {
			return tm
		}
	}
	return nil
}

// park queues r behind the records waiting for its topic and returns nil, or returns the
// topic's metadata when the topic is known and none of its records waits: then the caller
// appends r itself.
func (p *producer) park(ctx context.Context, r *Record, cb func(*Record, error), tracked bool, token uint64, size int) *topicMeta {
	p.waitMu.Lock()
	defer p.waitMu.Unlock()
	ws, waiting := p.waiting[r.Topic]
	if !waiting {
		if tm := p.cl.knownTopic(r.Topic); tm != nil {
			return tm
		}
		if p.waiting == nil {
			p.waiting = map[string][]waitingRec{}
		}
		p.waitingTopics.Add(1)
		p.wg.Add(1)
		go p.lookUp(r.Topic)
	}
	if tracked {
		r = cloneRecord(r)
	}
	if r.Timestamp.IsZero() {
		r.Timestamp = p.clock.now() // when produced, not when its topic turns up
	}
	p.waiting[r.Topic] = append(ws, waitingRec{ctx: ctx, r: r, cb: cb, tracked: tracked, token: token, size: size,
		deadline: time.Now().Add(p.cl.cfg.deliveryTimeout)})
	p.buffered.Add(1)
	return nil
}

// cloneRecord copies r with its key, value and headers.
func cloneRecord(r *Record) *Record {
	c := *r
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	buf := make([]byte, 0, n)
	cp := func(b []byte) []byte {
		if b == nil {
			return nil
		}
		buf = append(buf, b...)
		return buf[len(buf)-len(b) : len(buf) : len(buf)]
	}
	c.Key, c.Value = cp(r.Key), cp(r.Value)
	if r.Headers != nil {
		c.Headers = make([]Header, len(r.Headers))
		for i, h := range r.Headers {
			c.Headers[i] = Header{Key: cp(h.Key), Value: cp(h.Value)}
		}
	}
	return &c
}

// lookUp asks for topic's metadata until the topic is known, its records all failed, or the
// client closes; it then hands the topic's waiting records on.
func (p *producer) lookUp(topic string) {
	defer p.wg.Done()
	cl := p.cl
	cl.addTopics(topic)
	for attempt := 0; ; attempt++ {
		tm, reqErr, err := p.lookUpOnce(topic)
		if err == nil && tm == nil {
			err = wire.ErrUnknownTopicOrPartition
		}
		// The metadata request itself failing (no broker reachable, authentication refused;
		// it retried within the request timeout) fails the records at once, as the lookup
		// did when Produce made it; a topic that does not exist (yet), or has no leader yet,
		// is waited for.
		fatal := reqErr || (err != nil && !errors.Is(err, wire.ErrUnknownTopicOrPartition) && !wire.IsRetriable(err))
		if cl.closed() {
			tm, err, fatal = nil, ErrClosed, true
		}
		p.waitMu.Lock()
		ws := p.waiting[topic]
		var failed, refused []waitingRec
		switch {
		case tm != nil:
			// In produce order, under waitMu: a Produce of this topic waits in park until
			// they have joined their batches, so that it comes after them.
			for _, w := range ws {
				if cb, err := p.appendRecord(w.ctx, w.r, w.cb, w.tracked, w.token, w.size, tm); err != nil {
					w.cb, w.err = cb, err
					refused = append(refused, w) // told after waitMu, which a callback's Produce takes
				}
			}
			p.buffered.Add(-int64(len(ws) - len(refused))) // in batches now, counted there
			ws = nil
		case fatal:
			failed, ws = ws, nil
		default:
			now := time.Now()
			i := 0
			for i < len(ws) && !now.Before(ws[i].deadline) {
				i++
			}
			failed, ws = ws[:i:i], ws[i:]
			err = fmt.Errorf("spool: delivery timeout: topic %q: %w", topic, err)
		}
		if len(ws) == 0 {
			delete(p.waiting, topic)
			p.waitingTopics.Add(-1)
		} else {
			p.waiting[topic] = ws
		}
		p.waitMu.Unlock()
		for _, w := range refused { // appendRecord gave back their room in the buffer
			p.failRecord(w.r, w.cb, w.tracked, w.token, w.err)
			p.buffered.Add(-1)
		}
		for _, w := range failed {
			p.failRecord(w.r, w.cb, w.tracked, w.token, err)
			p.slots.release(1, int64(w.size))
			p.buffered.Add(-1)
		}
		if len(failed)+len(refused) > 0 {
			p.batchDone() // wakes Flush
		}
		if len(ws) == 0 {
			return
		}
		wait := min(cl.backoff(attempt), time.Until(ws[0].deadline))
		select {
		case <-time.After(max(wait, time.Millisecond)):
		case <-cl.ctx.Done():
		case <-p.quit:
		}
	}
}

// lookUpOnce asks for topic's metadata, asking the broker to create it with
// AllowAutoTopicCreation, and installs the client's metadata once the topic has partitions.
// reqErr tells an error of the request from the topic's own.
func (p *producer) lookUpOnce(topic string) (tm *topicMeta, reqErr bool, err error) {
	cl := p.cl
	// Bounded as the records' wait is: fetchMetadata gives up by itself when no broker is
	// reachable, and a shorter bound would report a slow dial as a timeout instead.
	ctx, cancel := context.WithTimeout(cl.ctx, cl.cfg.deliveryTimeout)
	defer cancel()
	m, err := cl.fetchMetadataCreate(ctx, []string{topic}, false, cl.cfg.autoCreate)
	if err != nil {
		return nil, true, err
	}
	tm, ok := m.topics[topic]
	switch {
	case !ok:
		return nil, false, wire.ErrUnknownTopicOrPartition
	case tm.err != nil:
		return nil, false, tm.err
	case len(tm.partitions) == 0:
		return nil, false, wire.ErrLeaderNotAvailable
	}
	if _, err := cl.refreshMetadata(ctx); err != nil {
		return nil, true, err
	}
	return cl.knownTopic(topic), false, nil
}

// partitionErr is why a partition has no leader in the client's metadata: the topic is
// unknown, or the partition's error (LEADER_NOT_AVAILABLE when none).
func (cl *Client) partitionErr(topic string, partition int32) error {
	m := cl.meta.Load()
	if m == nil {
		return wire.ErrLeaderNotAvailable
	}
	tm, ok := m.topics[topic]
	switch {
	case !ok || errors.Is(tm.err, wire.ErrUnknownTopicOrPartition) || int(partition) >= len(tm.partitions):
		return wire.ErrUnknownTopicOrPartition
	case tm.err != nil:
		return tm.err
	case tm.partitions[partition].err != nil:
		return tm.partitions[partition].err
	}
	return wire.ErrLeaderNotAvailable
}

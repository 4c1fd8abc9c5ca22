package spool

import (
	"context"
	"encoding/binary"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

// ProduceTracked is Produce for a caller that keeps its own state per record and wants the
// outcomes a batch at a time: the C library, whose records live in C memory and whose
// reports go back to C in blocks. r is read only during the call (its Key, Value and Headers
// may be overwritten as soon as it returns, and the call may change r); its key, value and
// headers are copied once, into the partition's batch, and nothing else is kept per record
// but token, where the record is in the batch, and its timestamp (32 bytes).
//
// The client's DeliveryHandler (WithDeliveryHandler) gets each outcome: once per batch for
// the batch's tracked records, after the callbacks of the batch's other records, and once
// for a record that failed before joining a batch (unknown topic, too large, client
// closed). Outcomes come in produce order per partition. Without a handler, outcomes are
// dropped. A trace context is propagated into the headers as Produce does, but a tracked
// record has no producer span: there is no callback of its own to end one.
func (cl *Client) ProduceTracked(ctx context.Context, r *Record, token uint64) {
	cl.produce(ctx, r, nil, true, token)
}

// WithDeliveryHandler sets the function that gets the outcomes of the records produced with
// ProduceTracked. It runs on the client's goroutines (or, for a record that fails at once,
// inside ProduceTracked) and must not block for long; it may keep the Delivery until it
// calls its Release.
func WithDeliveryHandler(h func(*Delivery)) Opt {
	return func(c *config) error {
		c.onDelivery = h
		return nil
	}
}

// trackedRec is a record of ProduceTracked in its batch.
type trackedRec struct {
	at    uint32    // its index in the batch, with trackedHeaders set when it has headers
	lent  lentBytes // where its key and value are in the batch's buffer
	token uint64
	ts    int64 // its timestamp, Unix milliseconds
}

// trackedHeaders marks a trackedRec whose record has headers. Without it a delivery never
// reads the batch's buffer for the record's headers: when the delivery is served, that
// buffer is long out of the cache, and one read per record cost a cache miss each.
const trackedHeaders = 1 << 31

// newTrackedRec is the trackedRec of r, the record at index i of a batch whose buffer ends,
// r last, at end.
func newTrackedRec(i, end int, r *Record, token uint64, ts int64) trackedRec {
	t := trackedRec{at: uint32(i), lent: lend(end, r), token: token, ts: ts}
	if len(r.Headers) > 0 {
		t.at |= trackedHeaders
	}
	return t
}

// index is the record's index in its batch.
func (t *trackedRec) index() int { return int(t.at &^ trackedHeaders) }

// lentBytes locates a record's key and value in its batch's uncompressed buffer: the value
// starts at valueAt and the key ends where the value's length prefix begins. A length of -1
// is a null key or value.
type lentBytes struct {
	valueAt          int32
	keyLen, valueLen int32
}

// lend locates r's key and value in a batch buffer of end bytes whose last record is r.
func lend(end int, r *Record) lentBytes {
	// The record ends with its value, then the headers' count and the headers.
	tail := wire.VarintLen(int64(len(r.Headers)))
	for _, h := range r.Headers {
		tail += wire.VarintLen(int64(len(h.Key))) + len(h.Key) + wire.VarintLen(int64(nullLen(h.Value))) + len(h.Value)
	}
	return lentBytes{valueAt: int32(end - tail - len(r.Value)), keyLen: nullLen(r.Key), valueLen: nullLen(r.Value)}
}

// nullLen is the length of b on the wire: -1 for nil.
func nullLen(b []byte) int32 {
	if b == nil {
		return -1
	}
	return int32(len(b))
}

// bytes is where l's key and value are in buf, the batch's uncompressed buffer.
func (l lentBytes) bytes(buf []byte) (key, value []byte) {
	at := int(l.valueAt)
	if l.valueLen >= 0 {
		value = buf[at : at+int(l.valueLen) : at+int(l.valueLen)]
	}
	if l.keyLen >= 0 {
		end := at - wire.VarintLen(int64(l.valueLen))
		key = buf[end-int(l.keyLen) : end : end]
	}
	return key, value
}

// headers decodes the headers that follow l's value in buf; nil when there are none.
func (l lentBytes) headers(buf []byte) []Header {
	at := int(l.valueAt) + max(int(l.valueLen), 0)
	n, w := binary.Varint(buf[at:])
	if n <= 0 || w <= 0 {
		return nil
	}
	at += w
	hs := make([]Header, n)
	field := func() []byte {
		ln, w := binary.Varint(buf[at:])
		at += w
		if ln < 0 {
			return nil
		}
		b := buf[at : at+int(ln) : at+int(ln)]
		at += int(ln)
		return b
	}
	for i := range hs {
		hs[i].Key = field()
		if hs[i].Key == nil {
			hs[i].Key = []byte{}
		}
		hs[i].Value = field()
	}
	return hs
}

// Delivery is the outcome of records produced with ProduceTracked: those of one batch, or
// one record that failed before joining a batch. Its methods may be called from any
// goroutine until Release; the keys, values and headers it gives are views of the batch's
// buffer, read-only, valid until then too.
type Delivery struct {
	p    *producer
	b    *pbatch
	base int64 // the batch's first offset; -1 when unknown
	err  error
	refs atomic.Int32
}

// Topic is the records' topic.
func (d *Delivery) Topic() string { return d.b.topic }

// Partition is the records' partition (-1 when the record failed before one was chosen).
func (d *Delivery) Partition() int32 { return d.b.partition }

// Err is why the records failed, nil when they were acknowledged.
func (d *Delivery) Err() error { return d.err }

// Len is the number of records.
func (d *Delivery) Len() int { return len(d.b.tracked) }

// Token is the token record i was produced with.
func (d *Delivery) Token(i int) uint64 { return d.b.tracked[i].token }

// Bytes is what the records counted against MaxBufferedBytes (before a trace context joined
// their headers): the sum of their sizes as ProduceTracked found them.
func (d *Delivery) Bytes() int64 { return d.b.trackedSize }

// Record sets r to record i: topic, partition, offset (-1 on failure or when the broker did
// not say), timestamp, and key, value and headers as views of the batch's buffer (the
// headers' slice is new; nil when there are none).
func (d *Delivery) Record(i int, r *Record) {
	t := &d.b.tracked[i]
	buf := d.b.b.Uncompressed()
	key, value := t.lent.bytes(buf)
	offset := int64(-1)
	if d.err == nil && d.base >= 0 {
		offset = d.base + int64(t.index())
	}
	*r = Record{Topic: d.b.topic, Partition: d.b.partition, Offset: offset, Timestamp: time.UnixMilli(t.ts),
		Key: key, Value: value}
	if t.at&trackedHeaders != 0 {
		r.Headers = t.lent.headers(buf)
	}
}

// Release ends the handler's use of d: after it, nothing d gave may be read. The batch's
// buffer is reused once its delivery is released. Safe from any goroutine; once per
// Delivery.
func (d *Delivery) Release() {
	if d.refs.Add(-1) == 0 {
		d.p.recycle(d.b)
	}
}

// deliver hands b's tracked records to the DeliveryHandler and returns the delivery, holding
// a share for the caller (finish) besides the handler's; nil when there is nothing to hand.
func (b *pbatch) deliver(p *producer, base int64, err error) *Delivery {
	h := p.cl.cfg.onDelivery
	if len(b.tracked) == 0 || h == nil {
		return nil
	}
	d := &b.delivery
	d.p, d.b, d.base, d.err = p, b, base, err
	d.refs.Store(2)
	h(d)
	return d
}

// failTracked hands the handler a record of ProduceTracked that failed before joining a
// batch, in a batch of its own that is never sent.
func (p *producer) failTracked(r *Record, token uint64, err error) {
	if p.cl.cfg.onDelivery == nil {
		return
	}
	b := &pbatch{b: batch.NewBuilder(), tp: tp{topic: r.Topic, partition: r.Partition}}
	if r.Timestamp.IsZero() {
		r.Timestamp = p.clock.now()
	}
	ts := r.Timestamp.UnixMilli()
	b.b.Append(ts, r.Key, r.Value, r.Headers)
	b.tracked = []trackedRec{newTrackedRec(0, b.b.Size(), r, token, ts)}
	b.trackedSize = int64(recordSize(r))
	if d := b.deliver(p, -1, err); d != nil {
		d.Release() // the handler's share holds it now
	}
}

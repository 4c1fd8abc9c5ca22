package main

/*
#include "spool_impl.h"
*/
import "C"

import (
	"context"
	"sync"
	"sync/atomic"
	"unsafe"

	spool "github.com/spoolmq/spool/sdk-go"
)

// packedBatch is one call of spool_produce_packed on the Go side: its records, their
// opaques, and one buffer holding their keys, values and headers, which goes back to its
// queue's bufs once every record has its outcome. One done function serves the whole batch:
// no closure per record. A batch with marker set is no records but a point in the queue: run
// closes it when every batch before it has been produced.
type packedBatch struct {
	p       *producer
	q       *packedQueue
	records []cRecord // their opaques and sizes set when queued
	buf     *[]byte
	left    atomic.Int64
	marker  chan struct{}
}

// maxPooledBuf bounds the buffers a producer's packedQueue keeps for reuse.
const maxPooledBuf = 4 << 20

// done is the SDK's callback for every record of the batch. The SDK has copied the key,
// value and headers into its own batch once Produce returned; they are cleared here, before
// the report is queued, because the buffer is reused once the batch is done (a report served
// by spool_producer_poll shows them as null).
func (b *packedBatch) done(r *spool.Record, err error) {
	r.Key, r.Value, r.Headers = nil, nil, nil
	b.p.done(r, err, nil) // r is a cRecord's: done finds its opaque
	if b.left.Add(-1) == 0 && cap(*b.buf) <= maxPooledBuf {
		*b.buf = (*b.buf)[:0]
		select {
		case b.q.bufs <- b.buf:
		default:
		}
	}
}

// packedQueue hands the batches of spool_produce_packed to the SDK on a goroutine of the
// producer, in call order, so that the caller returns once its records are copied: the
// records' encoding then runs on another thread than the caller's (a Python interpreter's,
// say). Its capacity bounds the batches waiting; a full SDK buffer blocks the goroutine and
// then the callers.
//
// bufs recycles the buffers of its batches: a fresh one would be zeroed and faulted in for
// every call (a megabyte per 1024 records of 1 KiB). A channel rather than a sync.Pool, which
// the garbage collector empties; it goes with the producer.
type packedQueue struct {
	ch   chan *packedBatch
	bufs chan *[]byte
}

// packedQueues holds the queue of each producer that used spool_produce_packed; the
// goroutine removes it when the producer closes.
var packedQueues sync.Map // *producer → *packedQueue

func (p *producer) packedQueue() *packedQueue {
	if q, ok := packedQueues.Load(p); ok {
		return q.(*packedQueue)
	}
	q := &packedQueue{ch: make(chan *packedBatch, 4), bufs: make(chan *[]byte, 8)}
	if actual, loaded := packedQueues.LoadOrStore(p, q); loaded {
		return actual.(*packedQueue)
	}
	go q.run(p)
	return q
}

func (q *packedQueue) run(p *producer) {
	defer packedQueues.Delete(p)
	for {
		select {
		case b := <-q.ch:
			if b.marker != nil {
				close(b.marker)
				continue
			}
			for i := range b.records {
				p.cl.Produce(p.ctx, &b.records[i].Record, b.done)
			}
		case <-p.ctx.Done():
			return
		}
	}
}

// waitPacked returns once every batch spool_produce_packed queued before the call has been
// handed to the SDK (so that a flush covers them), or ctx ends.
func (p *producer) waitPacked(ctx context.Context) error {
	v, ok := packedQueues.Load(p)
	if !ok {
		return nil
	}
	m := &packedBatch{marker: make(chan struct{})}
	select {
	case v.(*packedQueue).ch <- m:
	case <-ctx.Done():
		return ctx.Err()
	case <-p.ctx.Done():
		return nil
	}
	select {
	case <-m.marker:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-p.ctx.Done():
		return nil
	}
}

// spoolgo_produce_packed queues the records of spool_produce_packed, whose arguments the
// shim checked: column entries with a negative length are null, the others follow each other
// in keys and values.
//
//export spoolgo_produce_packed
func spoolgo_produce_packed(h C.uintptr_t, topic *C.char, count C.size_t, partitions *C.int32_t, keys unsafe.Pointer,
	keyLens *C.int64_t, values unsafe.Pointer, valueLens *C.int64_t, headers **C.spool_header_t,
	headerCounts *C.size_t, opaques *unsafe.Pointer) C.int {
	p := value[producer](h)
	if p == nil {
		return errBadArg
	}
	n := int(count)
	q := p.packedQueue()
	b := &packedBatch{p: p, q: q, records: make([]cRecord, n)}
	b.left.Store(int64(n))
	var kl, vl []C.int64_t
	var hs []*C.spool_header_t
	var hc []C.size_t
	size, nhdrs := 0, 0
	if keyLens != nil {
		kl = unsafe.Slice(keyLens, n)
		for _, l := range kl {
			size += max(int(l), 0)
		}
	}
	if valueLens != nil {
		vl = unsafe.Slice(valueLens, n)
		for _, l := range vl {
			size += max(int(l), 0)
		}
	}
	if headers != nil && headerCounts != nil {
		hs, hc = unsafe.Slice(headers, n), unsafe.Slice(headerCounts, n)
		for i := range hs {
			for _, ch := range unsafe.Slice(hs[i], int(hc[i])) {
				size += int(ch.key_len) + int(ch.value_len)
			}
			nhdrs += int(hc[i])
		}
	}
	select {
	case b.buf = <-q.bufs:
	default:
	}
	if b.buf == nil || cap(*b.buf) < size {
		buf := make([]byte, 0, size)
		b.buf = &buf
	}
	buf := (*b.buf)[:0]
	// bytesOf appends n bytes at c to buf and returns them (cap-limited); nil for NULL.
	bytesOf := func(c unsafe.Pointer, n int) []byte {
		if c == nil {
			return nil
		}
		off := len(buf)
		buf = append(buf, unsafe.Slice((*byte)(c), n)...)
		return buf[off:len(buf):len(buf)]
	}
	// column is bytesOf for entry i of a column: lens[i] bytes at *at in src; nil for null.
	column := func(src unsafe.Pointer, lens []C.int64_t, i int, at *int) []byte {
		if lens == nil || lens[i] < 0 {
			return nil
		}
		l := int(lens[i])
		v := bytesOf(unsafe.Add(src, *at), l)
		*at += l
		return v
	}
	name := p.topic(topic)
	var parts []C.int32_t
	if partitions != nil {
		parts = unsafe.Slice(partitions, n)
	}
	var ops []uintptr
	if opaques != nil {
		ops = unsafe.Slice((*uintptr)(unsafe.Pointer(opaques)), n)
	}
	var total int64
	hdrs := make([]spool.Header, nhdrs)
	kat, vat := 0, 0
	for i := range b.records {
		r := &b.records[i]
		r.Topic, r.Partition = name, -1
		if ops != nil {
			r.opaque = ops[i]
		}
		if parts != nil {
			r.Partition = int32(parts[i])
		}
		r.Key = column(keys, kl, i, &kat)
		r.Value = column(values, vl, i, &vat)
		if hs != nil && hc[i] > 0 {
			k := int(hc[i])
			r.Headers, hdrs = hdrs[:k:k], hdrs[k:]
			for j, ch := range unsafe.Slice(hs[i], k) {
				r.Headers[j] = spool.Header{Key: bytesOf(unsafe.Pointer(ch.key), int(ch.key_len)), Value: bytesOf(ch.value, int(ch.value_len))}
				if r.Headers[j].Key == nil {
					r.Headers[j].Key = []byte{}
				}
			}
		}
		r.size = 21 + int64(len(r.Key)+len(r.Value)) // as recordSize counts it
		for _, h := range r.Headers {
			r.size += 10 + int64(len(h.Key)+len(h.Value))
		}
		total += r.size
	}
	*b.buf = buf
	// Counted in the queue as spool_produce's records are, but never refused: these wait for
	// the SDK's buffer instead (see spool.h).
	p.outq.Add(int64(n))
	p.outqBytes.Add(total)
	select {
	case q.ch <- b:
		return 0
	case <-p.ctx.Done():
		p.unreserve(int64(n), total)
		return errClosed
	}
}

// spoolgo_producer_take_reports is spoolgo_producer_take for spool_producer_poll_reports: the
// same queue, but each report becomes a spool_report_t (no message, so nothing to copy or
// pin), in one malloc'd array sorted by msg_opaque, which the caller frees.
//
//export spoolgo_producer_take_reports
func spoolgo_producer_take_reports(h C.uintptr_t, timeoutMS C.int, out **C.spool_report_t) C.size_t {
	p := value[producer](h)
	if p == nil {
		return 0
	}
	got := p.takeReports(timeoutMS)
	if len(got) == 0 {
		return 0
	}
	// Sorted here, on Go values: the C array's msg_opaque is a pointer type, which Go must
	// not move around (write barriers would see the caller's numbers as pointers).
	got = sortByOpaque(got)
	base := C.malloc(C.size_t(len(got)) * C.size_t(unsafe.Sizeof(C.spool_report_t{})))
	if base == nil {
		panic("libspool: out of memory")
	}
	arr := unsafe.Slice((*C.spool_report_t)(base), len(got))
	for i, rep := range got {
		ts := int64(-1)
		if !rep.r.Timestamp.IsZero() {
			ts = rep.r.Timestamp.UnixMilli()
		}
		partition := rep.r.Partition
		if rep.err != nil && partition < 0 {
			partition = -1
		}
		// msg_opaque is the caller's value, never dereferenced: stored as an integer, without
		// a write barrier (see storeC).
		*(*uintptr)(unsafe.Pointer(&arr[i].msg_opaque)) = rep.r.opaque
		arr[i].offset = C.int64_t(rep.r.Offset)
		arr[i].timestamp = C.int64_t(ts)
		arr[i].partition = C.int32_t(partition)
		arr[i].err = C.spool_err_t(errCode(rep.err))
	}
	*out = (*C.spool_report_t)(base)
	return C.size_t(len(got))
}

// sortByOpaque sorts reports by opaque with a natural merge sort: the queue is a few
// ascending runs (each produce response reports its records in the order they were
// produced, and callers number records in that order), so this costs n·log(runs), close to
// one pass, where a general sort costs n·log(n).
func sortByOpaque(rs []report) []report {
	bounds := []int{0}
	for i := 1; i < len(rs); i++ {
		if rs[i].r.opaque < rs[i-1].r.opaque {
			bounds = append(bounds, i)
		}
	}
	if len(bounds) == 1 {
		return rs
	}
	bounds = append(bounds, len(rs))
	src, dst := rs, make([]report, len(rs))
	for len(bounds) > 2 {
		merged := []int{0}
		for k := 0; k+1 < len(bounds); k += 2 {
			lo, mid, hi := bounds[k], bounds[k+1], bounds[k+1]
			if k+2 < len(bounds) {
				hi = bounds[k+2]
			}
			a, b, out := src[lo:mid], src[mid:hi], dst[lo:hi]
			i, j, o := 0, 0, 0
			for i < len(a) && j < len(b) {
				if b[j].r.opaque < a[i].r.opaque {
					out[o] = b[j]
					j++
				} else {
					out[o] = a[i]
					i++
				}
				o++
			}
			o += copy(out[o:], a[i:])
			copy(out[o:], b[j:])
			merged = append(merged, hi)
		}
		bounds = merged
		src, dst = dst, src
	}
	return src
}

// takeReports waits up to timeoutMS for a report (0: not at all) and takes every report
// queued, as spoolgo_producer_take does.
func (p *producer) takeReports(timeoutMS C.int) []report {
	got := p.takeQueue(timeoutMS)
	// A spool_report_t holds no key or value: the batches' buffers go back now.
	var served int64
	for _, rep := range got {
		rep.lease.Release()
		served += rep.r.size
	}
	p.unreserve(int64(len(got)), served)
	return got
}

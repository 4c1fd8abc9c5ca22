package main

/*
#include "spool_impl.h"
*/
import "C"

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	spool "github.com/spoolmq/spool/sdk-go"
)

// producer is the Go side of a spool_producer_t. Delivery reports are queued here by the
// SDK's goroutines and handed to C in batches by spoolgo_producer_take, so that C calls its
// callback on its own thread.
type producer struct {
	cl      *spool.Client
	reports bool // a dr_cb is set: keep reports
	// ctx bounds a produce's waits (a topic lookup, a full buffer) by the producer's life;
	// the lookup bounds itself (a few metadata requests).
	ctx    context.Context
	cancel context.CancelFunc

	topics sync.Map                   // topic name → the same string, so a produce allocates no name
	doneFn func(*spool.Record, error) // done without an opaque, made once

	mu     sync.Mutex
	queue  []report
	pins   map[unsafe.Pointer]*runtime.Pinner // block of reports taken → the pins of its keys and values
	notify chan struct{}                      // a report was queued (capacity 1)
	outq   atomic.Int64                       // records produced whose report is not served yet
}

type report struct {
	r      *spool.Record
	err    error
	opaque uintptr
}

// explicitPartitioner uses a record's Partition when the caller gave one (>= 0) and asks
// next otherwise (SPOOL_PARTITION_UA).
type explicitPartitioner struct{ next spool.Partitioner }

func (e explicitPartitioner) Partition(r *spool.Record, n int) int {
	if r.Partition >= 0 {
		return int(r.Partition)
	}
	return e.next.Partition(r, n)
}

//export spoolgo_producer_new
func spoolgo_producer_new(confH C.uintptr_t, hasDR C.int, errstr *C.char, size C.size_t) C.uintptr_t {
	sc := checkedConf(confH, "spool_producer_new", errstr, size)
	if sc == nil {
		return 0
	}
	name, ok := sc.Get("partitioner")
	if !ok {
		name = spool.PartitionerMurmur2Random
	}
	part, err := spool.PartitionerByName(name)
	if err != nil { // checked by Set already
		setErrstr(errstr, size, "spool_producer_new: "+err.Error())
		return 0
	}
	cl, err := spool.NewClient(append(sc.Opts(), spool.WithPartitioner(explicitPartitioner{part}))...)
	if err != nil {
		setErrstr(errstr, size, "spool_producer_new: "+err.Error())
		return 0
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &producer{cl: cl, reports: hasDR != 0, ctx: ctx, cancel: cancel, notify: make(chan struct{}, 1)}
	p.doneFn = func(r *spool.Record, err error) { p.done(r, err, 0) }
	return newHandle(p)
}

//export spoolgo_produce
func spoolgo_produce(h C.uintptr_t, topic *C.char, partition C.int32_t, key unsafe.Pointer, keyLen C.size_t,
	val unsafe.Pointer, valLen C.size_t, hdrs *C.spool_header_t, hdrCount C.size_t, opaque C.uintptr_t) C.int {
	p := value[producer](h)
	if p == nil {
		return errBadArg
	}
	r := &spool.Record{Topic: p.topic(topic), Partition: int32(partition)}
	if key != nil && val != nil && keyLen > 0 && valLen > 0 {
		// one allocation for both
		kv := make([]byte, int(keyLen)+int(valLen))
		copy(kv, unsafe.Slice((*byte)(key), int(keyLen)))
		copy(kv[keyLen:], unsafe.Slice((*byte)(val), int(valLen)))
		r.Key, r.Value = kv[:keyLen:keyLen], kv[keyLen:]
	} else {
		r.Key, r.Value = goBytes(key, keyLen), goBytes(val, valLen)
	}
	if hdrCount > 0 {
		r.Headers = make([]spool.Header, hdrCount)
		for i, ch := range unsafe.Slice(hdrs, int(hdrCount)) {
			r.Headers[i] = spool.Header{Key: goBytes(unsafe.Pointer(ch.key), ch.key_len), Value: goBytes(ch.value, ch.value_len)}
		}
	}
	p.outq.Add(1)
	cb := p.doneFn
	if opaque != 0 {
		cb = func(r *spool.Record, err error) { p.done(r, err, uintptr(opaque)) }
	}
	p.cl.Produce(p.ctx, r, cb)
	return 0
}

//export spoolgo_produce_batch
func spoolgo_produce_batch(h C.uintptr_t, topic *C.char, recs *C.spool_record_t, count C.size_t) C.int {
	p := value[producer](h)
	if p == nil {
		return errBadArg
	}
	cs := unsafe.Slice(recs, int(count))
	// One buffer for every key, value and header of the batch, one array of records and one
	// of headers: three allocations instead of several per record. The buffer lives until
	// the last record of the batch is reported.
	size, nhdrs := 0, 0
	for i := range cs {
		size += int(cs[i].key_len) + int(cs[i].value_len)
		for _, ch := range unsafe.Slice(cs[i].headers, int(cs[i].header_count)) {
			size += int(ch.key_len) + int(ch.value_len)
		}
		nhdrs += int(cs[i].header_count)
	}
	buf := make([]byte, 0, size)
	// bytesOf appends n bytes at c to buf and returns them (cap-limited); nil for NULL.
	bytesOf := func(c unsafe.Pointer, n C.size_t) []byte {
		if c == nil {
			return nil
		}
		off := len(buf)
		buf = append(buf, unsafe.Slice((*byte)(c), int(n))...)
		return buf[off:len(buf):len(buf)]
	}
	name := p.topic(topic)
	records := make([]spool.Record, len(cs))
	headers := make([]spool.Header, nhdrs)
	for i := range cs {
		c := &cs[i]
		r := &records[i]
		r.Topic, r.Partition = name, int32(c.partition)
		r.Key, r.Value = bytesOf(c.key, c.key_len), bytesOf(c.value, c.value_len)
		if n := int(c.header_count); n > 0 {
			r.Headers, headers = headers[:n:n], headers[n:]
			for j, ch := range unsafe.Slice(c.headers, n) {
				r.Headers[j] = spool.Header{Key: bytesOf(unsafe.Pointer(ch.key), ch.key_len), Value: bytesOf(ch.value, ch.value_len)}
			}
		}
	}
	p.outq.Add(int64(len(cs)))
	for i := range records {
		cb := p.doneFn
		if opaque := uintptr(cs[i].msg_opaque); opaque != 0 {
			cb = func(r *spool.Record, err error) { p.done(r, err, opaque) }
		}
		p.cl.Produce(p.ctx, &records[i], cb)
	}
	return 0
}

// topic returns the name at s as a Go string, the same one for every record of a topic.
func (p *producer) topic(s *C.char) string {
	view := unsafe.String((*byte)(unsafe.Pointer(s)), int(C.strlen(s))) // C memory: not kept
	if t, ok := p.topics.Load(view); ok {
		return t.(string)
	}
	name := strings.Clone(view)
	t, _ := p.topics.LoadOrStore(name, name)
	return t.(string)
}

// done queues the report of a record, or drops it when nobody asked for reports.
func (p *producer) done(r *spool.Record, err error, opaque uintptr) {
	if err != nil {
		r.Offset = -1
	}
	if !p.reports {
		p.outq.Add(-1)
		return
	}
	p.mu.Lock()
	p.queue = append(p.queue, report{r, err, opaque})
	p.mu.Unlock()
	select {
	case p.notify <- struct{}{}:
	default:
	}
}

//export spoolgo_producer_take
func spoolgo_producer_take(h C.uintptr_t, timeoutMS C.int, out ***C.spool_message_t) C.size_t {
	p := value[producer](h)
	if p == nil {
		return 0
	}
	p.mu.Lock()
	empty := len(p.queue) == 0
	p.mu.Unlock()
	if empty && timeoutMS != 0 {
		ctx, cancel := timeoutCtx(timeoutMS)
		select {
		case <-p.notify:
		case <-ctx.Done():
		}
		cancel()
	}
	p.mu.Lock()
	got := p.queue
	p.queue = nil
	p.mu.Unlock()
	if len(got) == 0 {
		return 0
	}
	// One block for all: the array of pointers, then the messages; the shim frees it once,
	// after spoolgo_producer_release. Keys and values are not copied: the messages point at
	// the records' bytes, pinned until then.
	ptrs := len(got) * int(unsafe.Sizeof((*C.spool_message_t)(nil)))
	errstrs := make([]string, len(got))
	sizes := make([]int, len(got))
	total := ptrs
	for i, rep := range got {
		errstrs[i] = errText(rep.err)
		sizes[i] = messageBytes(rep.r, errstrs[i], true)
		total += sizes[i]
	}
	base := C.malloc(C.size_t(total))
	if base == nil {
		panic("libspool: out of memory")
	}
	pin := new(runtime.Pinner)
	arr := unsafe.Slice((**C.spool_message_t)(base), len(got))
	at := ptrs
	for i, rep := range got {
		storeC(unsafe.Pointer(&arr[i]), unsafe.Pointer(fillMessage(unsafe.Add(base, at), sizes[i], rep.r, rep.err, errstrs[i], rep.opaque, pin)))
		at += sizes[i]
	}
	p.mu.Lock()
	if p.pins == nil {
		p.pins = map[unsafe.Pointer]*runtime.Pinner{}
	}
	p.pins[base] = pin
	p.mu.Unlock()
	p.outq.Add(-int64(len(got)))
	*out = &arr[0]
	return C.size_t(len(got))
}

// spoolgo_producer_release unpins the keys and values of a block of reports taken by
// spoolgo_producer_take, once their callbacks returned; the shim then frees the block.
//
//export spoolgo_producer_release
func spoolgo_producer_release(h C.uintptr_t, block unsafe.Pointer) {
	p := value[producer](h)
	if p == nil {
		return
	}
	p.mu.Lock()
	pin := p.pins[block]
	delete(p.pins, block)
	p.mu.Unlock()
	if pin != nil {
		pin.Unpin()
	}
}

//export spoolgo_producer_flush
func spoolgo_producer_flush(h C.uintptr_t, timeoutMS C.int) C.int {
	p := value[producer](h)
	if p == nil {
		return errBadArg
	}
	ctx, cancel := timeoutCtx(timeoutMS)
	defer cancel()
	if err := p.waitPacked(ctx); err != nil { // records of spool_produce_packed still queued (packed.go)
		return errCode(err)
	}
	return errCode(p.cl.Flush(ctx))
}

//export spoolgo_producer_outq_len
func spoolgo_producer_outq_len(h C.uintptr_t) C.int {
	p := value[producer](h)
	if p == nil {
		return 0
	}
	return C.int(p.outq.Load())
}

//export spoolgo_producer_close
func spoolgo_producer_close(h C.uintptr_t) {
	if p := value[producer](h); p != nil {
		p.cancel()
		p.cl.Close()
	}
}

//export spoolgo_create_topic
func spoolgo_create_topic(h C.uintptr_t, topic *C.char, partitions C.int32_t, replication C.int16_t, timeoutMS C.int) C.int {
	p := value[producer](h)
	if p == nil {
		return errBadArg
	}
	ctx, cancel := timeoutCtx(timeoutMS)
	defer cancel()
	return errCode(p.cl.Admin().CreateTopic(ctx, C.GoString(topic), int32(partitions), int16(replication), nil))
}

//export spoolgo_delete_topic
func spoolgo_delete_topic(h C.uintptr_t, topic *C.char, timeoutMS C.int) C.int {
	p := value[producer](h)
	if p == nil {
		return errBadArg
	}
	ctx, cancel := timeoutCtx(timeoutMS)
	defer cancel()
	return errCode(p.cl.Admin().DeleteTopics(ctx, C.GoString(topic)))
}

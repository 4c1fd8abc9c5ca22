package main

/*
#include "spool_impl.h"
*/
import "C"

import (
	"context"
	"runtime"
	"strconv"
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

	topics    sync.Map                                // topic name → the same string, so a produce allocates no name
	lastTopic atomic.Pointer[string]                  // the name topic returned last
	doneFn    func(*spool.Record, error, *spool.Lent) // done, made once

	// The queue's bound, as librdkafka's: records (queue.buffering.max.messages) and bytes
	// (queue.buffering.max.kbytes) produced whose report is not served yet. A produce beyond
	// it is SPOOL_ERR__QUEUE_FULL, so that memory stays bounded even when reports are not
	// polled; the caller polls and produces again.
	maxMsgs, maxBytes int64
	outq              atomic.Int64 // records produced whose report is not served yet
	outqBytes         atomic.Int64 // their sizes (cRecord.size)
	budget            atomic.Int64 // its share of the runtime's memory limit (addMemBudget)

	slabMu sync.Mutex
	slab   []cRecord // records not handed out yet, allocated 256 at a time

	mu     sync.Mutex
	queue  []report
	spare  []report                       // the array of the queue taken last, reused
	taken  map[unsafe.Pointer]*takenBlock // block of reports taken → what its messages point at
	notify chan struct{}                  // a report was queued (capacity 1)
}

// cRecord is a record produced from C, with what its report needs. The SDK's callbacks get
// its Record, the first field, and done finds the rest from it.
type cRecord struct {
	spool.Record
	opaque uintptr
	size   int64 // what it counts against maxBytes
}

type report struct {
	r     *cRecord
	err   error
	lease *spool.Lent // the batch buffer holding the key and value; nil if none
}

// takenBlock is what the messages of a block of reports point at, until C is done with
// them: the keys and values in their batches' buffers, pinned, and the leases on those.
type takenBlock struct {
	pin    runtime.Pinner
	leases []*spool.Lent
}

// slabSize is how many records spoolgo_produce allocates at once: one allocation per 200
// records instead of one per record, small enough (30 KiB) for the allocator's small size
// classes. A slab lives until its last record is reported.
const slabSize = 200

// newRecord returns a zeroed record from the slab.
func (p *producer) newRecord() *cRecord {
	p.slabMu.Lock()
	if len(p.slab) == 0 {
		p.slab = make([]cRecord, slabSize)
	}
	r := &p.slab[0]
	p.slab = p.slab[1:]
	p.slabMu.Unlock()
	return r
}

// reserve takes room in the queue for n records of size bytes, or reports that it is full.
// An empty queue takes anything, so that a batch larger than the bound still goes.
func (p *producer) reserve(n, size int64) bool {
	msgs, bytes := p.outq.Add(n), p.outqBytes.Add(size)
	if (msgs > p.maxMsgs || bytes > p.maxBytes) && msgs != n {
		p.outq.Add(-n)
		p.outqBytes.Add(-size)
		return false
	}
	return true
}

// unreserve gives back room reserved for n records of size bytes.
func (p *producer) unreserve(n, size int64) {
	p.outq.Add(-n)
	p.outqBytes.Add(-size)
}

// recordSize is what a record counts against queue.buffering.max.kbytes: as the SDK counts
// it against MaxBufferedBytes.
func recordSize(keyLen, valLen C.size_t, hdrs []C.spool_header_t) int64 {
	size := 21 + int64(keyLen) + int64(valLen)
	for _, h := range hdrs {
		size += 10 + int64(h.key_len) + int64(h.value_len)
	}
	return size
}

// confInt is the integer value of key in sc, or the key's default.
func confInt(sc *spool.Conf, key string) int64 {
	v, ok := sc.Get(key)
	if !ok {
		k, _ := spool.LookupConfKey(key)
		v = k.Default
	}
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
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
	p := &producer{cl: cl, reports: hasDR != 0, ctx: ctx, cancel: cancel, notify: make(chan struct{}, 1),
		maxMsgs: confInt(sc, "queue.buffering.max.messages"), maxBytes: confInt(sc, "queue.buffering.max.kbytes") << 10}
	p.doneFn = p.done
	p.budget.Store(producerBudget(p.maxMsgs, p.maxBytes))
	addMemBudget(p.budget.Load())
	return newHandle(p)
}

//export spoolgo_produce
func spoolgo_produce(h C.uintptr_t, topic *C.char, partition C.int32_t, key unsafe.Pointer, keyLen C.size_t,
	val unsafe.Pointer, valLen C.size_t, hdrs *C.spool_header_t, hdrCount C.size_t, opaque C.uintptr_t) C.int {
	p := value[producer](h)
	if p == nil {
		return errBadArg
	}
	chdrs := unsafe.Slice(hdrs, int(hdrCount))
	size := recordSize(keyLen, valLen, chdrs)
	if !p.reserve(1, size) {
		p.cl.SendBuffered() // nothing joins the open batches until reports are served
		return errQueueFull
	}
	r := p.newRecord()
	r.Topic, r.Partition, r.opaque, r.size = p.topic(topic), int32(partition), uintptr(opaque), size
	// Key and value are C memory, read only during the call: the SDK copies them once, into
	// the batch.
	r.Key, r.Value = cBytes(key, keyLen), cBytes(val, valLen)
	if hdrCount > 0 {
		r.Headers = make([]spool.Header, hdrCount)
		for i, ch := range chdrs {
			r.Headers[i] = spool.Header{Key: goBytes(unsafe.Pointer(ch.key), ch.key_len), Value: goBytes(ch.value, ch.value_len)}
		}
	}
	p.cl.ProduceBorrowed(p.ctx, &r.Record, p.doneFn)
	return 0
}

//export spoolgo_produce_batch
func spoolgo_produce_batch(h C.uintptr_t, topic *C.char, recs *C.spool_record_t, count C.size_t) C.int {
	p := value[producer](h)
	if p == nil {
		return errBadArg
	}
	cs := unsafe.Slice(recs, int(count))
	// One array of records, and one buffer for every header of the batch, which lives until
	// the last record of the batch is reported; keys and values are copied by the SDK, once,
	// into the batches.
	var size, hdrBytes int64
	nhdrs := 0
	for i := range cs {
		chdrs := unsafe.Slice(cs[i].headers, int(cs[i].header_count))
		size += recordSize(cs[i].key_len, cs[i].value_len, chdrs)
		for _, ch := range chdrs {
			hdrBytes += int64(ch.key_len) + int64(ch.value_len)
		}
		nhdrs += len(chdrs)
	}
	if !p.reserve(int64(len(cs)), size) {
		p.cl.SendBuffered()
		return errQueueFull
	}
	var buf []byte
	if nhdrs > 0 {
		buf = make([]byte, 0, hdrBytes)
	}
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
	records := make([]cRecord, len(cs))
	var headers []spool.Header
	if nhdrs > 0 {
		headers = make([]spool.Header, nhdrs)
	}
	for i := range cs {
		c := &cs[i]
		r := &records[i]
		r.Topic, r.Partition, r.opaque = name, int32(c.partition), uintptr(c.msg_opaque)
		r.Key, r.Value = cBytes(c.key, c.key_len), cBytes(c.value, c.value_len)
		n := int(c.header_count)
		if n > 0 {
			r.Headers, headers = headers[:n:n], headers[n:]
			for j, ch := range unsafe.Slice(c.headers, n) {
				r.Headers[j] = spool.Header{Key: bytesOf(unsafe.Pointer(ch.key), ch.key_len), Value: bytesOf(ch.value, ch.value_len)}
			}
		}
		r.size = recordSize(c.key_len, c.value_len, unsafe.Slice(c.headers, n))
		p.cl.ProduceBorrowed(p.ctx, &r.Record, p.doneFn)
	}
	return 0
}

// cBytes is a view of n bytes of C memory at c, valid while the C caller's call lasts; nil
// for NULL (a null key or value), empty for n == 0.
func cBytes(c unsafe.Pointer, n C.size_t) []byte {
	if c == nil {
		return nil
	}
	if n == 0 {
		return []byte{}
	}
	return unsafe.Slice((*byte)(c), int(n))
}

// cStrlen is strlen in Go: a call of C.strlen from here is a cgo call, which costs more than
// scanning a topic name.
func cStrlen(s *C.char) int {
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(s), n)) != 0 {
		n++
	}
	return n
}

// topic returns the name at s as a Go string, the same one for every record of a topic.
func (p *producer) topic(s *C.char) string {
	view := unsafe.String((*byte)(unsafe.Pointer(s)), cStrlen(s)) // C memory: not kept
	if last := p.lastTopic.Load(); last != nil && *last == view {
		return *last // the usual case, without hashing the name
	}
	if t, ok := p.topics.Load(view); ok {
		name := t.(string)
		p.lastTopic.Store(&name)
		return name
	}
	name := strings.Clone(view)
	t, _ := p.topics.LoadOrStore(name, name)
	name = t.(string)
	p.lastTopic.Store(&name)
	return name
}

// done queues the report of a record, or drops it when nobody asked for reports.
func (p *producer) done(sr *spool.Record, err error, lease *spool.Lent) {
	r := (*cRecord)(unsafe.Pointer(sr)) // every record produced here is a cRecord's first field
	if err != nil {
		r.Offset = -1
	}
	if !p.reports {
		lease.Release()
		p.unreserve(1, r.size)
		return
	}
	p.mu.Lock()
	p.queue = append(p.queue, report{r, err, lease})
	p.mu.Unlock()
	select {
	case p.notify <- struct{}{}:
	default:
	}
}

// takeQueue waits up to timeoutMS for a delivery report (0: not at all) and takes every
// report queued. The queue goes on in the spare slice of an earlier take (given back when its
// messages are released), so a steady flow of reports allocates no new queue.
func (p *producer) takeQueue(timeoutMS C.int) []report {
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
	defer p.mu.Unlock()
	got := p.queue
	p.queue, p.spare = p.spare[:0], nil
	if len(got) == 0 {
		p.spare = got
		return nil
	}
	return got
}

//export spoolgo_producer_take
func spoolgo_producer_take(h C.uintptr_t, timeoutMS C.int, out ***C.spool_message_t) C.size_t {
	p := value[producer](h)
	if p == nil {
		return 0
	}
	got := p.takeQueue(timeoutMS)
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
	var served int64
	for i, rep := range got {
		errstrs[i] = errText(rep.err)
		sizes[i] = messageBytes(&rep.r.Record, errstrs[i], true)
		total += sizes[i]
		served += rep.r.size
	}
	base := C.malloc(C.size_t(total))
	if base == nil {
		panic("libspool: out of memory")
	}
	tb := &takenBlock{leases: make([]*spool.Lent, len(got))}
	arr := unsafe.Slice((**C.spool_message_t)(base), len(got))
	at := ptrs
	var pinnedLease *spool.Lent
	for i, rep := range got {
		// Records lent the same batch buffer (one after the other) pin it once.
		pin := &tb.pin
		if rep.lease != nil && rep.lease == pinnedLease {
			pin = alreadyPinned
		} else if rep.lease != nil && (len(rep.r.Key) > 0 || len(rep.r.Value) > 0) {
			pinnedLease = rep.lease
		}
		storeC(unsafe.Pointer(&arr[i]), unsafe.Pointer(fillMessage(unsafe.Add(base, at), sizes[i], &rep.r.Record, rep.err, errstrs[i], rep.r.opaque, pin)))
		at += sizes[i]
		tb.leases[i] = rep.lease
	}
	n := len(got)
	clear(got) // the records go once their reports are released
	p.mu.Lock()
	if p.taken == nil {
		p.taken = map[unsafe.Pointer]*takenBlock{}
	}
	p.taken[base] = tb
	if p.spare == nil {
		p.spare = got
	}
	p.mu.Unlock()
	p.unreserve(int64(n), served)
	*out = &arr[0]
	return C.size_t(n)
}

// spoolgo_producer_release unpins the keys and values of a block of reports taken by
// spoolgo_producer_take, once their callbacks returned, and gives their batches' buffers back
// for reuse; the shim then frees the block.
//
//export spoolgo_producer_release
func spoolgo_producer_release(h C.uintptr_t, block unsafe.Pointer) {
	p := value[producer](h)
	if p == nil {
		return
	}
	p.mu.Lock()
	tb := p.taken[block]
	delete(p.taken, block)
	p.mu.Unlock()
	if tb != nil {
		tb.pin.Unpin()
		for _, l := range tb.leases {
			l.Release()
		}
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
		addMemBudget(-p.budget.Swap(0))
		// Collect what the producer held now, while the runtime's memory limit is the
		// producer's, rather than when the heap has doubled under a handle that follows (a
		// consumer reading what was produced).
		if !valgrindBuild {
			runtime.GC()
		}
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

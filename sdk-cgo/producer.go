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

	// ring is where the produce calls put records (ring.c; its queue bound, as librdkafka's:
	// records and bytes produced whose report is not served yet, beyond which a produce is
	// SPOOL_ERR__QUEUE_FULL), and its drainer the goroutine producing them.
	ring   *drainer
	budget atomic.Int64 // its share of the runtime's memory limit (addMemBudget)

	// Records are reused once their reports are served: fresh ones (slab, allocated slabSize
	// at a time) only when none is free, so a steady flow allocates none. spare and slab are
	// the drainer's; freeRecs collects the records served, and the drainer takes it whole.
	slab      []cRecord
	spareRecs []*cRecord
	freeMu    sync.Mutex
	freeRecs  []*cRecord

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

// slabSize is how many records the drainer allocates at once: one allocation per 200
// records instead of one per record, small enough (30 KiB) for the allocator's small size
// classes. A slab lives until its last record is reported.
const slabSize = 200

// newRecord returns a zeroed record: one served before, or one from the slab. Only the
// drainer calls it.
func (p *producer) newRecord() *cRecord {
	if len(p.spareRecs) == 0 {
		p.freeMu.Lock()
		p.spareRecs, p.freeRecs = p.freeRecs, p.spareRecs[:0]
		p.freeMu.Unlock()
	}
	if n := len(p.spareRecs); n > 0 {
		r := p.spareRecs[n-1]
		p.spareRecs = p.spareRecs[:n-1]
		*r = cRecord{}
		return r
	}
	if len(p.slab) == 0 {
		p.slab = make([]cRecord, slabSize)
	}
	r := &p.slab[0]
	p.slab = p.slab[1:]
	return r
}

// reuse hands the records of reports served back to newRecord: nothing reads them after.
func (p *producer) reuse(reps []report) {
	p.freeMu.Lock()
	for _, rep := range reps {
		p.freeRecs = append(p.freeRecs, rep.r)
	}
	p.freeMu.Unlock()
}

// unreserve gives back the room in the ring's queue bound of n records of size bytes, whose
// reports were served (the produce calls reserved it in ring.c).
func (p *producer) unreserve(n, size int64) {
	atomic.AddInt64((*int64)(unsafe.Pointer(&p.ring.r.outq)), -n)
	atomic.AddInt64((*int64)(unsafe.Pointer(&p.ring.r.outq_bytes)), -size)
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
func spoolgo_producer_new(confH C.uintptr_t, hasDR C.int, ring *C.spoolring_t, errstr *C.char, size C.size_t) C.uintptr_t {
	sc := checkedConf(confH, "spool_producer_new", errstr, size)
	if sc == nil {
		return 0
	}
	part, err := sc.Partitioner()
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
	p := &producer{cl: cl, reports: hasDR != 0, ctx: ctx, cancel: cancel, notify: make(chan struct{}, 1), ring: newDrainer(ring)}
	maxMsgs, maxBytes := confInt(sc, "queue.buffering.max.messages"), confInt(sc, "queue.buffering.max.kbytes")<<10
	ring.max_msgs, ring.max_bytes = C.int64_t(maxMsgs), C.int64_t(maxBytes)
	p.doneFn = p.done
	p.budget.Store(producerBudget(maxMsgs, maxBytes))
	addMemBudget(p.budget.Load())
	go p.ring.run(p)
	return newHandle(p)
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

// topic returns the name view (C memory, not kept) as a Go string, the same one for every
// record of a topic.
func (p *producer) topic(view string) string {
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
		p.freeMu.Lock()
		p.freeRecs = append(p.freeRecs, r)
		p.freeMu.Unlock()
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
	p.reuse(got)
	clear(got)
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
	if err := p.ring.wait(ctx); err != nil { // records still in the ring (ring.go)
		return errCode(err)
	}
	return errCode(p.cl.Flush(ctx))
}

//export spoolgo_producer_close
func spoolgo_producer_close(h C.uintptr_t) {
	if p := value[producer](h); p != nil {
		p.cancel()
		<-p.ring.stopped // the C side frees the ring once this returns
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

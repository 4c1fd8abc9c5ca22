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

// producer is the Go side of a spool_producer_t. The SDK hands the outcomes of its records
// (ProduceTracked, a batch at a time) to deliver, which queues them; spoolgo_producer_take
// hands them to C in blocks, so that C calls its callback on its own thread.
type producer struct {
	cl      *spool.Client
	reports bool // a dr_cb is set: keep reports
	// ctx bounds a produce's waits (a topic lookup, a full buffer) by the producer's life;
	// the lookup bounds itself (a few metadata requests).
	ctx    context.Context
	cancel context.CancelFunc

	topics    sync.Map               // topic name → the same string, so a produce allocates no name
	lastTopic atomic.Pointer[string] // the name topic returned last

	// ring is where the produce calls put records (ring.c; its queue bound, as librdkafka's:
	// records and bytes produced whose report is not served yet, beyond which a produce is
	// SPOOL_ERR__QUEUE_FULL), and its drainer the goroutine producing them.
	ring   *drainer
	budget atomic.Int64 // its share of the runtime's memory limit (addMemBudget)

	mu     sync.Mutex
	queue  []*spool.Delivery
	spare  []*spool.Delivery              // the array of the queue taken last, reused
	taken  map[unsafe.Pointer]*takenBlock // block of reports taken → what its messages point at
	notify chan struct{}                  // a report was queued (capacity 1)
}

// takenBlock is what the messages of a block of reports point at, until C is done with
// them: the keys and values in their batches' buffers, pinned, and the deliveries holding
// those buffers.
type takenBlock struct {
	pin        runtime.Pinner
	deliveries []*spool.Delivery
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
	p := &producer{notify: make(chan struct{}, 1), ring: newDrainer(ring), reports: hasDR != 0}
	cl, err := spool.NewClient(append(sc.Opts(), spool.WithPartitioner(explicitPartitioner{part}), spool.WithDeliveryHandler(p.deliver))...)
	if err != nil {
		setErrstr(errstr, size, "spool_producer_new: "+err.Error())
		return 0
	}
	p.cl = cl
	p.ctx, p.cancel = context.WithCancel(context.Background())
	maxMsgs, maxBytes := confInt(sc, "queue.buffering.max.messages"), confInt(sc, "queue.buffering.max.kbytes")<<10
	ring.max_msgs, ring.max_bytes = C.int64_t(maxMsgs), C.int64_t(maxBytes)
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

// deliver queues the outcome of a batch's records for spool_producer_poll, or drops it
// when nobody asked for reports.
func (p *producer) deliver(d *spool.Delivery) {
	if !p.reports {
		p.unreserve(int64(d.Len()), d.Bytes())
		d.Release()
		return
	}
	p.mu.Lock()
	p.queue = append(p.queue, d)
	p.mu.Unlock()
	select {
	case p.notify <- struct{}{}:
	default:
	}
}

// takeQueue waits up to timeoutMS for a delivery report (0: not at all) and takes every
// report queued. The queue goes on in the spare slice of an earlier take (given back when its
// messages are released), so a steady flow of reports allocates no new queue.
func (p *producer) takeQueue(timeoutMS C.int) []*spool.Delivery {
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
	// the batches' bytes, pinned until then.
	n, served := countServed(got)
	total := 0
	errstrs := make([]string, len(got))
	var r spool.Record
	for i, d := range got {
		errstrs[i] = errText(d.Err())
		for j := range d.Len() {
			d.Record(j, &r)
			total += messageBytes(&r, errstrs[i], true)
		}
	}
	ptrs := n * int(unsafe.Sizeof((*C.spool_message_t)(nil)))
	total += ptrs
	base := C.malloc(C.size_t(total))
	if base == nil {
		panic("libspool: out of memory")
	}
	tb := &takenBlock{deliveries: got}
	arr := unsafe.Slice((**C.spool_message_t)(base), n)
	at, k := ptrs, 0
	for i, d := range got {
		// A batch's records lend one buffer: pin it once, with the first key or value.
		pin := &tb.pin
		for j := range d.Len() {
			d.Record(j, &r)
			size := messageBytes(&r, errstrs[i], true)
			storeC(unsafe.Pointer(&arr[k]), unsafe.Pointer(fillMessage(unsafe.Add(base, at), size, &r, d.Err(), errstrs[i], uintptr(d.Token(j)), pin)))
			if len(r.Key) > 0 || len(r.Value) > 0 {
				pin = alreadyPinned
			}
			at += size
			k++
		}
	}
	p.mu.Lock()
	if p.taken == nil {
		p.taken = map[unsafe.Pointer]*takenBlock{}
	}
	p.taken[base] = tb
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
	if tb == nil {
		return
	}
	tb.pin.Unpin()
	for _, d := range tb.deliveries {
		d.Release()
	}
	p.reuseQueue(tb.deliveries)
}

// countServed is the number of records of the deliveries ds and what they counted against
// the ring's queue bound, to give back once their reports are served.
func countServed(ds []*spool.Delivery) (n int, bytes int64) {
	for _, d := range ds {
		n += d.Len()
		bytes += d.Bytes()
	}
	return n, bytes
}

// reuseQueue gives the array of a queue taken by takeQueue, whose deliveries are released,
// back to it for the next queue.
func (p *producer) reuseQueue(ds []*spool.Delivery) {
	clear(ds)
	p.mu.Lock()
	if p.spare == nil {
		p.spare = ds[:0]
	}
	p.mu.Unlock()
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

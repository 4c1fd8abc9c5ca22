package main

/*
#include "spool_impl.h"
*/
import "C"

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	spool "github.com/spoolmq/spool/sdk-go"
)

// drainer is the Go side of a producer's produce ring (ring.c): one goroutine that takes the
// records the produce calls appended, a block at a time, and produces them through the SDK.
// The caller's thread only copies a record into the ring (no crossing into Go per record);
// the SDK's work per record (partitioning, encoding into the batch, the report's
// bookkeeping) runs here, on another thread, as librdkafka's runs on its broker threads.
//
// Only the drainer goroutine reads a block, from spoolring_take until its next take (which
// gives the block back to the ring); drained and progress are the drainer's report to
// spool_producer_flush.
type drainer struct {
	r        *C.spoolring_t // in the C producer handle; freed after the drainer stops
	kick     chan struct{}  // capacity 1: the ring went from idle to holding records
	stopped  chan struct{}  // closed when the goroutine returns
	drained  atomic.Uint64  // records taken and handed to the SDK
	mu       sync.Mutex
	progress chan struct{} // closed, and replaced, each time drained grows

	scratch spool.Record   // the record produceBlock lends the SDK, one at a time
	headers []spool.Header // its headers' array, reused
}

func newDrainer(r *C.spoolring_t) *drainer {
	return &drainer{r: r, kick: make(chan struct{}, 1), stopped: make(chan struct{}), progress: make(chan struct{})}
}

// spoolgo_producer_kick wakes the drainer: the ring has records and the drainer was idle.
//
//export spoolgo_producer_kick
func spoolgo_producer_kick(h C.uintptr_t) {
	if p := value[producer](h); p != nil {
		select {
		case p.ring.kick <- struct{}{}:
		default:
		}
	}
}

// run drains the ring until the producer closes. A block is produced whole even when the
// producer closes meanwhile: the SDK then fails its records at once.
func (d *drainer) run(p *producer) {
	defer close(d.stopped)
	for {
		select {
		case <-d.kick:
		case <-p.ctx.Done():
			return
		}
		for p.ctx.Err() == nil {
			var block *C.char
			var size C.size_t
			var hurry C.int
			n := C.spoolring_take(d.r, &block, &size, &hurry)
			if n > 0 {
				p.produceBlock(unsafe.Pointer(block), int(size))
				d.advance(uint64(n))
			}
			if hurry != 0 || p.queueFull() {
				// A produce found the queue full: nothing joins the open batches until
				// reports are served, so they go now rather than after linger.ms.
				p.cl.SendBuffered()
			}
			if n == 0 {
				break
			}
		}
	}
}

// queueFull tells whether the ring's queue is at its bound: no record can join the open
// batches until their reports are served, so lingering would only delay those reports (as
// the Java client sends at once while a send waits for buffer memory).
func (p *producer) queueFull() bool {
	r := p.ring.r
	return atomic.LoadInt64((*int64)(unsafe.Pointer(&r.outq))) >= int64(r.max_msgs) ||
		atomic.LoadInt64((*int64)(unsafe.Pointer(&r.outq_bytes))) >= int64(r.max_bytes)
}

// advance adds n to drained and wakes the flushes waiting for it.
func (d *drainer) advance(n uint64) {
	d.drained.Add(n)
	d.mu.Lock()
	close(d.progress)
	d.progress = make(chan struct{})
	d.mu.Unlock()
}

// wait returns once every record appended to the ring before the call has been handed to
// the SDK (so that the SDK's Flush covers it), or ctx ends, or the producer closes.
func (d *drainer) wait(ctx context.Context) error {
	target := uint64(C.spoolring_appended(d.r))
	for {
		d.mu.Lock()
		ch := d.progress
		d.mu.Unlock()
		if d.drained.Load() >= target {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-d.stopped:
			return nil
		}
	}
}

// produceBlock produces the records of a block taken from the ring (entries laid out as
// spoolring_rec_t says). Their keys, values and headers are lent to the SDK, which copies
// them into its batch before ProduceTracked returns; the token is the C caller's opaque.
func (p *producer) produceBlock(base unsafe.Pointer, size int) {
	const head = int(unsafe.Sizeof(C.spoolring_rec_t{}))
	// One timestamp for the block (its records were produced within the last few
	// milliseconds): reading the clock per record costs more than encoding a small record.
	now := time.Now()
	r := &p.ring.scratch
	for off := 0; off < size; {
		e := (*C.spoolring_rec_t)(unsafe.Add(base, off))
		at := unsafe.Add(base, off+head)
		*r = spool.Record{Topic: p.topic(unsafe.String((*byte)(at), int(e.topic_len))), Partition: int32(e.partition), Timestamp: now}
		if e.timestamp > 0 {
			r.Timestamp = time.UnixMilli(int64(e.timestamp))
		}
		at = unsafe.Add(at, e.topic_len)
		r.Key, at = ringBytes(at, int64(e.key_len))
		r.Value, at = ringBytes(at, int64(e.value_len))
		if e.header_count > 0 {
			hs := p.ring.headers[:0]
			for range e.header_count {
				lens := (*[2]int64)(at)
				var h spool.Header
				h.Key, at = ringBytes(unsafe.Add(at, 16), lens[0])
				h.Value, at = ringBytes(at, lens[1])
				hs = append(hs, h)
			}
			r.Headers, p.ring.headers = hs, hs
		}
		p.cl.ProduceTracked(p.ctx, r, uint64(e.opaque))
		off += int(e.size)
	}
	clear(p.ring.headers) // no view of the block outlives it
	*r = spool.Record{}
}

// ringBytes is a view of the n bytes at at (nil for n < 0: null) and where the next field
// starts.
func ringBytes(at unsafe.Pointer, n int64) ([]byte, unsafe.Pointer) {
	if n < 0 {
		return nil, at
	}
	if n == 0 {
		return []byte{}, at
	}
	return unsafe.Slice((*byte)(at), int(n)), unsafe.Add(at, n)
}

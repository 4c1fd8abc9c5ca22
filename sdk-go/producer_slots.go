package spool

import (
	"context"
	"sync"
	"sync/atomic"
)

// bufferSlots bounds the records produced and not yet finished (MaxBufferedRecords) and their
// bytes (MaxBufferedBytes). A finished batch frees all its records with one wake-up of the
// blocked producers; a channel semaphore would instead hand the CPU back and forth between
// the producer and the sender once per record.
type bufferSlots struct {
	max       int64
	maxBytes  int64
	used      atomic.Int64
	usedBytes atomic.Int64
	mu        sync.Mutex
	waiters   int
	freed     chan struct{} // closed at the next release when someone waits
}

// tryAcquire takes a slot for a record of size bytes. A record over the byte bound is let in
// when nothing else is buffered, so that it does not wait forever.
func (s *bufferSlots) tryAcquire(size int64) bool {
	for {
		n := s.used.Load()
		if n >= s.max {
			return false
		}
		if s.used.CompareAndSwap(n, n+1) {
			break
		}
	}
	if b := s.usedBytes.Add(size); b > s.maxBytes && b != size {
		// Not a release that frees room: records are buffered (b != size), and their
		// release wakes the waiters.
		s.usedBytes.Add(-size)
		s.used.Add(-1)
		return false
	}
	return true
}

// waitCh returns a channel closed by the next release. Callers try to acquire again after
// getting it, so a release in between is never missed.
func (s *bufferSlots) waitCh() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.freed == nil {
		s.freed = make(chan struct{})
	}
	s.waiters++
	return s.freed
}

// release frees the slots of n records of size bytes in all.
func (s *bufferSlots) release(n int, size int64) {
	s.usedBytes.Add(-size)
	s.used.Add(-int64(n))
	s.mu.Lock()
	if s.waiters > 0 {
		close(s.freed)
		s.freed, s.waiters = nil, 0
	}
	s.mu.Unlock()
}

// acquireSlot takes a buffer slot for a record of size bytes, waiting for one when the buffer
// is full and BlockOnFullBuffer is on.
func (p *producer) acquireSlot(ctx context.Context, size int64) error {
	if p.slots.tryAcquire(size) {
		return nil
	}
	if !p.cl.cfg.blockOnFull {
		return ErrBufferFull
	}
	if err := ctx.Err(); err != nil {
		// Ended before the wait began: fail now rather than race the sender for a slot that
		// may free up in a moment.
		return err
	}
	// A full buffer will not drain by lingering: have the sender send everything now (as
	// Kafka's accumulator does when its memory is exhausted).
	p.starved.Add(1)
	defer p.starved.Add(-1)
	p.wake()
	for {
		ch := p.slots.waitCh()
		if p.slots.tryAcquire(size) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-p.quit:
			return ErrClosed
		}
	}
}

// Package hist is a fixed-memory log-linear histogram of non-negative int64 values (such as
// latencies in nanoseconds), with at most 0.4% relative error on reported quantiles.
//
// Values below 2·sub are counted exactly; above, each power of two is split into sub linear
// buckets, so a bucket is never wider than 1/sub of its lower bound, and reporting its middle
// errs by at most half that. Record is lock-free and never allocates, so it can run on a hot
// path from many goroutines.
package hist

import (
	"math"
	"math/bits"
	"sync/atomic"
)

const (
	subBits = 7
	sub     = 1 << subBits
	// nBuckets covers every int64: exponents 0..63-subBits, sub buckets each.
	nBuckets = (64 - subBits) * sub
)

// Hist counts values. The zero value is empty and ready to use; it is about 58 KiB.
type Hist struct {
	counts [nBuckets]atomic.Uint64
	n      atomic.Uint64
	max    atomic.Int64
	// notMin holds ^min (negative for any min >= 0), so that zero means "none yet".
	notMin atomic.Int64
}

// index is the bucket of v (v >= 0).
func index(v uint64) int {
	if v < 2*sub {
		return int(v)
	}
	e := bits.Len64(v) - subBits - 1
	return (e+1)*sub + int(v>>e) - sub
}

// bounds is the smallest value of bucket i and its width.
func bounds(i int) (low, width uint64) {
	if i < 2*sub {
		return uint64(i), 1
	}
	e := i/sub - 1
	m := uint64(i%sub + sub)
	return m << e, 1 << e
}

// Record counts v; negative values count as 0.
func (h *Hist) Record(v int64) {
	v = max(v, 0)
	h.counts[index(uint64(v))].Add(1)
	h.n.Add(1)
	for cur := h.max.Load(); v > cur && !h.max.CompareAndSwap(cur, v); cur = h.max.Load() {
	}
	for cur := h.notMin.Load(); (cur == 0 || ^v > cur) && !h.notMin.CompareAndSwap(cur, ^v); cur = h.notMin.Load() {
	}
}

// Count is the number of recorded values.
func (h *Hist) Count() uint64 { return h.n.Load() }

// Max is the largest recorded value, exactly (0 when empty).
func (h *Hist) Max() int64 { return h.max.Load() }

// Min is the smallest recorded value, exactly (0 when empty).
func (h *Hist) Min() int64 {
	if m := h.notMin.Load(); m != 0 {
		return ^m
	}
	return 0
}

// Quantile is the value at quantile q in [0, 1]: the value of rank ceil(q·n) among the n
// recorded ones, within 0.4% (exact for the first and last), and never outside [Min, Max]. It is 0 when empty. Values
// recorded while it runs may or may not be seen.
func (h *Hist) Quantile(q float64) int64 {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	q = min(max(q, 0), 1)
	rank := uint64(math.Ceil(q * float64(n)))
	rank = min(max(rank, 1), n)
	switch rank {
	case n:
		return h.Max()
	case 1:
		return h.Min()
	}
	var seen uint64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			low, w := bounds(i)
			v := int64(low + (w-1)/2)
			return min(max(v, h.Min()), h.Max())
		}
	}
	return h.Max()
}

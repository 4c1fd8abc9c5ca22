package replication

// The replication throttle (Kafka's follower.replication.throttled.rate with
// follower.replication.throttled.replicas): a follower's fetchers share one byte budget for the
// partitions marked throttled, typically the replicas a reassignment is adding, so that
// copying a partition onto a new broker does not starve the traffic of clients and of the
// in-sync followers. When the budget is spent, the fetchers leave the throttled partitions out
// of their fetches until it refills, as Kafka's ReplicaFetcherThread does; the other
// partitions keep fetching.

import (
	"sync"
	"time"
)

// Quota is a token bucket of bytes per second, refilled continuously and holding at most one
// second's worth. It is safe for concurrent use. A rate of 0 or less means no limit.
type Quota struct {
	mu     sync.Mutex
	rate   int64
	tokens float64
	last   time.Time
}

// SetRate changes the rate; a change keeps what has been spent.
func (q *Quota) SetRate(rate int64, now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if rate == q.rate {
		return
	}
	q.refillLocked(now)
	if q.rate <= 0 {
		q.tokens = float64(rate) // a new limit starts with a full second
	}
	q.rate = rate
	q.tokens = min(q.tokens, float64(rate))
}

func (q *Quota) refillLocked(now time.Time) {
	if !q.last.IsZero() && q.rate > 0 {
		q.tokens = min(q.tokens+float64(q.rate)*now.Sub(q.last).Seconds(), float64(q.rate))
	}
	q.last = now
}

// Wait is how long throttled fetching must pause from now (0: it may go on).
func (q *Quota) Wait(now time.Time) time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.rate <= 0 {
		return 0
	}
	q.refillLocked(now)
	if q.tokens > 0 {
		return 0
	}
	return time.Duration(-q.tokens / float64(q.rate) * float64(time.Second))
}

// Record spends n bytes; the budget may go negative (one fetch overshoots, the next waits).
func (q *Quota) Record(n int, now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.rate <= 0 {
		return
	}
	q.refillLocked(now)
	q.tokens -= float64(n)
}

// Limit is the most a throttled partition may fetch at once: a second's budget, at least 1.
func (q *Quota) Limit(most int32) int32 {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.rate <= 0 || q.rate >= int64(most) {
		return most
	}
	return int32(max(q.rate, 1))
}

package spool

import (
	"encoding/binary"
	"maps"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Partitioner picks the partition of a record. Partition is called with the record and the
// topic's partition count (n > 0) and must return a value in [0, n). It may be called
// concurrently.
type Partitioner interface {
	Partition(r *Record, n int) int
}

// PartitionerFunc adapts a function to Partitioner.
type PartitionerFunc func(r *Record, n int) int

// Partition calls f.
func (f PartitionerFunc) Partition(r *Record, n int) int { return f(r, n) }

// Murmur2 is Kafka's murmur2 hash (Java Utils.murmur2), as a signed 32-bit value.
func Murmur2(b []byte) int32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	n := len(b)
	h := seed ^ uint32(n)
	for len(b) >= 4 {
		k := binary.LittleEndian.Uint32(b)
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
		b = b[4:]
	}
	switch len(b) {
	case 3:
		h ^= uint32(b[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(b[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(b[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// KafkaPartition is the Java client's keyed choice: toPositive(murmur2(key)) % n.
func KafkaPartition(key []byte, n int) int {
	return int(uint32(Murmur2(key))&0x7fffffff) % n
}

type hashPartitioner struct{ fallback Partitioner }

// Hash partitions keyed records like the Java client (murmur2, see KafkaPartition) and unkeyed
// ones (nil key) round-robin.
func Hash() Partitioner { return &hashPartitioner{fallback: RoundRobin()} }

func (h *hashPartitioner) Partition(r *Record, n int) int {
	if r.Key == nil {
		return h.fallback.Partition(r, n)
	}
	return KafkaPartition(r.Key, n)
}

type roundRobin struct{ next atomic.Uint32 }

// RoundRobin spreads records one by one across the partitions, ignoring keys.
func RoundRobin() Partitioner { return &roundRobin{} }

func (rr *roundRobin) Partition(_ *Record, n int) int {
	return int((rr.next.Add(1) - 1) % uint32(n))
}

// sticky keeps a lock-free count per topic: the k-th record of a topic goes to partition
// (start + k/every) mod n. Partition runs once per record, so it takes no lock.
type sticky struct {
	every  uint64
	next   atomic.Uint32 // the partition the next new topic starts on
	topics perTopic[stickyTopic]
}

type stickyTopic struct {
	start uint64
	n     atomic.Uint64
}

// Sticky sends records to one partition per topic and moves to the next partition after
// every `every` records (default 1000 when every <= 0), so batches fill up; keyed records
// still go by Hash when keys is true.
func Sticky(every int, keys bool) Partitioner {
	if every <= 0 {
		every = 1000
	}
	s := &sticky{every: uint64(every)}
	if keys {
		return PartitionerFunc(func(r *Record, n int) int {
			if r.Key != nil {
				return KafkaPartition(r.Key, n)
			}
			return s.Partition(r, n)
		})
	}
	return s
}

func (s *sticky) Partition(r *Record, n int) int {
	st := s.topics.get(r.Topic, func() *stickyTopic { return &stickyTopic{start: uint64(s.next.Add(1) - 1)} })
	k := st.n.Add(1) - 1
	return int((st.start + k/s.every) % uint64(n))
}

// perTopic is a partitioner's state per topic: a copy-on-write map, so that Partition, which
// runs once per record, takes no lock once the topic is known.
type perTopic[T any] struct {
	mu sync.Mutex // serializes adding topics
	m  atomic.Pointer[map[string]*T]
}

// get returns topic's state, made by mk the first time.
func (p *perTopic[T]) get(topic string, mk func() *T) *T {
	if m := p.m.Load(); m != nil {
		if v := (*m)[topic]; v != nil {
			return v
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var old map[string]*T
	if m := p.m.Load(); m != nil {
		old = *m
	}
	if v := old[topic]; v != nil {
		return v
	}
	v := mk()
	m := maps.Clone(old)
	if m == nil {
		m = map[string]*T{}
	}
	m[topic] = v
	p.m.Store(&m)
	return v
}

// DefaultStickyLinger is librdkafka's sticky.partitioning.linger.ms: how long records that
// murmur2_random and consistent_random place "at random" stay on one partition.
const DefaultStickyLinger = 10 * time.Millisecond

// keyedSticky is librdkafka's placement for its partitioner names: keyed records by hash,
// and those that random says have no usable key on one partition per topic, picked at random
// and picked again once linger has passed (sticky.partitioning.linger.ms), so that their
// batches fill, as the Java client's sticky placement does (KIP-480). linger 0 (or random
// nil) places each such record at random.
type keyedSticky struct {
	hash   func(key []byte, n int) int
	random func(key []byte) bool // nil: every record by hash
	linger time.Duration
	topics perTopic[stickyPick]
}

// stickyPick is a topic's current partition for unkeyed records and, in nanoseconds of
// stickyClock, until when it holds. The two are read without a lock: a reader seeing one
// updated and not the other places one record on the previous partition, which is harmless.
type stickyPick struct {
	part  atomic.Int32
	until atomic.Int64
}

var stickyClock = time.Now() // the monotonic origin of stickyPick.until

func (k *keyedSticky) Partition(r *Record, n int) int {
	if k.random == nil || !k.random(r.Key) {
		return k.hash(r.Key, n)
	}
	if k.linger <= 0 {
		return rand.IntN(n)
	}
	pick := k.topics.get(r.Topic, func() *stickyPick { return &stickyPick{} })
	now := int64(time.Since(stickyClock))
	if p := int(pick.part.Load()); now < pick.until.Load() && p < n {
		return p
	}
	p := rand.IntN(n)
	pick.part.Store(int32(p))
	pick.until.Store(now + int64(k.linger))
	return p
}

// withStickyLinger is k with linger d, a partitioner of its own.
func (k *keyedSticky) withStickyLinger(d time.Duration) Partitioner {
	return &keyedSticky{hash: k.hash, random: k.random, linger: d}
}

// applyStickyLinger gives p linger d when it is one of PartitionerByName's sticky
// placements, and returns p unchanged otherwise.
func applyStickyLinger(p Partitioner, d time.Duration) Partitioner {
	if k, ok := p.(*keyedSticky); ok {
		return k.withStickyLinger(d)
	}
	return p
}

// DefaultPartitioner is the default: keyed records by Hash (Java-compatible murmur2), unkeyed
// records round-robin.
func DefaultPartitioner() Partitioner { return Hash() }

// ManualPartitioner uses each record's Partition field as set by the caller.
func ManualPartitioner() Partitioner {
	return PartitionerFunc(func(r *Record, n int) int { return int(r.Partition) })
}

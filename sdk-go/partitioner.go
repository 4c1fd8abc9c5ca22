package spool

import (
	"encoding/binary"
	"maps"
	"sync"
	"sync/atomic"
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
	mu     sync.Mutex    // serializes adding topics
	topics atomic.Pointer[map[string]*stickyTopic]
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
	s.topics.Store(&map[string]*stickyTopic{})
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
	st := (*s.topics.Load())[r.Topic]
	if st == nil {
		st = s.addTopic(r.Topic)
	}
	k := st.n.Add(1) - 1
	return int((st.start + k/s.every) % uint64(n))
}

// addTopic publishes a copy of the topic map with topic added.
func (s *sticky) addTopic(topic string) *stickyTopic {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := *s.topics.Load()
	if st := old[topic]; st != nil {
		return st
	}
	st := &stickyTopic{start: uint64(s.next.Add(1) - 1)}
	m := maps.Clone(old)
	m[topic] = st
	s.topics.Store(&m)
	return st
}

// DefaultPartitioner is the default: keyed records by Hash (Java-compatible murmur2), unkeyed
// records round-robin.
func DefaultPartitioner() Partitioner { return Hash() }

// ManualPartitioner uses each record's Partition field as set by the caller.
func ManualPartitioner() Partitioner {
	return PartitionerFunc(func(r *Record, n int) int { return int(r.Partition) })
}

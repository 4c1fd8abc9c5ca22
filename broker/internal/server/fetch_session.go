package server

// Fetch sessions (KIP-227), as Kafka's brokers keep them. A Fetch v7+ with session id 0 and
// epoch 0 is a full fetch that opens a session: the broker remembers each partition's fetch
// parameters and the high watermark and log start offset it last told the client. Later
// requests carry (id, epoch 1, 2, ...) and list only partitions that were added or changed,
// plus ForgottenTopicsData for those to drop; the other session partitions are fetched with
// their remembered parameters, and a partition is left out of the response unless it has
// records, an error, or a new high watermark or log start offset. Partitions that answer move
// to the back of the session, so with MaxBytes binding every partition gets its turn.
// Epoch -1 closes the session named (if any) and fetches sessionless; epoch 0 with a session
// id replaces that session. Errors: an unknown id gets FETCH_SESSION_ID_NOT_FOUND, a wrong
// epoch INVALID_FETCH_SESSION_EPOCH; the client then starts over with a full fetch. The
// cache is bounded: when full, a new session may evict one idle longer than the eviction
// time, or else the smallest session older than that time if the new one has more
// partitions; otherwise the client is answered without a session (id 0) and keeps doing full
// fetches, which is always correct.

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// Kafka's default for min.incremental.fetch.session.eviction.ms. The slot count is the broker
// property max.incremental.fetch.session.cache.slots.
const fetchSessionEvictAfter = 120 * time.Second

// Session epochs, as in Kafka's FetchMetadata.
const (
	epochInitial int32 = 0  // open a session with this full fetch
	epochFinal   int32 = -1 // fetch without a session (closing the one named)
)

// nextEpoch follows Kafka's FetchMetadata.nextEpoch: epochs run 1..MaxInt32 and wrap to 1.
func nextEpoch(e int32) int32 {
	switch {
	case e < 0:
		return epochFinal
	case e == 1<<31-1:
		return 1
	}
	return e + 1
}

// fetchTarget is one partition a fetch reads, with the client's parameters for it.
type fetchTarget struct {
	topicPartition
	fetchOffset int64
	maxBytes    int32
}

// sessionPartition is what a session remembers of one partition. sentHW and sentLSO are the
// high watermark and log start offset last sent; -1 forces the next response to include it.
type sessionPartition struct {
	fetchTarget
	sentHW, sentLSO int64
}

type fetchSession struct {
	id       int32
	epoch    int32 // the epoch the next incremental request must carry
	parts    []*sessionPartition
	index    map[topicPartition]*sessionPartition
	created  time.Time
	lastUsed time.Time
}

// fetchSessionCache holds the broker's sessions. One mutex guards everything: each operation
// is a map lookup plus work linear in the partitions of one request.
type fetchSessionCache struct {
	mu         sync.Mutex
	slots      int
	evictAfter time.Duration
	now        func() time.Time
	sessions   map[int32]*fetchSession
}

func newFetchSessionCache(slots int, evictAfter time.Duration) *fetchSessionCache {
	return &fetchSessionCache{slots: slots, evictAfter: evictAfter, now: time.Now, sessions: map[int32]*fetchSession{}}
}

// fetchPlan is how one Fetch request is served: the partitions to read, in response order,
// and what to do with the session once the response is known.
type fetchPlan struct {
	targets []fetchTarget
	// errorCode set: answer with only this top-level error.
	errorCode int16
	// openSession: a full fetch that may open a session when it answers.
	openSession bool
	// session set: an incremental fetch; the response keeps only changed partitions. The
	// session must still be at epoch when the response is built.
	session *fetchSession
	epoch   int32
}

// plan resolves a request against the session cache. version is the request's; sessions
// exist from v7.
func (c *fetchSessionCache) plan(r *wire.FetchRequest, version int16) fetchPlan {
	if version < 7 {
		return fetchPlan{targets: requestTargets(r)}
	}
	if r.SessionEpoch == epochInitial || r.SessionEpoch == epochFinal {
		if r.SessionId != 0 {
			c.remove(r.SessionId)
		}
		return fetchPlan{targets: requestTargets(r), openSession: r.SessionEpoch == epochInitial && c.slots > 0}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	sess := c.sessions[r.SessionId]
	switch {
	case sess == nil:
		return fetchPlan{errorCode: wire.ErrFetchSessionIdNotFound.Code}
	case sess.epoch != r.SessionEpoch:
		return fetchPlan{errorCode: wire.ErrInvalidFetchSessionEpoch.Code}
	}
	sess.update(r)
	if len(sess.parts) == 0 {
		// Forgetting every partition ends the session; this fetch reads nothing.
		delete(c.sessions, sess.id)
		return fetchPlan{}
	}
	sess.lastUsed = c.now()
	sess.epoch = nextEpoch(sess.epoch)
	p := fetchPlan{session: sess, epoch: sess.epoch, targets: make([]fetchTarget, len(sess.parts))}
	for i, sp := range sess.parts {
		p.targets[i] = sp.fetchTarget
	}
	return p
}

// requestTargets lists a request's partitions in request order.
func requestTargets(r *wire.FetchRequest) []fetchTarget {
	var out []fetchTarget
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			out = append(out, fetchTarget{topicPartition{t.Topic, p.Partition}, p.FetchOffset, p.PartitionMaxBytes})
		}
	}
	return out
}

// update applies an incremental request: listed partitions are added or get new parameters,
// forgotten ones are dropped.
func (s *fetchSession) update(r *wire.FetchRequest) {
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			tp := topicPartition{t.Topic, p.Partition}
			if sp := s.index[tp]; sp != nil {
				sp.fetchOffset, sp.maxBytes = p.FetchOffset, p.PartitionMaxBytes
				continue
			}
			sp := &sessionPartition{fetchTarget: fetchTarget{tp, p.FetchOffset, p.PartitionMaxBytes}, sentHW: -1, sentLSO: -1}
			s.parts = append(s.parts, sp)
			s.index[tp] = sp
		}
	}
	forgotten := false
	for _, t := range r.ForgottenTopicsData {
		for _, p := range t.Partitions {
			tp := topicPartition{t.Topic, p}
			if s.index[tp] != nil {
				delete(s.index, tp)
				forgotten = true
			}
		}
	}
	if forgotten {
		kept := s.parts[:0]
		for _, sp := range s.parts {
			if s.index[sp.topicPartition] == sp {
				kept = append(kept, sp)
			}
		}
		clear(s.parts[len(kept):])
		s.parts = kept
	}
}

// remove drops a session if it exists.
func (c *fetchSessionCache) remove(id int32) {
	c.mu.Lock()
	delete(c.sessions, id)
	c.mu.Unlock()
}

// open creates a session for a full fetch's targets and what its response told the client,
// and returns its id, or 0 when the cache has no room.
func (c *fetchSessionCache) open(targets []fetchTarget, parts []wire.FetchResponsePartitionData) int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if len(c.sessions) >= c.slots && !c.evictFor(len(targets), now) {
		return 0
	}
	s := &fetchSession{epoch: 1, index: make(map[topicPartition]*sessionPartition, len(targets)), created: now, lastUsed: now}
	for {
		s.id = rand.Int32N(1<<31-1) + 1 // positive; 0 means no session
		if c.sessions[s.id] == nil {
			break
		}
	}
	s.parts = make([]*sessionPartition, 0, len(targets))
	for i, t := range targets {
		if s.index[t.topicPartition] != nil {
			continue // a partition listed twice: the first listing wins
		}
		sp := &sessionPartition{fetchTarget: t}
		sp.sentHW, sp.sentLSO = sentOffsets(&parts[i])
		s.parts = append(s.parts, sp)
		s.index[t.topicPartition] = sp
	}
	c.sessions[s.id] = s
	return s.id
}

// sentOffsets is what a session remembers of a response partition; an error forgets the high
// watermark, so the partition is sent again once the error clears.
func sentOffsets(pd *wire.FetchResponsePartitionData) (hw, lso int64) {
	if pd.ErrorCode != 0 {
		return -1, pd.LogStartOffset
	}
	return pd.HighWatermark, pd.LogStartOffset
}

// evictFor makes room for a new session of size partitions, as Kafka's FetchSessionCache
// does: the least recently used session goes if it has been idle longer than evictAfter;
// otherwise the smallest session created longer than evictAfter ago goes if it is smaller.
func (c *fetchSessionCache) evictFor(size int, now time.Time) bool {
	var lru, smallest *fetchSession
	for _, s := range c.sessions {
		if lru == nil || s.lastUsed.Before(lru.lastUsed) || (s.lastUsed.Equal(lru.lastUsed) && s.id < lru.id) {
			lru = s
		}
		if now.Sub(s.created) > c.evictAfter {
			if smallest == nil || len(s.parts) < len(smallest.parts) || (len(s.parts) == len(smallest.parts) && s.id < smallest.id) {
				smallest = s
			}
		}
	}
	switch {
	case lru == nil:
		return false
	case now.Sub(lru.lastUsed) > c.evictAfter:
		delete(c.sessions, lru.id)
	case smallest != nil && size > len(smallest.parts):
		delete(c.sessions, smallest.id)
	default:
		return false
	}
	return true
}

// finish turns what was read into the response the plan calls for, opening or updating the
// session. It runs once per request, when the response is final.
func (c *fetchSessionCache) finish(p *fetchPlan, f *splicedFetch) {
	switch {
	case p.errorCode != 0:
		f.fail(p.errorCode)
	case p.openSession:
		f.resp.SessionId = c.open(p.targets, f.partitions)
	case p.session != nil:
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.sessions[p.session.id] != p.session || p.session.epoch != p.epoch {
			// Another request moved the session on while this one waited: Kafka's answer
			// to a duplicate request.
			f.fail(wire.ErrInvalidFetchSessionEpoch.Code)
			return
		}
		f.resp.SessionId = p.session.id
		p.session.keepChanged(f)
	}
}

// keepChanged drops from f the partitions the client needs not hear about again, records what
// it is told about the rest, and moves those to the back of the session.
func (s *fetchSession) keepChanged(f *splicedFetch) {
	keep := 0
	var answered []*sessionPartition
	// targets may share its array with the plan's, so it is rebuilt, not compacted in place.
	targets := make([]fetchTarget, 0, len(f.targets))
	for i := range f.partitions {
		pd := &f.partitions[i]
		sp := s.index[f.targets[i].topicPartition]
		if sp == nil {
			continue // forgotten by a later request; it cannot be in this one's session
		}
		hw, lso := sentOffsets(pd)
		if f.parts[i].size == 0 && pd.ErrorCode == 0 && hw == sp.sentHW && lso == sp.sentLSO {
			continue
		}
		sp.sentHW, sp.sentLSO = hw, lso
		answered = append(answered, sp)
		f.partitions[keep], f.parts[keep] = f.partitions[i], f.parts[i]
		targets = append(targets, f.targets[i])
		keep++
	}
	f.partitions, f.parts, f.targets = f.partitions[:keep], f.parts[:keep], targets
	if len(answered) == 0 {
		return
	}
	moved := make(map[*sessionPartition]bool, len(answered))
	for _, sp := range answered {
		moved[sp] = true
	}
	rest := s.parts[:0]
	for _, sp := range s.parts {
		if !moved[sp] {
			rest = append(rest, sp)
		}
	}
	s.parts = append(rest, answered...)
}

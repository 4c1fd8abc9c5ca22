package server

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/broker/internal/config"
)

// Repeated info lines. An operator needs to see that bob is refused Write on orders-eu and that
// a producer keeps sending to a topic that does not exist, but not ten thousand times a second:
// such events are logged once per key (principal, operation, resource; topic) per interval
// (spool.log.summary.interval.ms), and the repeats left out are counted and logged with the
// key's next line, or in a summary line once the interval is over, so none goes unreported.
// Client connections are logged one by one at debug only; at info a summary per interval says
// how many were opened and closed, how many are open, and which client software connected.
//
// Ownership and locking: a logThrottle's state is behind its own mutex, taken for a map lookup
// and a few assignments, never across I/O: the log line is written after it is released. The
// connection counters are atomics; the software tally has its own mutex. Memory is bounded: a
// throttle tracks at most throttleMaxKeys keys (events of further keys are counted as
// "other"), the tally at most softwareMaxNames names, and both are emptied every interval.

// throttleMaxKeys bounds the keys a throttle tracks within an interval.
const throttleMaxKeys = 1024

// softwareMaxNames bounds the client software names tallied within an interval.
const softwareMaxNames = 32

// throttled is one key's state: when its last line was logged and how many of its events
// have had no line since.
type throttled struct {
	last       time.Time
	suppressed int64
}

// throttleStep is the rule for one event of a key (known: the key has a state e): the first
// event of a key, or the first after its interval, gets a line, which reports the events
// suppressed before it; an event within the interval is counted instead.
func throttleStep(e throttled, known bool, now time.Time, interval time.Duration) (next throttled, logIt bool, suppressed int64) {
	if !known || now.Sub(e.last) >= interval {
		return throttled{last: now}, true, e.suppressed
	}
	e.suppressed++
	return e, false, 0
}

// logThrottle rate-limits the lines of one kind of event, by key.
type logThrottle[K comparable] struct {
	mu       sync.Mutex
	keys     map[K]throttled
	overflow int64 // events of keys the full table could not track, since the last flush
}

// note records an event of key at now: whether to log it, and how many events of the key
// went unlogged before it.
func (t *logThrottle[K]) note(key K, now time.Time, interval time.Duration) (logIt bool, suppressed int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.keys == nil {
		t.keys = map[K]throttled{}
	}
	e, known := t.keys[key]
	if !known && len(t.keys) >= throttleMaxKeys {
		t.overflow++
		return false, 0
	}
	next, logIt, suppressed := throttleStep(e, known, now, interval)
	t.keys[key] = next
	return logIt, suppressed
}

// flush ends the intervals that are over at now: it returns the keys with events left
// unlogged (and their counts) and forgets every key whose interval is over, and returns the
// events of keys that found the table full.
func (t *logThrottle[K]) flush(now time.Time, interval time.Duration) (pending map[K]int64, overflow int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, e := range t.keys {
		if now.Sub(e.last) < interval {
			continue
		}
		if e.suppressed > 0 {
			if pending == nil {
				pending = map[K]int64{}
			}
			pending[k] = e.suppressed
		}
		delete(t.keys, k)
	}
	overflow, t.overflow = t.overflow, 0
	return pending, overflow
}

// denialKey identifies an authorization denial for the throttle.
type denialKey struct {
	principal, operation, resourceType, name string
}

// logLines is the broker's state for repeated info lines.
type logLines struct {
	start           sync.Once
	denials         logThrottle[denialKey]
	missingTopics   logThrottle[string]
	opened, closed  atomic.Int64 // client connections in the current interval
	open            atomic.Int64 // client connections open now
	softwareMu      sync.Mutex
	software        map[string]int // "name version" from ApiVersions, in the current interval
	softwareOverflw int
}

// logInterval is spool.log.summary.interval.ms; 0 turns the throttling and the summaries off
// (every event gets its line, connections stay at debug).
func (s *Server) logInterval() time.Duration {
	return time.Duration(s.conf.Int64(config.LogSummaryIntervalMs)) * time.Millisecond
}

// startLogSummaries starts, once, the goroutine that ends each interval: the summary of client
// connections and the repeats the throttles left out.
func (s *Server) startLogSummaries() {
	s.logLines.start.Do(func() {
		interval := s.logInterval()
		if interval <= 0 {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for {
				select {
				case <-s.ctx.Done():
					return
				case now := <-tick.C:
					s.logSummaries(now, interval)
				}
			}
		}()
	})
}

// logSummaries writes the lines that end an interval.
func (s *Server) logSummaries(now time.Time, interval time.Duration) {
	ll := &s.logLines
	opened, closed := ll.opened.Swap(0), ll.closed.Swap(0)
	ll.softwareMu.Lock()
	software, other := ll.software, ll.softwareOverflw
	ll.software, ll.softwareOverflw = nil, 0
	ll.softwareMu.Unlock()
	if opened > 0 || closed > 0 {
		names := slices.Sorted(maps.Keys(software))
		var b strings.Builder
		for i, n := range names {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(n)
			b.WriteString(" ×")
			b.WriteString(strconv.Itoa(software[n]))
		}
		if other > 0 {
			b.WriteString(", other ×" + strconv.Itoa(other))
		}
		s.log.Info("client connections", "opened", opened, "closed", closed, "open", ll.open.Load(),
			"software", b.String(), "interval", interval)
	}
	denied, otherDenied := ll.denials.flush(now, interval)
	for k, n := range denied {
		s.log.Info("authorization denied, repeats", "principal", k.principal, "operation", k.operation,
			"resource_type", k.resourceType, "resource_name", k.name, "repeats", n, "interval", interval)
	}
	if otherDenied > 0 {
		s.log.Info("authorization denied, repeats of other principals and resources", "repeats", otherDenied, "interval", interval)
	}
	missing, otherMissing := ll.missingTopics.flush(now, interval)
	for topic, n := range missing {
		s.log.Info("produce to a topic that does not exist refused, repeats", "topic", topic, "repeats", n, "interval", interval)
	}
	if otherMissing > 0 {
		s.log.Info("produce to a topic that does not exist refused, repeats for other topics", "repeats", otherMissing, "interval", interval)
	}
}

// logDenied logs an authorization denial at info, as Kafka's kafka.authorizer.logger does
// ("Principal = User:bob is Denied Operation = Write from host = ... on resource = Topic:...
// for request = Produce"), once per principal, operation and resource per interval.
func (s *Server) logDenied(req *request, op, typ, name string) {
	interval := s.logInterval()
	logIt, repeats := true, int64(0)
	if interval > 0 {
		s.startLogSummaries()
		logIt, repeats = s.logLines.denials.note(denialKey{req.principal, op, typ, name}, time.Now(), interval)
	}
	if logIt {
		s.log.Info("authorization denied", "principal", req.principal, "host", req.host, "operation", op,
			"resource_type", typ, "resource_name", name, "api", req.api.Name, "repeats", repeats)
	}
}

// logMissingTopic logs a produce refused because its topic does not exist (with
// auto.create.topics.enable the client creates topics through Metadata first), once per topic
// per interval.
func (s *Server) logMissingTopic(req *request, topic string) {
	interval := s.logInterval()
	logIt, repeats := true, int64(0)
	if interval > 0 {
		s.startLogSummaries()
		logIt, repeats = s.logLines.missingTopics.note(topic, time.Now(), interval)
	}
	if logIt {
		s.log.Info("produce to a topic that does not exist refused (UNKNOWN_TOPIC_OR_PARTITION)", "topic", topic,
			"principal", req.principal, "host", req.host, "client_id", req.clientID(), "repeats", repeats)
	}
}

// connOpened and connClosed count client connections for the summary.
func (s *Server) connOpened() {
	s.startLogSummaries()
	s.logLines.opened.Add(1)
	s.logLines.open.Add(1)
}

func (s *Server) connClosed() {
	s.logLines.closed.Add(1)
	s.logLines.open.Add(-1)
}

// clientSoftware tallies a connection's client software (ApiVersions v3+) for the summary.
func (s *Server) clientSoftware(name, version string) {
	if name == "" {
		return
	}
	ll := &s.logLines
	ll.softwareMu.Lock()
	defer ll.softwareMu.Unlock()
	key := name + " " + version
	if _, ok := ll.software[key]; !ok && len(ll.software) >= softwareMaxNames {
		ll.softwareOverflw++
		return
	}
	if ll.software == nil {
		ll.software = map[string]int{}
	}
	ll.software[key]++
}

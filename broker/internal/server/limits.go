package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/broker/internal/config"
	"github.com/spoolmq/spool/broker/internal/metrics"
)

// Flood limits: how many connections the broker keeps (max.connections, per listener
// listener.name.<listener>.max.connections, per client address max.connections.per.ip with
// max.connections.per.ip.overrides) and how much memory requests still being read may hold
// (queued.max.request.bytes). A connection over a limit is closed as soon as it is accepted; a
// reader short of request memory waits for it, so a flood of half-sent frames costs the broker
// what they actually sent, up to the bound, and no more.

// refusalLogInterval is how often refused connections are logged (as a count), so a flood
// does not become a flood of log lines.
const refusalLogInterval = 10 * time.Second

// connLimits counts open connections, in total and by client IP.
type connLimits struct {
	max       int            // max.connections
	perIP     int            // max.connections.per.ip
	overrides map[string]int // max.connections.per.ip.overrides, by IP
	// exempt is the inter-broker listener in cluster mode: like Kafka, max.connections does
	// not apply to it, so a client flood cannot cut replication.
	exempt string

	// listeners are the listeners with a limit of their own (KIP-402), by name. Unlike
	// max.connections it binds the inter-broker listener too.
	listeners map[string]*listenerLimit

	mu    sync.Mutex
	total int
	byIP  map[string]int

	refusedTotal, refusedIP atomic.Int64 // cumulative, for metrics
	log                     refusalLog
}

// listenerLimit is one listener's listener.name.<listener>.max.connections.
type listenerLimit struct {
	property string // the property's name, as metrics and logs give it
	max      int
	open     int          // guarded by connLimits.mu
	refused  atomic.Int64 // cumulative, for metrics
}

// newConnLimits reads the connection limits. Hostnames in the overrides are resolved once,
// at startup, as Kafka does.
func newConnLimits(conf *config.Config, clustered bool, log *slog.Logger) (*connLimits, error) {
	l := &connLimits{max: conf.Int(config.MaxConnections), perIP: conf.Int(config.MaxConnectionsPerIP),
		overrides: map[string]int{}, byIP: map[string]int{}, log: refusalLog{log: log}}
	if clustered {
		l.exempt = conf.InterBrokerListener()
	}
	for _, lc := range conf.Listeners() {
		if n, ok := conf.ListenerMaxConnections(lc.Name); ok {
			if l.listeners == nil {
				l.listeners = map[string]*listenerLimit{}
			}
			l.listeners[lc.Name] = &listenerLimit{property: config.ListenerMaxConnectionsName(lc.Name), max: n}
		}
	}
	ov, err := parseIPOverrides(conf.Get(config.MaxConnectionsPerIPOverrides))
	if err != nil {
		return nil, &config.UsageError{Err: fmt.Errorf("%s: %w", config.MaxConnectionsPerIPOverrides, err)}
	}
	// Hostnames first, then addresses: an address given itself wins over a name resolving to it.
	for host, n := range ov {
		if net.ParseIP(host) != nil {
			continue
		}
		ips, err := net.LookupIP(host)
		if err != nil {
			return nil, &config.UsageError{Err: fmt.Errorf("%s: resolving %q: %w", config.MaxConnectionsPerIPOverrides, host, err)}
		}
		for _, ip := range ips {
			l.overrides[ip.String()] = n
		}
	}
	for host, n := range ov {
		if ip := net.ParseIP(host); ip != nil {
			l.overrides[ip.String()] = n
		}
	}
	return l, nil
}

// parseIPOverrides parses Kafka's "host:n,host2:m" (an IPv6 address keeps its colons: the
// count is after the last one).
func parseIPOverrides(v string) (map[string]int, error) {
	out := map[string]int{}
	for _, e := range strings.Split(v, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		i := strings.LastIndexByte(e, ':')
		if i <= 0 {
			return nil, fmt.Errorf("%q is not host:count", e)
		}
		n, err := strconv.Atoi(strings.TrimSpace(e[i+1:]))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q: the count must be a non-negative integer", e)
		}
		out[strings.Trim(strings.TrimSpace(e[:i]), "[]")] = n
	}
	return out, nil
}

// admit counts a new connection from host on listener, or says which limit refuses it.
func (l *connLimits) admit(listener, host string) (ok bool) {
	limit := l.perIP
	if n, found := l.overrides[host]; found {
		limit = n
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byIP[host] >= limit {
		l.refusedIP.Add(1)
		l.log.refused(config.MaxConnectionsPerIP, host)
		return false
	}
	ll := l.listeners[listener]
	if ll != nil && ll.open >= ll.max {
		ll.refused.Add(1)
		l.log.refused(ll.property, host)
		return false
	}
	if listener != l.exempt && l.total >= l.max {
		l.refusedTotal.Add(1)
		l.log.refused(config.MaxConnections, host)
		return false
	}
	l.total++
	l.byIP[host]++
	if ll != nil {
		ll.open++
	}
	return true
}

// release uncounts a connection admit let in.
func (l *connLimits) release(listener, host string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ll := l.listeners[listener]; ll != nil {
		ll.open--
	}
	l.total--
	if l.byIP[host]--; l.byIP[host] <= 0 {
		delete(l.byIP, host)
	}
}

// refusalLog logs refusals at most once per refusalLogInterval, with how many there were.
type refusalLog struct {
	log   *slog.Logger
	last  time.Time
	count map[string]int // since the last line, by limit
}

// refused notes one refusal; the caller holds the limits' lock.
func (r *refusalLog) refused(limit, host string) {
	if r.count == nil {
		r.count = map[string]int{}
	}
	r.count[limit]++
	if now := time.Now(); now.Sub(r.last) >= refusalLogInterval {
		args := []any{"last_host", host, "interval", refusalLogInterval}
		for k, n := range r.count {
			args = append(args, k, n)
		}
		r.log.Warn("connections refused over a limit", args...)
		r.last = now
		clear(r.count)
	}
}

// requestMemory is the budget of queued.max.request.bytes: the memory frames larger than the
// read buffer hold while they are read and until their handler's synchronous part is done.
// Smaller frames are bounded by the connection's read buffer and take none of it.
type requestMemory struct {
	limit int64 // < 0: unbounded

	mu      sync.Mutex
	used    int64
	changed chan struct{} // closed and replaced when memory is released
	waits   atomic.Int64  // cumulative acquisitions that had to wait, for metrics
}

func newRequestMemory(limit int64) *requestMemory {
	return &requestMemory{limit: limit, changed: make(chan struct{})}
}

// acquire takes n bytes of the budget, waiting up to wait (then an error) for them to be free.
func (m *requestMemory) acquire(ctx context.Context, n int64, wait time.Duration) error {
	var timer *time.Timer
	for {
		m.mu.Lock()
		if m.limit < 0 || m.used+n <= m.limit {
			m.used += n
			m.mu.Unlock()
			if timer != nil {
				timer.Stop()
			}
			return nil
		}
		ch := m.changed
		m.mu.Unlock()
		if timer == nil {
			m.waits.Add(1)
			timer = time.NewTimer(wait)
		}
		select {
		case <-ch:
		case <-timer.C:
			return fmt.Errorf("waited %v for %d bytes of request memory (queued.max.request.bytes=%d)", wait, n, m.limit)
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		}
	}
}

// release returns n bytes to the budget.
func (m *requestMemory) release(n int64) {
	if n == 0 {
		return
	}
	m.mu.Lock()
	m.used -= n
	close(m.changed)
	m.changed = make(chan struct{})
	m.mu.Unlock()
}

// limitStats is what the metrics report of the limits.
func (s *Server) limitStats() metrics.LimitStats {
	s.reqMem.mu.Lock()
	used := s.reqMem.used
	s.reqMem.mu.Unlock()
	var byListener map[string]int64
	for _, ll := range s.connLimits.listeners {
		if byListener == nil {
			byListener = map[string]int64{}
		}
		byListener[ll.property] = ll.refused.Load()
	}
	return metrics.LimitStats{
		RequestMemoryUsed:  used,
		RequestMemoryLimit: s.reqMem.limit,
		RequestMemoryWaits: s.reqMem.waits.Load(),
		RefusedMax:         s.connLimits.refusedTotal.Load(),
		RefusedPerIP:       s.connLimits.refusedIP.Load(),
		RefusedByListener:  byListener,
		MaxConnections:     int64(s.connLimits.max),
	}
}

// initLimits reads the flood limits (from Listen, whose usage errors exit 2).
func (s *Server) initLimits() error {
	budget := s.conf.Int64(config.QueuedMaxRequestBytes)
	if budget >= 0 && budget < s.cfg.maxRequestBytes {
		return &config.UsageError{Err: fmt.Errorf("%s=%d is below %s=%d: the largest request could never be read",
			config.QueuedMaxRequestBytes, budget, config.SocketRequestMaxBytes, s.cfg.maxRequestBytes)}
	}
	s.reqMem = newRequestMemory(budget)
	var err error
	s.connLimits, err = newConnLimits(s.conf, s.clustered, s.log)
	return err
}

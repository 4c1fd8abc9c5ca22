package zk

// Liveness probes: faster failure detection than the ZooKeeper session. A probe is an
// ApiVersions v0 request on a dedicated connection every ProbeInterval. A refused or closed
// connection (a killed process: the kernel closes its sockets at once) counts as dead at once;
// a connection that does not answer within LivenessTimeout (a paused process) counts as dead
// then. A dead broker that answers again is alive again. A wrong verdict costs availability
// (leaders move), never data: replicas are fenced by leader epochs.

import (
	"context"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/spoolmq/spool/broker/internal/cluster"
	"github.com/spoolmq/spool/broker/internal/peer"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func joinAddr(host string, port int32) string { return net.JoinHostPort(host, strconv.Itoa(int(port))) }

// liveness tracks the brokers the controller probes.
type liveness struct {
	ctx  context.Context
	s    *Store
	wake func()

	mu     sync.Mutex
	probes map[int32]*probe
}

type probe struct {
	addr   string
	cancel context.CancelFunc
	dead   bool
}

func newLiveness(ctx context.Context, s *Store, wake func()) *liveness {
	return &liveness{ctx: ctx, s: s, wake: wake, probes: map[int32]*probe{}}
}

// track probes exactly brokers (but this one), starting and stopping probes as they come
// and go.
func (l *liveness) track(brokers []cluster.Broker) {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[int32]bool{}
	for _, b := range brokers {
		if b.NodeID == l.s.self.NodeID {
			continue
		}
		seen[b.NodeID] = true
		addr := joinAddr(b.Host, b.Port)
		if p, ok := l.probes[b.NodeID]; ok && p.addr == addr {
			continue
		} else if ok {
			p.cancel()
		}
		ctx, cancel := context.WithCancel(l.ctx)
		p := &probe{addr: addr, cancel: cancel}
		l.probes[b.NodeID] = p
		go l.run(ctx, b.NodeID, p)
	}
	for id, p := range l.probes {
		if !seen[id] {
			p.cancel()
			delete(l.probes, id)
		}
	}
}

// alive reports the last verdict; a broker not probed yet counts as alive (its registration
// is fresh).
func (l *liveness) alive(id int32) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.probes[id]
	return !ok || !p.dead
}

func (l *liveness) set(id int32, p *probe, dead bool) {
	l.mu.Lock()
	changed := p.dead != dead && l.probes[id] == p
	p.dead = dead
	l.mu.Unlock()
	if changed {
		if dead {
			l.s.log.Warn("broker stopped answering; taking it for dead", "node_id", id, "addr", p.addr)
		} else {
			l.s.log.Info("broker answers again", "node_id", id, "addr", p.addr)
		}
		l.wake()
	}
}

func (l *liveness) run(ctx context.Context, id int32, p *probe) {
	interval, timeout := l.s.cfg.ProbeInterval, l.s.cfg.LivenessTimeout
	for ctx.Err() == nil {
		ok := probeConn(ctx, p.addr, interval, timeout, l.s.cfg.PeerSecurity, func() { l.set(id, p, false) })
		if ctx.Err() != nil {
			return
		}
		if !ok {
			l.set(id, p, true)
		}
		sleep(ctx, interval)
	}
}

// probeConn connects and probes until the connection fails; up is called after each answer.
// It returns false when the peer failed (refused, closed or too slow), true when ctx ended.
func probeConn(ctx context.Context, addr string, interval, timeout time.Duration, sec *peer.Security, up func()) bool {
	c, err := peer.Dial(ctx, addr, timeout, sec)
	if err != nil {
		return ctx.Err() != nil
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	req, resp := &wire.ApiVersionsRequest{}, &wire.ApiVersionsResponse{}
	for ctx.Err() == nil {
		req.Default()
		if err := c.RoundTrip(req, resp, 0, time.Now().Add(timeout)); err != nil {
			return ctx.Err() != nil
		}
		up()
		sleep(ctx, interval)
	}
	return true
}

// probeUntilDead probes the broker addr() names until it fails (true) or ctx ends (false).
func probeUntilDead(ctx context.Context, addr func() string, interval, timeout time.Duration, sec *peer.Security) bool {
	for ctx.Err() == nil {
		a := addr()
		if a == "" {
			sleep(ctx, interval)
			continue
		}
		if !probeConn(ctx, a, interval, timeout, sec, func() {}) {
			return true
		}
	}
	return false
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

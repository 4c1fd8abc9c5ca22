package brokertest

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/spoolmq/spool/protocol-spec/loopport"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// Proxy is a TCP fault proxy in front of a broker: it forwards Kafka frames, and can delay
// them, blackhole every connection, or blackhole only the requests a predicate picks (a
// follower's fetches, say). A blackholed request is swallowed with everything after it on its
// connection, so its sender waits for a reply that never comes, as behind a cut cable.
type Proxy struct {
	Addr string
	ln   net.Listener

	mu        sync.Mutex
	target    string
	delay     time.Duration
	blackhole bool
	down      bool // Down closed the port
	drop      func(h *wire.RequestHeader, req wire.Message) bool
	conns     map[net.Conn]struct{}
}

// StartProxy listens on a free loopback port; SetTarget says where to forward. The port comes
// from loopport, not the kernel's ephemeral range: Down frees it for seconds, and an ephemeral
// port may meanwhile become the source port of any outgoing connection, so that Up could not
// listen on it again.
func StartProxy(t testing.TB) *Proxy {
	t.Helper()
	var ln net.Listener
	var err error
	for range 10 { // a port claimed by no test process may still be in use outside the tests
		var addr string
		if addr, err = loopport.Addr(); err != nil {
			break
		}
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Addr: ln.Addr().String(), ln: ln, conns: map[net.Conn]struct{}{}}
	go p.accept(ln)
	t.Cleanup(p.Close)
	return p
}

// Down closes the proxy's port and every connection, so that dials are refused, as they are
// for a killed process (a proxy that accepted and then hung up would look like a live broker
// that drops connections, which clients treat differently).
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ln.Close()
	p.down = true
	p.cutLocked()
}

// Up opens the proxy's port again after Down.
func (p *Proxy) Up(t testing.TB) {
	t.Helper()
	p.mu.Lock()
	down := p.down
	p.mu.Unlock()
	if !down {
		return
	}
	var ln net.Listener
	var err error
	for range 100 { // the port may linger for a moment after Close
		if ln, err = net.Listen("tcp", p.Addr); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("brokertest: reopening proxy %s: %v", p.Addr, err)
	}
	p.mu.Lock()
	p.ln, p.down = ln, false
	p.mu.Unlock()
	go p.accept(ln)
}

// SetTarget sets the broker address new connections go to.
func (p *Proxy) SetTarget(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = addr
}

// SetDelay delays every request frame by d.
func (p *Proxy) SetDelay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = d
}

// Blackhole swallows every request from now on (true) or forwards again (false); existing
// connections are cut either way, so their senders notice only by timing out.
func (p *Proxy) Blackhole(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blackhole = on
	p.cutLocked()
}

// cutLocked ends every connection; p.mu is held.
func (p *Proxy) cutLocked() {
	for c := range p.conns {
		c.Close()
	}
}

// Drop swallows the requests pred picks (nil: none), and what follows them on their
// connection.
func (p *Proxy) Drop(pred func(h *wire.RequestHeader, req wire.Message) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drop = pred
	if pred == nil {
		p.cutLocked() // healing: the connections that were swallowing end, their senders reconnect
	}
}

// DropFollowerFetches blackholes the fetches of follower id.
func DropFollowerFetches(id int32) func(h *wire.RequestHeader, req wire.Message) bool {
	return func(h *wire.RequestHeader, req wire.Message) bool {
		f, ok := req.(*wire.FetchRequest)
		return ok && f.ReplicaId == id
	}
}

// Close stops the proxy and every connection.
func (p *Proxy) Close() { p.Down() }

func (p *Proxy) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

func (p *Proxy) track(c net.Conn, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
}

func (p *Proxy) serve(c net.Conn) {
	p.mu.Lock()
	target := p.target
	p.mu.Unlock()
	u, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		c.Close()
		return
	}
	p.track(c, true)
	p.track(u, true)
	defer func() {
		p.track(c, false)
		p.track(u, false)
		c.Close()
		u.Close()
	}()
	go func() {
		io.Copy(c, u)
		c.Close()
	}()
	swallowing := false
	var size [4]byte
	for {
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return
		}
		frame := make([]byte, 4+binary.BigEndian.Uint32(size[:]))
		copy(frame, size[:])
		if _, err := io.ReadFull(c, frame[4:]); err != nil {
			return
		}
		p.mu.Lock()
		delay, blackhole, drop := p.delay, p.blackhole, p.drop
		p.mu.Unlock()
		if blackhole || (drop != nil && matches(frame[4:], drop)) {
			swallowing = true
		}
		if swallowing {
			continue
		}
		if delay > 0 {
			time.Sleep(delay)
		}
		if _, err := u.Write(frame); err != nil {
			return
		}
	}
}

// matches decodes a request frame and asks pred; a frame it cannot decode is forwarded.
func matches(frame []byte, pred func(*wire.RequestHeader, wire.Message) bool) bool {
	if len(frame) < 4 {
		return false
	}
	api := wire.LookupAPI(int16(binary.BigEndian.Uint16(frame)))
	if api == nil {
		return false
	}
	version := int16(binary.BigEndian.Uint16(frame[2:]))
	r := wire.NewReader(frame)
	var h wire.RequestHeader
	h.ReadFrom(r, api.RequestHeaderVersion(version))
	msg := api.NewRequest()
	msg.ReadFrom(r, version)
	if r.Err() != nil {
		return false
	}
	return pred(&h, msg)
}

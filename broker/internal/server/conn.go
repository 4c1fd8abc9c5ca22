package server

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/broker/internal/metrics"
	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// maxInFlight bounds the requests a connection may have read but not yet answered: past it
// the reader stops reading, which pushes back on the client through TCP.
const maxInFlight = 64

// request is one decoded request. msg may alias frame; a handler that keeps a byte slice past
// its synchronous part must copy it, because the frame buffer is reused for the next request.
type request struct {
	remote net.Addr // the client's address; nil when not from a network connection
	host   string   // the client's IP address, for ACL hosts ("" when not from a network connection)
	// listener is the name of the listener the request came through ("" when not from a
	// network connection): Metadata answers with that listener's endpoints.
	listener string
	// principal is who the connection authenticated as, Kafka's "User:name"
	// (security.Anonymous without authentication), for authorization.
	principal string
	// sasl is the connection's SASL state on a SASL listener, else nil.
	sasl *saslSession
	// rawSASL: a raw SASL token after a SaslHandshake v0, served as a SaslAuthenticate; its
	// reply is the bare challenge (see conn.rawToken).
	rawSASL bool
	api     *wire.API
	version int16
	header  wire.RequestHeader
	msg     wire.Message
	start   time.Time // when dispatch began (the frame was read); zero when metrics and traces are off
	// handled and returned are when the handler started and when its synchronous part
	// returned, ready when the reply was complete (the queue/local/remote/send split of the
	// request time); zero when start is.
	handled, returned, readyAt time.Time
	// size and respSize are the request and response frames' lengths (traces).
	size, respSize int
}

// clientID is the request's client id, or "".
func (r *request) clientID() string {
	if r.header.ClientId == nil {
		return ""
	}
	return *r.header.ClientId
}

// reply is what the writer sends for one request.
type reply struct {
	msg   wire.Message // nil: send nothing (acks=0 produce)
	fetch *splicedFetch
	close bool // close the connection instead of answering
}

// pending is a reply that may not be ready yet. Handlers do their ordered work (appends)
// synchronously and may finish the rest (fsync waits, long polls) on another goroutine, so
// that a pipelining client gets overlapping work and responses still leave in request order.
type pending struct {
	req   *request
	done  chan struct{} // nil when the reply was ready at once
	reply reply
	// readyAt is when complete filled the reply (written before done is closed).
	readyAt time.Time
	// waiting counts the pending replies of its kind (produce or fetch requests waiting:
	// Kafka's purgatory); complete decrements it. nil when not counted.
	waiting *atomic.Int64
}

func ready(r reply) *pending { return &pending{reply: r} }

// later returns a pending reply that complete will fill.
func later() *pending { return &pending{done: make(chan struct{})} }

// waitingFor returns a pending reply counted in waiting until complete fills it.
func waitingFor(waiting *atomic.Int64) *pending {
	waiting.Add(1)
	return &pending{done: make(chan struct{}), waiting: waiting}
}

func (p *pending) complete(r reply) {
	p.reply = r
	p.readyAt = time.Now() // one clock read per delayed reply, metrics on or off
	if p.waiting != nil {
		p.waiting.Add(-1)
	}
	close(p.done)
}

// conn is one client connection: a reader goroutine decodes and dispatches requests in order;
// a writer goroutine sends the replies in the same order.
type conn struct {
	s         *Server
	nc        net.Conn
	listener  string       // the listener's name
	host      string       // the client's IP address (ACL hosts)
	principal string       // who the connection authenticated as
	sasl      *saslSession // nil unless the listener uses SASL
	log       *slog.Logger
	queue     chan *pending
	// wbuf is the writer's reused response buffer.
	wbuf []byte
}

func (s *Server) serveConn(ctx context.Context, l *listener, nc net.Conn) {
	c := &conn{s: s, nc: nc, listener: l.conf.Name, host: hostOf(nc.RemoteAddr()), principal: security.Anonymous,
		log: s.log.With("remote", nc.RemoteAddr().String(), "listener", l.conf.Name), queue: make(chan *pending, maxInFlight)}
	s.metrics.Connection(1)
	defer s.metrics.Connection(-1)
	ctx, cancel := context.WithCancel(ctx)
	// Shutdown must not wait for an idle client: closing the socket ends both loops. nc stays
	// the TCP socket under TLS: closing it ends the TLS connection too.
	defer context.AfterFunc(ctx, func() { nc.Close() })()
	if l.sasl != nil {
		c.sasl = &saslSession{cfg: l.sasl}
	}
	if l.tls != nil {
		if err := c.handshake(ctx, l); err != nil {
			c.log.Info("TLS handshake failed; connection closed", "listener", l.conf.Name, "err", err)
			s.metrics.AuthenticationFailed(l.conf.Name, "SSL")
			cancel()
			nc.Close()
			return
		}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.writeLoop(ctx)
		cancel()
		nc.Close() // unblocks the reader
	}()
	err := c.readLoop(ctx)
	close(c.queue)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && ctx.Err() == nil {
		c.log.Debug("closing connection", "err", err)
	}
	wg.Wait()
	cancel()
	nc.Close()
	c.log.Debug("client disconnected", "principal", c.principal)
}

// readLoop reads frames until the connection ends or a request must close it.
func (c *conn) readLoop(ctx context.Context) error {
	r := newFrameReader(c.nc)
	defer r.close()
	maxSize := c.s.cfg.maxRequestBytes
	idle := c.s.cfg.idleTimeout
	var sizeBuf [4]byte
	for ctx.Err() == nil {
		r.idle()
		if idle > 0 {
			c.nc.SetReadDeadline(time.Now().Add(idle))
		}
		err := r.buffer()
		if err == nil {
			_, err = io.ReadFull(r.br, sizeBuf[:])
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return fmt.Errorf("idle for %v: %w", idle, err)
			}
			return err
		}
		size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
		raw := c.sasl != nil && c.sasl.raw && !c.sasl.authenticated
		if c.sasl != nil && !c.sasl.authenticated && int64(size) > c.sasl.cfg.maxReceive {
			return fmt.Errorf("request of %d bytes before SASL authentication is over %d (sasl.server.max.receive.size)", size, c.sasl.cfg.maxReceive)
		}
		if raw && size < 0 {
			return fmt.Errorf("raw SASL token of %d bytes", size)
		}
		if !raw && (size < 8 || int64(size) > maxSize) {
			// Refused before allocating anything for it.
			return fmt.Errorf("request of %d bytes is outside 8..%d (socket.request.max.bytes)", size, maxSize)
		}
		frame, held, err := c.readFrame(ctx, r, int(size)) // sets the body's deadlines
		if err != nil {
			return err
		}
		var p *pending
		if raw {
			p, err = c.rawToken(ctx, frame)
		} else {
			p, err = c.dispatch(ctx, frame)
		}
		// Handlers are done with the frame once dispatch returns (see request).
		putFrame(frame)
		c.s.reqMem.release(held)
		if err != nil {
			return err
		}
		if p == nil {
			continue
		}
		select {
		case c.queue <- p:
		case <-ctx.Done():
			return ctx.Err()
		}
		if p.done == nil && p.reply.close {
			return errors.New("request refused, closing")
		}
		if c.sasl != nil && c.sasl.failed {
			// The reply (an error) goes out; nothing more is read.
			return errors.New("SASL authentication failed, closing")
		}
	}
	return ctx.Err()
}

// Request frames come from size-class pools: a producer sending 6 MiB requests reuses the same
// few buffers instead of feeding the garbage collector, and an idle connection holds none.
const (
	minFrameClass = 12 // 4 KiB
	maxFrameClass = 24 // 16 MiB; larger frames are allocated and dropped
)

var framePools [maxFrameClass + 1]sync.Pool

func frameClass(n int) int {
	c := minFrameClass
	for 1<<c < n {
		c++
	}
	return c
}

// getFrame returns a buffer of n bytes.
func getFrame(n int) []byte {
	c := frameClass(n)
	if c > maxFrameClass {
		return make([]byte, n)
	}
	if b, ok := framePools[c].Get().(*[]byte); ok {
		return (*b)[:n]
	}
	return make([]byte, n, 1<<c)
}

// putFrame recycles a buffer from getFrame. The caller must hold no slice of it.
func putFrame(b []byte) {
	c := frameClass(cap(b))
	if c > maxFrameClass || 1<<c != cap(b) {
		return
	}
	framePools[c].Put(&b)
}

// dispatch parses the request header and body and runs the handler's synchronous part. An
// error closes the connection.
func (c *conn) dispatch(ctx context.Context, frame []byte) (*pending, error) {
	key := int16(binary.BigEndian.Uint16(frame))
	version := int16(binary.BigEndian.Uint16(frame[2:]))
	api := wire.LookupAPI(key)
	h := c.s.handler(key)
	if api == nil || h == nil {
		return nil, fmt.Errorf("unknown API key %d", key)
	}
	r := wire.NewReader(frame)
	if c.sasl != nil && !c.sasl.authenticated && !beforeAuth(key) {
		// As Kafka: anything but ApiVersions and the SASL exchange closes the connection.
		return nil, fmt.Errorf("%s before SASL authentication", api.Name)
	}
	if c.sasl != nil && !beforeAuth(key) && c.sasl.expired(time.Now()) {
		// KIP-368: the client let its session end without re-authenticating.
		return nil, fmt.Errorf("%s after the SASL session expired (connections.max.reauth.ms)", api.Name)
	}
	req := c.newRequest(api, version, len(frame))
	if !api.HasVersion(version) {
		if key != wire.KeyApiVersions {
			return nil, fmt.Errorf("%s v%d is not supported (%d-%d)", api.Name, version, api.MinVersion, api.MaxVersion)
		}
		// KIP-511: answer in the v0 format with UNSUPPORTED_VERSION and our ranges, so the
		// client can retry with a version we speak. The header is v1 (no client-id tricks in v0).
		req.header.ReadFrom(r, 1)
		if r.Err() != nil {
			return nil, fmt.Errorf("request header: %w", r.Err())
		}
		req.version = 0
		return c.track(req, ready(reply{msg: c.s.apiVersionsResponse(wire.ErrUnsupportedVersion.Code)})), nil
	}
	req.header.ReadFrom(r, api.RequestHeaderVersion(version))
	if r.Err() != nil {
		return nil, fmt.Errorf("request header: %w", r.Err())
	}
	req.msg = api.NewRequest()
	req.msg.ReadFrom(r, version)
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("decoding %s v%d: %w", api.Name, version, err)
	}
	return c.serve(h, ctx, req)
}

// newRequest starts a request of the connection, read in a frame of size bytes.
func (c *conn) newRequest(api *wire.API, version int16, size int) *request {
	req := &request{api: api, version: version, listener: c.listener, host: c.host, principal: c.principal, sasl: c.sasl}
	if c.s.metrics != nil || c.s.tracer != nil {
		req.start = time.Now()
		req.size = size
	}
	if c.nc != nil {
		req.remote = c.nc.RemoteAddr()
	}
	return req
}

// rawToken serves a raw SASL token (a frame after a SaslHandshake v0, without a request
// header) as the SaslAuthenticate v0 that carries the same bytes since KIP-152; the writer
// answers with the bare challenge, or closes the connection when the token was refused.
func (c *conn) rawToken(ctx context.Context, token []byte) (*pending, error) {
	req := c.newRequest(wire.LookupAPI(wire.KeySaslAuthenticate), 0, len(token))
	req.rawSASL = true
	req.msg = &wire.SaslAuthenticateRequest{AuthBytes: token}
	return c.serve(c.s.handler(wire.KeySaslAuthenticate), ctx, req)
}

// serve runs the handler's synchronous part for a decoded request.
func (c *conn) serve(h handlerFunc, ctx context.Context, req *request) (*pending, error) {
	timed := !req.start.IsZero()
	if timed {
		req.handled = time.Now()
	}
	p, err := c.call(h, ctx, req)
	if timed {
		req.returned = time.Now()
		req.readyAt = req.returned // a delayed reply's time replaces it
	}
	if c.sasl != nil && c.sasl.authenticated && c.principal != c.sasl.principal {
		c.principal = c.sasl.principal
		c.log = c.log.With("principal", c.principal)
	}
	if p == nil && err == nil {
		c.finished(req, nil) // acks=0 produce: no response
	}
	return c.track(req, p), err
}

// finished records a request's metrics once its response (resp, nil when there is none) is
// written.
func (c *conn) finished(req *request, resp wire.Message) {
	if t := c.s.tracer; t != nil {
		t.Request(metrics.RequestSpan{Key: req.api.Key, Version: req.version, ClientID: req.clientID(), Start: req.start,
			RequestBytes: req.size, ResponseBytes: req.respSize, Response: resp})
	}
	m := c.s.metrics
	if m == nil {
		return
	}
	m.Request(req.api.Key, req.version, metrics.RequestTimes{Read: req.start, Handled: req.handled,
		Returned: req.returned, Ready: req.readyAt, Written: time.Now()})
	if resp != nil {
		m.ResponseErrors(req.api.Key, resp)
	}
}

// call runs a handler's synchronous part. A handler that panics is a bug, not a reason to
// lose every client of the broker: the panic is logged with its stack and this connection
// closed, as for a request the broker cannot serve.
func (c *conn) call(h handlerFunc, ctx context.Context, req *request) (p *pending, err error) {
	defer func() {
		if v := recover(); v != nil {
			c.log.Error("request handler panicked; closing the connection", "api", req.api.Name, "version", req.version,
				"panic", v, "stack", string(debug.Stack()))
			p, err = nil, fmt.Errorf("%s v%d handler panicked: %v", req.api.Name, req.version, v)
		}
	}()
	return h(c.s, ctx, req), nil
}

func (c *conn) track(req *request, p *pending) *pending {
	if p != nil {
		p.req = req
	}
	return p
}

// writeLoop sends replies in request order.
func (c *conn) writeLoop(ctx context.Context) {
	for p := range c.queue {
		if p.done != nil {
			select {
			case <-p.done:
				if !p.req.start.IsZero() {
					p.req.readyAt = p.readyAt
				}
			case <-ctx.Done():
				c.drain()
				return
			}
		}
		if p.reply.close {
			c.drain()
			return
		}
		if p.reply.msg == nil && p.reply.fetch == nil {
			c.finished(p.req, nil)
			continue
		}
		if err := c.write(p); err != nil {
			c.log.Debug("writing response", "api", p.req.api.Name, "err", err)
			c.drain()
			return
		}
		if p.reply.fetch != nil {
			c.finished(p.req, p.reply.fetch.resp)
		} else {
			c.finished(p.req, p.reply.msg)
		}
	}
}

// drain discards what is left in the queue so the reader never blocks on it.
func (c *conn) drain() {
	c.nc.Close()
	for range c.queue {
	}
}

// write encodes and sends one reply: size, response header, body.
func (c *conn) write(p *pending) error {
	req := p.req
	hv := req.api.ResponseHeaderVersion(req.version)
	b := append(c.wbuf[:0], 0, 0, 0, 0)
	h := wire.ResponseHeader{CorrelationId: req.header.CorrelationId}
	b = h.AppendTo(b, hv)
	if p.reply.fetch != nil {
		if m := c.s.metrics; m != nil {
			f := p.reply.fetch
			for i := range f.parts {
				m.Fetched(f.targets[i].topic, f.parts[i].size)
			}
		}
		return c.writeFetch(b, req, p.reply.fetch)
	}
	if req.rawSASL {
		// A raw SASL frame has nothing but the token: no header, and no room for an error.
		resp := p.reply.msg.(*wire.SaslAuthenticateResponse)
		if resp.ErrorCode != 0 {
			return fmt.Errorf("raw SASL token refused (error %d); closing", resp.ErrorCode)
		}
		b = append(b[:4], resp.AuthBytes...)
	} else {
		b = p.reply.msg.AppendTo(b, req.version)
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	req.respSize = len(b) - 4
	c.keepWriteBuffer(b)
	c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.writeTimeout))
	_, err := c.nc.Write(b)
	return err
}

// keepWriteBuffer keeps b for reuse unless it grew large.
func (c *conn) keepWriteBuffer(b []byte) {
	if cap(b) <= 1<<20 {
		c.wbuf = b[:0]
	} else {
		c.wbuf = nil
	}
}

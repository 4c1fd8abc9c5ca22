package spool

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// ErrConnClosed reports a request that failed because its broker connection closed.
var ErrConnClosed = errors.New("spool: broker connection closed")

// clientMinVersion is the lowest version of each API this client is willing to speak: Produce
// and Fetch need record batches v2 (magic 2), ListOffsets needs timestamps.
var clientMinVersion = map[int16]int16{0: 3, 1: 4, 2: 1}

// call is one request on a connection. done receives exactly one value.
type call struct {
	key     int16
	version int16
	req     wire.Message
	resp    wire.Message // nil when no response is expected (acks=0 produce)
	corr    int32
	done    chan error
	// splice, when set, holds the bytes of req's zero-copy records fields in encoding order:
	// they are written from where they lie and must not change until done receives.
	splice [][]byte
}

// conn is one connection to one broker. A writer goroutine frames requests in the order they
// are queued; a reader goroutine reads responses, which Kafka brokers answer in request order,
// and matches each to the oldest outstanding call by correlation id. Many requests can be in
// flight at once (pipelining).
type conn struct {
	addr     string
	nc       net.Conn
	clientID string
	versions [128]int16 // negotiated version per key, -1 = unsupported
	bmax     [128]int16 // broker's max per key, -1 = absent

	queue    chan *call
	inflight chan *call
	closing  chan struct{}
	readDone chan struct{}
	once     sync.Once
	err      error
	errMu    sync.Mutex

	// SASL: the mechanism to re-authenticate with, and where the session lifetimes the broker
	// gives go (to the writer, which re-authenticates between requests).
	sasl        SASLMechanism
	authTimeout time.Duration
	lifetime    chan time.Duration
}

func dialConn(ctx context.Context, cfg *config, addr string) (*conn, error) {
	clientID, reqTimeout := cfg.clientID, cfg.requestTimeout
	dctx, cancel := context.WithTimeout(ctx, cfg.dialTimeout)
	nc, err := cfg.dial(dctx, "tcp", addr)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("spool: dialing %s: %w", addr, err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	if cfg.sec.tls != nil {
		dctx, cancel := context.WithTimeout(ctx, cfg.dialTimeout)
		nc, err = startTLS(dctx, cfg.sec.tls, nc, addr)
		cancel()
		if err != nil {
			return nil, err
		}
	}
	c := &conn{
		addr: addr, nc: nc, clientID: clientID,
		queue:    make(chan *call, 64),
		inflight: make(chan *call, 1024),
		closing:  make(chan struct{}),
		readDone: make(chan struct{}),
		sasl:     cfg.sec.sasl, authTimeout: reqTimeout,
		lifetime: make(chan time.Duration, 1),
	}
	for i := range c.versions {
		c.versions[i] = -1
		c.bmax[i] = -1
	}
	go c.writeLoop()
	go c.readLoop()
	if err := c.negotiate(ctx, reqTimeout); err != nil {
		c.close(err)
		return nil, err
	}
	if c.sasl != nil {
		actx, cancel := context.WithTimeout(ctx, reqTimeout)
		d, err := c.authenticate(actx, c.sasl, c.request)
		cancel()
		if err != nil {
			c.close(err)
			return nil, err
		}
		c.renewIn(d)
	}
	return c, nil
}

// renewIn tells the writer the session lasts d (0: for ever).
func (c *conn) renewIn(d time.Duration) {
	if d > 0 {
		c.lifetime <- d
	}
}

// negotiate asks the broker for its version ranges (ApiVersions) and picks, per API,
// min(our max, broker max), provided that is at least max(our min, broker min).
func (c *conn) negotiate(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	api := wire.LookupAPI(18)
	v := api.MaxVersion
	for attempt := 0; ; attempt++ {
		req := &wire.ApiVersionsRequest{}
		req.Default()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "spool-go", Version
		resp := &wire.ApiVersionsResponse{}
		err := c.do(ctx, &call{key: 18, version: v, req: req, resp: resp})
		if err != nil && attempt == 0 && errors.Is(err, errDecode) {
			// A broker that does not know our version answers in the v0 format.
			v = 0
			continue
		}
		if err != nil {
			return fmt.Errorf("spool: ApiVersions with %s: %w", c.addr, err)
		}
		if resp.ErrorCode == 35 && attempt == 0 {
			v = 0
			for _, k := range resp.ApiKeys {
				if k.ApiKey == 18 {
					v = min(k.MaxVersion, api.MaxVersion)
				}
			}
			continue
		}
		if err := wire.ErrorForCode(resp.ErrorCode); err != nil {
			return fmt.Errorf("spool: ApiVersions with %s: %w", c.addr, err)
		}
		for _, k := range resp.ApiKeys {
			if k.ApiKey < 0 || int(k.ApiKey) >= len(c.versions) {
				continue
			}
			c.bmax[k.ApiKey] = k.MaxVersion
			ours := wire.LookupAPI(k.ApiKey)
			if ours == nil {
				continue
			}
			lo := ours.MinVersion
			if m, ok := clientMinVersion[k.ApiKey]; ok {
				lo = max(lo, m)
			}
			lo = max(lo, k.MinVersion)
			hi := min(ours.MaxVersion, k.MaxVersion)
			if hi >= lo {
				c.versions[k.ApiKey] = hi
			}
		}
		return nil
	}
}

var errDecode = errors.New("spool: decoding response")

// version returns the negotiated version of key, or an error naming both ranges when the
// broker and this client have none in common.
func (c *conn) version(key int16) (int16, error) {
	if v := c.versions[key]; v >= 0 {
		return v, nil
	}
	api := wire.LookupAPI(key)
	name := fmt.Sprintf("API %d", key)
	if api != nil {
		name = api.Name
	}
	if c.bmax[key] < 0 {
		return 0, fmt.Errorf("spool: broker %s does not support %s: %w", c.addr, name, wire.ErrUnsupportedVersion)
	}
	return 0, fmt.Errorf("spool: no %s version in common with broker %s (broker max v%d): %w", name, c.addr, c.bmax[key], wire.ErrUnsupportedVersion)
}

// request sends req at the negotiated version and decodes the response into resp.
func (c *conn) request(ctx context.Context, req, resp wire.Message) error {
	v, err := c.version(req.APIKey())
	if err != nil {
		return err
	}
	return c.do(ctx, &call{key: req.APIKey(), version: v, req: req, resp: resp})
}

// do queues cl and waits for its completion or the end of ctx. When ctx ends first the request
// may still go out; its response is then read and dropped.
func (c *conn) do(ctx context.Context, cl *call) error {
	cl.done = make(chan error, 1)
	if err := c.send(ctx, cl); err != nil {
		return err
	}
	select {
	case err := <-cl.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// send queues cl; its result arrives on cl.done.
func (c *conn) send(ctx context.Context, cl *call) error {
	select {
	case c.queue <- cl:
		if c.isClosed() {
			// The connection closed meanwhile, and the writer may have failed the queued
			// calls and quit before cl went in: nobody else would complete it. Whoever takes
			// a call from the queue completes it, so draining here too is safe.
			c.drainQueue()
		}
		return nil
	case <-c.closing:
		return c.closedErr()
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *conn) closedErr() error {
	c.errMu.Lock()
	defer c.errMu.Unlock()
	return fmt.Errorf("%w (%s): %v", ErrConnClosed, c.addr, c.err)
}

func (c *conn) isClosed() bool {
	select {
	case <-c.closing:
		return true
	default:
		return false
	}
}

func (c *conn) close(err error) {
	c.once.Do(func() {
		c.errMu.Lock()
		c.err = err
		c.errMu.Unlock()
		close(c.closing)
		c.nc.Close()
	})
}

func (c *conn) writeLoop() {
	var corr int32
	w := frameWriter{nc: c.nc, buf: make([]byte, 0, 64<<10)}
	// unanswered are the calls without a response (acks=0) in the frames gathered: they
	// complete once written, as their spliced bytes may be reused after that.
	var unanswered []*call
	flush := func() {
		err := w.flush()
		if err != nil {
			c.close(err)
			err = c.closedErr()
		}
		for _, cl := range unanswered {
			cl.done <- err
		}
		clear(unanswered)
		unanswered = unanswered[:0]
	}
	var reauth <-chan time.Time
	for {
		var cl *call
		select {
		case cl = <-c.queue:
		case d := <-c.lifetime:
			reauth = time.After(reauthAfter(d))
			continue
		case <-reauth:
			// KIP-368: re-authenticate between requests, before the session ends; responses to
			// requests already written keep arriving meanwhile.
			reauth = nil
			flush()
			direct := func(ctx context.Context, req, resp wire.Message) error {
				v, err := c.version(req.APIKey())
				if err != nil {
					return err
				}
				corr++
				cl := &call{key: req.APIKey(), version: v, req: req, resp: resp, corr: corr, done: make(chan error, 1)}
				if err := w.add(cl, &c.clientID); err != nil {
					return err
				}
				select {
				case c.inflight <- cl:
				case <-c.readDone:
					return c.closedErr()
				}
				if err := w.flush(); err != nil {
					c.close(err)
				}
				select {
				case err := <-cl.done:
					return err
				case <-c.readDone:
					return c.closedErr()
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), c.authTimeout)
			d, err := c.authenticate(ctx, c.sasl, direct)
			cancel()
			if err != nil {
				c.close(fmt.Errorf("re-authenticating: %w", err))
				continue
			}
			if d > 0 {
				reauth = time.After(reauthAfter(d))
			}
			continue
		case <-c.closing:
			// Once the reader is gone nobody else touches inflight: fail what is left.
			<-c.readDone
			c.drainQueue()
			for {
				select {
				case cl := <-c.inflight:
					cl.done <- c.closedErr()
				default:
					return
				}
			}
		}
		corr++
		cl.corr = corr
		if err := w.add(cl, &c.clientID); err != nil {
			cl.done <- err
			continue
		}
		if cl.resp != nil {
			select {
			case c.inflight <- cl:
			case <-c.readDone:
				// The reader is gone, and closed the connection: fail now (the closing branch
				// drains the rest).
				flush()
				cl.done <- c.closedErr()
				continue
			}
		} else {
			unanswered = append(unanswered, cl)
		}
		if len(c.queue) == 0 || w.full() {
			flush()
		}
	}
}

func (c *conn) drainQueue() {
	for {
		select {
		case cl := <-c.queue:
			cl.done <- c.closedErr()
		default:
			return
		}
	}
}

func (c *conn) readLoop() {
	br := bufio.NewReaderSize(c.nc, 64<<10)
	var size [4]byte
	defer close(c.readDone)
	for {
		if _, err := io.ReadFull(br, size[:]); err != nil {
			c.close(err)
			return
		}
		n := binary.BigEndian.Uint32(size[:])
		if n > 1<<30 {
			c.close(fmt.Errorf("response of %d bytes", n))
			return
		}
		// Each response gets its own buffer: fetched records alias it.
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			c.close(err)
			return
		}
		var cl *call
		select {
		case cl = <-c.inflight:
		default:
			c.close(errors.New("response without a request"))
			return
		}
		api := wire.LookupAPI(cl.key)
		r := wire.NewReader(b)
		var h wire.ResponseHeader
		h.ReadFrom(r, api.ResponseHeaderVersion(cl.version))
		if r.Err() == nil && h.CorrelationId != cl.corr {
			err := fmt.Errorf("correlation id %d, want %d", h.CorrelationId, cl.corr)
			c.close(err)
			cl.done <- c.closedErr()
			return
		}
		cl.resp.ReadFrom(r, cl.version)
		if err := r.Err(); err != nil {
			cl.done <- fmt.Errorf("%w: %s v%d from %s: %v", errDecode, api.Name, cl.version, c.addr, err)
			continue
		}
		cl.done <- nil
	}
}

// Package peer is the broker's client for talking to other brokers (follower fetches, the
// controller's liveness probes): one TCP connection, one request at a time, through the
// generated codec.
//
// A Conn is not safe for concurrent use: each fetcher and each probe owns its own. Responses
// are decoded into the message the caller passes; record bytes in a decoded Fetch response
// alias the connection's read buffer and stay valid only until the next RoundTrip.
package peer

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// ClientID is the client id the broker sends to its peers.
const ClientID = "spool-broker"

// maxResponseBytes bounds a response frame, so a confused peer cannot make us allocate
// without limit.
const maxResponseBytes = 256 << 20

// Conn is one connection to a peer broker.
type Conn struct {
	nc   net.Conn
	r    *bufio.Reader
	corr int32
	wbuf []byte
	rbuf []byte
	sec  *Security
	// reauthAt is when to re-authenticate (KIP-368), before the peer's session ends; zero: the
	// session does not end.
	reauthAt time.Time
}

// Dial connects to addr (HOST:PORT) within timeout, with TLS and SASL as sec says (nil:
// PLAINTEXT).
func Dial(ctx context.Context, addr string, timeout time.Duration, sec *Security) (*Conn, error) {
	d := net.Dialer{Timeout: timeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", addr, err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	if sec == nil {
		return &Conn{nc: nc, r: bufio.NewReaderSize(nc, 64<<10)}, nil
	}
	deadline := time.Now().Add(timeout)
	sc, err := sec.secure(ctx, nc, addr, deadline)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("connecting to %s: %w", addr, err)
	}
	nc = sc
	c := &Conn{nc: nc, r: bufio.NewReaderSize(nc, 64<<10), sec: sec}
	if sec.Mechanism != "" {
		if err := c.authenticate(sec, deadline, false); err != nil {
			nc.Close()
			return nil, fmt.Errorf("connecting to %s: %w", addr, err)
		}
	}
	return c, nil
}

// Close closes the connection; a RoundTrip blocked on it returns.
func (c *Conn) Close() error { return c.nc.Close() }

// RoundTrip sends req at version and decodes the answer into resp, waiting until deadline,
// re-authenticating first when the SASL session is near its end. Any error leaves the
// connection unusable: close it.
func (c *Conn) RoundTrip(req, resp wire.Message, version int16, deadline time.Time) error {
	if !c.reauthAt.IsZero() && !time.Now().Before(c.reauthAt) {
		if err := c.authenticate(c.sec, deadline, true); err != nil {
			return fmt.Errorf("re-authenticating: %w", err)
		}
	}
	return c.roundTrip(req, resp, version, deadline)
}

// roundTrip is one request and its response.
func (c *Conn) roundTrip(req, resp wire.Message, version int16, deadline time.Time) error {
	api := wire.LookupAPI(req.APIKey())
	if api == nil {
		return fmt.Errorf("api key %d is not in the protocol window", req.APIKey())
	}
	c.corr++
	id := ClientID
	h := wire.RequestHeader{RequestApiKey: req.APIKey(), RequestApiVersion: version, CorrelationId: c.corr, ClientId: &id}
	b := append(c.wbuf[:0], 0, 0, 0, 0)
	b = h.AppendTo(b, api.RequestHeaderVersion(version))
	b = req.AppendTo(b, version)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	c.wbuf = b
	c.nc.SetDeadline(deadline)
	if _, err := c.nc.Write(b); err != nil {
		return fmt.Errorf("sending %s: %w", api.Name, err)
	}
	var size [4]byte
	if _, err := io.ReadFull(c.r, size[:]); err != nil {
		return fmt.Errorf("reading %s response: %w", api.Name, err)
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > maxResponseBytes {
		return fmt.Errorf("%s response of %d bytes exceeds %d", api.Name, n, maxResponseBytes)
	}
	if cap(c.rbuf) < int(n) {
		c.rbuf = make([]byte, n)
	}
	frame := c.rbuf[:n]
	if _, err := io.ReadFull(c.r, frame); err != nil {
		return fmt.Errorf("reading %s response: %w", api.Name, err)
	}
	rd := wire.NewReader(frame)
	var rh wire.ResponseHeader
	rh.ReadFrom(rd, api.ResponseHeaderVersion(version))
	if err := rd.Err(); err != nil {
		return fmt.Errorf("decoding %s response header: %w", api.Name, err)
	}
	if rh.CorrelationId != c.corr {
		return fmt.Errorf("%s response has correlation id %d, want %d", api.Name, rh.CorrelationId, c.corr)
	}
	resp.ReadFrom(rd, version)
	if err := rd.Err(); err != nil {
		return fmt.Errorf("decoding %s response: %w", api.Name, err)
	}
	return nil
}

package conformance

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// Conn is one raw protocol connection: requests encoded with the spec's codec, written
// framed, responses read and decoded at the request's version.
type Conn struct {
	c    net.Conn
	r    *bufio.Reader
	corr int32
}

// dialWire opens a connection to addr, secured by sec (TLS and SASL) unless it is nil.
func dialWire(sec *Security, addr string, timeout time.Duration) (*Conn, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	c := &Conn{}
	c.setConn(nc)
	if sec != nil {
		if err := sec.secure(c, addr, timeout); err != nil {
			nc.Close()
			return nil, err
		}
	}
	return c, nil
}

// setConn makes nc the connection c reads and writes (a TLS one over the TCP one).
func (c *Conn) setConn(nc net.Conn) { c.c, c.r = nc, bufio.NewReader(nc) }

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// Frame encodes req at version v with correlation id corr into a whole frame.
func Frame(req wire.Message, v int16, corr int32) []byte {
	api := wire.LookupAPI(req.APIKey())
	hv := int16(2)
	if api != nil {
		hv = api.RequestHeaderVersion(v)
	}
	client := "spool-conformance"
	h := wire.RequestHeader{RequestApiKey: req.APIKey(), RequestApiVersion: v, CorrelationId: corr, ClientId: &client}
	b := make([]byte, 4, 256)
	b = h.AppendTo(b, hv)
	b = req.AppendTo(b, v)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// Send writes req at version v and returns the correlation id it used.
func (c *Conn) Send(req wire.Message, v int16) (int32, error) {
	c.corr++
	return c.corr, c.WriteRaw(Frame(req, v, c.corr))
}

// WriteRaw writes bytes as they are.
func (c *Conn) WriteRaw(b []byte) error {
	c.c.SetWriteDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.c.Write(b); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// ReadFrame reads one response frame and returns its payload (response header and body).
func (c *Conn) ReadFrame(timeout time.Duration) ([]byte, error) {
	c.c.SetReadDeadline(time.Now().Add(timeout))
	var size [4]byte
	if _, err := io.ReadFull(c.r, size[:]); err != nil {
		return nil, fmt.Errorf("read response size: %w", err)
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > 256<<20 {
		return nil, fmt.Errorf("response frame size %d", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(c.r, b); err != nil {
		return nil, fmt.Errorf("read response: %w", err)
	}
	return b, nil
}

// Recv reads the response to the request with correlation id corr, sent at version v, into
// resp.
func (c *Conn) Recv(resp wire.Message, v int16, corr int32, timeout time.Duration) error {
	b, err := c.ReadFrame(timeout)
	if err != nil {
		return err
	}
	r := wire.NewReader(b)
	var h wire.ResponseHeader
	h.ReadFrom(r, wire.LookupAPI(resp.APIKey()).ResponseHeaderVersion(v))
	if err := r.Err(); err != nil {
		return fmt.Errorf("response header: %w", err)
	}
	if h.CorrelationId != corr {
		return fmt.Errorf("response correlation id %d, want %d", h.CorrelationId, corr)
	}
	if err := resp.Decode(r.Rest(), v); err != nil {
		return fmt.Errorf("decode response: %w", err)
	}
	return nil
}

// Do sends req at version v and reads its response into resp.
func (c *Conn) Do(req, resp wire.Message, v int16) error {
	corr, err := c.Send(req, v)
	if err != nil {
		return err
	}
	return c.Recv(resp, v, corr, 40*time.Second)
}

// WaitClosed reads until the broker closes the connection. It returns nil on close, and an
// error when a response arrives or nothing happens within timeout.
func (c *Conn) WaitClosed(timeout time.Duration) error {
	b, err := c.ReadFrame(timeout)
	if err == nil {
		return fmt.Errorf("got a response (correlation id %d) instead of the connection closing", binary.BigEndian.Uint32(b))
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("connection still open after %v", timeout)
	}
	return nil
}

package server

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"
)

// readBufSize is a connection's read buffer: many small pipelined requests arrive in one read
// system call, and a request up to this size is copied out only once it has fully arrived.
const readBufSize = 64 << 10

// readBuffers are the read buffers of connections that have unread bytes. An idle plain TCP
// connection holds none: it waits for the socket to become readable without a buffer, so ten
// thousand idle (or stalled) connections cost their goroutines, not 64 KiB each.
var readBuffers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBufSize) }}

// frameReader reads a connection's request frames.
type frameReader struct {
	nc net.Conn
	// raw is the TCP socket when nc is plain TCP, else nil (TLS connections keep their buffer:
	// crypto/tls holds buffers of its own anyway).
	raw syscall.RawConn
	br  *bufio.Reader // nil while idle on plain TCP
}

func newFrameReader(nc net.Conn) *frameReader {
	r := &frameReader{nc: nc}
	if tc, ok := nc.(*net.TCPConn); ok {
		if raw, err := tc.SyscallConn(); err == nil {
			r.raw = raw
			return r
		}
	}
	r.br = bufio.NewReaderSize(nc, readBufSize)
	return r
}

// buffer makes sure br is there, waiting first for the socket to be readable so that the
// wait holds no buffer. It honours nc's read deadline and ends when nc is closed.
func (r *frameReader) buffer() error {
	if r.br != nil {
		return nil
	}
	if err := waitReadable(r.raw); err != nil {
		return err
	}
	r.br = readBuffers.Get().(*bufio.Reader)
	r.br.Reset(r.nc)
	return nil
}

// idle gives the buffer back when it holds no unread bytes (plain TCP only).
func (r *frameReader) idle() {
	if r.raw != nil && r.br != nil && r.br.Buffered() == 0 {
		r.br.Reset(nil)
		readBuffers.Put(r.br)
		r.br = nil
	}
}

// close gives the buffer back for good.
func (r *frameReader) close() {
	if r.raw != nil && r.br != nil {
		r.br.Reset(nil)
		readBuffers.Put(r.br)
		r.br = nil
	}
}

// waitReadable blocks until the socket has a byte to read (or end of stream, or an error)
// without reading it: a peek from the poller's callback.
func waitReadable(raw syscall.RawConn) error {
	var opErr error
	err := raw.Read(func(fd uintptr) bool {
		var b [1]byte
		_, err := peekByte(fd, &b)
		if err == syscall.EAGAIN || err == syscall.EINTR {
			return false // not readable yet: the poller waits
		}
		opErr = err
		return true
	})
	if err != nil {
		return err
	}
	if opErr != nil {
		return fmt.Errorf("waiting for a request: %w", opErr)
	}
	return nil
}

// readFrame reads the body of a request of size bytes. It returns the frame and the bytes of
// request memory it holds, to release once the request is dispatched.
func (c *conn) readFrame(ctx context.Context, r *frameReader, size int) (frame []byte, held int64, err error) {
	if size <= readBufSize {
		// Small: wait until it is all in the read buffer, then copy it out. It needs no
		// request memory: the connection's buffer bounds it. A body that stops arriving is
		// an idle connection.
		if idle := c.s.cfg.idleTimeout; idle > 0 {
			c.nc.SetReadDeadline(time.Now().Add(idle))
			defer c.nc.SetReadDeadline(time.Time{})
		}
		b, err := r.br.Peek(size)
		if err != nil {
			return nil, 0, fmt.Errorf("reading a %d-byte request: %w", size, err)
		}
		frame = getFrame(size)
		copy(frame, b)
		r.br.Discard(size)
		return frame, 0, nil
	}
	// Large: once its first byte is there (a client that declares 100 MB and sends nothing
	// holds nothing), the request takes its size from the request memory budget, waiting for
	// it if need be, and only then is the frame allocated. A reader holds either all of its
	// frame's memory or none while it waits, so readers cannot deadlock each other.
	idle := idleOr(c.s.cfg.idleTimeout)
	c.nc.SetReadDeadline(time.Now().Add(idle))
	r.idle() // a header alone does not keep a read buffer while the body has not come
	err = r.buffer()
	if err == nil {
		_, err = r.br.Peek(1)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("reading a %d-byte request: %w", size, err)
	}
	if err := c.s.reqMem.acquire(ctx, int64(size), idle); err != nil {
		return nil, 0, err
	}
	frame = getFrame(size)
	for n := 0; n < size; {
		// A frame that stops arriving is an idle connection: its memory goes back.
		c.nc.SetReadDeadline(time.Now().Add(idle))
		m, err := r.br.Read(frame[n:])
		n += m
		if err != nil {
			putFrame(frame)
			c.s.reqMem.release(int64(size))
			return nil, 0, fmt.Errorf("reading a %d-byte request (%d read): %w", size, n, err)
		}
	}
	c.nc.SetReadDeadline(time.Time{})
	return frame, int64(size), nil
}

// idleOr is how long a reader waits for request memory: connections.max.idle.ms, or a
// minute when that is off.
func idleOr(idle time.Duration) time.Duration {
	if idle > 0 {
		return idle
	}
	return time.Minute
}

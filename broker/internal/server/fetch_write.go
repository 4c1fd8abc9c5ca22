package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/spoolmq/spool/broker/internal/partition"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// copyBufferSize is the size of the pooled buffers of the read+write fetch path: large enough
// that a fetch takes few syscalls, small enough that memory stays bounded under many fetches.
const copyBufferSize = 256 << 10

var copyBuffers = sync.Pool{New: func() any { b := make([]byte, copyBufferSize); return &b }}

// writeFetch sends a fetch response whose records come from segment files. b holds the size
// placeholder and the response header.
func (c *conn) writeFetch(b []byte, req *request, f *splicedFetch) error {
	defer f.release()
	sp := wire.Splices{Lens: make([]int, 0, len(f.parts))}
	total := int64(0)
	for _, p := range f.parts {
		sp.Lens = append(sp.Lens, int(p.size))
		total += p.size
	}
	b = f.resp.AppendToSpliced(b, req.version, &sp)
	if len(sp.At) != len(f.parts) {
		return fmt.Errorf("fetch response has %d records fields for %d partitions", len(sp.At), len(f.parts))
	}
	total += int64(len(b) - 4)
	if total > 1<<31-1 {
		return fmt.Errorf("fetch response of %d bytes is too large", total)
	}
	binary.BigEndian.PutUint32(b, uint32(total))
	req.respSize = int(total)
	defer c.keepWriteBuffer(b)
	c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.writeTimeout))
	tc, isTCP := c.nc.(*net.TCPConn)
	if c.s.cfg.sendfile && isTCP && total > int64(len(b)) {
		return c.sendfileFetch(tc, b, sp.At, f.parts)
	}
	return c.copyFetch(b, sp.At, f.parts)
}

// copyFetch is the read+write path: the response goes out through one pooled buffer, filled
// from the encoded parts and the segment files in turn.
func (c *conn) copyFetch(b []byte, at []int, parts []fetchedPartition) error {
	bp := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(bp)
	w := bufferedWriter{w: c.nc, buf: (*bp)[:0]}
	prev := 0
	for i, p := range parts {
		w.write(b[prev:at[i]])
		prev = at[i]
		for _, ch := range p.read.Chunks {
			w.copyFile(ch)
		}
	}
	w.write(b[prev:])
	w.flush()
	return w.err
}

// bufferedWriter gathers small writes and file reads into one buffer.
type bufferedWriter struct {
	w   io.Writer
	buf []byte
	err error
}

func (w *bufferedWriter) flush() {
	if w.err == nil && len(w.buf) > 0 {
		_, w.err = w.w.Write(w.buf)
	}
	w.buf = w.buf[:0]
}

func (w *bufferedWriter) write(p []byte) {
	for len(p) > 0 && w.err == nil {
		if len(w.buf) == cap(w.buf) {
			w.flush()
		}
		n := copy(w.buf[len(w.buf):cap(w.buf)], p)
		w.buf = w.buf[:len(w.buf)+n]
		p = p[n:]
	}
}

func (w *bufferedWriter) copyFile(ch partition.Chunk) {
	pos, left := ch.Pos, ch.Len
	for left > 0 && w.err == nil {
		if len(w.buf) == cap(w.buf) {
			w.flush()
		}
		room := w.buf[len(w.buf):cap(w.buf)]
		if int64(len(room)) > left {
			room = room[:left]
		}
		n, err := ch.File.ReadAt(room, pos)
		w.buf = w.buf[:len(w.buf)+n]
		pos += int64(n)
		left -= int64(n)
		if err != nil && left > 0 {
			w.err = fmt.Errorf("reading segment %s: %w", ch.File.Name(), err)
		}
	}
}

// sendfileFetch writes the encoded parts with write(2) and the records with sendfile(2) at
// explicit file offsets (so concurrent fetches never share a file position), corked so the
// pieces leave in full segments.
func (c *conn) sendfileFetch(tc *net.TCPConn, b []byte, at []int, parts []fetchedPartition) error {
	rc, err := tc.SyscallConn()
	if err != nil {
		return fmt.Errorf("sendfile: %w", err)
	}
	setCork(rc, true)
	defer setCork(rc, false)
	prev := 0
	for i, p := range parts {
		if _, err := tc.Write(b[prev:at[i]]); err != nil {
			return err
		}
		prev = at[i]
		for _, ch := range p.read.Chunks {
			if err := sendfile(rc, ch); err != nil {
				return err
			}
		}
	}
	_, err = tc.Write(b[prev:])
	return err
}

func setCork(rc syscall.RawConn, on bool) {
	v := 0
	if on {
		v = 1
	}
	rc.Control(func(fd uintptr) {
		syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CORK, v)
	})
}

// sendfile copies one file range to the socket in the kernel, waiting for the socket to drain
// when its buffer is full.
func sendfile(rc syscall.RawConn, ch partition.Chunk) error {
	src, err := ch.File.SyscallConn()
	if err != nil {
		return fmt.Errorf("sendfile: %w", err)
	}
	var srcFD int
	src.Control(func(fd uintptr) { srcFD = int(fd) })
	off, left := ch.Pos, ch.Len
	var werr error
	err = rc.Write(func(fd uintptr) bool {
		for left > 0 {
			n, err := syscall.Sendfile(int(fd), srcFD, &off, int(min(left, 1<<30)))
			if n > 0 {
				left -= int64(n)
			}
			switch {
			case errors.Is(err, syscall.EAGAIN):
				return false // wait until writable, then call again
			case errors.Is(err, syscall.EINTR):
				continue
			case err != nil:
				werr = err
				return true
			case n == 0:
				werr = io.ErrUnexpectedEOF // the file is shorter than the index said
				return true
			}
		}
		return true
	})
	if err == nil {
		err = werr
	}
	if err != nil {
		return fmt.Errorf("sendfile from %s: %w", ch.File.Name(), err)
	}
	return nil
}

package spool

import (
	"encoding/binary"
	"fmt"
	"net"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// splicer is a request whose records fields can be left out of its encoding and written from
// the caller's buffers (the spec's zerocopy fields).
type splicer interface {
	AppendToSpliced(b []byte, v int16, sp *wire.Splices) []byte
}

const (
	// spliceMin is the smallest records field worth its own iovec; smaller ones are copied
	// into the frame buffer, which costs less than another entry in the writev.
	spliceMin = 1 << 10
	// flushAt bounds the bytes gathered before a write, so one burst of queued requests does
	// not wait for all of them to be encoded.
	flushAt = 1 << 20
	// keepBuf is the largest frame buffer kept between writes.
	keepBuf = 4 << 20
)

// piece is one stretch of the next write: buf[start:end], or ext when it is set.
type piece struct {
	start, end int
	ext        []byte
}

// frameWriter gathers the frames of queued requests and writes them with one writev: headers
// and small fields are encoded into buf, spliced records fields are referenced where they
// lie, so produce batches go out without being copied. The caller keeps spliced bytes
// unchanged until flush returns.
type frameWriter struct {
	nc      net.Conn
	buf     []byte
	enc     []byte // one spliced request's encoding, before it is cut into buf
	pieces  []piece
	mark    int // start of buf's bytes not yet in pieces
	pending int // bytes gathered, encoded and spliced
	iov     net.Buffers
	sp      wire.Splices
}

// add appends cl's frame with correlation id corr. On error nothing was added.
func (w *frameWriter) add(cl *call, clientID *string) error {
	api := wire.LookupAPI(cl.key)
	h := wire.RequestHeader{RequestApiKey: cl.key, RequestApiVersion: cl.version, CorrelationId: cl.corr, ClientId: clientID}
	hv := api.RequestHeaderVersion(cl.version)
	if cl.splice == nil {
		start := len(w.buf)
		w.buf = h.AppendTo(append(w.buf, 0, 0, 0, 0), hv)
		w.buf = cl.req.AppendTo(w.buf, cl.version)
		binary.BigEndian.PutUint32(w.buf[start:], uint32(len(w.buf)-start-4))
		w.pending += len(w.buf) - start
		return nil
	}
	sr, ok := cl.req.(splicer)
	if !ok {
		return fmt.Errorf("spool: %T has no zero-copy fields to splice", cl.req)
	}
	w.sp.Reset()
	size := 0
	for _, s := range cl.splice {
		w.sp.Lens = append(w.sp.Lens, len(s))
		size += len(s)
	}
	// Encoded apart first: copying small fields in shifts the bytes behind them.
	enc := h.AppendTo(append(w.enc[:0], 0, 0, 0, 0), hv)
	enc = sr.AppendToSpliced(enc, cl.version, &w.sp)
	w.enc = enc
	if len(w.sp.At) != len(cl.splice) {
		return fmt.Errorf("spool: %T has %d zero-copy fields, %d given", cl.req, len(w.sp.At), len(cl.splice))
	}
	size += len(enc) - 4
	binary.BigEndian.PutUint32(enc, uint32(size))
	w.pending += size + 4
	prev := 0
	for i, s := range cl.splice {
		at := w.sp.At[i]
		w.buf = append(w.buf, enc[prev:at]...)
		prev = at
		if len(s) < spliceMin {
			w.buf = append(w.buf, s...)
			continue
		}
		w.pieces = append(w.pieces, piece{start: w.mark, end: len(w.buf)}, piece{ext: s})
		w.mark = len(w.buf)
	}
	w.buf = append(w.buf, enc[prev:]...)
	return nil
}

// full reports whether the gathered frames should go out before more are added.
func (w *frameWriter) full() bool { return w.pending >= flushAt }

// flush writes everything gathered and empties the writer.
func (w *frameWriter) flush() error {
	if w.pending == 0 {
		return nil
	}
	w.pieces = append(w.pieces, piece{start: w.mark, end: len(w.buf)})
	iov := w.iov[:0]
	for _, p := range w.pieces {
		switch {
		case p.ext != nil:
			iov = append(iov, p.ext)
		case p.end > p.start:
			iov = append(iov, w.buf[p.start:p.end])
		}
	}
	w.iov = iov
	// WriteTo consumes its receiver; w.iov keeps the storage for the next flush.
	_, err := iov.WriteTo(w.nc)
	clear(w.iov)
	clear(w.pieces)
	w.pieces, w.mark, w.pending = w.pieces[:0], 0, 0
	w.buf = w.buf[:0]
	if cap(w.buf) > keepBuf {
		w.buf = make([]byte, 0, 64<<10)
	}
	return err
}

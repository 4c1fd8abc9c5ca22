package storage

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

// Verification of bytes this process did not write.
//
// Appended batches are validated in memory before they are written, and recovery validates the
// segments it reads, but segments below the recovery point are trusted at open without being
// read. Bit rot there would go out through sendfile unseen. So a segment remembers which of
// its bytes are known good: everything from trustedFrom on (written by this process), and one
// verified range before that. Read checks (CRC-32C and framing, batch by batch) any part of a
// chunk outside those before serving it, once; the bytes read land in the page cache, where
// the sendfile that follows finds them. A batch that fails is reported (logged, and Read fails
// with ErrCorruptMessage) and never served.

// verifyBlock is the read size of verification.
const verifyBlock = 1 << 20

var verifyBlocks = sync.Pool{New: func() any { b := make([]byte, verifyBlock); return &b }}

// verifyState is a segment's knowledge of its good bytes.
type verifyState struct {
	mu           sync.Mutex
	trustedFrom  int64 // bytes at or past this were written (and validated) by this process
	vStart, vEnd int64 // a range of older bytes already verified
}

// uncovered returns the part of [pos, end) that needs checking: [a, b), empty when a >= b.
func (v *verifyState) uncovered(pos, end int64) (int64, int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	end = min(end, v.trustedFrom)
	if pos >= v.vStart && pos < v.vEnd {
		pos = v.vEnd
	}
	if end > v.vStart && end <= v.vEnd {
		end = v.vStart
	}
	return pos, end
}

// add records [a, b) as verified, merging with the known range when they touch.
func (v *verifyState) add(a, b int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if a <= v.vEnd && b >= v.vStart && v.vEnd > v.vStart {
		v.vStart, v.vEnd = min(a, v.vStart), max(b, v.vEnd)
	} else {
		v.vStart, v.vEnd = a, b
	}
	if v.vEnd >= v.trustedFrom {
		v.trustedFrom = min(v.trustedFrom, v.vStart)
		v.vStart, v.vEnd = 0, 0
	}
}

// trustAll marks the whole segment as good (written or fully validated by this process).
func (v *verifyState) trustAll() {
	v.mu.Lock()
	v.trustedFrom, v.vStart, v.vEnd = 0, 0, 0
	v.mu.Unlock()
}

// trustFrom marks the bytes from pos on as good (pos: the size of a segment loaded unread).
func (v *verifyState) trustFrom(pos int64) {
	v.mu.Lock()
	v.trustedFrom, v.vStart, v.vEnd = pos, 0, 0
	v.mu.Unlock()
}

// truncate forgets knowledge about bytes from pos on (the file was cut there; what is
// appended next is written by this process).
func (v *verifyState) truncate(pos int64) {
	v.mu.Lock()
	v.trustedFrom = min(v.trustedFrom, pos)
	v.vEnd = min(v.vEnd, pos)
	v.vStart = min(v.vStart, v.vEnd)
	v.mu.Unlock()
}

// verify checks the batches in [pos, end) (batch boundaries) not yet known good.
func (s *segment) verify(pos, end int64) error {
	a, b := s.verified.uncovered(pos, end)
	if a >= b {
		return nil
	}
	if err := s.checkRange(a, b); err != nil {
		return err
	}
	s.verified.add(a, b)
	return nil
}

// checkRange validates every batch in [a, b), which must start at a batch boundary.
func (s *segment) checkRange(a, b int64) error {
	bufp := verifyBlocks.Get().(*[]byte)
	defer verifyBlocks.Put(bufp)
	buf := *bufp
	var big []byte
	for pos := a; pos < b; {
		k := min(int64(len(buf)), b-pos)
		n, err := s.file.ReadAt(buf[:k], pos)
		if int64(n) < k {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("%w: %s is shorter than its batches (position %d): %w", ErrCorruptMessage, s, pos+int64(n), err)
		}
		sc := batch.NewScanner(buf[:k])
		for sc.Next() {
			if _, err := batch.Validate(sc.Batch()); err != nil {
				return fmt.Errorf("%w: %s: batch at position %d: %w", ErrCorruptMessage, s, pos+int64(sc.Position()), err)
			}
		}
		consumed := int64(sc.Consumed())
		if err := sc.Err(); err != nil && !errors.Is(err, batch.ErrTruncated) {
			return fmt.Errorf("%w: %s: position %d: %w", ErrCorruptMessage, s, pos+consumed, err)
		}
		if consumed == 0 {
			// A batch larger than the block: check it by streaming.
			r := newHeaderReader(s.file, b)
			h, err := r.header(pos)
			r.close()
			if err == nil {
				err = s.checkBatchAt(&h, pos, int64(h.TotalSize()), &big)
			}
			if err != nil {
				return fmt.Errorf("%w: %s: position %d: %w", ErrCorruptMessage, s, pos, err)
			}
			consumed = int64(h.TotalSize())
		}
		pos += consumed
	}
	return nil
}

// Verify checks every batch of every segment (a scrub): framing, CRC-32C, counts. It returns
// the first problem, wrapping ErrCorruptMessage, without changing the log. Reads check unread
// data on their own; Verify is for operators and tests.
func (l *Log) Verify() error {
	l.segMu.RLock()
	segs := append([]*segment(nil), l.segs...)
	for _, s := range segs {
		s.acquire()
	}
	l.segMu.RUnlock()
	defer func() {
		for _, s := range segs {
			s.release()
		}
	}()
	for _, s := range segs {
		if err := s.checkRange(0, s.size.Load()); err != nil {
			return err
		}
	}
	return nil
}

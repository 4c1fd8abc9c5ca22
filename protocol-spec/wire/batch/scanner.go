package batch

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Scanner splits a region of concatenated batches (a Produce request's records, a log segment,
// a Fetch response) by their batchLength fields, without copying and without checking CRCs or
// records (Validate each batch for that). The zero value scans nothing; use NewScanner or Reset.
//
//	s := batch.NewScanner(region)
//	for s.Next() {
//		b := s.Batch() // one whole batch, at s.Position() in region
//	}
//	if err := s.Err(); errors.Is(err, batch.ErrTruncated) {
//		// region ends inside a batch, at s.Consumed(): a Fetch consumer ignores the tail,
//		// log recovery truncates there.
//	}
type Scanner struct {
	b    []byte
	pos  int // start of the current batch
	next int // end of the current batch: bytes consumed by whole batches
	cur  []byte
	err  error
}

// NewScanner returns a Scanner over region.
func NewScanner(region []byte) Scanner { return Scanner{b: region} }

// Reset points the Scanner at region.
func (s *Scanner) Reset(region []byte) { *s = Scanner{b: region} }

// Next advances to the next batch and reports whether there is one. It stops at the end of
// the region, at a truncated batch (Err wraps ErrTruncated), at a batch whose magic is not 2
// (ErrUnsupportedMagic) and at a batchLength too small for a v2 header (ErrCorrupt).
func (s *Scanner) Next() bool {
	s.cur = nil
	if s.err != nil {
		return false
	}
	s.pos = s.next
	rest := s.b[s.pos:]
	if len(rest) == 0 {
		return false
	}
	if len(rest) < LogOverhead {
		s.err = fmt.Errorf("%w: %d bytes at offset %d cannot hold a batch length", ErrTruncated, len(rest), s.pos)
		return false
	}
	length := int64(int32(binary.BigEndian.Uint32(rest[offBatchLength:])))
	if len(rest) > offMagic && int8(rest[offMagic]) != Magic {
		s.err = fmt.Errorf("%w: magic %d at offset %d", ErrUnsupportedMagic, int8(rest[offMagic]), s.pos)
		return false
	}
	if length < MinBatchLength {
		s.err = fmt.Errorf("%w: batchLength %d at offset %d", ErrCorrupt, length, s.pos)
		return false
	}
	total := length + LogOverhead
	if total > int64(len(rest)) {
		s.err = fmt.Errorf("%w: batch of %d bytes at offset %d, %d remain", ErrTruncated, total, s.pos, len(rest))
		return false
	}
	s.cur = rest[:total:total]
	s.next = s.pos + int(total)
	return true
}

// Batch is the current batch: exactly its bytes, aliasing the region (capacity-limited, so an
// append cannot overwrite the next batch).
func (s *Scanner) Batch() []byte { return s.cur }

// Position is the offset in the region where the current batch starts (its position for a log
// index).
func (s *Scanner) Position() int { return s.pos }

// Consumed is the number of bytes of the region taken by whole batches so far: after Next has
// returned false, where the valid prefix ends.
func (s *Scanner) Consumed() int { return s.next }

// Err is nil when Next stopped at the end of the region, and otherwise says why it stopped.
func (s *Scanner) Err() error { return s.err }

// Truncated reports whether the scan stopped at a truncated last batch.
func (s *Scanner) Truncated() bool { return errors.Is(s.err, ErrTruncated) }

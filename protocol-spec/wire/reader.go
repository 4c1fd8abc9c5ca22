package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ErrMalformed is wrapped by every decoding error: truncated input, a negative or oversized
// length, an invalid varint, an array count that the remaining bytes cannot hold.
var ErrMalformed = errors.New("malformed input")

// UUID is a 16-byte identifier (topic ids).
type UUID [16]byte

// Reader decodes primitives from a byte slice. The first error sticks: after it, every read
// returns a zero value and Err reports that error. A Reader never allocates more than the bytes
// remaining can justify. Byte slices it returns alias the input.
type Reader struct {
	b   []byte
	off int
	err error
}

// NewReader returns a Reader over b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Reset points the Reader at b and clears its error.
func (r *Reader) Reset(b []byte) { *r = Reader{b: b} }

// Err is the first error met, or nil.
func (r *Reader) Err() error { return r.err }

// Offset is the number of bytes consumed so far.
func (r *Reader) Offset() int { return r.off }

// Remaining is the number of bytes not yet consumed.
func (r *Reader) Remaining() int { return len(r.b) - r.off }

// Rest returns the unconsumed bytes without consuming them.
func (r *Reader) Rest() []byte { return r.b[r.off:] }

// Fail records err as the Reader's error unless one is already recorded.
func (r *Reader) Fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *Reader) failf(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
	}
}

// take consumes n bytes, or fails and returns nil.
func (r *Reader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.failf("%s needs %d bytes at offset %d, %d remain", what, n, r.off, len(r.b)-r.off)
		return nil
	}
	s := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return s
}

// Bool reads one byte; any non-zero value is true.
func (r *Reader) Bool() bool {
	s := r.take(1, "bool")
	return s != nil && s[0] != 0
}

// Int8 reads a signed byte.
func (r *Reader) Int8() int8 {
	if s := r.take(1, "int8"); s != nil {
		return int8(s[0])
	}
	return 0
}

// Int16 reads a big-endian int16.
func (r *Reader) Int16() int16 {
	if s := r.take(2, "int16"); s != nil {
		return int16(binary.BigEndian.Uint16(s))
	}
	return 0
}

// Uint16 reads a big-endian uint16.
func (r *Reader) Uint16() uint16 {
	if s := r.take(2, "uint16"); s != nil {
		return binary.BigEndian.Uint16(s)
	}
	return 0
}

// Int32 reads a big-endian int32.
func (r *Reader) Int32() int32 {
	if s := r.take(4, "int32"); s != nil {
		return int32(binary.BigEndian.Uint32(s))
	}
	return 0
}

// Uint32 reads a big-endian uint32.
func (r *Reader) Uint32() uint32 {
	if s := r.take(4, "uint32"); s != nil {
		return binary.BigEndian.Uint32(s)
	}
	return 0
}

// Int64 reads a big-endian int64.
func (r *Reader) Int64() int64 {
	if s := r.take(8, "int64"); s != nil {
		return int64(binary.BigEndian.Uint64(s))
	}
	return 0
}

// Float64 reads a big-endian IEEE 754 double.
func (r *Reader) Float64() float64 {
	if s := r.take(8, "float64"); s != nil {
		return math.Float64frombits(binary.BigEndian.Uint64(s))
	}
	return 0
}

// UUID reads 16 bytes.
func (r *Reader) UUID() UUID {
	var u UUID
	if s := r.take(16, "uuid"); s != nil {
		copy(u[:], s)
	}
	return u
}

// Uvarint reads an unsigned varint of at most 32 bits (5 bytes).
func (r *Reader) Uvarint() uint32 {
	// Most varints (record fields, compact lengths) fit one byte, and a record of 64 B to
	// 8 KiB has 2-byte length and value length: take those paths inline.
	if b := r.b[min(r.off, len(r.b)):]; len(b) > 0 && r.err == nil {
		if b[0] < 0x80 {
			r.off++
			return uint32(b[0])
		}
		if len(b) > 1 && b[1] < 0x80 {
			r.off += 2
			return uint32(b[0]&0x7f) | uint32(b[1])<<7
		}
	}
	return r.uvarintSlow()
}

func (r *Reader) uvarintSlow() uint32 {
	if r.err != nil {
		return 0
	}
	u, n := binary.Uvarint(r.b[r.off:])
	switch {
	case n == 0:
		r.failf("truncated uvarint at offset %d", r.off)
		return 0
	case n < 0 || n > 5 || u > 1<<32-1:
		r.failf("uvarint overflows 32 bits at offset %d", r.off)
		return 0
	}
	r.off += n
	return uint32(u)
}

// Varint reads a zig-zag varint of at most 32 bits.
func (r *Reader) Varint() int32 {
	u := r.Uvarint()
	return int32(u>>1) ^ -int32(u&1)
}

// Varlong reads a zig-zag varint of at most 64 bits.
func (r *Reader) Varlong() int64 {
	if r.err != nil {
		return 0
	}
	u, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.failf("invalid varlong at offset %d", r.off)
		return 0
	}
	r.off += n
	return int64(u>>1) ^ -int64(u&1)
}

// length reads a classic (int16 or int32) or compact (uvarint n+1) length; -1 means null.
func (r *Reader) length(compact, short bool) int {
	switch {
	case compact:
		return int(r.Uvarint()) - 1
	case short:
		return int(r.Int16())
	default:
		return int(r.Int32())
	}
}

// String reads a non-null string. A null on the wire is an error.
func (r *Reader) String(compact bool) string {
	n := r.length(compact, true)
	if n < 0 && r.err == nil {
		r.failf("null or negative string length %d at offset %d", n, r.off)
		return ""
	}
	// Invalid UTF-8 is kept as it is, so that a round trip never changes a message.
	return string(r.take(n, "string"))
}

// NullableString reads a string that may be null.
func (r *Reader) NullableString(compact bool) *string {
	n := r.length(compact, true)
	if r.err != nil || n == -1 {
		return nil
	}
	if n < -1 {
		r.failf("negative string length %d at offset %d", n, r.off)
		return nil
	}
	s := string(r.take(n, "string"))
	if r.err != nil {
		return nil
	}
	return &s
}

// Bytes reads a non-null byte string; the result aliases the input. A null on the wire is an error.
func (r *Reader) Bytes(compact bool) []byte {
	n := r.length(compact, false)
	if n < 0 && r.err == nil {
		r.failf("null or negative bytes length %d at offset %d", n, r.off)
		return nil
	}
	s := r.take(n, "bytes")
	if s == nil && r.err == nil {
		return []byte{}
	}
	return s
}

// NullableBytes reads a byte string that may be null (nil); the result aliases the input.
func (r *Reader) NullableBytes(compact bool) []byte {
	n := r.length(compact, false)
	if r.err != nil || n == -1 {
		return nil
	}
	if n < -1 {
		r.failf("negative bytes length %d at offset %d", n, r.off)
		return nil
	}
	s := r.take(n, "bytes")
	if s == nil && r.err == nil {
		return []byte{}
	}
	return s
}

// ArrayLen reads an array count. It returns -1 for null when nullable holds and fails
// otherwise. Every element takes at least minElem bytes (at least one), so a count that the
// remaining bytes cannot hold is an error: this keeps a hostile count from becoming a giant
// allocation.
func (r *Reader) ArrayLen(compact, nullable bool, minElem int) int {
	n := r.length(compact, false)
	if r.err != nil {
		return -1
	}
	if n == -1 && nullable {
		return -1
	}
	if n < 0 {
		r.failf("invalid array length %d at offset %d", n, r.off)
		return -1
	}
	if n > (len(r.b)-r.off)/max(minElem, 1) {
		r.failf("array of %d elements of at least %d bytes at offset %d, only %d bytes remain", n, max(minElem, 1), r.off, len(r.b)-r.off)
		return -1
	}
	return n
}

// Skip consumes n bytes.
func (r *Reader) Skip(n int) { r.take(n, "skipped field") }

// Raw consumes and returns n bytes, aliasing the input.
func (r *Reader) Raw(n int) []byte { return r.take(n, "raw bytes") }

// Package wire is Spool's codec for the Apache Kafka wire protocol: the primitive types, the
// request and response messages generated from protocol-spec/messages by specgen, the request
// and response headers, and the protocol's error codes.
//
// Encoding is append-style: every encoder takes a destination slice and returns it extended, so
// a caller can reuse one buffer for many messages and nothing allocates when the buffer is big
// enough. Decoding goes through a Reader whose first error sticks; callers check it once at the
// end. Byte slices returned by a Reader (bytes and records fields) alias the input buffer: the
// caller owns the input and must keep it alive and unchanged while the decoded message is used.
// Strings are copied.
//
// All integers are big-endian; "varint" is the zig-zag signed varint of record batches and
// "uvarint" the unsigned varint of flexible versions (compact lengths, tagged fields).
package wire

import (
	"encoding/binary"
	"math"
)

// AppendBool appends a boolean as one byte, 1 for true.
func AppendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// AppendInt8 appends a signed byte.
func AppendInt8(b []byte, v int8) []byte { return append(b, byte(v)) }

// AppendInt16 appends a big-endian int16.
func AppendInt16(b []byte, v int16) []byte { return binary.BigEndian.AppendUint16(b, uint16(v)) }

// AppendUint16 appends a big-endian uint16.
func AppendUint16(b []byte, v uint16) []byte { return binary.BigEndian.AppendUint16(b, v) }

// AppendInt32 appends a big-endian int32.
func AppendInt32(b []byte, v int32) []byte { return binary.BigEndian.AppendUint32(b, uint32(v)) }

// AppendUint32 appends a big-endian uint32.
func AppendUint32(b []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(b, v) }

// AppendInt64 appends a big-endian int64.
func AppendInt64(b []byte, v int64) []byte { return binary.BigEndian.AppendUint64(b, uint64(v)) }

// AppendFloat64 appends an IEEE 754 double, big-endian.
func AppendFloat64(b []byte, v float64) []byte {
	return binary.BigEndian.AppendUint64(b, math.Float64bits(v))
}

// AppendUvarint appends an unsigned LEB128 varint (flexible-version lengths and tags).
func AppendUvarint(b []byte, v uint32) []byte { return binary.AppendUvarint(b, uint64(v)) }

// AppendVarint appends a zig-zag varint (record fields).
func AppendVarint(b []byte, v int32) []byte { return binary.AppendVarint(b, int64(v)) }

// AppendVarlong appends a zig-zag varlong (record timestamp deltas).
func AppendVarlong(b []byte, v int64) []byte { return binary.AppendVarint(b, v) }

// VarintLen is the encoded size of v as a zig-zag varint.
func VarintLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// UvarintLen is the encoded size of v as an unsigned varint.
func UvarintLen(v uint32) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// AppendUUID appends a 16-byte UUID.
func AppendUUID(b []byte, v UUID) []byte { return append(b, v[:]...) }

// appendLen writes a length in the classic (int16 or int32) or compact (uvarint of n+1) form.
// n = -1 is null.
func appendLen(b []byte, n int, compact, short bool) []byte {
	switch {
	case compact:
		return AppendUvarint(b, uint32(n+1))
	case short:
		return AppendInt16(b, int16(n))
	default:
		return AppendInt32(b, int32(n))
	}
}

// AppendString appends a non-null string: int16 length (classic) or uvarint length+1 (compact).
func AppendString(b []byte, s string, compact bool) []byte {
	b = appendLen(b, len(s), compact, true)
	return append(b, s...)
}

// AppendNullableString appends a string that may be null (nil).
func AppendNullableString(b []byte, s *string, compact bool) []byte {
	if s == nil {
		return appendLen(b, -1, compact, true)
	}
	return AppendString(b, *s, compact)
}

// AppendBytes appends a non-null byte string: int32 length (classic) or uvarint length+1 (compact).
// A nil slice is written as empty.
func AppendBytes(b []byte, v []byte, compact bool) []byte {
	b = appendLen(b, len(v), compact, false)
	return append(b, v...)
}

// AppendNullableBytes appends a byte string where nil is null.
func AppendNullableBytes(b []byte, v []byte, compact bool) []byte {
	if v == nil {
		return appendLen(b, -1, compact, false)
	}
	return AppendBytes(b, v, compact)
}

// AppendArrayLen appends an array length: int32 (classic) or uvarint n+1 (compact); -1 is null.
func AppendArrayLen(b []byte, n int, compact bool) []byte {
	return appendLen(b, n, compact, false)
}

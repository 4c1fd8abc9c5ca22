package wire_test

// Unit tests of the primitives: every Append* function against its Reader method, known
// encodings, truncation, nulls in the classic and compact forms, array count bounds and the
// tagged-field section.

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// primitive is one encoded value and the read that gives it back.
type primitive struct {
	name string
	enc  []byte
	// read reads the value and returns it in a comparable form.
	read func(r *wire.Reader) any
	want any
}

func ptrStr(s string) *string { return &s }

func showStr(p *string) any {
	if p == nil {
		return "<null>"
	}
	return "=" + *p
}

func showBytes(b []byte) any {
	if b == nil {
		return "<null>"
	}
	return "=" + hex.EncodeToString(b)
}

// primitives lists every pair of the package with edge values, in both the classic and the
// compact form where the type has two.
func primitives() []primitive {
	var ps []primitive
	add := func(name string, enc []byte, read func(r *wire.Reader) any, want any) {
		ps = append(ps, primitive{name, enc, read, want})
	}
	for _, v := range []bool{false, true} {
		add(fmt.Sprintf("bool %v", v), wire.AppendBool(nil, v), func(r *wire.Reader) any { return r.Bool() }, v)
	}
	for _, v := range []int8{0, 1, -1, math.MinInt8, math.MaxInt8} {
		add(fmt.Sprintf("int8 %d", v), wire.AppendInt8(nil, v), func(r *wire.Reader) any { return r.Int8() }, v)
	}
	for _, v := range []int16{0, 1, -1, math.MinInt16, math.MaxInt16} {
		add(fmt.Sprintf("int16 %d", v), wire.AppendInt16(nil, v), func(r *wire.Reader) any { return r.Int16() }, v)
	}
	for _, v := range []uint16{0, 1, 0x8000, math.MaxUint16} {
		add(fmt.Sprintf("uint16 %d", v), wire.AppendUint16(nil, v), func(r *wire.Reader) any { return r.Uint16() }, v)
	}
	for _, v := range []int32{0, 1, -1, math.MinInt32, math.MaxInt32} {
		add(fmt.Sprintf("int32 %d", v), wire.AppendInt32(nil, v), func(r *wire.Reader) any { return r.Int32() }, v)
	}
	for _, v := range []uint32{0, 1, 0x80000000, math.MaxUint32} {
		add(fmt.Sprintf("uint32 %d", v), wire.AppendUint32(nil, v), func(r *wire.Reader) any { return r.Uint32() }, v)
	}
	for _, v := range []int64{0, 1, -1, math.MinInt64, math.MaxInt64} {
		add(fmt.Sprintf("int64 %d", v), wire.AppendInt64(nil, v), func(r *wire.Reader) any { return r.Int64() }, v)
	}
	for _, v := range []float64{0, math.Copysign(0, -1), 1.5, -1e300, math.Inf(1), math.Inf(-1), math.NaN(), math.SmallestNonzeroFloat64} {
		// Compare bit patterns: NaN != NaN and -0 == 0 as floats.
		add(fmt.Sprintf("float64 %v", v), wire.AppendFloat64(nil, v), func(r *wire.Reader) any { return math.Float64bits(r.Float64()) }, math.Float64bits(v))
	}
	for _, v := range []wire.UUID{{}, {0: 1, 15: 0xff}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}} {
		add(fmt.Sprintf("uuid %x", v), wire.AppendUUID(nil, v), func(r *wire.Reader) any { return r.UUID() }, v)
	}
	for _, v := range []uint32{0, 1, 127, 128, 300, 16383, 16384, 1<<21 - 1, 1 << 21, 1<<28 - 1, 1 << 28, math.MaxUint32} {
		add(fmt.Sprintf("uvarint %d", v), wire.AppendUvarint(nil, v), func(r *wire.Reader) any { return r.Uvarint() }, v)
	}
	for _, v := range []int32{0, 1, -1, 63, -64, 64, -65, math.MinInt32, math.MaxInt32} {
		add(fmt.Sprintf("varint %d", v), wire.AppendVarint(nil, v), func(r *wire.Reader) any { return r.Varint() }, v)
	}
	for _, v := range []int64{0, 1, -1, math.MinInt32, math.MaxInt32, math.MinInt64, math.MaxInt64} {
		add(fmt.Sprintf("varlong %d", v), wire.AppendVarlong(nil, v), func(r *wire.Reader) any { return r.Varlong() }, v)
	}
	long := strings.Repeat("x", 300) // a compact length of 301 takes two bytes
	for _, compact := range []bool{false, true} {
		form := map[bool]string{false: "classic", true: "compact"}[compact]
		for _, s := range []string{"", "a", "héllo", "\xff\xfe not utf-8", long} {
			add(fmt.Sprintf("%s string %.8q", form, s), wire.AppendString(nil, s, compact), func(r *wire.Reader) any { return r.String(compact) }, s)
			add(fmt.Sprintf("%s nullable string %.8q", form, s), wire.AppendNullableString(nil, ptrStr(s), compact), func(r *wire.Reader) any { return showStr(r.NullableString(compact)) }, showStr(&s))
		}
		add(form+" nullable string null", wire.AppendNullableString(nil, nil, compact), func(r *wire.Reader) any { return showStr(r.NullableString(compact)) }, "<null>")
		for _, b := range [][]byte{{}, {0}, []byte(long)} {
			add(fmt.Sprintf("%s bytes %d", form, len(b)), wire.AppendBytes(nil, b, compact), func(r *wire.Reader) any { return showBytes(r.Bytes(compact)) }, showBytes(b))
			add(fmt.Sprintf("%s nullable bytes %d", form, len(b)), wire.AppendNullableBytes(nil, b, compact), func(r *wire.Reader) any { return showBytes(r.NullableBytes(compact)) }, showBytes(b))
		}
		// A nil slice is empty for a non-nullable bytes field and null for a nullable one.
		add(form+" bytes nil is empty", wire.AppendBytes(nil, nil, compact), func(r *wire.Reader) any { return showBytes(r.Bytes(compact)) }, showBytes([]byte{}))
		add(form+" nullable bytes null", wire.AppendNullableBytes(nil, nil, compact), func(r *wire.Reader) any { return showBytes(r.NullableBytes(compact)) }, "<null>")
		for _, n := range []int{0, 1, 126, 127, 128} {
			// Each element takes one byte here, so the count fits the remaining bytes.
			enc := append(wire.AppendArrayLen(nil, n, compact), make([]byte, n)...)
			add(fmt.Sprintf("%s array len %d", form, n), enc, func(r *wire.Reader) any { l := r.ArrayLen(compact, false, 1); r.Skip(max(l, 0)); return l }, n)
		}
		add(form+" array null", wire.AppendArrayLen(nil, -1, compact), func(r *wire.Reader) any { return r.ArrayLen(compact, true, 1) }, -1)
	}
	return ps
}

// TestPrimitiveRoundTrip reads every encoded primitive back, consuming exactly its bytes.
func TestPrimitiveRoundTrip(t *testing.T) {
	for _, p := range primitives() {
		r := wire.NewReader(p.enc)
		got := p.read(r)
		if err := r.Err(); err != nil {
			t.Errorf("%s: %v", p.name, err)
			continue
		}
		if got != p.want {
			t.Errorf("%s: read %v, want %v", p.name, got, p.want)
		}
		if r.Remaining() != 0 || r.Offset() != len(p.enc) {
			t.Errorf("%s: %d bytes left, offset %d of %d", p.name, r.Remaining(), r.Offset(), len(p.enc))
		}
	}
}

// TestPrimitiveTruncated cuts every encoded primitive at every position: the read fails with
// ErrMalformed, returns the zero value (or nil), and every later read fails too.
func TestPrimitiveTruncated(t *testing.T) {
	for _, p := range primitives() {
		for n := 0; n < len(p.enc); n++ {
			r := wire.NewReader(p.enc[:n:n])
			got := p.read(r)
			err := r.Err()
			if !errors.Is(err, wire.ErrMalformed) {
				t.Errorf("%s cut to %d/%d bytes: read %v, err %v, want ErrMalformed", p.name, n, len(p.enc), got, err)
				continue
			}
			// The first error sticks and later reads return zero values without consuming.
			off := r.Offset()
			if r.Int32() != 0 || r.Uvarint() != 0 || r.String(false) != "" || r.NullableBytes(true) != nil || r.ArrayLen(false, true, 1) != -1 {
				t.Errorf("%s cut to %d: reads after an error return values", p.name, n)
			}
			if r.Err() != err || r.Offset() != off {
				t.Errorf("%s cut to %d: the error or the offset changed after the first error", p.name, n)
			}
		}
	}
}

// TestKnownEncodings pins primitive encodings to bytes from the protocol definition.
func TestKnownEncodings(t *testing.T) {
	cases := []struct {
		name string
		got  []byte
		want string
	}{
		{"uvarint 0", wire.AppendUvarint(nil, 0), "00"},
		{"uvarint 1", wire.AppendUvarint(nil, 1), "01"},
		{"uvarint 127", wire.AppendUvarint(nil, 127), "7f"},
		{"uvarint 128", wire.AppendUvarint(nil, 128), "80 01"},
		{"uvarint 300", wire.AppendUvarint(nil, 300), "ac 02"},
		{"uvarint 16384", wire.AppendUvarint(nil, 16384), "80 80 01"},
		{"uvarint max", wire.AppendUvarint(nil, math.MaxUint32), "ff ff ff ff 0f"},
		{"varint 0", wire.AppendVarint(nil, 0), "00"},
		{"varint -1", wire.AppendVarint(nil, -1), "01"},
		{"varint 1", wire.AppendVarint(nil, 1), "02"},
		{"varint -2", wire.AppendVarint(nil, -2), "03"},
		{"varint 2", wire.AppendVarint(nil, 2), "04"},
		{"varint 63", wire.AppendVarint(nil, 63), "7e"},
		{"varint -64", wire.AppendVarint(nil, -64), "7f"},
		{"varint 64", wire.AppendVarint(nil, 64), "80 01"},
		{"varint 150", wire.AppendVarint(nil, 150), "ac 02"},
		{"varint max int32", wire.AppendVarint(nil, math.MaxInt32), "fe ff ff ff 0f"},
		{"varint min int32", wire.AppendVarint(nil, math.MinInt32), "ff ff ff ff 0f"},
		{"varlong -1", wire.AppendVarlong(nil, -1), "01"},
		{"varlong max int64", wire.AppendVarlong(nil, math.MaxInt64), "fe ff ff ff ff ff ff ff ff 01"},
		{"varlong min int64", wire.AppendVarlong(nil, math.MinInt64), "ff ff ff ff ff ff ff ff ff 01"},
		{"bool true", wire.AppendBool(nil, true), "01"},
		{"int16 -2", wire.AppendInt16(nil, -2), "ff fe"},
		{"int32 0x01020304", wire.AppendInt32(nil, 0x01020304), "01 02 03 04"},
		{"int64 -2", wire.AppendInt64(nil, -2), "ff ff ff ff ff ff ff fe"},
		{"float64 1.0", wire.AppendFloat64(nil, 1), "3f f0 00 00 00 00 00 00"},
		{"classic string", wire.AppendString(nil, "ab", false), "00 02 61 62"},
		{"compact string", wire.AppendString(nil, "ab", true), "03 61 62"},
		{"classic empty string", wire.AppendString(nil, "", false), "00 00"},
		{"compact empty string", wire.AppendString(nil, "", true), "01"},
		{"classic null string", wire.AppendNullableString(nil, nil, false), "ff ff"},
		{"compact null string", wire.AppendNullableString(nil, nil, true), "00"},
		{"classic bytes", wire.AppendBytes(nil, []byte{9}, false), "00 00 00 01 09"},
		{"compact bytes", wire.AppendBytes(nil, []byte{9}, true), "02 09"},
		{"classic null bytes", wire.AppendNullableBytes(nil, nil, false), "ff ff ff ff"},
		{"compact null bytes", wire.AppendNullableBytes(nil, nil, true), "00"},
		{"classic empty bytes", wire.AppendNullableBytes(nil, []byte{}, false), "00 00 00 00"},
		{"compact empty bytes", wire.AppendNullableBytes(nil, []byte{}, true), "01"},
		{"classic array 3", wire.AppendArrayLen(nil, 3, false), "00 00 00 03"},
		{"compact array 3", wire.AppendArrayLen(nil, 3, true), "04"},
		{"classic null array", wire.AppendArrayLen(nil, -1, false), "ff ff ff ff"},
		{"compact null array", wire.AppendArrayLen(nil, -1, true), "00"},
		{"compact array 127", wire.AppendArrayLen(nil, 127, true), "80 01"},
	}
	for _, c := range cases {
		if want := unhex(t, c.want); !bytes.Equal(c.got, want) {
			t.Errorf("%s: % x, want % x", c.name, c.got, want)
		}
	}
	// Decoding the known bytes.
	r := wire.NewReader(unhex(t, "00 01 02 ac02 7f 8001"))
	for _, want := range []int32{0, -1, 1, 150, -64, 64} {
		if got := r.Varint(); got != want {
			t.Errorf("varint: got %d, want %d", got, want)
		}
	}
	r = wire.NewReader(unhex(t, "00 01 ac02 ffffffff0f"))
	for _, want := range []uint32{0, 1, 300, math.MaxUint32} {
		if got := r.Uvarint(); got != want {
			t.Errorf("uvarint: got %d, want %d", got, want)
		}
	}
	if r.Err() != nil || r.Remaining() != 0 {
		t.Errorf("uvarint reads: %v, %d left", r.Err(), r.Remaining())
	}
	// The length helpers agree with the encoders.
	for _, v := range []int64{0, 1, -1, 63, -64, 64, math.MinInt32, math.MaxInt32, math.MinInt64, math.MaxInt64} {
		if got, want := wire.VarintLen(v), len(wire.AppendVarlong(nil, v)); got != want {
			t.Errorf("VarintLen(%d) = %d, encoding takes %d", v, got, want)
		}
	}
	for _, v := range []uint32{0, 127, 128, 16383, 16384, math.MaxUint32} {
		if got, want := wire.UvarintLen(v), len(wire.AppendUvarint(nil, v)); got != want {
			t.Errorf("UvarintLen(%d) = %d, encoding takes %d", v, got, want)
		}
	}
	// Any non-zero byte reads as true.
	if r := wire.NewReader([]byte{2}); !r.Bool() {
		t.Error("bool 0x02 reads as false")
	}
}

// TestVarintLimits: a uvarint has at most five bytes and 32 bits, a varlong at most ten bytes
// and 64 bits.
func TestVarintLimits(t *testing.T) {
	bad := []struct {
		name string
		in   string
		read func(r *wire.Reader)
	}{
		{"uvarint 2^32", "80 80 80 80 10", func(r *wire.Reader) { r.Uvarint() }},
		{"uvarint six bytes", "ff ff ff ff ff 01", func(r *wire.Reader) { r.Uvarint() }},
		{"uvarint five bytes with continuation", "80 80 80 80 80", func(r *wire.Reader) { r.Uvarint() }},
		{"varint beyond 32 bits", "ff ff ff ff 1f", func(r *wire.Reader) { r.Varint() }},
		{"varlong eleven bytes", "ff ff ff ff ff ff ff ff ff ff 01", func(r *wire.Reader) { r.Varlong() }},
		{"varlong overflow in the tenth byte", "ff ff ff ff ff ff ff ff ff 02", func(r *wire.Reader) { r.Varlong() }},
		{"varlong truncated", "80", func(r *wire.Reader) { r.Varlong() }},
		{"compact length overflow", "ff ff ff ff 1f", func(r *wire.Reader) { r.String(true) }},
	}
	for _, c := range bad {
		r := wire.NewReader(unhex(t, c.in))
		c.read(r)
		if !errors.Is(r.Err(), wire.ErrMalformed) {
			t.Errorf("%s: err %v, want ErrMalformed", c.name, r.Err())
		}
	}
	// Non-minimal encodings are accepted (Kafka's readers accept them too).
	r := wire.NewReader(unhex(t, "80 00 81 80 00"))
	if a, b := r.Uvarint(), r.Uvarint(); a != 0 || b != 1 || r.Err() != nil {
		t.Errorf("non-minimal uvarints: %d %d %v", a, b, r.Err())
	}
}

// TestNulls covers null and negative lengths of strings, bytes and arrays in both forms.
func TestNulls(t *testing.T) {
	type read struct {
		name string
		in   string
		fn   func(r *wire.Reader) any
		want any  // value when ok
		ok   bool // no error expected
	}
	cases := []read{
		// Strings.
		{"classic null into nullable string", "ffff", func(r *wire.Reader) any { return showStr(r.NullableString(false)) }, "<null>", true},
		{"compact null into nullable string", "00", func(r *wire.Reader) any { return showStr(r.NullableString(true)) }, "<null>", true},
		{"classic null into string", "ffff", func(r *wire.Reader) any { return r.String(false) }, "", false},
		{"compact null into string", "00", func(r *wire.Reader) any { return r.String(true) }, "", false},
		{"classic string length -2", "fffe", func(r *wire.Reader) any { return showStr(r.NullableString(false)) }, "<null>", false},
		{"classic string length -2 non-null", "fffe", func(r *wire.Reader) any { return r.String(false) }, "", false},
		{"classic empty string is not null", "0000", func(r *wire.Reader) any { return showStr(r.NullableString(false)) }, "=", true},
		{"compact empty string is not null", "01", func(r *wire.Reader) any { return showStr(r.NullableString(true)) }, "=", true},
		// Bytes.
		{"classic null into nullable bytes", "ffffffff", func(r *wire.Reader) any { return showBytes(r.NullableBytes(false)) }, "<null>", true},
		{"compact null into nullable bytes", "00", func(r *wire.Reader) any { return showBytes(r.NullableBytes(true)) }, "<null>", true},
		{"classic null into bytes", "ffffffff", func(r *wire.Reader) any { return showBytes(r.Bytes(false)) }, "<null>", false},
		{"compact null into bytes", "00", func(r *wire.Reader) any { return showBytes(r.Bytes(true)) }, "<null>", false},
		{"classic bytes length -2", "fffffffe", func(r *wire.Reader) any { return showBytes(r.NullableBytes(false)) }, "<null>", false},
		{"classic bytes min int32", "80000000", func(r *wire.Reader) any { return showBytes(r.Bytes(false)) }, "<null>", false},
		{"classic empty bytes is not null", "00000000", func(r *wire.Reader) any { return showBytes(r.NullableBytes(false)) }, "=", true},
		{"classic empty non-null bytes", "00000000", func(r *wire.Reader) any { return showBytes(r.Bytes(false)) }, "=", true},
		{"compact empty bytes is not null", "01", func(r *wire.Reader) any { return showBytes(r.NullableBytes(true)) }, "=", true},
		// Arrays.
		{"classic null array, nullable", "ffffffff", func(r *wire.Reader) any { return r.ArrayLen(false, true, 4) }, -1, true},
		{"compact null array, nullable", "00", func(r *wire.Reader) any { return r.ArrayLen(true, true, 4) }, -1, true},
		{"classic null array, not nullable", "ffffffff", func(r *wire.Reader) any { return r.ArrayLen(false, false, 4) }, -1, false},
		{"compact null array, not nullable", "00", func(r *wire.Reader) any { return r.ArrayLen(true, false, 4) }, -1, false},
		{"classic array length -2", "fffffffe", func(r *wire.Reader) any { return r.ArrayLen(false, true, 4) }, -1, false},
		{"classic empty array", "00000000", func(r *wire.Reader) any { return r.ArrayLen(false, true, 4) }, 0, true},
		{"compact empty array", "01", func(r *wire.Reader) any { return r.ArrayLen(true, true, 4) }, 0, true},
	}
	for _, c := range cases {
		r := wire.NewReader(unhex(t, c.in))
		got := c.fn(r)
		if c.ok != (r.Err() == nil) {
			t.Errorf("%s: err %v, want ok=%v", c.name, r.Err(), c.ok)
		}
		if r.Err() != nil && !errors.Is(r.Err(), wire.ErrMalformed) {
			t.Errorf("%s: err %v does not wrap ErrMalformed", c.name, r.Err())
		}
		if got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
	// A nil input behaves like an empty one.
	r := wire.NewReader(nil)
	if r.Int8() != 0 || !errors.Is(r.Err(), wire.ErrMalformed) {
		t.Errorf("reading from nil: %v", r.Err())
	}
}

// TestArrayLenBounds: a count is refused when the remaining bytes cannot hold that many
// elements of the least size, so a hostile count never becomes a large allocation.
func TestArrayLenBounds(t *testing.T) {
	cases := []struct {
		count, minElem, remaining int
		compact, ok               bool
	}{
		{3, 4, 12, false, true},
		{3, 4, 11, false, false},
		{3, 4, 12, true, true},
		{3, 4, 11, true, false},
		{0, 100, 0, false, true},
		{1, 0, 1, false, true},  // minElem 0 counts as 1
		{2, 0, 1, false, false}, // and still bounds the count
		{1, 1, 0, true, false},
		{math.MaxInt32, 1, 64, false, false},
		{math.MaxUint32 - 1, 1, 64, true, false},
	}
	for _, c := range cases {
		in := wire.AppendArrayLen(nil, c.count, c.compact)
		if c.compact && c.count == math.MaxUint32-1 {
			in = wire.AppendUvarint(nil, math.MaxUint32)
		}
		in = append(in, make([]byte, c.remaining)...)
		r := wire.NewReader(in)
		n := r.ArrayLen(c.compact, false, c.minElem)
		if c.ok && (r.Err() != nil || n != c.count) {
			t.Errorf("count %d, min %d, %d bytes, compact %v: got %d, %v; want the count", c.count, c.minElem, c.remaining, c.compact, n, r.Err())
		}
		if !c.ok && (!errors.Is(r.Err(), wire.ErrMalformed) || n != -1) {
			t.Errorf("count %d, min %d, %d bytes, compact %v: got %d, %v; want ErrMalformed", c.count, c.minElem, c.remaining, c.compact, n, r.Err())
		}
	}
}

// TestReaderBasics covers the bookkeeping methods and the aliasing rules.
func TestReaderBasics(t *testing.T) {
	in := unhex(t, "0003 616263 00000002 0102 ffff")
	r := wire.NewReader(in)
	if s := r.String(false); s != "abc" || r.Offset() != 5 || r.Remaining() != len(in)-5 {
		t.Fatalf("string %q, offset %d, remaining %d", s, r.Offset(), r.Remaining())
	}
	if rest := r.Rest(); !bytes.Equal(rest, in[5:]) || r.Offset() != 5 {
		t.Fatalf("Rest consumed or differs: %x", rest)
	}
	b := r.Bytes(false)
	if !bytes.Equal(b, []byte{1, 2}) {
		t.Fatalf("bytes %x", b)
	}
	// Byte slices alias the input but cannot grow into it.
	if &b[0] != &in[9] {
		t.Error("bytes do not alias the input")
	}
	if cap(b) != len(b) {
		t.Errorf("bytes have capacity %d beyond their length %d: an append would overwrite the input", cap(b), len(b))
	}
	_ = append(b, 0xee)
	if in[11] != 0xff {
		t.Error("appending to decoded bytes overwrote the input")
	}
	// Strings are copies.
	r.Reset(in)
	s := r.String(false)
	in[2] = 'X'
	if s != "abc" {
		t.Errorf("string changed with its input: %q", s)
	}
	in[2] = 'a'
	// Raw and Skip.
	r.Reset(in)
	r.Skip(2)
	if raw := r.Raw(3); string(raw) != "abc" {
		t.Errorf("raw %q", raw)
	}
	r.Skip(100)
	if !errors.Is(r.Err(), wire.ErrMalformed) || r.Offset() != 5 {
		t.Errorf("skipping past the end: %v at %d", r.Err(), r.Offset())
	}
	if r.Raw(0) != nil {
		t.Error("Raw after an error returns bytes")
	}
	// Fail keeps the first error; Reset clears it.
	r.Reset(in)
	first, second := errors.New("first"), errors.New("second")
	r.Fail(first)
	r.Fail(second)
	if r.Err() != first {
		t.Errorf("err %v, want the first", r.Err())
	}
	if r.Int16() != 0 || r.Offset() != 0 {
		t.Error("reads continue after Fail")
	}
	r.Reset(in[:2])
	if r.Err() != nil || r.Int16() != 3 || r.Remaining() != 0 {
		t.Errorf("after Reset: %v", r.Err())
	}
	// Negative Skip or Raw is refused, not a panic.
	r.Reset(in)
	r.Raw(-1)
	if !errors.Is(r.Err(), wire.ErrMalformed) {
		t.Errorf("Raw(-1): %v", r.Err())
	}
}

// TestAppendIsAppend: every encoder appends to its argument and leaves the prefix alone.
func TestAppendIsAppend(t *testing.T) {
	prefix := []byte{0xaa, 0xbb}
	encs := map[string]func([]byte) []byte{
		"int32":    func(b []byte) []byte { return wire.AppendInt32(b, -7) },
		"string":   func(b []byte) []byte { return wire.AppendString(b, "x", true) },
		"bytes":    func(b []byte) []byte { return wire.AppendNullableBytes(b, nil, false) },
		"uvarint":  func(b []byte) []byte { return wire.AppendUvarint(b, 300) },
		"array":    func(b []byte) []byte { return wire.AppendArrayLen(b, 2, false) },
		"tags":     func(b []byte) []byte { return wire.AppendTagSection(b, nil, nil) },
		"uuid":     func(b []byte) []byte { return wire.AppendUUID(b, wire.UUID{1}) },
		"float64":  func(b []byte) []byte { return wire.AppendFloat64(b, 2) },
		"varlong":  func(b []byte) []byte { return wire.AppendVarlong(b, -300) },
		"nullable": func(b []byte) []byte { return wire.AppendNullableString(b, ptrStr("y"), false) },
	}
	for name, enc := range encs {
		alone := enc(nil)
		got := enc(bytes.Clone(prefix))
		if !bytes.Equal(got, append(bytes.Clone(prefix), alone...)) {
			t.Errorf("%s: appending to a prefix gives %x", name, got)
		}
	}
}

// TestTagSection: AppendTagSection merges known and unknown fields in increasing tag order
// with the right count and sizes, and a generated message keeps unknown tags where they were.
func TestTagSection(t *testing.T) {
	known := []wire.TagField{{Tag: 0, Data: []byte{0xa0}}, {Tag: 2, Data: []byte{0xa2, 0xa2}}, {Tag: 5, Data: nil}}
	unknown := []wire.TagField{{Tag: 1, Data: []byte{0xb1}}, {Tag: 3, Data: []byte{}}, {Tag: 200, Data: bytes.Repeat([]byte{0xbb}, 130)}}
	got := wire.AppendTagSection(nil, known, unknown)
	want := unhex(t, "06"+
		"00 01 a0"+
		"01 01 b1"+
		"02 02 a2a2"+
		"03 00"+
		"05 00"+
		"c801 8201"+strings.Repeat("bb", 130))
	if !bytes.Equal(got, want) {
		t.Fatalf("tag section\ngot:  %x\nwant: %x", got, want)
	}
	if got := wire.AppendTagSection(nil, nil, nil); !bytes.Equal(got, []byte{0}) {
		t.Errorf("empty tag section %x, want 00", got)
	}
	if got := wire.AppendTagSection(nil, nil, unknown[:1]); !bytes.Equal(got, unhex(t, "01 01 01 b1")) {
		t.Errorf("unknown only: %x", got)
	}
	if got := wire.AppendTagSection(nil, known[:1], nil); !bytes.Equal(got, unhex(t, "01 00 01 a0")) {
		t.Errorf("known only: %x", got)
	}

	// Through generated code: ApiVersionsResponse v3 knows tags 0-3; unknown tags 4 and 9
	// follow them, and the decoder keeps them for a faithful re-encoding.
	body := unhex(t, "0000"+ // error code
		"01"+ // api keys: empty
		"00000000"+ // throttle
		"04"+ // 4 tags
		"01 08 0000000000000007"+ // FinalizedFeaturesEpoch = 7 (tag 1)
		"03 01 01"+ // ZkMigrationReady = true (tag 3)
		"04 02 c0c0"+ // unknown tag 4
		"09 00") // unknown tag 9, empty
	var m wire.ApiVersionsResponse
	if err := m.Decode(body, 3); err != nil {
		t.Fatal(err)
	}
	if m.FinalizedFeaturesEpoch != 7 || !m.ZkMigrationReady || len(m.UnknownTags) != 2 || m.UnknownTags[0].Tag != 4 || m.UnknownTags[1].Tag != 9 {
		t.Fatalf("decoded %+v", m)
	}
	if again := m.AppendTo(nil, 3); !bytes.Equal(again, body) {
		t.Errorf("re-encoding\ngot:  %x\nwant: %x", again, body)
	}
	// A known tagged field set to its default on the wire is read, and not written back.
	body2 := unhex(t, "0000 01 00000000"+
		"03"+
		"01 08 0000000000000007"+ // tag 1
		"02 01 01"+ // tag 2 (FinalizedFeatures): empty compact array
		"03 01 01") // tag 3
	var m2 wire.ApiVersionsResponse
	if err := m2.Decode(body2, 3); err != nil {
		t.Fatal(err)
	}
	if m2.FinalizedFeatures == nil || len(m2.FinalizedFeatures) != 0 {
		t.Fatalf("FinalizedFeatures %v", m2.FinalizedFeatures)
	}
	// An empty FinalizedFeatures equals its default and is not written back; the rest is.
	want2 := unhex(t, "0000 01 00000000 02 01 08 0000000000000007 03 01 01")
	if again := m2.AppendTo(nil, 3); !bytes.Equal(again, want2) {
		t.Errorf("re-encoding\ngot:  %x\nwant: %x", again, want2)
	}
	// The generated encoder merges carried-over unknown tags into the known ones by number
	// (here an unknown 2 between the known 1 and 3, as a field of a newer schema would be).
	m2.UnknownTags = wire.Tags{{Tag: 2, Data: []byte{0xdd}}}
	want3 := unhex(t, "0000 01 00000000 03 01 08 0000000000000007 02 01 dd 03 01 01")
	if got := m2.AppendTo(nil, 3); !bytes.Equal(got, want3) {
		t.Errorf("known 1, unknown 2, known 3\ngot:  %x\nwant: %x", got, want3)
	}
}

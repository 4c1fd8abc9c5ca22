package batch

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"testing"

	"github.com/spoolmq/spool/protocol-spec/wire/compress"
)

var allCodecs = []compress.Codec{compress.None, compress.Gzip, compress.Snappy, compress.LZ4, compress.Zstd}

type testRecord struct {
	ts         int64
	key, value []byte
	headers    []RecordHeader
}

func sampleRecords(n, valueSize int) []testRecord {
	recs := make([]testRecord, n)
	for i := range recs {
		v := bytes.Repeat([]byte{byte('a' + i%26)}, valueSize)
		copy(v, fmt.Sprintf("value-%d-", i))
		recs[i] = testRecord{ts: t0 + int64(i%7)*3 - 5, key: []byte(fmt.Sprintf("key-%d", i)), value: v}
		switch i % 4 {
		case 1:
			recs[i].key = nil
		case 2:
			recs[i].headers = hdrs("a", "1", "bb", "22")
			recs[i].headers = append(recs[i].headers, RecordHeader{Key: []byte("n")})
		case 3:
			recs[i].value = nil
		}
	}
	return recs
}

func buildBatch(t testing.TB, c compress.Codec, recs []testRecord) []byte {
	t.Helper()
	b := NewBuilder()
	b.SetCodec(c)
	for _, r := range recs {
		b.Append(r.ts, r.key, r.value, r.headers)
	}
	out, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(out)
}

func checkRecords(t *testing.T, raw []byte, recs []testRecord) {
	t.Helper()
	var it Iterator
	if err := it.Reset(raw, 1<<24); err != nil {
		t.Fatal(err)
	}
	h := it.Header()
	i := 0
	for it.Next() {
		r := it.Record()
		w := recs[i]
		if r.Offset != h.BaseOffset+int64(i) || r.OffsetDelta != int32(i) {
			t.Fatalf("record %d: offset %d delta %d", i, r.Offset, r.OffsetDelta)
		}
		if r.Timestamp != w.ts && !h.Attributes.LogAppendTime() {
			t.Fatalf("record %d: timestamp %d, want %d", i, r.Timestamp, w.ts)
		}
		if !bytes.Equal(r.Key, w.key) || (r.Key == nil) != (w.key == nil) ||
			!bytes.Equal(r.Value, w.value) || (r.Value == nil) != (w.value == nil) {
			t.Fatalf("record %d: key %q value %q", i, r.Key, r.Value)
		}
		checkPositions(t, &it)
		got := r.AppendHeaders(nil)
		if len(got) != len(w.headers) || r.NumHeaders != len(w.headers) {
			t.Fatalf("record %d: %d headers, want %d", i, len(got), len(w.headers))
		}
		for j := range got {
			if !bytes.Equal(got[j].Key, w.headers[j].Key) || !bytes.Equal(got[j].Value, w.headers[j].Value) ||
				(got[j].Value == nil) != (w.headers[j].Value == nil) {
				t.Fatalf("record %d header %d: %q=%q", i, j, got[j].Key, got[j].Value)
			}
		}
		i++
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if i != len(recs) {
		t.Fatalf("%d records, want %d", i, len(recs))
	}
}

// checkPositions fails unless Positions locate the current record's key and value in Region:
// the same bytes at the same addresses.
func checkPositions(t *testing.T, it *Iterator) {
	t.Helper()
	r, region := it.Record(), it.Region()
	k, v := it.Positions()
	for _, f := range []struct {
		name string
		got  []byte
		at   int
	}{{"key", r.Key, k}, {"value", r.Value, v}} {
		if len(f.got) == 0 {
			continue
		}
		if f.at < 0 || f.at+len(f.got) > len(region) || &region[f.at] != &f.got[0] {
			t.Fatalf("%s at %d (%d bytes) is not where the record's %s lies in a region of %d", f.name, f.at, len(f.got), f.name, len(region))
		}
	}
}

func TestRoundTrip(t *testing.T) {
	for _, c := range allCodecs {
		for _, n := range []int{1, 3, 1000} {
			t.Run(fmt.Sprintf("%v/%d", c, n), func(t *testing.T) {
				recs := sampleRecords(n, 50)
				raw := buildBatch(t, c, recs)
				h, err := ValidateProduce(raw)
				if err != nil {
					t.Fatal(err)
				}
				if h.Attributes.Codec() != c || h.RecordsCount != int32(n) || h.LastOffsetDelta != int32(n-1) ||
					h.ProducerID != -1 || h.ProducerEpoch != -1 || h.BaseSequence != -1 || h.PartitionLeaderEpoch != -1 ||
					h.TotalSize() != len(raw) || h.Magic != 2 {
					t.Fatalf("header %+v", h)
				}
				if h.BaseTimestamp != recs[0].ts || h.MaxTimestamp != t0+13 && n > 6 {
					t.Fatalf("timestamps base %d max %d", h.BaseTimestamp, h.MaxTimestamp)
				}
				if _, err := ValidateRecords(raw, 1<<24); err != nil {
					t.Fatal(err)
				}
				checkRecords(t, raw, recs)
			})
		}
	}
}

func TestInPlaceRewrites(t *testing.T) {
	recs := sampleRecords(5, 10)
	raw := buildBatch(t, compress.LZ4, recs)
	crc := Raw(raw).CRC()
	SetBaseOffset(raw, 1<<40)
	SetPartitionLeaderEpoch(raw, 99)
	h, err := Validate(raw)
	if err != nil {
		t.Fatalf("after rewriting offset and epoch: %v", err)
	}
	if h.BaseOffset != 1<<40 || h.PartitionLeaderEpoch != 99 || h.CRC != crc {
		t.Fatalf("header %+v", h)
	}
	if Raw(raw).LastOffset() != 1<<40+4 || h.NextOffset() != 1<<40+5 {
		t.Fatalf("last offset %d", Raw(raw).LastOffset())
	}
	if err := SetLogAppendTime(raw, t0+999); err != nil {
		t.Fatal(err)
	}
	h, err = Validate(raw)
	if err != nil {
		t.Fatalf("after LogAppendTime: %v", err)
	}
	if !h.Attributes.LogAppendTime() || h.MaxTimestamp != t0+999 || h.Attributes.Codec() != compress.LZ4 {
		t.Fatalf("header %+v", h)
	}
	var it Iterator
	it.Reset(raw, 1<<20)
	for it.Next() {
		if r := it.Record(); r.Timestamp != t0+999 || r.Offset < 1<<40 {
			t.Fatalf("record %+v", r)
		}
	}
	if it.Err() != nil {
		t.Fatal(it.Err())
	}
	if err := SetLogAppendTime(raw[:40], 1); !errors.Is(err, ErrTruncated) {
		t.Errorf("short slice: %v", err)
	}
	if err := SetLogAppendTime(raw[:len(raw)-1], 1); !errors.Is(err, ErrCorrupt) {
		t.Errorf("cut batch: %v", err)
	}
}

// reCRC fixes the CRC after a test edits covered bytes, so that deeper checks are reached.
func reCRC(b []byte) []byte {
	binary.BigEndian.PutUint32(b[offCRC:], Checksum(b))
	return b
}

func TestValidateErrors(t *testing.T) {
	good := buildBatch(t, compress.None, sampleRecords(3, 10))
	edit := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	put32 := func(off int, v int32) func([]byte) []byte {
		return func(b []byte) []byte { binary.BigEndian.PutUint32(b[off:], uint32(v)); return b }
	}
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"before magic", good[:16], ErrTruncated},
		{"magic 1", edit(func(b []byte) []byte { b[offMagic] = 1; return b }), ErrUnsupportedMagic},
		{"magic 0 short", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 14, 1, 2, 3, 4, 0, 0}, ErrUnsupportedMagic},
		{"header cut", good[:60], ErrTruncated},
		{"records cut", good[:len(good)-1], ErrTruncated},
		{"trailing byte", append(bytes.Clone(good), 0), ErrCorrupt},
		{"length too small", edit(put32(offBatchLength, 48)), ErrCorrupt},
		{"length negative", edit(put32(offBatchLength, -1)), ErrCorrupt},
		{"length huge", edit(put32(offBatchLength, math.MaxInt32)), ErrTruncated},
		{"bad crc", edit(func(b []byte) []byte { b[offCRC] ^= 1; return b }), ErrCorrupt},
		{"flipped record byte", edit(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), ErrCorrupt},
		{"codec 5", edit(func(b []byte) []byte { b[offAttributes+1] |= 5; return reCRC(b) }), ErrCorrupt},
		{"count negative", edit(func(b []byte) []byte { return reCRC(put32(offRecordsCount, -1)(b)) }), ErrInvalidRecord},
		{"count huge", edit(func(b []byte) []byte {
			put32(offLastOffsetDelta, math.MaxInt32-1)(b)
			return reCRC(put32(offRecordsCount, math.MaxInt32)(b))
		}), ErrInvalidRecord},
		{"count above offsets", edit(func(b []byte) []byte { return reCRC(put32(offRecordsCount, 4)(b)) }), ErrInvalidRecord},
		{"last delta negative", edit(func(b []byte) []byte { return reCRC(put32(offLastOffsetDelta, -1)(b)) }), ErrInvalidRecord},
	}
	for _, tc := range cases {
		if _, err := Validate(tc.b); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// Only one sentinel per error.
	_, err := Validate(good[:len(good)-1])
	for _, s := range []error{ErrUnsupportedMagic, ErrCorrupt, ErrInvalidRecord, ErrTooLarge} {
		if errors.Is(err, s) {
			t.Errorf("truncation error also wraps %v", s)
		}
	}
}

func TestValidateProduceRules(t *testing.T) {
	b := NewBuilder()
	b.Append(t0, nil, []byte("x"), nil)
	if err := b.AppendAt(5, t0, nil, []byte("y"), nil); err != nil {
		t.Fatal(err)
	}
	if err := b.AppendAt(5, t0, nil, []byte("z"), nil); err == nil {
		t.Fatal("AppendAt accepted a repeated offset delta")
	}
	gap, _ := b.Finish()
	if _, err := Validate(gap); err != nil {
		t.Fatalf("compacted batch: %v", err)
	}
	if _, err := ValidateRecords(gap, 100); err != nil {
		t.Fatalf("compacted batch records: %v", err)
	}
	if _, err := ValidateProduce(gap); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("gapped produce: %v", err)
	}
	b.Reset()
	b.SetProducer(1, 0, 0)
	b.AppendControl(ControlAbort, 3, t0)
	ctl, _ := b.Finish()
	if _, err := ValidateProduce(ctl); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("control produce: %v", err)
	}
	if err := b.AppendControl(ControlAbort, 3, t0); err == nil {
		t.Fatal("second control record accepted")
	}
	if _, err := NewBuilder().Finish(); err == nil {
		t.Fatal("empty batch built")
	}
}

func TestControlRecord(t *testing.T) {
	b := NewBuilder()
	b.SetProducer(77, 2, -1)
	if err := b.AppendControl(ControlCommit, 12, t0); err != nil {
		t.Fatal(err)
	}
	raw, _ := b.Finish()
	var it Iterator
	if err := it.Reset(raw, 100); err != nil {
		t.Fatal(err)
	}
	h := it.Header()
	if !h.Attributes.Control() || !h.Attributes.Transactional() || h.RecordsCount != 1 {
		t.Fatalf("header %+v", h)
	}
	if !it.Next() {
		t.Fatal(it.Err())
	}
	r := it.Record()
	c, err := ParseControlRecord(r.Key, r.Value)
	if err != nil || c != (ControlRecord{Type: ControlCommit, CoordinatorEpoch: 12}) {
		t.Fatalf("%+v, %v", c, err)
	}
	if !bytes.Equal(r.Key, []byte{0, 0, 0, 1}) || !bytes.Equal(r.Value, []byte{0, 0, 0, 0, 0, 12}) {
		t.Fatalf("key % x value % x", r.Key, r.Value)
	}
	if _, err := ParseControlRecord([]byte{0, 0, 0}, nil); !errors.Is(err, ErrInvalidRecord) {
		t.Error(err)
	}
	if _, err := ParseControlRecord([]byte{0, 0, 0, 0}, []byte{0}); !errors.Is(err, ErrInvalidRecord) {
		t.Error(err)
	}
	if c, err := ParseControlRecord([]byte{0, 0, 0, 3}, nil); err != nil || c.Type.String() != "UNKNOWN(3)" {
		t.Error(c, err)
	}
}

// rawRecords builds an uncompressed batch around hand-written record bytes.
func rawRecords(count int32, lastDelta int32, records []byte) []byte {
	b := make([]byte, HeaderSize, HeaderSize+len(records))
	b = append(b, records...)
	be := binary.BigEndian
	be.PutUint32(b[offBatchLength:], uint32(len(b)-LogOverhead))
	be.PutUint32(b[offLeaderEpoch:], math.MaxUint32)
	b[offMagic] = 2
	be.PutUint32(b[offLastOffsetDelta:], uint32(lastDelta))
	be.PutUint32(b[offRecordsCount:], uint32(count))
	return reCRC(b)
}

func TestBadRecords(t *testing.T) {
	// A valid record: length 7: attrs 0, tsDelta 0, offsetDelta 0, key null, value "", 0 headers.
	ok := []byte{12, 0, 0, 0, 1, 0, 0}
	if _, err := ValidateRecords(rawRecords(1, 0, ok), 10); err != nil {
		t.Fatalf("valid record: %v", err)
	}
	cases := map[string][]byte{
		"length beyond batch":   {0x7e, 0, 0, 0, 1, 0, 0},
		"length negative":       {1, 0, 0, 0, 1, 0, 0},
		"length short":          {10, 0, 0, 0, 1, 0, 0},
		"length long":           {14, 0, 0, 0, 1, 0, 0, 0},
		"key length -2":         {12, 0, 0, 0, 3, 0, 0},
		"key beyond record":     {12, 0, 0, 0, 8, 0, 0},
		"value length -2":       {12, 0, 0, 0, 1, 3, 0},
		"header count huge":     {12, 0, 0, 0, 1, 0, 0x7e},
		"header count negative": {12, 0, 0, 0, 1, 0, 1},
		"header null key":       {16, 0, 0, 0, 1, 0, 2, 1, 0},
		"header value -2":       {16, 0, 0, 0, 1, 0, 2, 0, 3},
		"offset delta 1":        {12, 0, 0, 2, 1, 0, 0},
		"bad varint":            {12, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		"trailing bytes":        append(bytes.Clone(ok), 0, 0, 0, 0, 0, 0, 0, 0),
	}
	for name, recs := range cases {
		if _, err := ValidateRecords(rawRecords(1, 0, recs), 100); !errors.Is(err, ErrInvalidRecord) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Fewer records than counted.
	if _, err := ValidateRecords(rawRecords(2, 1, append(bytes.Clone(ok), 0, 0, 0, 0, 0, 0, 0)), 100); !errors.Is(err, ErrInvalidRecord) {
		t.Errorf("missing record: %v", err)
	}
	// Offset deltas must increase.
	two := append(bytes.Clone(ok), ok...)
	if _, err := ValidateRecords(rawRecords(2, 1, two), 100); !errors.Is(err, ErrInvalidRecord) {
		t.Errorf("repeated offset delta: %v", err)
	}
}

func TestTruncatedAnywhere(t *testing.T) {
	for _, c := range allCodecs {
		raw := buildBatch(t, c, sampleRecords(20, 30))
		for n := range len(raw) {
			if _, err := ValidateRecords(raw[:n], 1<<20); err == nil {
				t.Fatalf("%v cut to %d of %d bytes accepted", c, n, len(raw))
			} else if n >= 17 && !errors.Is(err, ErrTruncated) {
				t.Fatalf("%v cut to %d: %v, want ErrTruncated", c, n, err)
			}
		}
	}
}

// TestCorruptRecordsWithGoodCRC flips bytes in the records and fixes the CRC, so that record
// parsing and decompression meet garbage: errors, never panics, never hangs.
func TestCorruptRecordsWithGoodCRC(t *testing.T) {
	for _, c := range allCodecs {
		raw := buildBatch(t, c, sampleRecords(10, 20))
		for i := HeaderSize; i < len(raw); i++ {
			for _, x := range []byte{0x01, 0x80, 0xff} {
				b := bytes.Clone(raw)
				b[i] ^= x
				reCRC(b)
				var it Iterator
				if it.Reset(b, 1<<20) == nil {
					for it.Next() {
						r := it.Record()
						for h := r.Headers(); h.Next(); {
						}
					}
				}
			}
		}
	}
}

func TestBomb(t *testing.T) {
	b := NewBuilder()
	b.SetCodec(compress.Zstd)
	b.Append(t0, nil, make([]byte, 32<<20), nil)
	raw, _ := b.Finish()
	if len(raw) > 1<<20 {
		t.Fatalf("bomb is %d bytes", len(raw))
	}
	if _, err := ValidateRecords(raw, 1<<20); !errors.Is(err, ErrTooLarge) || !errors.Is(err, compress.ErrLimit) {
		t.Fatalf("bomb: %v", err)
	}
	// A tiny compressed region that claims a huge count.
	b.Reset()
	b.SetCodec(compress.Gzip)
	b.Append(t0, nil, nil, nil)
	raw, _ = b.Finish()
	raw = bytes.Clone(raw)
	binary.BigEndian.PutUint32(raw[offRecordsCount:], math.MaxInt32-1)
	binary.BigEndian.PutUint32(raw[offLastOffsetDelta:], math.MaxInt32-1)
	reCRC(raw)
	if _, err := ValidateRecords(raw, 1<<20); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("huge count: %v", err)
	}
}

func TestScanner(t *testing.T) {
	var region []byte
	var sizes []int
	for i, c := range allCodecs {
		b := buildBatch(t, c, sampleRecords(i+1, 20))
		region = append(region, b...)
		sizes = append(sizes, len(b))
	}
	s := NewScanner(region)
	pos := 0
	for i := 0; s.Next(); i++ {
		if s.Position() != pos || len(s.Batch()) != sizes[i] || cap(s.Batch()) != sizes[i] {
			t.Fatalf("batch %d at %d, %d bytes", i, s.Position(), len(s.Batch()))
		}
		if _, err := Validate(s.Batch()); err != nil {
			t.Fatal(err)
		}
		pos += sizes[i]
	}
	if s.Err() != nil || s.Consumed() != len(region) {
		t.Fatalf("end: %v at %d", s.Err(), s.Consumed())
	}
	// Cut the region anywhere: the whole batches before the cut come out, then ErrTruncated.
	for cut := range len(region) {
		s.Reset(region[:cut])
		n, end := 0, 0
		for s.Next() {
			end += sizes[n]
			n++
		}
		if s.Consumed() != end || end > cut {
			t.Fatalf("cut %d: consumed %d", cut, s.Consumed())
		}
		atBoundary := cut == end
		if atBoundary != (s.Err() == nil) || !atBoundary && !s.Truncated() {
			t.Fatalf("cut %d: %v after %d batches", cut, s.Err(), n)
		}
	}
	// Corrupt lengths and magic stop the scan with their own errors.
	bad := bytes.Clone(region)
	binary.BigEndian.PutUint32(bad[sizes[0]+offBatchLength:], 3)
	s.Reset(bad)
	for s.Next() {
	}
	if !errors.Is(s.Err(), ErrCorrupt) || s.Consumed() != sizes[0] || s.Truncated() {
		t.Fatalf("bad length: %v at %d", s.Err(), s.Consumed())
	}
	bad = bytes.Clone(region)
	bad[sizes[0]+offMagic] = 1
	s.Reset(bad)
	for s.Next() {
	}
	if !errors.Is(s.Err(), ErrUnsupportedMagic) || s.Consumed() != sizes[0] {
		t.Fatalf("magic 1: %v", s.Err())
	}
	var zero Scanner
	if zero.Next() || zero.Err() != nil {
		t.Fatal("zero Scanner")
	}
}

func TestBuilderOptions(t *testing.T) {
	b := NewBuilder()
	b.SetCodec(compress.Gzip)
	b.SetSkipIneffectiveCompression(true)
	b.Append(t0, []byte("k"), []byte("v"), nil) // too small to shrink
	raw, _ := b.Finish()
	if c := Raw(raw).Attributes().Codec(); c != compress.None {
		t.Fatalf("codec %v, want none", c)
	}
	if _, err := Validate(raw); err != nil {
		t.Fatal(err)
	}
	b.SetSkipIneffectiveCompression(false)
	raw, _ = b.Finish()
	if c := Raw(raw).Attributes().Codec(); c != compress.Gzip {
		t.Fatalf("codec %v, want gzip", c)
	}
	b.SetCodec(7)
	if _, err := b.Finish(); err == nil {
		t.Fatal("codec 7 built")
	}
	// AppendBatch appends after existing bytes.
	b.Reset()
	b.Append(t0, nil, []byte("x"), nil)
	out, err := b.AppendBatch([]byte("prefix"))
	if err != nil || string(out[:6]) != "prefix" {
		t.Fatal(err)
	}
	if _, err := Validate(out[6:]); err != nil {
		t.Fatal(err)
	}
	if b.NumRecords() != 1 || b.Size() != len(out)-6 {
		t.Fatalf("NumRecords %d Size %d", b.NumRecords(), b.Size())
	}
}

// SetCodecLevel compresses at the level given (the batch is what CompressLevel makes of the
// records), keeps the codec's attribute, and a level out of Kafka's range fails Finish.
func TestBuilderCodecLevel(t *testing.T) {
	b := NewBuilder()
	var value []byte // compressible, but not so simply that every level finds the same
	for i := range 3000 {
		value = fmt.Appendf(value, "%d ", i*i%997)
	}
	size := map[int]int{}
	for _, level := range []int{1, 9} {
		b.Reset()
		b.SetCodecLevel(compress.Gzip, level)
		b.Append(t0, nil, value, nil)
		raw, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		if c := Raw(raw).Attributes().Codec(); c != compress.Gzip {
			t.Fatalf("codec %v, want gzip", c)
		}
		if _, err := Validate(raw); err != nil {
			t.Fatal(err)
		}
		recs := b.records()
		want, _ := compress.CompressLevel(nil, recs, compress.Gzip, level)
		if !bytes.Equal(raw[HeaderSize:], want) {
			t.Errorf("level %d: the records are not compressed at that level", level)
		}
		size[level] = len(raw)
	}
	if size[9] >= size[1] {
		t.Errorf("gzip level 9 gives %d bytes, level 1 %d", size[9], size[1])
	}
	b.SetCodecLevel(compress.Zstd, 23)
	if _, err := b.Finish(); err == nil {
		t.Error("zstd level 23 built")
	}
	b.SetCodec(compress.Zstd) // back to the default level
	if _, err := b.Finish(); err != nil {
		t.Errorf("SetCodec keeps the bad level: %v", err)
	}
}

// TestFinishInPlace checks the Builder's two outputs against each other for every codec:
// Finish, which seals an uncompressed batch in the record buffer itself, and AppendBatch,
// which copies. It also pins that an uncompressed Finish copies nothing: the batch is the
// Builder's buffer, and appending more records leaves an earlier result intact.
func TestFinishInPlace(t *testing.T) {
	for _, c := range allCodecs {
		for _, skip := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/skip=%v", c, skip), func(t *testing.T) {
				recs := sampleRecords(300, 80)
				b := NewBuilder()
				b.SetCodec(c)
				b.SetSkipIneffectiveCompression(skip)
				b.SetProducer(9, 1, 40)
				for _, r := range recs[:200] {
					b.Append(r.ts, r.key, r.value, r.headers)
				}
				first, err := b.Finish()
				if err != nil {
					t.Fatal(err)
				}
				firstCopy := bytes.Clone(first)
				copied, err := b.AppendBatch([]byte("prefix"))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(copied[len("prefix"):], first) {
					t.Fatal("Finish and AppendBatch built different batches")
				}
				h, err := ValidateProduce(first)
				if err != nil {
					t.Fatal(err)
				}
				if h.Attributes.Codec() != c || h.BaseSequence != 40 || h.ProducerID != 9 || b.Size() != HeaderSize+len(b.records()) {
					t.Fatalf("header %+v, size %d", h, b.Size())
				}
				checkRecords(t, first, recs[:200])

				for _, r := range recs[200:] {
					b.Append(r.ts, r.key, r.value, r.headers)
				}
				if !bytes.Equal(first, firstCopy) {
					t.Fatal("appending records changed the batch Finish returned")
				}
				second, err := b.Finish()
				if err != nil {
					t.Fatal(err)
				}
				if _, err := ValidateProduce(second); err != nil {
					t.Fatal(err)
				}
				checkRecords(t, second, recs)
				if c == compress.None && &second[0] != &b.buf[0] {
					t.Fatal("an uncompressed Finish copied the batch out of the record buffer")
				}
			})
		}
	}
}

// TestBuilderGrowthAllocs checks that a new Builder reaches a megabyte batch in a few doublings:
// each growth copies the records and leaves the old buffer as garbage.
func TestBuilderGrowthAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	value := make([]byte, 1000)
	allocs := testing.AllocsPerRun(5, func() {
		b := NewBuilder()
		for b.Size() < 1<<20 {
			b.Append(t0, nil, value, nil)
		}
	})
	// NewBuilder, its 4 KiB buffer, then doublings up to 1 MiB and one past it.
	if allocs > 11 {
		t.Fatalf("%.0f allocations to build a 1 MiB batch", allocs)
	}
}

// TestBuilderGrowAllocs checks that Grow sized for the batch leaves no growth to do: NewBuilder,
// its first buffer and the one Grow makes, then a megabyte of records with no reallocation;
// and that the records come out intact.
func TestBuilderGrowAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	value := make([]byte, 1000)
	var raw []byte
	allocs := testing.AllocsPerRun(5, func() {
		b := NewBuilder()
		b.Grow(1<<20 + 2048)
		for b.Size() < 1<<20 {
			b.Append(t0, nil, value, nil)
		}
		var err error
		if raw, err = b.Finish(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 3 {
		t.Fatalf("%.0f allocations to build a 1 MiB batch after Grow, want at most 3", allocs)
	}
	if _, err := Validate(raw); err != nil {
		t.Fatalf("batch built after Grow: %v", err)
	}
}

// TestZeroBuilder checks that a Builder not made by NewBuilder still leaves room for the header.
func TestZeroBuilder(t *testing.T) {
	var b Builder
	if b.Size() != HeaderSize {
		t.Fatalf("empty size %d", b.Size())
	}
	b.Append(t0, nil, []byte("v"), nil)
	raw, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Validate(raw); err != nil {
		t.Fatal(err)
	}
}

func TestChecksumIsCastagnoli(t *testing.T) {
	raw := buildBatch(t, compress.None, sampleRecords(3, 10))
	if Checksum(raw) != crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)) {
		t.Fatal("checksum")
	}
	// Known CRC-32C check value.
	if got := crc32.Checksum([]byte("123456789"), castagnoli); got != 0xe3069283 {
		t.Fatalf("%#x", got)
	}
	if Checksum(raw[:10]) != 0 {
		t.Fatal("short checksum")
	}
}

func TestNoAllocations(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts need sync.Pool to keep its items (no -race, no -short)")
	}
	for _, c := range allCodecs {
		raw := buildBatch(t, c, sampleRecords(200, 100))
		var it Iterator
		it.Reset(raw, 1<<20) // warm the buffer
		allocs := testing.AllocsPerRun(50, func() {
			if err := it.Reset(raw, 1<<20); err != nil {
				t.Fatal(err)
			}
			for it.Next() {
				r := it.Record()
				for h := r.Headers(); h.Next(); {
					_ = h.Header()
				}
			}
			if it.Err() != nil {
				t.Fatal(it.Err())
			}
		})
		// Iteration allocates nothing; the gzip and zstd decoders keep a little per-stream state.
		limit := 0.0
		if c == compress.Gzip || c == compress.Zstd {
			limit = 4
		}
		if allocs > limit {
			t.Errorf("%v: %.1f allocations per Reset + iteration", c, allocs)
		}
		if c == compress.None {
			it.Reset(raw, 0)
			if a := testing.AllocsPerRun(1, func() {
				for it.Next() {
					r := it.Record()
					for h := r.Headers(); h.Next(); {
					}
				}
			}); a != 0 {
				t.Errorf("iteration: %.1f allocations", a)
			}
			if a := testing.AllocsPerRun(50, func() { Validate(raw) }); a != 0 {
				t.Errorf("Validate: %.1f allocations", a)
			}
			if a := testing.AllocsPerRun(50, func() { ValidateRecords(raw, 0) }); a != 0 {
				t.Errorf("ValidateRecords: %.1f allocations", a)
			}
			s := NewScanner(raw)
			if a := testing.AllocsPerRun(50, func() {
				s.Reset(raw)
				for s.Next() {
				}
			}); a != 0 {
				t.Errorf("Scanner: %.1f allocations", a)
			}
		}
		b := NewBuilder()
		recs := sampleRecords(200, 100)
		fill := func() {
			b.Reset()
			b.SetCodec(c)
			for _, r := range recs {
				b.Append(r.ts, r.key, r.value, r.headers)
			}
			if _, err := b.Finish(); err != nil {
				t.Fatal(err)
			}
		}
		fill()
		if a := testing.AllocsPerRun(20, fill); a > limit {
			t.Errorf("%v: Builder reuse %.1f allocations", c, a)
		}
	}
}

// fuzzSeeds adds every committed vector and a few built batches.
func fuzzSeeds(f *testing.F) {
	for _, file := range vectorFiles(f) {
		v := loadVector(f, file)
		raw, err := hex.DecodeString(v.Hex)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	for _, c := range allCodecs {
		f.Add(buildBatch(f, c, sampleRecords(4, 8)))
	}
}

// FuzzBatchValidate checks that Validate, ValidateRecords and the Scanner never panic and agree.
func FuzzBatchValidate(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := Validate(b)
		_, rerr := ValidateRecords(b, 1<<20)
		if err != nil && rerr == nil {
			t.Fatalf("ValidateRecords accepted what Validate refused: %v", err)
		}
		s := NewScanner(b)
		n := 0
		for s.Next() {
			n++
		}
		if err == nil {
			if n != 1 || s.Err() != nil || s.Consumed() != len(b) || h.TotalSize() != len(b) {
				t.Fatalf("valid batch: scanner saw %d batches, %v", n, s.Err())
			}
			// Rewrites outside the CRC keep it valid; LogAppendTime recomputes it.
			c := bytes.Clone(b)
			SetBaseOffset(c, 5)
			SetPartitionLeaderEpoch(c, 6)
			if err := SetLogAppendTime(c, 7); err != nil {
				t.Fatal(err)
			}
			if _, err := Validate(c); err != nil {
				t.Fatalf("after rewrites: %v", err)
			}
		}
	})
}

// FuzzRecordIteration iterates whatever parses, and checks that a batch rebuilt from the
// records it yields reads back the same. It repairs the magic, batchLength and CRC of its input
// first, so that the fuzzer explores decompression and record parsing rather than the CRC.
func FuzzRecordIteration(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) >= HeaderSize {
			b[offMagic] = Magic
			binary.BigEndian.PutUint32(b[offBatchLength:], uint32(len(b)-LogOverhead))
			reCRC(b)
		}
		var it Iterator
		if it.Reset(b, 1<<20) != nil {
			return
		}
		h := it.Header()
		var recs []testRecord
		var deltas []int32
		for it.Next() {
			r := it.Record()
			var hs []RecordHeader
			for hi := r.Headers(); hi.Next(); {
				hs = append(hs, hi.Header())
			}
			if len(hs) != r.NumHeaders {
				t.Fatalf("%d headers, NumHeaders %d", len(hs), r.NumHeaders)
			}
			checkPositions(t, &it)
			recs = append(recs, testRecord{ts: h.BaseTimestamp + r.TimestampDelta, key: r.Key, value: r.Value, headers: hs})
			deltas = append(deltas, r.OffsetDelta)
		}
		if it.Err() != nil || len(recs) == 0 {
			return
		}
		if len(recs) != int(h.RecordsCount) {
			t.Fatalf("%d records, count %d", len(recs), h.RecordsCount)
		}
		bl := NewBuilder()
		for i, r := range recs {
			if err := bl.AppendAt(deltas[i], r.ts, r.key, r.value, r.headers); err != nil {
				t.Fatal(err)
			}
		}
		out, err := bl.Finish()
		if err != nil {
			t.Fatal(err)
		}
		var it2 Iterator
		if err := it2.Reset(out, 1<<20); err != nil {
			t.Fatalf("rebuilt batch: %v", err)
		}
		i := 0
		for it2.Next() {
			r := it2.Record()
			w := recs[i]
			if r.OffsetDelta != deltas[i] || !bytes.Equal(r.Key, w.key) || (r.Key == nil) != (w.key == nil) ||
				!bytes.Equal(r.Value, w.value) || (r.Value == nil) != (w.value == nil) || r.NumHeaders != len(w.headers) {
				t.Fatalf("record %d differs after rebuild", i)
			}
			i++
		}
		if it2.Err() != nil || i != len(recs) {
			t.Fatalf("rebuilt: %d records, %v", i, it2.Err())
		}
	})
}

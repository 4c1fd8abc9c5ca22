package batch

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spoolmq/spool/protocol-spec/wire/compress"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var update = flag.Bool("update", false, "rewrite the golden record batch vectors in vectors/batches")

const vectorDir = "../../vectors/batches"

// vector is one golden batch file: the bytes and a readable form of them.
type vector struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Framing     string         `json:"framing,omitempty"`
	Header      vectorHeader   `json:"header"`
	Records     []vectorRecord `json:"records"`
	Hex         string         `json:"hex"`
}

type vectorHeader struct {
	BaseOffset           int64  `json:"baseOffset"`
	BatchLength          int32  `json:"batchLength"`
	PartitionLeaderEpoch int32  `json:"partitionLeaderEpoch"`
	Magic                int8   `json:"magic"`
	CRC                  string `json:"crc"`
	Attributes           int16  `json:"attributes"`
	Codec                string `json:"codec"`
	TimestampType        string `json:"timestampType"`
	Transactional        bool   `json:"transactional"`
	Control              bool   `json:"control"`
	LastOffsetDelta      int32  `json:"lastOffsetDelta"`
	BaseTimestamp        int64  `json:"baseTimestamp"`
	MaxTimestamp         int64  `json:"maxTimestamp"`
	ProducerID           int64  `json:"producerId"`
	ProducerEpoch        int16  `json:"producerEpoch"`
	BaseSequence         int32  `json:"baseSequence"`
	RecordsCount         int32  `json:"recordsCount"`
}

type vectorRecord struct {
	OffsetDelta    int32          `json:"offsetDelta"`
	Offset         int64          `json:"offset"`
	TimestampDelta int64          `json:"timestampDelta"`
	Timestamp      int64          `json:"timestamp"`
	Key            vbytes         `json:"key"`
	Value          vbytes         `json:"value"`
	Headers        []vectorRecHdr `json:"headers"`
	Control        *vectorControl `json:"control,omitempty"`
}

type vectorRecHdr struct {
	Key   string `json:"key"`
	Value vbytes `json:"value"`
}

// vbytes is a nullable byte string in a vector: null, a JSON string when the bytes are
// readable text, else {"hex": "..."}.
type vbytes struct{ b []byte }

func (v vbytes) MarshalJSON() ([]byte, error) {
	switch {
	case v.b == nil:
		return []byte("null"), nil
	case readable(v.b):
		return json.Marshal(string(v.b))
	default:
		return json.Marshal(map[string]string{"hex": hex.EncodeToString(v.b)})
	}
}

func (v *vbytes) UnmarshalJSON(data []byte) error {
	var s *string
	if err := json.Unmarshal(data, &s); err == nil {
		v.b = nil
		if s != nil {
			v.b = []byte(*s)
		}
		return nil
	}
	var h struct{ Hex string }
	if err := json.Unmarshal(data, &h); err != nil {
		return err
	}
	b, err := hex.DecodeString(h.Hex)
	v.b = b
	return err
}

type vectorControl struct {
	Version          int16  `json:"version"`
	Type             string `json:"type"`
	ValueVersion     int16  `json:"valueVersion"`
	CoordinatorEpoch int32  `json:"coordinatorEpoch"`
}

// readable reports whether b is best shown as a string in a vector.
func readable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if r < 0x20 && r != '\n' && r != '\t' {
			return false
		}
	}
	return true
}

// describe decodes a batch into its readable form with this package's own reader.
func describe(t testing.TB, b []byte) (vectorHeader, []vectorRecord) {
	t.Helper()
	var it Iterator
	if err := it.Reset(b, 1<<20); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	h := it.Header()
	ts := "CreateTime"
	if h.Attributes.LogAppendTime() {
		ts = "LogAppendTime"
	}
	vh := vectorHeader{
		BaseOffset: h.BaseOffset, BatchLength: h.BatchLength, PartitionLeaderEpoch: h.PartitionLeaderEpoch,
		Magic: h.Magic, CRC: fmt.Sprintf("0x%08x", h.CRC), Attributes: int16(h.Attributes),
		Codec: h.Attributes.Codec().String(), TimestampType: ts,
		Transactional: h.Attributes.Transactional(), Control: h.Attributes.Control(),
		LastOffsetDelta: h.LastOffsetDelta, BaseTimestamp: h.BaseTimestamp, MaxTimestamp: h.MaxTimestamp,
		ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch, BaseSequence: h.BaseSequence,
		RecordsCount: h.RecordsCount,
	}
	recs := []vectorRecord{}
	for it.Next() {
		r := it.Record()
		vr := vectorRecord{
			OffsetDelta: r.OffsetDelta, Offset: r.Offset, TimestampDelta: r.TimestampDelta,
			Timestamp: r.Timestamp, Headers: []vectorRecHdr{},
		}
		vr.Key.b = bytes.Clone(r.Key)
		vr.Value.b = bytes.Clone(r.Value)
		for hi := r.Headers(); hi.Next(); {
			rh := hi.Header()
			vr.Headers = append(vr.Headers, vectorRecHdr{Key: string(rh.Key), Value: vbytes{bytes.Clone(rh.Value)}})
		}
		if h.Attributes.Control() {
			c, err := ParseControlRecord(r.Key, r.Value)
			if err != nil {
				t.Fatal(err)
			}
			vr.Control = &vectorControl{Version: c.Version, Type: c.Type.String(), ValueVersion: c.ValueVersion, CoordinatorEpoch: c.CoordinatorEpoch}
		}
		recs = append(recs, vr)
	}
	if err := it.Err(); err != nil {
		t.Fatalf("iterating: %v", err)
	}
	return vh, recs
}

// A fixed clock so that the vectors never change.
const t0 = 1700000000000 // 2023-11-14T22:13:20Z

func hdrs(kv ...string) []RecordHeader {
	var hs []RecordHeader
	for i := 0; i < len(kv); i += 2 {
		hs = append(hs, RecordHeader{Key: []byte(kv[i]), Value: []byte(kv[i+1])})
	}
	return hs
}

// appendSample adds the records every compressed vector shares: repetitive enough that each
// codec shrinks them.
func appendSample(b *Builder) {
	for i := range 4 {
		key := fmt.Sprintf("user-%d", i%2)
		value := fmt.Sprintf(`{"event":"page_view","page":"/products/%d","session":"a1b2c3d4e5f6","n":%d}`, 100+i, i)
		b.Append(t0+int64(i)*5, []byte(key), []byte(value), hdrs("source", "web"))
	}
}

func lz4Compressor(f compress.LZ4Frame) CompressFunc {
	return func(dst, src []byte) ([]byte, error) { return compress.AppendLZ4Frame(dst, src, f) }
}

type vectorCase struct {
	name, description, framing string
	build                      func(b *Builder) ([]byte, error)
}

func codecCase(name, desc, framing string, c compress.Codec, fn CompressFunc) vectorCase {
	return vectorCase{name, desc, framing, func(b *Builder) ([]byte, error) {
		if fn != nil {
			b.SetCompressor(c, fn)
		} else {
			b.SetCodec(c)
		}
		appendSample(b)
		return b.Finish()
	}}
}

func vectorCases() []vectorCase {
	return []vectorCase{
		{"uncompressed", "Three records as a plain producer sends them: no codec, no producer id.", "", func(b *Builder) ([]byte, error) {
			b.Append(t0, []byte("k1"), []byte("hello"), nil)
			b.Append(t0+1, []byte("k2"), []byte("world"), nil)
			b.Append(t0+250, []byte("k1"), []byte("again"), nil)
			return b.Finish()
		}},
		{"headers_nulls", "Null key, null value (tombstone), empty key and value, headers including a null header value, and a timestamp before the base.", "", func(b *Builder) ([]byte, error) {
			b.Append(t0, nil, []byte("no key"), nil)
			b.Append(t0+10, []byte("deleted"), nil, nil)
			b.Append(t0+20, []byte{}, []byte{}, nil)
			b.Append(t0-1000, []byte("h"), []byte("with headers"), []RecordHeader{
				{Key: []byte("traceparent"), Value: []byte("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")},
				{Key: []byte("null-value"), Value: nil},
				{Key: []byte("empty"), Value: []byte{}},
			})
			return b.Finish()
		}},
		codecCase("gzip", "Records compressed with gzip (one RFC 1952 member).", "gzip", compress.Gzip, nil),
		codecCase("snappy_raw", "Records compressed as one raw snappy block, as librdkafka and franz-go send them.", "snappy raw block", compress.Snappy, nil),
		codecCase("snappy_xerial", "Records in snappy-java (xerial) framing with 128-byte chunks, as Java, sarama, kafka-go and kafka-python send them.", "snappy xerial, 128-byte chunks", compress.Snappy,
			func(dst, src []byte) ([]byte, error) { return compress.AppendXerial(dst, src, 128), nil }),
		codecCase("lz4_frame", "LZ4 frame, 64 KiB blocks, no checksums: librdkafka and Java.", "lz4 FLG 0x60 BD 0x40", compress.LZ4, nil),
		codecCase("lz4_content_size", "LZ4 frame with the content size in the descriptor: kafka-python.", "lz4 FLG 0x68 BD 0x40", compress.LZ4, lz4Compressor(compress.LZ4Frame{ContentSize: true})),
		codecCase("lz4_content_checksum", "LZ4 frame with a content checksum: sarama.", "lz4 FLG 0x64 BD 0x40", compress.LZ4, lz4Compressor(compress.LZ4Frame{ContentChecksum: true})),
		codecCase("lz4_4mib_checksum", "LZ4 frame with 4 MiB blocks and a content checksum: franz-go and kafka-go.", "lz4 FLG 0x64 BD 0x70", compress.LZ4, lz4Compressor(compress.LZ4Frame{ContentChecksum: true, BlockSize: 4 << 20})),
		codecCase("lz4_block_checksum", "LZ4 frame with block checksums.", "lz4 FLG 0x70 BD 0x40", compress.LZ4, lz4Compressor(compress.LZ4Frame{BlockChecksum: true})),
		codecCase("zstd", "Records compressed as one zstd frame with its content size.", "zstd", compress.Zstd, nil),
		{"control_commit", "A COMMIT transaction marker as the broker writes it: control and transactional bits, one control record, at offset 57 in leader epoch 3.", "", func(b *Builder) ([]byte, error) {
			b.SetProducer(1234, 5, -1)
			b.SetBaseOffset(57)
			b.SetPartitionLeaderEpoch(3)
			if err := b.AppendControl(ControlCommit, 7, t0+1000); err != nil {
				return nil, err
			}
			return b.Finish()
		}},
		{"transactional", "A transactional, idempotent batch: producer id 1234, epoch 5, base sequence 42.", "", func(b *Builder) ([]byte, error) {
			b.SetProducer(1234, 5, 42)
			b.SetTransactional(true)
			b.Append(t0, []byte("order-1"), []byte("created"), nil)
			b.Append(t0+3, []byte("order-1"), []byte("paid"), nil)
			return b.Finish()
		}},
		{"log_append_time", "A producer's batch after the broker stored it: base offset 1000 and leader epoch 7 rewritten in place, then LogAppendTime set (maxTimestamp and a new CRC).", "", func(b *Builder) ([]byte, error) {
			b.Append(t0, []byte("a"), []byte("first"), nil)
			b.Append(t0+40, []byte("b"), []byte("second"), nil)
			out, err := b.Finish()
			if err != nil {
				return nil, err
			}
			SetBaseOffset(out, 1000)
			SetPartitionLeaderEpoch(out, 7)
			return out, SetLogAppendTime(out, t0+60000)
		}},
	}
}

func generateVector(t testing.TB, c vectorCase) vector {
	t.Helper()
	b := NewBuilder()
	raw, err := c.build(b)
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	h, recs := describe(t, raw)
	return vector{Name: c.name, Description: c.description, Framing: c.framing, Header: h, Records: recs, Hex: hex.EncodeToString(raw)}
}

func marshalVector(v vector) []byte {
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(out, '\n')
}

// TestVectors regenerates the golden vectors with -update; without it, it checks that the
// committed ones are current in their readable form (and byte for byte where no codec is
// involved, since a codec library upgrade may legitimately change compressed bytes).
func TestVectors(t *testing.T) {
	cases := vectorCases()
	if *update {
		if err := os.MkdirAll(vectorDir, 0o755); err != nil {
			t.Fatal(err)
		}
		old, _ := filepath.Glob(filepath.Join(vectorDir, "*.json"))
		for _, f := range old {
			os.Remove(f)
		}
		for _, c := range cases {
			v := generateVector(t, c)
			if err := os.WriteFile(filepath.Join(vectorDir, c.name+".json"), marshalVector(v), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := generateVector(t, c)
			got := loadVector(t, filepath.Join(vectorDir, c.name+".json"))
			if want.Header.Codec == "none" && got.Hex != want.Hex {
				t.Errorf("committed bytes differ from the generator's: run go test ./wire/batch -run TestVectors -update")
			}
			got.Hex, want.Hex = "", ""
			got.Header.CRC, want.Header.CRC = "", ""
			got.Header.BatchLength, want.Header.BatchLength = 0, 0
			if g, w := marshalVector(got), marshalVector(want); !bytes.Equal(g, w) {
				t.Errorf("committed vector differs from the generator's:\n%s\nwant\n%s", g, w)
			}
		})
	}
	files, _ := filepath.Glob(filepath.Join(vectorDir, "*.json"))
	if len(files) != len(cases) {
		t.Errorf("%d vector files, %d cases", len(files), len(cases))
	}
}

func loadVector(t testing.TB, path string) vector {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v vector
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

func vectorFiles(t testing.TB) []string {
	files, err := filepath.Glob(filepath.Join(vectorDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no vectors in %s (%v)", vectorDir, err)
	}
	slices.Sort(files)
	return files
}

// TestVectorsDecode reads every committed vector, checks it with Validate and ValidateRecords,
// compares it with its readable form, and checks that franz-go's kmsg reads the same header
// and records.
func TestVectorsDecode(t *testing.T) {
	for _, f := range vectorFiles(t) {
		v := loadVector(t, f)
		t.Run(v.Name, func(t *testing.T) {
			raw, err := hex.DecodeString(v.Hex)
			if err != nil {
				t.Fatal(err)
			}
			h, err := Validate(raw)
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if _, err := ValidateRecords(raw, 1<<20); err != nil {
				t.Fatalf("ValidateRecords: %v", err)
			}
			vh, recs := describe(t, raw)
			if vh != v.Header {
				t.Errorf("header\n%+v\nreadable form says\n%+v", vh, v.Header)
			}
			if g, w := marshalVector(vector{Records: recs}), marshalVector(vector{Records: v.Records}); !bytes.Equal(g, w) {
				t.Errorf("records\n%s\nreadable form says\n%s", g, w)
			}
			checkFraming(t, v.Framing, Raw(raw).Records())
			checkKmsg(t, raw, h, v.Records)
		})
	}
}

func checkFraming(t *testing.T, framing string, records []byte) {
	t.Helper()
	switch {
	case strings.HasPrefix(framing, "lz4"):
		var flg, bd byte
		if _, err := fmt.Sscanf(framing, "lz4 FLG %v BD %v", &flg, &bd); err != nil {
			t.Fatalf("framing %q: %v", framing, err)
		}
		if !bytes.HasPrefix(records, []byte{0x04, 0x22, 0x4d, 0x18, flg, bd}) {
			t.Errorf("records start % x, want an lz4 frame with FLG %#x BD %#x", records[:6], flg, bd)
		}
	case strings.HasPrefix(framing, "snappy xerial"):
		if !compress.IsXerial(records) {
			t.Error("records are not xerial-framed")
		}
	case strings.HasPrefix(framing, "snappy raw"):
		if compress.IsXerial(records) {
			t.Error("records are xerial-framed, want a raw block")
		}
	}
}

func checkKmsg(t *testing.T, raw []byte, h Header, want []vectorRecord) {
	t.Helper()
	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(raw); err != nil {
		t.Fatalf("kmsg.RecordBatch.ReadFrom: %v", err)
	}
	got := Header{
		BaseOffset: kb.FirstOffset, BatchLength: kb.Length, PartitionLeaderEpoch: kb.PartitionLeaderEpoch,
		Magic: kb.Magic, CRC: uint32(kb.CRC), Attributes: Attributes(kb.Attributes),
		LastOffsetDelta: kb.LastOffsetDelta, BaseTimestamp: kb.FirstTimestamp, MaxTimestamp: kb.MaxTimestamp,
		ProducerID: kb.ProducerID, ProducerEpoch: kb.ProducerEpoch, BaseSequence: kb.FirstSequence,
		RecordsCount: kb.NumRecords,
	}
	if got != h {
		t.Errorf("kmsg header %+v, ours %+v", got, h)
	}
	// kmsg leaves decompression to its caller: decompress with our codec, then let kmsg parse
	// each record.
	records, err := compress.Decompress(nil, kb.Records, h.Attributes.Codec(), 1<<20)
	if err != nil {
		t.Fatalf("decompressing kmsg's records: %v", err)
	}
	var n int
	for len(records) > 0 {
		l, sz := binary.Varint(records)
		if sz <= 0 || int(l) > len(records)-sz {
			t.Fatalf("record %d: bad length prefix", n)
		}
		var kr kmsg.Record
		if err := kr.ReadFrom(records[:sz+int(l)]); err != nil {
			t.Fatalf("kmsg record %d: %v", n, err)
		}
		records = records[sz+int(l):]
		if n >= len(want) {
			t.Fatalf("kmsg found more than %d records", len(want))
		}
		w := want[n]
		if kr.OffsetDelta != w.OffsetDelta || kr.TimestampDelta64 != w.TimestampDelta {
			t.Errorf("kmsg record %d: delta %d ts %d, want %d %d", n, kr.OffsetDelta, kr.TimestampDelta64, w.OffsetDelta, w.TimestampDelta)
		}
		if !sameBytes(kr.Key, w.Key) || !sameBytes(kr.Value, w.Value) {
			t.Errorf("kmsg record %d: key %q value %q differ from the readable form", n, kr.Key, kr.Value)
		}
		if len(kr.Headers) != len(w.Headers) {
			t.Fatalf("kmsg record %d: %d headers, want %d", n, len(kr.Headers), len(w.Headers))
		}
		for i, kh := range kr.Headers {
			if kh.Key != w.Headers[i].Key || !sameBytes(kh.Value, w.Headers[i].Value) {
				t.Errorf("kmsg record %d header %d: %q=%q", n, i, kh.Key, kh.Value)
			}
		}
		n++
	}
	if n != len(want) {
		t.Errorf("kmsg found %d records, want %d", n, len(want))
	}
}

// sameBytes compares kmsg's bytes with a vector's, null included.
func sameBytes(b []byte, v vbytes) bool {
	return (b == nil) == (v.b == nil) && bytes.Equal(b, v.b)
}

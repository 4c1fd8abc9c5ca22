package storage

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire/batch"
	"github.com/spoolmq/spool/protocol-spec/wire/compress"
)

// appendMany appends n batches of per records each and returns the expected records.
func appendMany(t testing.TB, l *Log, n, per int, tsBase int64) []rec {
	t.Helper()
	var want []rec
	for i := range n {
		ts := tsBase + int64(i)
		b := simpleBatch(t, per, ts, fmt.Sprint(i))
		res := leaderAppend(t, l, b)
		for j := range per {
			want = append(want, rec{Offset: res.BaseOffset + int64(j), Timestamp: ts, Key: fmt.Sprintf("k%d", j), Value: fmt.Sprintf("v%d-%d", j, i)})
		}
	}
	return want
}

func TestAppendReadRoundTripAcrossSegments(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, smallConfig())
	want := appendMany(t, l, 300, 3, 1000)
	if got := l.LogEndOffset(); got != 900 {
		t.Fatalf("log end %d, want 900", got)
	}
	if n := len(segmentFiles(t, dir)); n < 5 {
		t.Fatalf("only %d segments: rolls did not happen", n)
	}
	if got := readAll(t, l); !slices.Equal(got, want) {
		t.Fatalf("read back %d records, want %d; first difference matters", len(got), len(want))
	}
	// Every offset reads from the batch containing it.
	for off := int64(0); off < 900; off += 7 {
		data, err := l.ReadBytes(off, 1, l.LogEndOffset())
		if err != nil {
			t.Fatal(err)
		}
		recs := decodeAll(t, data)
		if len(recs) != 3 || recs[0].Offset > off || recs[2].Offset < off {
			t.Fatalf("read at %d returned offsets %v", off, recs)
		}
	}
	// Reopen (unclean: Open knows no recovery point and checks everything) and read again.
	l.Close()
	l2 := openLog(t, dir, smallConfig())
	if got := readAll(t, l2); !slices.Equal(got, want) {
		t.Fatalf("after reopen: read back %d records, want %d", len(got), len(want))
	}
	// And keep appending after the reopen.
	res := leaderAppend(t, l2, simpleBatch(t, 2, 5, "after"))
	if res.BaseOffset != 900 || res.LastOffset != 901 {
		t.Fatalf("append after reopen got [%d, %d]", res.BaseOffset, res.LastOffset)
	}
}

func TestReadLimitsAndMaxBytes(t *testing.T) {
	l := openLog(t, t.TempDir(), smallConfig())
	var sizes []int64
	for i := range 40 {
		b := simpleBatch(t, 2, int64(i), fmt.Sprint(i))
		sizes = append(sizes, int64(len(b)))
		leaderAppend(t, l, b)
	}
	// maxBytes smaller than one batch still returns that whole batch.
	r, err := l.Read(10, 1, l.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Chunks) != 1 || r.Size != sizes[5] {
		t.Fatalf("tiny maxBytes: %d chunks of %d bytes, want one batch of %d", len(r.Chunks), r.Size, sizes[5])
	}
	r.Release()
	// maxBytes of exactly three batches returns three.
	r, err = l.Read(10, int32(sizes[5]+sizes[6]+sizes[7]), l.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	if r.Size != sizes[5]+sizes[6]+sizes[7] {
		t.Fatalf("got %d bytes, want three batches", r.Size)
	}
	r.Release()
	// A large read spans several segments, in whole batches.
	data, err := l.ReadBytes(0, 1<<20, l.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	if recs := decodeAll(t, data); len(recs) != 80 {
		t.Fatalf("large read got %d records, want 80", len(recs))
	}
	// The high watermark stops before the batch reaching it.
	data, err = l.ReadBytes(0, 1<<20, 21)
	if err != nil {
		t.Fatal(err)
	}
	recs := decodeAll(t, data)
	if len(recs) != 20 || recs[len(recs)-1].Offset != 19 {
		t.Fatalf("read below 21 returned %d records ending %v", len(recs), recs[len(recs)-1])
	}
	// At the limit: empty, no error. Beyond the log end: out of range.
	if r, err := l.Read(20, 100, 20); err != nil || r.Size != 0 {
		t.Fatalf("read at the limit: %v, %d bytes", err, r.Size)
	}
	if _, err := l.Read(81, 100, 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read beyond the end: %v", err)
	}
	if r, err := l.Read(80, 100, 100); err != nil || r.Size != 0 {
		t.Fatalf("read at the end: %v, %d bytes", err, r.Size)
	}
}

func TestRollBySizeTimeAndIndex(t *testing.T) {
	t.Run("size", func(t *testing.T) {
		dir := t.TempDir()
		cfg := smallConfig()
		l := openLog(t, dir, cfg)
		b := simpleBatch(t, 10, 1, "x")
		per := cfg.SegmentBytes / int64(len(b))
		for range per {
			leaderAppend(t, l, simpleBatch(t, 10, 1, "x"))
		}
		if n := len(segmentFiles(t, dir)); n != 1 {
			t.Fatalf("%d segments before the size limit", n)
		}
		leaderAppend(t, l, simpleBatch(t, 10, 1, "x"))
		if n := len(segmentFiles(t, dir)); n != 2 {
			t.Fatalf("%d segments after passing the size limit, want 2", n)
		}
		if segs := segmentFiles(t, dir); segs[1] != per*10 {
			t.Fatalf("new segment base %d, want %d", segs[1], per*10)
		}
	})
	t.Run("time", func(t *testing.T) {
		dir := t.TempDir()
		cfg := smallConfig()
		cfg.SegmentMs = 1000
		l := openLog(t, dir, cfg)
		now := t0
		app := func() {
			if _, err := l.Append(simpleBatch(t, 1, now.UnixMilli(), "x"), AppendOptions{AssignOffsets: true, Now: now}); err != nil {
				t.Fatal(err)
			}
		}
		app()
		now = now.Add(999 * time.Millisecond)
		app()
		if n := len(segmentFiles(t, dir)); n != 1 {
			t.Fatalf("%d segments before segment.ms", n)
		}
		now = now.Add(2 * time.Millisecond)
		app()
		if n := len(segmentFiles(t, dir)); n != 2 {
			t.Fatalf("%d segments after segment.ms, want 2", n)
		}
	})
	t.Run("index full", func(t *testing.T) {
		dir := t.TempDir()
		cfg := smallConfig()
		cfg.SegmentBytes = 1 << 20
		cfg.IndexIntervalBytes = 0 // an entry per batch
		cfg.MaxIndexBytes = 12 * 8 // 8 time index entries
		l := openLog(t, dir, cfg)
		for range 30 {
			leaderAppend(t, l, simpleBatch(t, 1, 1, "x"))
		}
		if n := len(segmentFiles(t, dir)); n < 3 {
			t.Fatalf("%d segments: a full index did not roll", n)
		}
		if got := readAll(t, l); len(got) != 30 {
			t.Fatalf("read %d records", len(got))
		}
	})
}

func TestIndexesAreSparseAndUsed(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig()
	cfg.SegmentBytes = 64 << 10
	cfg.IndexIntervalBytes = 1024
	l := openLog(t, dir, cfg)
	for i := range 200 {
		leaderAppend(t, l, simpleBatch(t, 4, int64(1000+i), fmt.Sprint(i)))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Closed cleanly, the index files hold exactly their entries, sorted and within the file.
	for _, base := range segmentFiles(t, dir) {
		idx, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%020d.index", base)))
		if err != nil {
			t.Fatal(err)
		}
		logInfo, _ := os.Stat(filepath.Join(dir, fmt.Sprintf("%020d.log", base)))
		if len(idx)%8 != 0 {
			t.Fatalf("index size %d", len(idx))
		}
		n := len(idx) / 8
		if want := int(logInfo.Size() / 1024); n < want/2 || n > want+1 {
			t.Fatalf("segment %d: %d index entries for %d bytes", base, n, logInfo.Size())
		}
		var prevRel, prevPos uint32
		for i := range n {
			rel, pos := offsetEntry(idx, i)
			if i > 0 && (rel <= prevRel || pos <= prevPos) {
				t.Fatalf("entry %d (%d,%d) after (%d,%d)", i, rel, pos, prevRel, prevPos)
			}
			if int64(pos) >= logInfo.Size() {
				t.Fatalf("entry %d position %d beyond the file", i, pos)
			}
			// The entry's position starts the batch whose last offset it names.
			f, _ := os.Open(filepath.Join(dir, fmt.Sprintf("%020d.log", base)))
			hdr := make([]byte, batch.HeaderSize)
			f.ReadAt(hdr, int64(pos))
			f.Close()
			if got := batch.Raw(hdr).LastOffset(); got != base+int64(rel) {
				t.Fatalf("entry %d names offset %d, batch at %d ends at %d", i, base+int64(rel), pos, got)
			}
			prevRel, prevPos = rel, pos
		}
		tidx, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%020d.timeindex", base)))
		if len(tidx)%12 != 0 || len(tidx) == 0 {
			t.Fatalf("time index size %d", len(tidx))
		}
	}
	// A clean reopen through a Manager trusts those indexes; lookups by every offset work.
	l2, err := OpenWithOptions(dir, cfg, testLogger(t), OpenOptions{RecoveryPoint: 800, CleanShutdown: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	for off := int64(0); off < 800; off++ {
		data, err := l2.ReadBytes(off, 1, 800)
		if err != nil {
			t.Fatal(err)
		}
		recs := decodeAll(t, data)
		if recs[0].Offset > off || recs[len(recs)-1].Offset < off {
			t.Fatalf("offset %d read batch [%d, %d]", off, recs[0].Offset, recs[len(recs)-1].Offset)
		}
	}
}

func TestOffsetForTimestamp(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, smallConfig())
	// Batches of 3 records with timestamps 1000+10i, +1, +2; one out-of-order batch.
	for i := range 100 {
		base := int64(1000 + 10*i)
		recs := []rec{{Timestamp: base, Key: "a", Value: "x"}, {Timestamp: base + 1, Key: "b", Value: "y"}, {Timestamp: base + 2, Key: "c", Value: "z"}}
		if i == 50 {
			recs[0].Timestamp = 5 // an old timestamp in the middle
		}
		leaderAppend(t, l, buildBatch(t, batchSpec{recs: recs, pid: -1}))
	}
	check := func(l *Log) {
		t.Helper()
		for _, tc := range []struct {
			ts, off, got int64
			ok           bool
		}{
			{0, 0, 1000, true},
			{1000, 0, 1000, true},
			{1001, 1, 1001, true},
			{1003, 3, 1010, true},
			{1502, 152, 1502, true},
			{1500, 151, 1501, true}, // record 150 has timestamp 5
			{1992, 299, 1992, true},
			{1993, -1, -1, false},
		} {
			off, ts, ok, err := l.OffsetForTimestamp(tc.ts)
			if err != nil || ok != tc.ok || off != tc.off || (ok && ts != tc.got) {
				t.Fatalf("OffsetForTimestamp(%d) = %d, %d, %v, %v; want %d, %d, %v", tc.ts, off, ts, ok, err, tc.off, tc.got, tc.ok)
			}
		}
	}
	check(l)
	l.Close()
	check(openLog(t, dir, smallConfig()))
}

func TestLogAppendTime(t *testing.T) {
	cfg := smallConfig()
	cfg.TimestampType = LogAppendTime
	l := openLog(t, t.TempDir(), cfg)
	now := time.UnixMilli(1_234_567_890_123)
	res, err := l.Append(simpleBatch(t, 3, 5, "a"), AppendOptions{AssignOffsets: true, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if res.LogAppendTime != now.UnixMilli() {
		t.Fatalf("LogAppendTime %d", res.LogAppendTime)
	}
	data, err := l.ReadBytes(0, 1<<20, 3)
	if err != nil {
		t.Fatal(err)
	}
	h, err := batch.Validate(data) // CRC recomputed
	if err != nil {
		t.Fatal(err)
	}
	if !h.Attributes.LogAppendTime() || h.MaxTimestamp != now.UnixMilli() {
		t.Fatalf("header %+v", h)
	}
	for _, r := range decodeAll(t, data) {
		if r.Timestamp != now.UnixMilli() {
			t.Fatalf("record timestamp %d", r.Timestamp)
		}
	}
	if off, _, ok, _ := l.OffsetForTimestamp(now.UnixMilli()); !ok || off != 0 {
		t.Fatalf("OffsetForTimestamp: %d %v", off, ok)
	}
}

// TestAppendLargerThanSegment: an append that no segment can hold is RECORD_LIST_TOO_LARGE, as
// Kafka answers it, even when each batch is within max.message.bytes; segment.bytes is honoured
// down to Kafka's minimum of 14 bytes (one batch per segment with a small one).
func TestAppendLargerThanSegment(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentBytes = 200
	cfg.MaxMessageBytes = 10000
	l := openLog(t, t.TempDir(), cfg)
	big := simpleBatch(t, 40, 1, "big-big-big-big")
	if len(big) <= 200 {
		t.Fatalf("the batch is %d bytes, want more than segment.bytes", len(big))
	}
	if _, err := l.Append(big, AppendOptions{AssignOffsets: true}); !errors.Is(err, ErrRecordListTooLarge) || errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("append of %d bytes with segment.bytes 200: %v, want ErrRecordListTooLarge", len(big), err)
	}
	one := simpleBatch(t, 1, 1, "a value of some sixty bytes, enough that two batches pass 200")
	for range 3 {
		if _, err := l.Append(one, AppendOptions{AssignOffsets: true}); err != nil {
			t.Fatal(err)
		}
	}
	if got := l.segmentCount(); got != 3 {
		t.Fatalf("%d segments after 3 batches of %d bytes with segment.bytes 200, want 3", got, len(one))
	}
}

func TestAppendValidation(t *testing.T) {
	cfg := smallConfig()
	cfg.MaxMessageBytes = 500
	l := openLog(t, t.TempDir(), cfg)
	good := simpleBatch(t, 2, 1, "good")

	badCRC := bytes.Clone(good)
	badCRC[len(badCRC)-1] ^= 1
	badMagic := bytes.Clone(good)
	badMagic[16] = 1
	truncated := good[:len(good)-3]
	big := simpleBatch(t, 40, 1, "big-big-big-big")
	noKey := buildBatch(t, batchSpec{recs: []rec{{Value: "v"}}, pid: -1, noKey: true})
	control := func() []byte {
		b := batch.NewBuilder()
		b.SetProducer(1, 0, 0)
		if err := b.AppendControl(batch.ControlCommit, 0, 1); err != nil {
			t.Fatal(err)
		}
		out, _ := b.Finish()
		return bytes.Clone(out)
	}()
	badCodec := buildBatch(t, batchSpec{recs: []rec{{Key: "k", Value: "a value long enough to compress"}}, pid: -1, codec: compress.Gzip})
	badCodec[len(badCodec)-6] ^= 0xff // corrupt the gzip trailer's CRC
	binaryPutCRC(badCodec)

	for _, tc := range []struct {
		name    string
		records []byte
		want    error
		compact bool
	}{
		{"crc", badCRC, ErrCorruptMessage, false},
		{"magic", badMagic, ErrUnsupportedMagic, false},
		{"truncated", truncated, ErrCorruptMessage, false},
		{"too large", big, ErrMessageTooLarge, false},
		{"second batch bad", append(bytes.Clone(good), badCRC...), ErrCorruptMessage, false},
		{"control from client", control, ErrInvalidRecord, false},
		{"corrupt compressed records", badCodec, ErrCorruptMessage, false},
		{"no key in compacted log", noKey, ErrInvalidRecord, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg
			c.Compact = tc.compact
			l.SetConfig(c)
			_, err := l.Append(tc.records, AppendOptions{AssignOffsets: true})
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if l.LogEndOffset() != 0 {
				t.Fatal("a rejected append changed the log")
			}
		})
	}
	l.SetConfig(cfg)
	if res, err := l.Append(nil, AppendOptions{AssignOffsets: true}); err != nil || res.BaseOffset != -1 {
		t.Fatalf("empty append: %+v, %v", res, err)
	}
	// Compressed batches are accepted and read back byte for byte.
	for _, c := range []compress.Codec{compress.Gzip, compress.Snappy, compress.LZ4, compress.Zstd} {
		b := buildBatch(t, batchSpec{recs: []rec{{Key: "k", Value: "compressed " + c.String(), Timestamp: 9}}, pid: -1, codec: c})
		res := leaderAppend(t, l, b)
		data, err := l.ReadBytes(res.BaseOffset, 1, res.LastOffset+1)
		if err != nil {
			t.Fatal(err)
		}
		if got := decodeAll(t, data); len(got) != 1 || got[0].Value != "compressed "+c.String() {
			t.Fatalf("%s: read back %v", c, got)
		}
	}
}

// binaryPutCRC recomputes the CRC of a batch after a test modified it.
func binaryPutCRC(b []byte) {
	sum := batch.Checksum(b)
	b[17], b[18], b[19], b[20] = byte(sum>>24), byte(sum>>16), byte(sum>>8), byte(sum)
}

func TestFollowerAppendKeepsOffsets(t *testing.T) {
	l := openLog(t, t.TempDir(), smallConfig())
	b1 := buildBatch(t, batchSpec{recs: []rec{{Key: "a"}, {Key: "b"}}, pid: -1, baseOffs: 0})
	b2 := buildBatch(t, batchSpec{recs: []rec{{Key: "c"}}, pid: -1, baseOffs: 10}) // a gap
	batch.SetPartitionLeaderEpoch(b1, 3)
	batch.SetPartitionLeaderEpoch(b2, 4)
	res, err := l.Append(append(b1, b2...), AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.BaseOffset != 0 || res.LastOffset != 10 || l.LogEndOffset() != 11 {
		t.Fatalf("result %+v, end %d", res, l.LogEndOffset())
	}
	if _, err := l.Append(buildBatch(t, batchSpec{recs: []rec{{Key: "d"}}, pid: -1, baseOffs: 5}), AppendOptions{}); !errors.Is(err, ErrUnexpectedAppendOffset) {
		t.Fatalf("offset going back: %v", err)
	}
	if got := l.LeaderEpochs(); !slices.Equal(got, []EpochEntry{{3, 0}, {4, 10}}) {
		t.Fatalf("epochs %v", got)
	}
	if e, end := l.EndOffsetForEpoch(3); e != 3 || end != 10 {
		t.Fatalf("EndOffsetForEpoch(3) = %d, %d", e, end)
	}
	recs := readAll(t, l)
	if len(recs) != 3 || recs[2].Offset != 10 {
		t.Fatalf("records %v", recs)
	}
}

func TestTruncate(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, smallConfig())
	want := appendMany(t, l, 100, 2, 1)
	before := len(segmentFiles(t, dir))
	if err := l.Truncate(60); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 60 {
		t.Fatalf("end %d after truncating to 60", l.LogEndOffset())
	}
	if after := len(segmentFiles(t, dir)); after >= before {
		t.Fatalf("%d segments before, %d after", before, after)
	}
	if got := readAll(t, l); !slices.Equal(got, want[:60]) {
		t.Fatalf("read %d records after truncation", len(got))
	}
	// Mid-batch: the whole batch goes.
	if err := l.Truncate(51); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 50 {
		t.Fatalf("end %d after truncating into a batch", l.LogEndOffset())
	}
	res := leaderAppend(t, l, simpleBatch(t, 2, 1, "new"))
	if res.BaseOffset != 50 {
		t.Fatalf("append after truncation at %d", res.BaseOffset)
	}
	l.Close()
	l2 := openLog(t, dir, smallConfig())
	if got := readAll(t, l2); len(got) != 52 || got[51].Value != "v1-new" {
		t.Fatalf("after reopen %d records", len(got))
	}
	if err := l2.TruncateFullyAndStartAt(1000); err != nil {
		t.Fatal(err)
	}
	if l2.LogStartOffset() != 1000 || l2.LogEndOffset() != 1000 || len(segmentFiles(t, dir)) != 1 {
		t.Fatalf("after restart: start %d end %d files %v", l2.LogStartOffset(), l2.LogEndOffset(), segmentFiles(t, dir))
	}
	if res := leaderAppend(t, l2, simpleBatch(t, 1, 1, "x")); res.BaseOffset != 1000 {
		t.Fatalf("append at %d", res.BaseOffset)
	}
}

func TestRetentionByTime(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig()
	cfg.RetentionMs = 10_000
	l := openLog(t, dir, cfg)
	// Timestamps rise by 1 s per batch.
	for i := range 100 {
		leaderAppend(t, l, simpleBatch(t, 4, t0.UnixMilli()+int64(i)*1000, fmt.Sprint(i)))
	}
	nsegs := len(segmentFiles(t, dir))
	now := t0.Add(100 * time.Second) // the newest batch is 1 s old
	n, err := l.EnforceRetention(now)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 || len(segmentFiles(t, dir)) != nsegs-n {
		t.Fatalf("deleted %d of %d segments, files %d", n, nsegs, len(segmentFiles(t, dir)))
	}
	start := l.LogStartOffset()
	if start == 0 || start != segmentFiles(t, dir)[0] {
		t.Fatalf("log start %d, first segment %d", start, segmentFiles(t, dir)[0])
	}
	// What is left reads from the new start, and is at most 10 s older than the newest batch
	// (or in a segment that also holds newer batches).
	got := readAll(t, l)
	if int64(len(got)) != 4*(100-start/4) || got[0].Offset != start {
		t.Fatalf("read %d records from %d", len(got), got[0].Offset)
	}
	if _, err := l.Read(0, 100, 1000); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below the start: %v", err)
	}
	// Far in the future everything but the active segment goes.
	if _, err := l.EnforceRetention(now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n := len(segmentFiles(t, dir)); n != 1 {
		t.Fatalf("%d segments remain, want the active one", n)
	}
}

func TestRetentionBySize(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig()
	cfg.RetentionBytes = 10_000
	l := openLog(t, dir, cfg)
	appendMany(t, l, 200, 4, 1)
	if _, err := l.EnforceRetention(t0); err != nil {
		t.Fatal(err)
	}
	var total int64
	segs := segmentFiles(t, dir)
	for _, b := range segs {
		fi, _ := os.Stat(filepath.Join(dir, fmt.Sprintf("%020d.log", b)))
		total += fi.Size()
	}
	if total < cfg.RetentionBytes || total > cfg.RetentionBytes+cfg.SegmentBytes {
		t.Fatalf("%d bytes remain, retention.bytes %d", total, cfg.RetentionBytes)
	}
	if l.LogStartOffset() != segs[0] {
		t.Fatalf("start %d, first segment %d", l.LogStartOffset(), segs[0])
	}
	if got := readAll(t, l); int64(len(got)) != l.LogEndOffset()-l.LogStartOffset() {
		t.Fatalf("read %d records in [%d, %d)", len(got), l.LogStartOffset(), l.LogEndOffset())
	}
}

func TestDeleteRecordsBefore(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, smallConfig())
	appendMany(t, l, 100, 2, 1)
	if err := l.DeleteRecordsBefore(151); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 151 {
		t.Fatalf("start %d", l.LogStartOffset())
	}
	if segs := segmentFiles(t, dir); segs[0] > 151 || (len(segs) > 1 && segs[1] <= 151) {
		t.Fatalf("segments %v", segs)
	}
	if _, err := l.Read(150, 10, 200); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read at 150: %v", err)
	}
	got := readAll(t, l)
	if got[0].Offset != 151 || len(got) != 49 {
		t.Fatalf("first record %d, %d records", got[0].Offset, len(got))
	}
	if err := l.DeleteRecordsBefore(201); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("beyond the end: %v", err)
	}
}

func TestReleaseKeepsDeletedSegmentsReadable(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig()
	cfg.RetentionBytes = 1
	l := openLog(t, dir, cfg)
	want := appendMany(t, l, 50, 2, 1)
	l.bgWG.Wait() // background flushes of rolled segments hold references for a moment
	r, err := l.Read(0, 1<<20, l.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	if n, err := l.EnforceRetention(t0); err != nil || n == 0 {
		t.Fatalf("retention deleted %d: %v", n, err)
	}
	if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("%020d.log", 0))); !os.IsNotExist(err) {
		t.Fatalf("segment 0 still on disk: %v", err)
	}
	buf := make([]byte, r.Size)
	p := buf
	for _, c := range r.Chunks {
		if _, err := c.File.ReadAt(p[:c.Len], c.Pos); err != nil {
			t.Fatalf("reading a deleted segment through the result: %v", err)
		}
		p = p[c.Len:]
	}
	if got := decodeAll(t, buf); !slices.Equal(got, want[:len(got)]) || len(got) < 2 {
		t.Fatalf("read %d records from deleted segments", len(got))
	}
	f := r.Chunks[0].File
	r.Release()
	r.Release() // idempotent
	if _, err := f.ReadAt(buf[:1], 0); err == nil {
		t.Fatal("the deleted segment's file is still open after Release")
	}
}

func TestChangedWakesWaiters(t *testing.T) {
	cfg := smallConfig()
	l := openLog(t, t.TempDir(), cfg)
	ch := l.Changed()
	select {
	case <-ch:
		t.Fatal("closed before any change")
	default:
	}
	done := make(chan struct{})
	go func() {
		<-ch
		close(done)
	}()
	leaderAppend(t, l, simpleBatch(t, 1, 1, "a"))
	waitClosed(t, done, "the append to wake the waiter")

	// A durability advance wakes too (the high watermark under FsyncAlways).
	ch = l.Changed()
	if err := l.WaitDurable(t.Context(), l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, ch, "durability to wake the waiter")

	ch = l.Changed()
	if err := l.Truncate(0); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, ch, "truncation to wake the waiter")

	ch = l.Changed()
	l.Close()
	waitClosed(t, ch, "Close to wake the waiter")
}

func TestClosedLog(t *testing.T) {
	l := openLog(t, t.TempDir(), smallConfig())
	leaderAppend(t, l, simpleBatch(t, 1, 1, "a"))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := l.Append(simpleBatch(t, 1, 1, "a"), AppendOptions{AssignOffsets: true}); !errors.Is(err, ErrClosed) {
		t.Fatalf("append: %v", err)
	}
	if _, err := l.Read(0, 1, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("read: %v", err)
	}
	if err := l.Flush(); !errors.Is(err, ErrClosed) {
		t.Fatalf("flush: %v", err)
	}
}

func TestDeleteLog(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "t-0")
	l, err := Open(dir, smallConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	leaderAppend(t, l, simpleBatch(t, 1, 1, "a"))
	if err := l.Delete(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 0 {
		t.Fatalf("left %v", ents)
	}
}

func TestSegmentOffsetOverflowRolls(t *testing.T) {
	l := openLog(t, t.TempDir(), smallConfig())
	b1 := buildBatch(t, batchSpec{recs: []rec{{Key: "a"}}, pid: -1, baseOffs: 0})
	b2 := buildBatch(t, batchSpec{recs: []rec{{Key: "b"}}, pid: -1, baseOffs: math.MaxInt32 + 10})
	if _, err := l.Append(b1, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(b2, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, l); len(got) != 2 || got[1].Offset != math.MaxInt32+10 {
		t.Fatalf("records %v", got)
	}
}

// segment.jitter.ms makes segments roll before segment.ms by a random amount drawn per segment,
// and never later than segment.ms.
func TestSegmentJitter(t *testing.T) {
	for _, jitter := range []int64{0, 3_600_000} {
		cfg := smallConfig()
		cfg.SegmentBytes = 1 << 30
		cfg.SegmentMs = 3_600_000
		cfg.SegmentJitterMs = jitter
		l := openLog(t, t.TempDir(), cfg)
		now := t0
		appendAt := func(at time.Time) (rolled bool) {
			before := l.activeBase()
			b := buildBatch(t, batchSpec{recs: []rec{{Timestamp: at.UnixMilli(), Key: "k", Value: "v"}}, pid: -1})
			if _, err := l.Append(b, AppendOptions{AssignOffsets: true, Now: at}); err != nil {
				t.Fatal(err)
			}
			return l.activeBase() != before
		}
		appendAt(now)
		early := 0
		for range 64 {
			// Half-way through segment.ms: a roll only by jitter (about half the segments).
			if appendAt(now.Add(30 * time.Minute)) {
				early++
				now = now.Add(30 * time.Minute)
				continue
			}
			// Past segment.ms: always a roll, jitter or not.
			now = now.Add(time.Hour + time.Millisecond)
			if !appendAt(now) {
				t.Fatalf("jitter %d: no roll past segment.ms", jitter)
			}
		}
		if jitter == 0 && early != 0 || jitter > 0 && early == 0 {
			t.Errorf("segment.jitter.ms %d: %d of 64 segments rolled half-way through segment.ms", jitter, early)
		}
	}
}

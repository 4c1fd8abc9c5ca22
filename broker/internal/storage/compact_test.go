package storage

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire/batch"
	"github.com/spoolmq/spool/protocol-spec/wire/compress"
)

func compactConfig() LogConfig {
	cfg := smallConfig()
	cfg.Compact = true
	cfg.Delete = false
	cfg.DeleteRetentionMs = 60_000
	return cfg
}

// activeBase is the base offset of the active segment.
func (l *Log) activeBase() int64 {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	return l.segs[len(l.segs)-1].base
}

// expectCompacted computes what a full compaction of everything below activeBase keeps.
func expectCompacted(all []rec, activeBase int64, tombstoneGone func(rec) bool) []rec {
	lastIdx := map[string]int{}
	for i, r := range all {
		if r.Offset < activeBase {
			lastIdx[r.Key] = i
		}
	}
	var out []rec
	for i, r := range all {
		if r.Offset >= activeBase {
			out = append(out, r)
			continue
		}
		if lastIdx[r.Key] != i {
			continue
		}
		if r.Null && tombstoneGone(r) {
			continue
		}
		out = append(out, r)
	}
	return out
}

func TestCompactionKeepsLatestPerKey(t *testing.T) {
	dir := t.TempDir()
	cfg := compactConfig()
	l := openLog(t, dir, cfg)
	var all []rec
	codecs := []compress.Codec{compress.None, compress.Gzip, compress.LZ4}
	for i := range 150 {
		recs := []rec{
			{Timestamp: t0.UnixMilli() + int64(i), Key: fmt.Sprintf("key%d", i%7), Value: fmt.Sprintf("v%d", i)},
			{Timestamp: t0.UnixMilli() + int64(i), Key: fmt.Sprintf("key%d", (i+3)%11), Value: fmt.Sprintf("w%d", i)},
			{Timestamp: t0.UnixMilli() + int64(i), Key: fmt.Sprintf("key%d", i%7), Value: fmt.Sprintf("x%d", i)}, // same key twice in a batch
		}
		res := leaderAppend(t, l, buildBatch(t, batchSpec{recs: recs, pid: -1, codec: codecs[i%3]}))
		for j := range recs {
			recs[j].Offset = res.BaseOffset + int64(j)
		}
		all = append(all, recs...)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	beforeSize := dirSize(t, dir)
	active := l.activeBase()
	if err := l.Compact(t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	want := expectCompacted(all, active, func(rec) bool { return false })
	got := readAll(t, l)
	if !slices.Equal(got, want) {
		t.Fatalf("after compaction %d records, want %d", len(got), len(want))
	}
	if after := dirSize(t, dir); after >= beforeSize {
		t.Fatalf("log did not shrink: %d -> %d bytes", beforeSize, after)
	}
	// Offsets are preserved: every surviving record reads at its own offset.
	for _, r := range want {
		data, err := l.ReadBytes(r.Offset, 1, l.LogEndOffset())
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(decodeAll(t, data), r) {
			t.Fatalf("record at %d not found reading from its offset", r.Offset)
		}
	}
	// A second pass changes nothing; a reopen reads the same.
	if err := l.Compact(t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, l); !slices.Equal(got, want) {
		t.Fatal("second pass changed the result")
	}
	l.Close()
	l2 := openLog(t, dir, cfg)
	if got := readAll(t, l2); !slices.Equal(got, want) {
		t.Fatal("reopen changed the result")
	}
	// Appends continue and later passes compact them too.
	for i := range 60 {
		leaderAppend(t, l2, buildBatch(t, batchSpec{recs: []rec{{Timestamp: t0.UnixMilli(), Key: "key1", Value: fmt.Sprintf("late%d", i)}}, pid: -1}))
	}
	l2.Flush()
	if err := l2.Compact(t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range readAll(t, l2) {
		if r.Key == "key1" && r.Offset < l2.activeBase() {
			n++
		}
	}
	if n > 1 {
		t.Fatalf("%d versions of key1 below the active segment", n)
	}
}

func dirSize(t testing.TB, dir string) int64 {
	var n int64
	for _, b := range segmentFiles(t, dir) {
		fi, err := os.Stat(fmt.Sprintf("%s/%020d.log", dir, b))
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

func TestCompactionTombstones(t *testing.T) {
	cfg := compactConfig()
	l := openLog(t, t.TempDir(), cfg)
	ts := t0.UnixMilli()
	leaderAppend(t, l, buildBatch(t, batchSpec{recs: []rec{{Timestamp: ts, Key: "dead", Value: "alive"}, {Timestamp: ts, Key: "keep", Value: "k"}}, pid: -1}))
	leaderAppend(t, l, buildBatch(t, batchSpec{recs: []rec{{Timestamp: ts + 10, Key: "dead", Null: true}}, pid: -1}))
	for l.segmentCount() < 3 {
		leaderAppend(t, l, buildBatch(t, batchSpec{recs: []rec{{Timestamp: ts + 20, Key: "filler", Value: strings.Repeat("f", 200)}}, pid: -1}))
	}
	l.Flush()
	keys := func() map[string]rec {
		m := map[string]rec{}
		for _, r := range readAll(t, l) {
			if _, ok := m[r.Key]; !ok || r.Key != "filler" {
				m[r.Key] = r
			}
		}
		return m
	}
	// Within delete.retention.ms the tombstone stays, the value it deletes goes.
	if err := l.Compact(time.UnixMilli(ts + 10 + cfg.DeleteRetentionMs - 1)); err != nil {
		t.Fatal(err)
	}
	k := keys()
	if r, ok := k["dead"]; !ok || !r.Null || r.Offset != 2 {
		t.Fatalf("tombstone: %+v %v", r, ok)
	}
	if _, ok := k["keep"]; !ok {
		t.Fatal("key 'keep' lost")
	}
	// After it, the tombstone goes too.
	if err := l.Compact(time.UnixMilli(ts + 10 + cfg.DeleteRetentionMs)); err != nil {
		t.Fatal(err)
	}
	k = keys()
	if r, ok := k["dead"]; ok {
		t.Fatalf("tombstone still there: %+v", r)
	}
	if r := k["keep"]; r.Value != "k" || r.Offset != 1 {
		t.Fatalf("key 'keep': %+v", r)
	}
}

func TestCompactionKeepsProducerState(t *testing.T) {
	dir := t.TempDir()
	cfg := compactConfig()
	l := openLog(t, dir, cfg)
	// Producer 5's only batch is entirely superseded by later writes of the same keys.
	res, err := l.Append(idemBatch(t, 5, 0, 0, 2), AppendOptions{AssignOffsets: true, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	for l.segmentCount() < 3 {
		leaderAppend(t, l, buildBatch(t, batchSpec{recs: []rec{{Timestamp: 1, Key: "p5-s0", Value: "new"}, {Timestamp: 1, Key: "p5-s1", Value: "new"}}, pid: -1}))
	}
	l.Flush()
	if err := l.Compact(t0); err != nil {
		t.Fatal(err)
	}
	// The emptied batch survives as a header, so the producer state can be rebuilt from the log.
	data, err := l.ReadBytes(0, 1, l.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	h, err := batch.Validate(data)
	if err != nil || h.RecordsCount != 0 || h.ProducerID != 5 || h.BaseOffset != res.BaseOffset || h.LastOffset() != res.LastOffset {
		t.Fatalf("first batch %+v, %v", h, err)
	}
	l.crash()
	offs, _ := (&producerStateManager{dir: dir}).snapshotOffsets()
	for _, o := range offs {
		removeIfExists(snapshotPath(dir, o))
	}
	l2 := openLog(t, dir, cfg)
	dup, err := l2.Append(idemBatch(t, 5, 0, 0, 2), AppendOptions{AssignOffsets: true, Now: t0})
	if err != nil || !dup.Duplicate || dup.BaseOffset != res.BaseOffset {
		t.Fatalf("retry after compaction and a rebuild: %+v, %v", dup, err)
	}
}

func TestCompactionBoundedKeyMapAndLag(t *testing.T) {
	cfg := compactConfig()
	cfg.CompactionMaxKeys = 5 // far fewer than the keys: several passes
	l := openLog(t, t.TempDir(), cfg)
	var all []rec
	for i := range 200 {
		recs := []rec{{Timestamp: t0.UnixMilli(), Key: fmt.Sprintf("key%d", i%20), Value: fmt.Sprint(i)}}
		res := leaderAppend(t, l, buildBatch(t, batchSpec{recs: recs, pid: -1}))
		recs[0].Offset = res.BaseOffset
		all = append(all, recs...)
	}
	l.Flush()
	active := l.activeBase()
	for range 50 {
		if err := l.Compact(t0); err != nil {
			t.Fatal(err)
		}
	}
	// Bounded passes give the same result as one unbounded pass, eventually.
	want := expectCompacted(all, active, func(rec) bool { return false })
	if got := readAll(t, l); !slices.Equal(got, want) {
		t.Fatalf("after bounded passes %d records, want %d", len(got), len(want))
	}

	// min.compaction.lag.ms keeps recent segments as they are.
	cfg2 := compactConfig()
	cfg2.MinCompactionLagMs = 3_600_000
	l2 := openLog(t, t.TempDir(), cfg2)
	for i := range 100 {
		leaderAppend(t, l2, buildBatch(t, batchSpec{recs: []rec{{Timestamp: t0.UnixMilli(), Key: "same", Value: fmt.Sprint(i)}}, pid: -1}))
	}
	l2.Flush()
	before := readAll(t, l2)
	if err := l2.Compact(t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, l2); !slices.Equal(got, before) {
		t.Fatal("compacted segments younger than min.compaction.lag.ms")
	}
	if err := l2.Compact(t0.Add(2 * time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, l2); len(got) >= len(before) {
		t.Fatal("did not compact once the lag passed")
	}
}

func TestCompactionReadersKeepOldFiles(t *testing.T) {
	cfg := compactConfig()
	l := openLog(t, t.TempDir(), cfg)
	for i := range 100 {
		leaderAppend(t, l, buildBatch(t, batchSpec{recs: []rec{{Timestamp: 1, Key: "k", Value: fmt.Sprint(i)}}, pid: -1}))
	}
	l.Flush()
	l.bgWG.Wait()
	r, err := l.Read(0, 1<<20, l.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if err := l.Compact(t0); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, r.Size)
	p := buf
	for _, c := range r.Chunks {
		if _, err := c.File.ReadAt(p[:c.Len], c.Pos); err != nil {
			t.Fatal(err)
		}
		p = p[c.Len:]
	}
	if got := decodeAll(t, buf); len(got) == 0 || got[0].Value != "0" {
		t.Fatalf("pre-compaction read lost its data: %d records", len(got))
	}
	if got := readAll(t, l); got[0].Value == "0" {
		t.Fatal("compaction did nothing")
	}
}

// max.compaction.lag.ms compacts a dirty segment once its records are that old, even when the
// dirty share is below min.cleanable.dirty.ratio.
func TestCompactionMaxLag(t *testing.T) {
	for _, lag := range []int64{math.MaxInt64, 3_600_000} {
		cfg := compactConfig()
		cfg.MinCleanableDirtyRatio = 1 // never reached once a clean part exists
		cfg.MaxCompactionLagMs = lag
		l := openLog(t, t.TempDir(), cfg)
		appendKeys := func(n int) {
			for i := range n {
				leaderAppend(t, l, buildBatch(t, batchSpec{recs: []rec{{Timestamp: t0.UnixMilli(), Key: fmt.Sprintf("k%d", i%10), Value: strings.Repeat("v", 100)}}, pid: -1}))
			}
			l.Flush()
		}
		appendKeys(200)
		if err := l.Compact(t0); err != nil { // everything below the active segment is clean now
			t.Fatal(err)
		}
		active := l.activeBase()
		appendKeys(200) // dirty segments behind a new active one
		if l.activeBase() == active {
			t.Fatal("no new closed segment")
		}
		for _, at := range []time.Duration{time.Minute, 2 * time.Hour} {
			did, err := l.compactIfNeeded(t0.Add(at))
			if err != nil {
				t.Fatal(err)
			}
			if want := lag != math.MaxInt64 && at > time.Hour; did != want {
				t.Errorf("max.compaction.lag.ms %d, %v after the records: compacted %v, want %v", lag, at, did, want)
			}
		}
	}
}

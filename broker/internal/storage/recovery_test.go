package storage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

// batchEnds returns the end positions of the batches in a segment file.
func batchEnds(t testing.TB, path string) []int64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ends []int64
	s := batch.NewScanner(data)
	for s.Next() {
		ends = append(ends, int64(s.Consumed()))
	}
	return ends
}

// crashedLog builds a log of several segments, makes all of it durable, crashes it and returns
// its directory, the records and the last segment's path.
func crashedLog(t testing.TB, cfg LogConfig) (string, []rec, string) {
	t.Helper()
	dir := t.TempDir()
	l, err := Open(dir, cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	want := appendMany(t, l, 60, 3, 1000)
	if err := l.WaitDurable(t.Context(), l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	l.crash()
	return dir, want, lastSegmentPath(t, dir)
}

func TestRecoveryTornTails(t *testing.T) {
	cfg := smallConfig()
	for _, tc := range []struct {
		name string
		// damage modifies the last segment and returns how many bytes of it stay valid.
		damage func(t *testing.T, path string, ends []int64) int64
	}{
		{"truncated mid-batch", func(t *testing.T, path string, ends []int64) int64 {
			cut := ends[len(ends)-2] + 30
			if err := os.Truncate(path, cut); err != nil {
				t.Fatal(err)
			}
			return ends[len(ends)-2]
		}},
		{"truncated mid-header", func(t *testing.T, path string, ends []int64) int64 {
			if err := os.Truncate(path, ends[len(ends)-2]+7); err != nil {
				t.Fatal(err)
			}
			return ends[len(ends)-2]
		}},
		{"garbage appended", func(t *testing.T, path string, ends []int64) int64 {
			appendFile(t, path, bytes.Repeat([]byte("garbage!"), 100))
			return ends[len(ends)-1]
		}},
		{"zeros appended", func(t *testing.T, path string, ends []int64) int64 {
			appendFile(t, path, make([]byte, 4096))
			return ends[len(ends)-1]
		}},
		{"byte flipped in the last batch", func(t *testing.T, path string, ends []int64) int64 {
			flipByte(t, path, ends[len(ends)-1]-5)
			return ends[len(ends)-2]
		}},
		{"length field flipped in the last batch", func(t *testing.T, path string, ends []int64) int64 {
			flipByte(t, path, ends[len(ends)-2]+9)
			return ends[len(ends)-2]
		}},
		{"partial copy of a valid batch appended", func(t *testing.T, path string, ends []int64) int64 {
			data, _ := os.ReadFile(path)
			appendFile(t, path, data[:ends[0]-1])
			return ends[len(ends)-1]
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, want, last := crashedLog(t, cfg)
			ends := batchEnds(t, last)
			if len(ends) < 2 {
				t.Fatalf("last segment has %d batches", len(ends))
			}
			valid := tc.damage(t, last, ends)
			keptBatches := slices.Index(ends, valid) + 1
			lost := (len(ends) - keptBatches) * 3
			l := openLog(t, dir, cfg)
			if fi, _ := os.Stat(last); fi.Size() != valid {
				t.Fatalf("last segment is %d bytes after recovery, want %d", fi.Size(), valid)
			}
			got := readAll(t, l)
			if !slices.Equal(got, want[:len(want)-lost]) {
				t.Fatalf("recovered %d records, want %d", len(got), len(want)-lost)
			}
			if l.LogEndOffset() != int64(len(want)-lost) {
				t.Fatalf("log end %d", l.LogEndOffset())
			}
			// The log works on: appends continue from the recovered end.
			res := leaderAppend(t, l, simpleBatch(t, 2, 1, "after"))
			if res.BaseOffset != int64(len(want)-lost) {
				t.Fatalf("append after recovery at %d", res.BaseOffset)
			}
			if got := readAll(t, l); len(got) != len(want)-lost+2 {
				t.Fatalf("%d records after appending", len(got))
			}
		})
	}
}

func appendFile(t testing.TB, path string, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func flipByte(t testing.TB, path string, pos int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := []byte{0}
	if _, err := f.ReadAt(b, pos); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x40
	if _, err := f.WriteAt(b, pos); err != nil {
		t.Fatal(err)
	}
}

// TestRecoveryFromRecoveryPoint: with a Manager's recovery point, only the tail is checked,
// durable data survives, and the unsynced tail that a power loss would take is cut cleanly.
func TestRecoveryFromRecoveryPoint(t *testing.T) {
	cfg := smallConfig()
	dir := t.TempDir()
	l, err := Open(dir, cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	want := appendMany(t, l, 50, 3, 1)
	if err := l.WaitDurable(t.Context(), l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	rp, err := l.recoveryPoint()
	if err != nil || rp != 150 {
		t.Fatalf("recovery point %d, %v", rp, err)
	}
	more := appendMany(t, l, 10, 3, 1) // not fsynced
	_ = more
	l.crash()
	// A power loss keeps only fsynced bytes: cut the last segment back to the durable size, and
	// leave a torn piece of the next batch.
	segs := segmentFiles(t, dir)
	for _, b := range segs {
		if b > 150 {
			os.Remove(filepath.Join(dir, fmt.Sprintf("%020d.log", b)))
			os.Remove(filepath.Join(dir, fmt.Sprintf("%020d.index", b)))
			os.Remove(filepath.Join(dir, fmt.Sprintf("%020d.timeindex", b)))
		}
	}
	last := lastSegmentPath(t, dir)
	var durableEnd int64 // position in the last segment where offset 150 starts
	if segs := segmentFiles(t, dir); segs[len(segs)-1] != 150 {
		ends, offs := batchEnds(t, last), batchEndOffset(t, last)
		i := slices.Index(offs, 150)
		if i < 0 {
			t.Fatalf("no batch ends at offset 150 in %s", last)
		}
		durableEnd = ends[i]
	}
	if err := os.Truncate(last, durableEnd+20); err != nil {
		t.Fatal(err)
	}
	l2, err := OpenWithOptions(dir, cfg, testLogger(t), OpenOptions{RecoveryPoint: rp})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if got := readAll(t, l2); !slices.Equal(got, want) {
		t.Fatalf("recovered %d records, want the %d durable ones", len(got), len(want))
	}
}

// batchEndOffset returns the next offset after each batch of a segment file.
func batchEndOffset(t testing.TB, path string) []int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	s := batch.NewScanner(data)
	for s.Next() {
		out = append(out, batch.Raw(s.Batch()).LastOffset()+1)
	}
	return out
}

func TestRecoveryRebuildsIndexes(t *testing.T) {
	cfg := smallConfig()
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, dir string, base int64)
	}{
		{"missing", func(t *testing.T, dir string, base int64) {
			os.Remove(filepath.Join(dir, fmt.Sprintf("%020d.index", base)))
			os.Remove(filepath.Join(dir, fmt.Sprintf("%020d.timeindex", base)))
		}},
		{"odd size", func(t *testing.T, dir string, base int64) {
			appendFile(t, filepath.Join(dir, fmt.Sprintf("%020d.index", base)), []byte{1, 2, 3})
		}},
		{"position beyond the file", func(t *testing.T, dir string, base int64) {
			var e [8]byte
			putOffsetEntry(e[:], 1<<20, 1<<30)
			appendFile(t, filepath.Join(dir, fmt.Sprintf("%020d.index", base)), e[:])
		}},
		{"garbage time index", func(t *testing.T, dir string, base int64) {
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("%020d.timeindex", base)), bytes.Repeat([]byte{0xff, 0, 1}, 8), 0o644)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l := openLog(t, dir, cfg)
			want := appendMany(t, l, 100, 3, 1000)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			segs := segmentFiles(t, dir)
			tc.damage(t, dir, segs[1])
			tc.damage(t, dir, segs[len(segs)-1])
			l2, err := OpenWithOptions(dir, cfg, testLogger(t), OpenOptions{RecoveryPoint: 300, CleanShutdown: true})
			if err != nil {
				t.Fatal(err)
			}
			defer l2.Close()
			if got := readAll(t, l2); !slices.Equal(got, want) {
				t.Fatalf("read %d records", len(got))
			}
			for off := int64(0); off < 300; off += 11 {
				data, err := l2.ReadBytes(off, 1, 300)
				if err != nil {
					t.Fatal(err)
				}
				if r := decodeAll(t, data); r[0].Offset > off || r[len(r)-1].Offset < off {
					t.Fatalf("offset %d read %v", off, r)
				}
			}
			if off, _, ok, err := l2.OffsetForTimestamp(1050); err != nil || !ok || off != 150 {
				t.Fatalf("OffsetForTimestamp: %d %v %v", off, ok, err)
			}
			idx, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%020d.index", segs[1])))
			if len(idx) == 0 || len(idx)%8 != 0 {
				t.Fatalf("rebuilt index is %d bytes", len(idx))
			}
		})
	}
}

func TestRecoveryLeftovers(t *testing.T) {
	cfg := smallConfig()
	dir := t.TempDir()
	l := openLog(t, dir, cfg)
	want := appendMany(t, l, 80, 3, 1)
	l.Close()
	segs := segmentFiles(t, dir)
	if len(segs) < 3 {
		t.Fatalf("%d segments", len(segs))
	}
	// An uncommitted compaction output, a temp file, a stray index and a deleted segment.
	os.WriteFile(filepath.Join(dir, fmt.Sprintf("%020d.log.cleaned", segs[0])), []byte("partial"), 0o644)
	os.WriteFile(filepath.Join(dir, "leader-epoch-checkpoint.tmp"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, fmt.Sprintf("%020d.index", 99999)), make([]byte, 8), 0o644)
	os.WriteFile(filepath.Join(dir, fmt.Sprintf("%020d.log.deleted", 5)), []byte("x"), 0o644)
	// A committed swap of segment 1: the same data, under .swap, with the old files' indexes
	// possibly already replaced (here: garbage, which recovery must not trust).
	data, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%020d.log", segs[1])))
	os.WriteFile(filepath.Join(dir, fmt.Sprintf("%020d.log.swap", segs[1])), data, 0o644)
	os.WriteFile(filepath.Join(dir, fmt.Sprintf("%020d.log", segs[1])), []byte("old version"), 0o644)
	os.WriteFile(filepath.Join(dir, fmt.Sprintf("%020d.index", segs[1])), bytes.Repeat([]byte{9}, 16), 0o644)
	// An empty segment past the end.
	os.WriteFile(filepath.Join(dir, fmt.Sprintf("%020d.log", 100000)), nil, 0o644)

	l2, err := OpenWithOptions(dir, cfg, testLogger(t), OpenOptions{RecoveryPoint: 240, CleanShutdown: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if got := readAll(t, l2); !slices.Equal(got, want) {
		t.Fatalf("read %d records", len(got))
	}
	if l2.LogEndOffset() != 240 {
		t.Fatalf("log end %d", l2.LogEndOffset())
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		n := e.Name()
		if bytes.Contains([]byte(n), []byte(".cleaned")) || bytes.Contains([]byte(n), []byte(".swap")) ||
			bytes.Contains([]byte(n), []byte(".tmp")) || bytes.Contains([]byte(n), []byte(".deleted")) ||
			n == fmt.Sprintf("%020d.index", 99999) || n == fmt.Sprintf("%020d.log", 100000) {
			t.Errorf("leftover %s", n)
		}
	}
}

// TestRecoveryCorruptOldSegment: a flipped byte in an old segment, below no recovery point (a
// full recovery), truncates the log there: the corruption is reported (logged) and never
// served.
func TestRecoveryCorruptOldSegment(t *testing.T) {
	cfg := smallConfig()
	dir, want, _ := crashedLog(t, cfg)
	segs := segmentFiles(t, dir)
	first := filepath.Join(dir, fmt.Sprintf("%020d.log", segs[0]))
	ends := batchEnds(t, first)
	flipByte(t, first, ends[2]+40) // inside the fourth batch
	l := openLog(t, dir, cfg)
	got := readAll(t, l)
	if !slices.Equal(got, want[:9]) {
		t.Fatalf("recovered %d records, want the 9 before the corrupt batch", len(got))
	}
	if n := len(segmentFiles(t, dir)); n != 1 {
		t.Fatalf("%d segments after truncating the first", n)
	}
}

// FuzzRecovery: arbitrary bytes appended to, or replacing the tail of, the last segment never
// make Open panic or fail, and the recovered log is a valid prefix: every batch before the
// damage survives, every batch served validates, and appends continue.
func FuzzRecovery(f *testing.F) {
	f.Add([]byte("garbage"), uint16(0), false)
	f.Add(make([]byte, 100), uint16(10), true)
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 99, 0, 0, 0, 70, 0, 0, 0, 0, 2}, uint16(3), true)
	f.Add(bytes.Repeat([]byte{0xff}, 61), uint16(61), false)
	cfg := smallConfig()
	seed := func(t *testing.T) (string, []rec) {
		dir := t.TempDir()
		l, err := Open(dir, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := appendMany(t, l, 40, 3, 1000)
		l.crash()
		return dir, want
	}
	f.Fuzz(func(t *testing.T, data []byte, cut uint16, replace bool) {
		dir, want := seed(t)
		last := lastSegmentPath(t, dir)
		ends := batchEnds(t, last)
		fi, _ := os.Stat(last)
		keep := fi.Size()
		if replace {
			keep = max(0, keep-int64(cut))
			if err := os.Truncate(last, keep); err != nil {
				t.Fatal(err)
			}
		}
		appendFile(t, last, data)
		intact := 0 // batches of the last segment wholly before the damage
		for _, e := range ends {
			if e <= keep {
				intact++
			}
		}
		lost := (len(ends) - intact) * 3
		l, err := Open(dir, cfg, nil)
		if err != nil {
			t.Fatalf("Open after damage: %v", err)
		}
		defer l.Close()
		got := readAll(t, l) // fails on any invalid batch
		if len(got) < len(want)-lost || !slices.Equal(got[:len(want)-lost], want[:len(want)-lost]) {
			t.Fatalf("recovered %d records, the %d intact ones differ or are missing", len(got), len(want)-lost)
		}
		for i := 1; i < len(got); i++ {
			if got[i].Offset <= got[i-1].Offset {
				t.Fatalf("offsets not increasing: %d after %d", got[i].Offset, got[i-1].Offset)
			}
		}
		end := l.LogEndOffset()
		res, err := l.Append(simpleBatch(t, 1, 1, "after"), AppendOptions{AssignOffsets: true})
		if err != nil || res.BaseOffset != end {
			t.Fatalf("append after recovery: %+v, %v", res, err)
		}
	})
}

// TestCorruptOldSegmentNotServed: below the recovery point nothing is re-read at open, so a
// flipped byte there is found when the bytes are first served: Read refuses them (and logs),
// Verify reports them, and the good batches around them stay readable.
func TestCorruptOldSegmentNotServed(t *testing.T) {
	cfg := smallConfig()
	dir := t.TempDir()
	l := openLog(t, dir, cfg)
	want := appendMany(t, l, 100, 3, 1)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	segs := segmentFiles(t, dir)
	path := filepath.Join(dir, fmt.Sprintf("%020d.log", segs[1]))
	ends := batchEnds(t, path)
	flipByte(t, path, ends[3]+50) // inside the fifth batch of the second segment
	badBase := segs[1] + 4*3

	l2, err := OpenWithOptions(dir, cfg, testLogger(t), OpenOptions{RecoveryPoint: 300, CleanShutdown: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if l2.LogEndOffset() != 300 {
		t.Fatalf("log end %d: the trusted segment was not trusted", l2.LogEndOffset())
	}
	if _, err := l2.Read(badBase, 1, 300); !errors.Is(err, ErrCorruptMessage) {
		t.Fatalf("read of the corrupt batch: %v", err)
	}
	if _, err := l2.Read(segs[1], 1<<20, 300); !errors.Is(err, ErrCorruptMessage) {
		t.Fatalf("read through the corrupt batch: %v", err)
	}
	// The batches before it in the segment, and other segments, are served.
	data, err := l2.ReadBytes(segs[1], int32(ends[3]), 300)
	if err != nil {
		t.Fatal(err)
	}
	if got := decodeAll(t, data); !slices.Equal(got, want[segs[1]:segs[1]+12]) {
		t.Fatalf("good batches before the corrupt one: %d records", len(got))
	}
	if data, err := l2.ReadBytes(segs[2], 1<<20, 300); err != nil || len(decodeAll(t, data)) == 0 {
		t.Fatalf("another segment: %v", err)
	}
	if err := l2.Verify(); !errors.Is(err, ErrCorruptMessage) {
		t.Fatalf("Verify: %v", err)
	}
}

//go:build !race

package storage

import (
	"testing"
)

// TestAppendAllocations: the append path allocates nothing per record or per batch once warm
// (the race detector makes pools drop items, hence the build tag).
func TestAppendAllocations(t *testing.T) {
	cfg := DefaultLogConfig()
	cfg.Fsync = FsyncNever
	l := openLog(t, t.TempDir(), cfg)
	for _, size := range []int{100, 1024} {
		buf, n := benchBatch(t, size, -1)
		ibuf, _ := benchBatch(t, size, int64(size))
		seq := int32(0)
		for range 10 {
			l.Append(buf, AppendOptions{AssignOffsets: true})
		}
		allocs := testing.AllocsPerRun(200, func() {
			if _, err := l.Append(buf, AppendOptions{AssignOffsets: true}); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > 0 {
			t.Errorf("%d B records: %.1f allocations per append of %d records", size, allocs, n)
		}
		// Idempotent batches: the producer entry exists after the first append.
		allocs = testing.AllocsPerRun(200, func() {
			setSeq(ibuf, seq)
			seq += int32(n)
			if _, err := l.Append(ibuf, AppendOptions{AssignOffsets: true}); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > 0 {
			t.Errorf("%d B idempotent records: %.1f allocations per append", size, allocs)
		}
		// Reads allocate a little per call (the chunk list), nothing per batch.
		allocs = testing.AllocsPerRun(200, func() {
			r, err := l.Read(0, 1<<20, l.LogEndOffset())
			if err != nil {
				t.Fatal(err)
			}
			r.Release()
		})
		if allocs > 4 {
			t.Errorf("%.1f allocations per read", allocs)
		}
	}
}

// setSeq rewrites a batch's base sequence and fixes its CRC.
func setSeq(b []byte, seq int32) {
	b[53], b[54], b[55], b[56] = byte(seq>>24), byte(seq>>16), byte(seq>>8), byte(seq)
	binaryPutCRC(b)
}

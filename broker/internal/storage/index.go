package storage

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
)

// Index entry sizes, as in Kafka.
const (
	offsetIndexEntrySize = 8  // uint32 relative offset, uint32 position
	timeIndexEntrySize   = 12 // int64 timestamp, uint32 relative offset
)

// index is one memory-mapped index file of a segment: the offset index or the time index.
// Entries are fixed-size, big-endian, and strictly increasing in their first field.
//
// The active segment's index is writable: the file is preallocated to its capacity
// (segment.index.bytes rounded down to whole entries) and mapped read-write; entries are written
// into the mapping. Sealing trims the file to its entries and unmaps it. A sealed index is
// mapped read-only on first use, so that idle old segments cost no mapping.
//
// No index holds a file descriptor: the mapping outlives the descriptor it was made from, msync
// needs none, and trimming goes by path. A replica then costs one descriptor (its active log
// file) where it cost three, as Kafka's mapped indexes do (issue 28: brokers with thousands of
// partitions ran out of descriptors).
//
// Concurrency: entries [0, n) are immutable once n covers them, so lookups read them without a
// lock, under the owning Log's segment lock held for reading (which excludes the structural
// changes: seal, activate, truncate, close). append is called by the single appender. mu
// serializes the changes of the mapping itself and msync.
type index struct {
	path      string
	entrySize int

	mu         sync.Mutex
	data       []byte // the mapping (capacity when writable, n entries when sealed)
	mapped     atomic.Bool
	writable   bool
	maxEntries int
	dirty      atomic.Bool // entries written since the last msync (set by the appender)
	synced     bool        // a sealed index known durable
	mapErr     error

	n atomic.Int64 // entries
}

// createIndex creates (or empties) a writable index file with room for maxBytes.
func createIndex(path string, entrySize int, maxBytes int32) (*index, error) {
	x := &index{path: path, entrySize: entrySize}
	if err := x.activate(maxBytes, 0, true); err != nil {
		return nil, err
	}
	return x, nil
}

// openSealedIndex opens an existing index file of a sealed segment without mapping it. The
// entry count is the file size in entries; a size that is not a multiple of the entry size is
// reported as corrupt.
func openSealedIndex(path string, entrySize int) (*index, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", path, err)
	}
	if fi.Size()%int64(entrySize) != 0 {
		return nil, fmt.Errorf("index %s: size %d is not a multiple of %d", path, fi.Size(), entrySize)
	}
	x := &index{path: path, entrySize: entrySize, synced: true}
	x.n.Store(fi.Size() / int64(entrySize))
	return x, nil
}

// activate makes the index writable with room for maxBytes (at least n entries), keeping its
// first n entries; fresh empties the file first.
func (x *index) activate(maxBytes int32, n int64, fresh bool) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.unmapLocked(); err != nil {
		return err
	}
	flags := os.O_CREATE | os.O_RDWR
	if fresh {
		flags |= os.O_TRUNC
	}
	f, err := os.OpenFile(x.path, flags, 0o644)
	if err != nil {
		return fmt.Errorf("opening index %s: %w", x.path, err)
	}
	var oldSize int64
	if !fresh {
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return fmt.Errorf("stat index %s: %w", x.path, err)
		}
		oldSize = fi.Size()
	}
	maxEntries := max(int(maxBytes)/x.entrySize, int(n), 1)
	size := maxEntries * x.entrySize
	if err := f.Truncate(int64(size)); err != nil {
		f.Close()
		return fmt.Errorf("preallocating index %s: %w", x.path, err)
	}
	data, err := mmapFile(f, size, true)
	if cerr := f.Close(); err == nil && cerr != nil { // the mapping outlives the descriptor
		munmap(data)
		err = fmt.Errorf("closing index %s: %w", x.path, cerr)
	}
	if err != nil {
		return err
	}
	// Bytes past n that the file held before may be stale entries (after a truncation): clear
	// them so that a crash never shows them. The rest of the file is new, hence zero, and
	// stays untouched (so unwritten pages cost no memory).
	if stale := min(int(oldSize), size); stale > int(n)*x.entrySize {
		clear(data[int(n)*x.entrySize : stale])
	}
	x.data, x.writable, x.maxEntries = data, true, maxEntries
	x.synced, x.mapErr = false, nil
	x.dirty.Store(true)
	x.n.Store(n)
	x.mapped.Store(true)
	return nil
}

// unmapLocked drops the mapping; mu is held.
func (x *index) unmapLocked() error {
	var err error
	if x.mapped.Load() {
		err = munmap(x.data)
		x.data = nil
		x.mapped.Store(false)
	}
	x.writable = false
	return err
}

// view returns the bytes of the entries, mapping a sealed index on first use. An index that
// cannot be mapped reads as empty, which only costs longer scans; the error is kept for logs.
func (x *index) view() []byte {
	if !x.mapped.Load() {
		x.mu.Lock()
		if !x.mapped.Load() && x.mapErr == nil {
			x.mapErr = x.mapSealedLocked()
		}
		x.mu.Unlock()
		if !x.mapped.Load() {
			return nil
		}
	}
	n := int(x.n.Load())
	return x.data[:n*x.entrySize]
}

func (x *index) mapSealedLocked() error {
	n := int(x.n.Load())
	if n == 0 {
		x.mapped.Store(true)
		return nil
	}
	f, err := os.Open(x.path)
	if err != nil {
		return fmt.Errorf("opening index %s: %w", x.path, err)
	}
	defer f.Close() // the mapping outlives the descriptor
	data, err := mmapFile(f, n*x.entrySize, false)
	if err != nil {
		return err
	}
	x.data = data
	x.mapped.Store(true)
	return nil
}

// entries is the number of entries.
func (x *index) entries() int { return int(x.n.Load()) }

// roomFor reports whether k more entries fit.
func (x *index) roomFor(k int) bool { return x.entries()+k <= x.maxEntries }

// appendEntry writes one entry (entrySize bytes) at the end. Writable indexes only; the caller
// checked the room.
func (x *index) appendEntry(e []byte) {
	n := x.n.Load()
	copy(x.data[int(n)*x.entrySize:], e)
	x.n.Store(n + 1)
	x.dirty.Store(true)
}

// truncate keeps the first k entries of a writable index and zeroes the rest.
func (x *index) truncate(k int) {
	n := x.entries()
	if k >= n {
		return
	}
	x.n.Store(int64(k))
	clear(x.data[k*x.entrySize : n*x.entrySize])
	x.dirty.Store(true)
}

// sync makes the entries durable: msync of a writable mapping, fsync of a sealed file.
func (x *index) sync() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.writable {
		// Cleared first: an entry written during the msync marks it dirty again.
		if !x.dirty.CompareAndSwap(true, false) {
			return nil
		}
		if err := msync(x.data); err != nil {
			x.dirty.Store(true)
			return fmt.Errorf("index %s: %w", x.path, err)
		}
		return nil
	}
	if x.synced {
		return nil
	}
	f, err := os.OpenFile(x.path, os.O_RDWR, 0)
	if os.IsNotExist(err) {
		return nil // deleted (retention) or replaced (compaction) meanwhile: nothing to keep
	}
	if err != nil {
		return fmt.Errorf("opening index %s to fsync: %w", x.path, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync index %s: %w", x.path, err)
	}
	x.synced = true
	return nil
}

// seal trims a writable index to its entries and unmaps it; it is mapped read-only again on
// the next lookup. The trimmed file is not fsynced here: sync does that.
func (x *index) seal() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.writable {
		return nil
	}
	if err := munmap(x.data); err != nil {
		return fmt.Errorf("index %s: %w", x.path, err)
	}
	x.data = nil
	x.mapped.Store(false)
	x.writable = false
	x.synced = false
	x.maxEntries = x.entries()
	err := os.Truncate(x.path, int64(x.entries()*x.entrySize))
	if os.IsNotExist(err) {
		return nil // deleted meanwhile (retention, a removed replica): nothing to trim
	}
	if err != nil {
		return fmt.Errorf("trimming index %s: %w", x.path, err)
	}
	return nil
}

// close releases the mapping and the file. A writable index is trimmed to its entries first
// when trim is set (a clean close), so that the next open finds exactly its entries.
func (x *index) close(trim bool) error {
	if x == nil {
		return nil
	}
	if trim {
		if err := x.seal(); err != nil {
			return err
		}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.unmapLocked()
}

// --- offset index ---

// offsetEntry decodes entry i of an offset index view.
func offsetEntry(v []byte, i int) (rel, pos uint32) {
	e := v[i*offsetIndexEntrySize:]
	return binary.BigEndian.Uint32(e), binary.BigEndian.Uint32(e[4:])
}

// lookupOffset returns the position of the last entry whose relative offset is at most rel, 0
// when there is none.
func lookupOffset(v []byte, rel uint32) uint32 {
	lo, hi := 0, len(v)/offsetIndexEntrySize // find the first entry with offset > rel
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if r, _ := offsetEntry(v, m); r <= rel {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return 0
	}
	_, pos := offsetEntry(v, lo-1)
	return pos
}

// lookupPosition returns the largest indexed position at most pos, 0 when there is none.
func lookupPosition(v []byte, pos uint32) uint32 {
	lo, hi := 0, len(v)/offsetIndexEntrySize
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if _, p := offsetEntry(v, m); p <= pos {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return 0
	}
	_, p := offsetEntry(v, lo-1)
	return p
}

func putOffsetEntry(e []byte, rel, pos uint32) {
	binary.BigEndian.PutUint32(e, rel)
	binary.BigEndian.PutUint32(e[4:], pos)
}

// --- time index ---

// timeEntry decodes entry i of a time index view.
func timeEntry(v []byte, i int) (ts int64, rel uint32) {
	e := v[i*timeIndexEntrySize:]
	return int64(binary.BigEndian.Uint64(e)), binary.BigEndian.Uint32(e[8:])
}

// lookupTime returns the relative offset of the last entry whose timestamp is at most ts.
func lookupTime(v []byte, ts int64) (rel uint32, ok bool) {
	lo, hi := 0, len(v)/timeIndexEntrySize
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t, _ := timeEntry(v, m); t <= ts {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return 0, false
	}
	_, rel = timeEntry(v, lo-1)
	return rel, true
}

func putTimeEntry(e []byte, ts int64, rel uint32) {
	binary.BigEndian.PutUint64(e, uint64(ts))
	binary.BigEndian.PutUint32(e[8:], rel)
}

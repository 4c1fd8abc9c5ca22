package storage

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

// File name suffixes of a segment, and of files in transit.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	cleanedSuffix   = ".cleaned" // compaction output being written
	swapSuffix      = ".swap"    // compaction output ready to replace its segment
	deletedSuffix   = ".deleted" // a segment being deleted
	snapshotSuffix  = ".snapshot"
)

// segmentPath names a segment's file: 20-digit zero-padded base offset, then the suffix.
func segmentPath(dir string, base int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", base, suffix))
}

// segment is one log file with its offset and time indexes. Its base offset is the first offset
// it may hold; batches in it are in increasing offset order, possibly with gaps.
//
// Concurrency: the owning Log's appender (holding Log.appendMu) is the only writer of the log
// file and the indexes of the active segment, and publishes each append by storing size and
// end after the bytes and index entries are in place; readers read below size only. Structural
// changes (seal, activate, truncate, swap and removal) happen under Log.segMu held for writing;
// readers look things up under Log.segMu held for reading and keep the file open past that
// through a reference (acquire / release).
type segment struct {
	dir  string
	base int64
	file *os.File
	oidx *index
	tidx *index

	size     atomic.Int64 // bytes of whole batches, readable
	end      atomic.Int64 // offset after the last batch; -1 when unknown (sealed, not scanned)
	maxTs    atomic.Int64 // largest batch maxTimestamp, -1 when none
	maxTsOff atomic.Int64 // last offset of the batch that first reached maxTs
	rollBase int64        // ms: when the segment got its first append, for segment.ms
	// rollJitterMs is subtracted from segment.ms for this segment (segment.jitter.ms), drawn
	// once when it is created so that segments of many partitions do not roll together.
	rollJitterMs int64

	// Appender-only state.
	bytesSinceIndex int64
	lastTimeEntry   int64 // timestamp of the last time index entry, -1 if none

	flushed   atomic.Int64 // bytes known durable
	idxSynced atomic.Bool  // sealed and indexes durable
	sealed    bool

	refs    atomic.Int32 // the Log's reference plus readers'
	removed atomic.Bool  // files deleted (or replaced): close when unreferenced

	verified        verifyState // which bytes are known good (see verify.go)
	corruptReported atomic.Bool
}

// createSegment creates an empty active segment. The caller fsyncs the directory.
func createSegment(dir string, base int64, cfg *LogConfig, nowMs int64) (*segment, error) {
	path := segmentPath(dir, base, logSuffix)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating segment %s: %w", path, err)
	}
	s := &segment{dir: dir, base: base, file: f, rollBase: nowMs, rollJitterMs: cfg.randomRollJitter(), lastTimeEntry: -1}
	s.end.Store(base)
	s.maxTs.Store(-1)
	s.maxTsOff.Store(base)
	s.refs.Store(1)
	if s.oidx, err = createIndex(segmentPath(dir, base, indexSuffix), offsetIndexEntrySize, cfg.MaxIndexBytes); err != nil {
		f.Close()
		return nil, err
	}
	if s.tidx, err = createIndex(segmentPath(dir, base, timeIndexSuffix), timeIndexEntrySize, cfg.MaxIndexBytes); err != nil {
		s.oidx.close(false)
		f.Close()
		return nil, err
	}
	return s, nil
}

// openSegmentFile opens an existing segment's log file; indexes are attached by the caller
// (loaded or rebuilt).
func openSegmentFile(dir string, base int64) (*segment, error) {
	path := segmentPath(dir, base, logSuffix)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("opening segment %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("stat segment %s: %w", path, err)
	}
	s := &segment{dir: dir, base: base, file: f, lastTimeEntry: -1, sealed: true}
	s.size.Store(fi.Size())
	s.flushed.Store(fi.Size())
	s.end.Store(-1)
	s.maxTs.Store(-1)
	s.maxTsOff.Store(base)
	s.refs.Store(1)
	s.rollBase = fi.ModTime().UnixMilli()
	s.verified.trustFrom(fi.Size()) // not read yet: checked when first served
	return s, nil
}

func (s *segment) String() string { return segmentPath(s.dir, s.base, logSuffix) }

// acquire takes a reference for a reader. The segment must be reachable (in the Log's list,
// under segMu), which guarantees a live reference.
func (s *segment) acquire() { s.refs.Add(1) }

// release drops a reference; the last one closes the files.
func (s *segment) release() {
	if s.refs.Add(-1) == 0 {
		s.closeFiles(false)
	}
}

// closeFiles closes the log file and the indexes.
func (s *segment) closeFiles(trim bool) error {
	err := s.oidx.close(trim)
	if e := s.tidx.close(trim); err == nil {
		err = e
	}
	if e := s.file.Close(); err == nil {
		err = e
	}
	return err
}

// deleteFiles unlinks the segment's files; open descriptors keep working until released.
func (s *segment) deleteFiles() error {
	s.removed.Store(true)
	var errs []error
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		if err := removeIfExists(segmentPath(s.dir, s.base, suffix)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// rel converts an offset of this segment to its 32-bit relative form.
func (s *segment) rel(offset int64) uint32 {
	d := offset - s.base
	if d < 0 {
		return 0
	}
	if d > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(d)
}

// batchInfo describes one batch of an append, as validation found it.
type batchInfo struct {
	pos         int // in the append's buffer
	size        int
	base        int64
	last        int64
	lastDelta   int32
	maxTs       int64
	count       int32
	pid         int64
	epoch       int16
	seq         int32
	leaderEpoch int32
	txn         bool // transactional
	control     bool // a control batch (commit or abort marker)
	ctype       batch.ControlType
}

// appendBatches writes buf (whole batches described by infos) at the end of the active
// segment, adds index entries, and publishes the new size and end.
func (s *segment) appendBatches(buf []byte, infos []batchInfo, indexInterval int32) error {
	start := s.size.Load()
	if _, err := s.file.WriteAt(buf, start); err != nil {
		// Cut a partial write, so that no whole batch of a failed append can reappear after a
		// restart; if that fails too, the next append overwrites it and recovery cuts the rest.
		if terr := s.file.Truncate(start); terr != nil {
			err = errors.Join(err, terr)
		}
		return fmt.Errorf("writing to %s: %w", s, err)
	}
	var e [timeIndexEntrySize]byte
	for i := range infos {
		b := &infos[i]
		if b.maxTs > s.maxTs.Load() {
			s.maxTs.Store(b.maxTs)
			s.maxTsOff.Store(b.last)
		}
		if s.bytesSinceIndex > int64(indexInterval) && s.oidx.roomFor(1) {
			pos := start + int64(b.pos)
			putOffsetEntry(e[:], s.rel(b.last), uint32(pos))
			s.oidx.appendEntry(e[:offsetIndexEntrySize])
			s.maybeAppendTimeEntry()
			s.bytesSinceIndex = 0
		}
		s.bytesSinceIndex += int64(b.size)
	}
	s.end.Store(infos[len(infos)-1].last + 1)
	s.size.Store(start + int64(len(buf)))
	return nil
}

// maybeAppendTimeEntry adds (maxTs, maxTsOff) to the time index if the maximum grew since the
// last entry and there is room.
func (s *segment) maybeAppendTimeEntry() {
	ts := s.maxTs.Load()
	if ts <= s.lastTimeEntry || !s.tidx.writable || !s.tidx.roomFor(1) {
		return
	}
	var e [timeIndexEntrySize]byte
	putTimeEntry(e[:], ts, s.rel(s.maxTsOff.Load()))
	s.tidx.appendEntry(e[:])
	s.lastTimeEntry = ts
}

// seal makes the active segment read-only: a final time index entry, indexes trimmed.
func (s *segment) seal() error {
	if s.sealed {
		return nil
	}
	s.maybeAppendTimeEntry()
	s.sealed = true
	if err := s.oidx.seal(); err != nil {
		return err
	}
	return s.tidx.seal()
}

// activate makes a sealed segment the active one again (after a truncation).
func (s *segment) activate(cfg *LogConfig) error {
	if !s.sealed {
		return nil
	}
	if err := s.oidx.activate(cfg.MaxIndexBytes, int64(s.oidx.entries()), false); err != nil {
		return err
	}
	if err := s.tidx.activate(cfg.MaxIndexBytes, int64(s.tidx.entries()), false); err != nil {
		return err
	}
	s.sealed = false
	s.idxSynced.Store(false)
	s.lastTimeEntry = -1
	if v := s.tidx.view(); len(v) > 0 {
		s.lastTimeEntry, _ = timeEntry(v, len(v)/timeIndexEntrySize-1)
	}
	s.bytesSinceIndex = s.size.Load()
	if v := s.oidx.view(); len(v) > 0 {
		_, pos := offsetEntry(v, len(v)/offsetIndexEntrySize-1)
		s.bytesSinceIndex = s.size.Load() - int64(pos)
	}
	return nil
}

// flush fsyncs the log file up to the current size, and for a sealed segment its indexes too.
func (s *segment) flush() error {
	size := s.size.Load()
	if s.flushed.Load() < size {
		if err := fdatasync(s.file); err != nil {
			return err
		}
		s.flushed.Store(size)
	}
	return nil
}

// syncIndexes makes the indexes durable (msync of the active ones, fsync of sealed files).
func (s *segment) syncIndexes() error {
	if err := s.oidx.sync(); err != nil {
		return err
	}
	return s.tidx.sync()
}

// --- reading batch headers ---

// headerBlock is the read size of headerReader: one pread serves every header in it.
const headerBlock = 16 << 10

var headerBlocks = sync.Pool{New: func() any { b := make([]byte, headerBlock); return &b }}

// headerReader reads batch headers of a segment file forward from a position, one pread per
// block rather than one per batch. It never reads at or past limit.
type headerReader struct {
	f     *os.File
	limit int64
	bufp  *[]byte
	off   int64 // file position of buf[0]
	n     int   // valid bytes in buf
}

func newHeaderReader(f *os.File, limit int64) headerReader {
	return headerReader{f: f, limit: limit, bufp: headerBlocks.Get().(*[]byte)}
}

func (r *headerReader) close() {
	if r.bufp != nil {
		headerBlocks.Put(r.bufp)
		r.bufp = nil
	}
}

// errTorn reports bytes at the end of a file that do not form a whole batch.
var errTorn = errors.New("incomplete batch")

// header returns the header of the batch at pos. It returns io.EOF at limit, an error wrapping
// errTorn when the batch is cut by limit, and a batch error when the bytes are not a v2 header.
func (r *headerReader) header(pos int64) (batch.Header, error) {
	if pos >= r.limit {
		return batch.Header{}, io.EOF
	}
	need := int64(batch.HeaderSize)
	if r.limit-pos < need {
		return batch.Header{}, fmt.Errorf("%w: %d bytes at position %d", errTorn, r.limit-pos, pos)
	}
	if pos < r.off || pos+need > r.off+int64(r.n) {
		buf := *r.bufp
		k := min(int64(len(buf)), r.limit-pos)
		n, err := r.f.ReadAt(buf[:k], pos)
		if int64(n) < need {
			if err == nil || err == io.EOF {
				err = fmt.Errorf("%w: file ends at %d", errTorn, pos+int64(n))
			}
			r.n = 0
			return batch.Header{}, fmt.Errorf("reading batch header at %d: %w", pos, err)
		}
		r.off, r.n = pos, n
	}
	b := (*r.bufp)[pos-r.off : pos-r.off+need]
	h, err := batch.ParseHeader(b)
	if err != nil {
		return h, err
	}
	if h.BatchLength < batch.MinBatchLength {
		return h, fmt.Errorf("%w: batchLength %d at position %d", batch.ErrCorrupt, h.BatchLength, pos)
	}
	if pos+int64(h.TotalSize()) > r.limit {
		return h, fmt.Errorf("%w: batch of %d bytes at position %d, file ends at %d", errTorn, h.TotalSize(), pos, r.limit)
	}
	return h, nil
}

// findBatch returns the position and header of the first batch at or after from whose last
// offset is at least offset, or io.EOF when no batch up to limit qualifies.
func (s *segment) findBatch(r *headerReader, offset int64, from int64) (int64, batch.Header, error) {
	pos := from
	if offset > s.base {
		if v := s.oidx.view(); len(v) > 0 {
			pos = max(pos, int64(lookupOffset(v, s.rel(offset))))
		}
	}
	for {
		h, err := r.header(pos)
		if err != nil {
			return pos, h, err
		}
		if h.LastOffset() >= offset {
			return pos, h, nil
		}
		pos += int64(h.TotalSize())
	}
}

// lastBoundary returns the end of the last whole batch that ends at most at maxPos, starting
// from from (a batch boundary); from itself when the first batch does not fit. It stops before
// a batch whose last offset reaches stopOffset.
func (s *segment) lastBoundary(r *headerReader, from, maxPos, stopOffset int64) (int64, error) {
	pos := from
	if v := s.oidx.view(); len(v) > 0 && maxPos < math.MaxUint32 {
		if p := int64(lookupPosition(v, uint32(maxPos))); p > pos {
			// An indexed batch at p starts before maxPos; it and the ones before it up to from
			// fit, unless the high watermark cuts earlier.
			if h, err := r.header(p); err == nil && h.LastOffset() < stopOffset {
				pos = p
			}
		}
	}
	for {
		h, err := r.header(pos)
		if err == io.EOF {
			return pos, nil
		}
		if err != nil {
			return pos, err
		}
		next := pos + int64(h.TotalSize())
		if next > maxPos || h.LastOffset() >= stopOffset {
			return pos, nil
		}
		pos = next
	}
}

// --- recovery ---

// scanResult is what a full scan of a segment found.
type scanResult struct {
	validBytes int64
	end        int64 // offset after the last valid batch; base when none
	batches    int
	cause      error // why the scan stopped before the end of the file, nil at a clean end
}

// largeBatch is the size above which recovery checks a batch's CRC by streaming it instead of
// reading it into memory whole.
const largeBatch = 8 << 20

// recoverIndexes reads the whole segment from position 0, checks every batch (framing, CRC,
// counts, offsets increasing, below maxOffset which is the next segment's base), rebuilds both
// indexes as a fresh active segment would have written them, and truncates the file at the
// first batch that fails. The segment must be unreachable by readers (opening) or the caller
// holds segMu for writing. The indexes are left writable; the caller seals non-active segments.
func (s *segment) recoverIndexes(cfg *LogConfig, maxOffset int64) (scanResult, error) {
	res := scanResult{end: s.base}
	for _, x := range []*index{s.oidx, s.tidx} {
		if x != nil {
			x.close(false)
		}
	}
	var err error
	if s.oidx, err = createIndex(segmentPath(s.dir, s.base, indexSuffix), offsetIndexEntrySize, indexBytesFor(cfg, s.size.Load(), offsetIndexEntrySize)); err != nil {
		return res, err
	}
	if s.tidx, err = createIndex(segmentPath(s.dir, s.base, timeIndexSuffix), timeIndexEntrySize, indexBytesFor(cfg, s.size.Load(), timeIndexEntrySize)); err != nil {
		return res, err
	}
	s.sealed = false
	s.bytesSinceIndex = 0
	s.lastTimeEntry = -1
	s.maxTs.Store(-1)
	s.maxTsOff.Store(s.base)

	size := s.size.Load()
	r := newHeaderReader(s.file, size)
	defer r.close()
	var big []byte
	pos := int64(0)
	next := s.base
	var e [timeIndexEntrySize]byte
	for {
		h, herr := r.header(pos)
		if herr == io.EOF {
			break
		}
		if herr != nil {
			res.cause = herr
			break
		}
		total := int64(h.TotalSize())
		if verr := s.checkBatchAt(&h, pos, total, &big); verr != nil {
			res.cause = verr
			break
		}
		if h.BaseOffset < next || h.LastOffset() >= maxOffset || h.LastOffset()-s.base > math.MaxInt32 {
			res.cause = fmt.Errorf("%w: batch [%d, %d] at position %d does not follow offset %d (segment %d, next segment %d)",
				batch.ErrCorrupt, h.BaseOffset, h.LastOffset(), pos, next, s.base, maxOffset)
			break
		}
		if h.MaxTimestamp > s.maxTs.Load() {
			s.maxTs.Store(h.MaxTimestamp)
			s.maxTsOff.Store(h.LastOffset())
		}
		if s.bytesSinceIndex > int64(cfg.IndexIntervalBytes) && s.oidx.roomFor(1) {
			putOffsetEntry(e[:], s.rel(h.LastOffset()), uint32(pos))
			s.oidx.appendEntry(e[:offsetIndexEntrySize])
			s.maybeAppendTimeEntry()
			s.bytesSinceIndex = 0
		}
		s.bytesSinceIndex += total
		next = h.NextOffset()
		pos += total
		res.batches++
	}
	res.validBytes = pos
	res.end = next
	if pos < size {
		if err := s.file.Truncate(pos); err != nil {
			return res, fmt.Errorf("truncating %s at %d: %w", s, pos, err)
		}
		if err := s.file.Sync(); err != nil {
			return res, fmt.Errorf("fsync %s: %w", s, err)
		}
		s.size.Store(pos)
	}
	s.flushed.Store(pos)
	s.end.Store(next)
	s.verified.trustAll() // every batch kept was just checked
	return res, nil
}

// indexBytesFor is the index capacity a rebuild needs: the configured size, or more when an
// existing segment is larger than the configuration now implies.
func indexBytesFor(cfg *LogConfig, size int64, entrySize int) int32 {
	need := int64(entrySize) * (size/int64(max(cfg.IndexIntervalBytes, batch.HeaderSize)) + 2)
	return int32(min(max(int64(cfg.MaxIndexBytes), need), math.MaxInt32))
}

// checkBatchAt validates the batch at pos: with batch.Validate when it fits in memory
// comfortably, else by streaming its CRC through a small buffer.
func (s *segment) checkBatchAt(h *batch.Header, pos, total int64, big *[]byte) error {
	if total <= largeBatch {
		if int64(cap(*big)) < total {
			*big = make([]byte, total)
		}
		b := (*big)[:total]
		if _, err := s.file.ReadAt(b, pos); err != nil {
			return fmt.Errorf("%w: reading batch at %d: %w", errTorn, pos, err)
		}
		if _, err := batch.Validate(b); err != nil {
			return fmt.Errorf("batch at position %d: %w", pos, err)
		}
		return nil
	}
	// A local equivalent of batch.Validate for a batch too large to hold: CRC streamed, then
	// the header checks Validate makes.
	buf := make([]byte, 1<<20)
	crc := uint32(0)
	for p := pos + 21; p < pos+total; {
		k := min(int64(len(buf)), pos+total-p)
		if _, err := s.file.ReadAt(buf[:k], p); err != nil {
			return fmt.Errorf("%w: reading batch at %d: %w", errTorn, pos, err)
		}
		crc = crc32.Update(crc, castagnoli, buf[:k])
		p += k
	}
	switch {
	case crc != h.CRC:
		return fmt.Errorf("%w: CRC-32C of the batch at %d is %#08x, batch says %#08x", batch.ErrCorrupt, pos, crc, h.CRC)
	case !h.Attributes.Codec().Valid():
		return fmt.Errorf("%w: codec %d at %d", batch.ErrCorrupt, h.Attributes.Codec(), pos)
	case h.RecordsCount < 0 || h.LastOffsetDelta < 0 || int64(h.RecordsCount) > int64(h.LastOffsetDelta)+1:
		return fmt.Errorf("%w: counts %d/%d at %d", batch.ErrInvalidRecord, h.RecordsCount, h.LastOffsetDelta, pos)
	}
	return nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// loadTail finds the end offset and timestamps of a segment whose indexes are trusted, by
// reading the headers after its last index entry.
func (s *segment) loadTail() error {
	var pos int64
	var maxTs int64 = -1
	maxTsOff := s.base
	if v := s.tidx.view(); len(v) > 0 {
		ts, rel := timeEntry(v, len(v)/timeIndexEntrySize-1)
		maxTs, maxTsOff = ts, s.base+int64(rel)
		s.lastTimeEntry = ts
	}
	if v := s.oidx.view(); len(v) > 0 {
		_, p := offsetEntry(v, len(v)/offsetIndexEntrySize-1)
		pos = int64(p)
	}
	r := newHeaderReader(s.file, s.size.Load())
	defer r.close()
	end := s.base
	lastIndexed := pos
	for {
		h, err := r.header(pos)
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("segment %s: %w", s, err)
		}
		if h.MaxTimestamp > maxTs {
			maxTs, maxTsOff = h.MaxTimestamp, h.LastOffset()
		}
		end = h.NextOffset()
		pos += int64(h.TotalSize())
	}
	if pos != s.size.Load() {
		return fmt.Errorf("segment %s: batches end at %d, file at %d", s, pos, s.size.Load())
	}
	s.end.Store(end)
	s.maxTs.Store(maxTs)
	s.maxTsOff.Store(maxTsOff)
	s.bytesSinceIndex = pos - lastIndexed
	return nil
}

// checkIndexes is a cheap sanity check of trusted indexes (Kafka's sanityCheck, a little
// stricter): entries inside the file and the segment's offset range (below maxOffset, the next
// segment's base), increasing at the ends, timestamps not negative.
func (s *segment) checkIndexes(maxOffset int64) error {
	size := s.size.Load()
	if v := s.oidx.view(); len(v) > 0 {
		n := len(v) / offsetIndexEntrySize
		r0, p0 := offsetEntry(v, 0)
		rl, pl := offsetEntry(v, n-1)
		if p0 == 0 || int64(pl) >= size || rl < r0 || pl < p0 || s.base+int64(rl) >= maxOffset {
			return fmt.Errorf("offset index of %s: entries (%d,%d)..(%d,%d) with file size %d", s, r0, p0, rl, pl, size)
		}
	} else if s.oidx.mapErr != nil {
		return s.oidx.mapErr
	}
	if v := s.tidx.view(); len(v) > 0 {
		n := len(v) / timeIndexEntrySize
		t0, r0 := timeEntry(v, 0)
		tl, rl := timeEntry(v, n-1)
		if t0 < 0 || tl < t0 || rl < r0 || s.base+int64(rl) >= maxOffset {
			return fmt.Errorf("time index of %s: entries (%d,%d)..(%d,%d)", s, t0, r0, tl, rl)
		}
	} else if s.tidx.mapErr != nil {
		return s.tidx.mapErr
	}
	return nil
}

// truncateTo removes the batch containing offset and everything after it. It returns the new
// end offset. Active segments only (the caller activates first); segMu held for writing.
func (s *segment) truncateTo(offset int64) (int64, error) {
	r := newHeaderReader(s.file, s.size.Load())
	pos, _, err := s.findBatch(&r, offset, 0)
	r.close()
	if err != nil && err != io.EOF {
		return 0, fmt.Errorf("truncating %s to offset %d: %w", s, offset, err)
	}
	if err == io.EOF {
		return s.end.Load(), nil // nothing at or after offset
	}
	if err := s.file.Truncate(pos); err != nil {
		return 0, fmt.Errorf("truncating %s at %d: %w", s, pos, err)
	}
	s.size.Store(pos)
	s.flushed.Store(min(s.flushed.Load(), pos))
	s.verified.truncate(pos)
	// Drop the index entries of removed batches.
	if v := s.oidx.view(); len(v) > 0 {
		k := 0
		for k < len(v)/offsetIndexEntrySize {
			if _, p := offsetEntry(v, k); int64(p) >= pos {
				break
			}
			k++
		}
		s.oidx.truncate(k)
	}
	// Recompute end and timestamps from the last surviving entries.
	if v := s.tidx.view(); len(v) > 0 {
		k := 0
		for k < len(v)/timeIndexEntrySize {
			_, rel := timeEntry(v, k)
			if s.base+int64(rel) >= offset {
				break
			}
			k++
		}
		s.tidx.truncate(k)
	}
	s.lastTimeEntry = -1
	if err := s.loadTail(); err != nil {
		return 0, err
	}
	return s.end.Load(), nil
}

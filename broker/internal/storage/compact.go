package storage

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"os"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

// Compaction (cleanup.policy=compact), after Kafka's log cleaner:
//
//  1. The cleanable range is the sealed segments wholly below the durable offset and the first
//     unstable offset (an open transaction's records may still be aborted) whose newest
//     timestamp is at least MinCompactionLagMs old, stopping at the first that is not.
//  2. A key map (128-bit hash of the key → latest offset) is built from the dirty part of the
//     range, from the cleaner checkpoint on, at most CompactionMaxKeys keys; where it fills
//     up, the pass stops (mapEnd) and the next pass continues from there. Records of aborted
//     transactions are left out of it, so they never shadow an earlier value of their key (as
//     in Kafka's cleaner); they stay until a later value of their key does.
//  3. Every segment holding records below mapEnd is rewritten: a record below mapEnd survives
//     if no later record has its key, and a surviving tombstone is dropped once its batch's
//     maxTimestamp is DeleteRetentionMs old; keyless records are dropped. Unchanged batches
//     are copied byte for byte; changed ones are rebuilt with their base offset, last offset
//     delta, producer id, epoch and base sequence, codec and leader epoch (so offsets are
//     preserved and the producer state still derives from them). A batch emptied entirely
//     disappears unless it is its producer's newest batch, which stays as an empty batch.
//     Control batches are kept.
//  4. Each rewritten segment is swapped in crash-safely: X.log.cleaned, X.index.cleaned and
//     X.timeindex.cleaned are written and fsynced; X.log.cleaned is renamed to X.log.swap
//     (the commit point, directory fsynced); the indexes are renamed over X.index and
//     X.timeindex, X.log.swap over X.log, and the directory is fsynced. Open completes a
//     leftover X.log.swap (and rebuilds its indexes) and deletes leftover .cleaned files.
//     Readers of the old segment keep its open files.

// Field offsets of the v2 header that compaction patches (package batch keeps its own
// unexported): a local helper, since batch.Builder cannot set them.
const (
	hdrBatchLength     = 8
	hdrCRC             = 17
	hdrAttributes      = 21
	hdrLastOffsetDelta = 23
	hdrRecordsCount    = 57
)

// Compact runs one compaction pass over the cleanable segments now, however little of the log
// is dirty. It is a no-op unless cleanup.policy includes compact.
func (l *Log) Compact(now time.Time) error {
	_, err := l.compact(now, true)
	return err
}

// compactIfNeeded runs a pass when the dirty share reaches MinCleanableDirtyRatio, a dirty
// segment is older than MaxCompactionLagMs, or a retained tombstone may have expired.
func (l *Log) compactIfNeeded(now time.Time) (bool, error) { return l.compact(now, false) }

// keyMap maps key hashes to the latest offset seen, bounded in size.
type keyMap struct {
	seeds [2]maphash.Seed
	m     map[[2]uint64]int64
	max   int
}

func newKeyMap(maxKeys int) *keyMap {
	return &keyMap{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, m: map[[2]uint64]int64{}, max: maxKeys}
}

func (k *keyMap) hash(key []byte) [2]uint64 {
	return [2]uint64{maphash.Bytes(k.seeds[0], key), maphash.Bytes(k.seeds[1], key)}
}

// put records offset for key; false when the map is full and the key is new.
func (k *keyMap) put(key []byte, offset int64) bool {
	h := k.hash(key)
	if _, ok := k.m[h]; !ok && len(k.m) >= k.max {
		return false
	}
	k.m[h] = offset
	return true
}

func (k *keyMap) get(key []byte) (int64, bool) {
	o, ok := k.m[k.hash(key)]
	return o, ok
}

// batchCursor reads whole batches of a segment in order.
type batchCursor struct {
	s   *segment
	r   headerReader
	pos int64
	buf []byte
}

// next returns the next batch at or after the cursor (its bytes valid until the next call).
func (c *batchCursor) next() ([]byte, batch.Header, error) {
	h, err := c.r.header(c.pos)
	if err != nil {
		return nil, h, err
	}
	size := int64(h.TotalSize())
	if int64(cap(c.buf)) < size {
		c.buf = make([]byte, size)
	}
	b := c.buf[:size]
	if _, err := c.s.file.ReadAt(b, c.pos); err != nil {
		return nil, h, fmt.Errorf("reading %s at %d: %w", c.s, c.pos, err)
	}
	c.pos += size
	return b, h, nil
}

func (l *Log) compact(now time.Time, force bool) (bool, error) {
	cfg := l.config()
	if !cfg.Compact {
		return false, nil
	}
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	if err := l.usable(); err != nil {
		return false, err
	}
	nowMs := now.UnixMilli()

	// 1. The cleanable segments.
	l.segMu.RLock()
	durable := l.durable.Load()
	unstable := l.FirstUnstableOffset() // an open transaction may still abort: not cleanable
	var segs []*segment
	cleanableEnd := int64(0)
	for i := 0; i < len(l.segs)-1; i++ {
		s, next := l.segs[i], l.segs[i+1]
		if next.base > durable || next.base > unstable {
			break
		}
		if cfg.MinCompactionLagMs > 0 && s.maxTs.Load() > nowMs-cfg.MinCompactionLagMs {
			break
		}
		s.acquire()
		segs = append(segs, s)
		cleanableEnd = next.base
	}
	l.segMu.RUnlock()
	defer func() {
		for _, s := range segs {
			s.release()
		}
	}()
	if len(segs) == 0 {
		return false, nil
	}
	dirtyStart := max(l.cleanerCheckpoint, l.logStart.Load())
	if !force {
		var dirty, total int64
		lagDue := false // a dirty segment's records are all older than max.compaction.lag.ms
		for _, s := range segs {
			total += s.size.Load()
			if s.base >= dirtyStart {
				dirty += s.size.Load()
				if ts := s.maxTs.Load(); ts >= 0 && nowMs-ts >= cfg.MaxCompactionLagMs {
					lagDue = true
				}
			}
		}
		tombstonesDue := l.tombstoneExpiry != 0 && nowMs >= l.tombstoneExpiry
		if !tombstonesDue && (dirtyStart >= cleanableEnd || !lagDue && float64(dirty) < cfg.MinCleanableDirtyRatio*float64(total)) {
			return false, nil
		}
	}

	// 2. The key map of the dirty part.
	km := newKeyMap(cfg.CompactionMaxKeys)
	mapEnd, err := l.buildKeyMap(segs, km, dirtyStart, cleanableEnd, cfg)
	if err != nil {
		return false, err
	}

	// 3 and 4. Rewrite and swap.
	l.appendMu.Lock()
	producerLast := l.producers.lastOffsets()
	l.appendMu.Unlock()
	c := cleaner{l: l, cfg: cfg, km: km, mapEnd: mapEnd, nowMs: nowMs, producerLast: producerLast, bld: batch.NewBuilder()}
	rewritten := 0
	for _, s := range segs {
		if s.base >= mapEnd {
			break
		}
		changed, err := c.clean(s)
		if err != nil {
			return rewritten > 0, fmt.Errorf("compacting %s: %w", s, err)
		}
		if changed {
			rewritten++
		}
	}
	l.cleanerCheckpoint = mapEnd
	l.tombstoneExpiry = c.minTombstoneExpiry
	l.logger.Debug("compaction pass", "dir", l.dir, "map_end", mapEnd, "keys", len(km.m), "segments_rewritten", rewritten)
	if rewritten > 0 {
		l.notify()
	}
	return rewritten > 0, nil
}

// buildKeyMap maps the keys of the records in [dirtyStart, end), in offset order, and returns
// where the map stops covering: end, or the first record whose key no longer fit.
func (l *Log) buildKeyMap(segs []*segment, km *keyMap, dirtyStart, end int64, cfg *LogConfig) (int64, error) {
	var it batch.Iterator
	for i, s := range segs {
		if i+1 < len(segs) && segs[i+1].base <= dirtyStart {
			continue // wholly below the dirty start
		}
		if err := l.mapSegment(s, km, dirtyStart, &it, cfg); err != nil {
			if full, ok := err.(mapFull); ok {
				return int64(full), nil
			}
			return 0, err
		}
	}
	return end, nil
}

// mapFull reports the offset where the key map filled up.
type mapFull int64

func (mapFull) Error() string { return "key map full" }

func (l *Log) mapSegment(s *segment, km *keyMap, from int64, it *batch.Iterator, cfg *LogConfig) error {
	c := batchCursor{s: s, r: newHeaderReader(s.file, s.size.Load())}
	defer c.r.close()
	if from > s.base {
		pos, _, err := s.findBatch(&c.r, from, 0)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		c.pos = pos
	}
	for {
		b, h, err := c.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if h.Attributes.Control() {
			continue
		}
		if h.Attributes.Transactional() && l.abortedBatch(h) {
			continue // aborted records never shadow an earlier value of their key
		}
		if err := it.Reset(b, int(cfg.MaxUncompressedBatchBytes)); err != nil {
			return batchError(fmt.Sprintf("batch at %d of %s", c.pos-int64(len(b)), s), err)
		}
		for it.Next() {
			rec := it.Record()
			if rec.Offset < from || rec.Key == nil {
				continue
			}
			if !km.put(rec.Key, rec.Offset) {
				return mapFull(rec.Offset)
			}
		}
		if err := it.Err(); err != nil {
			return batchError(fmt.Sprintf("batch at %d of %s", c.pos-int64(len(b)), s), err)
		}
	}
}

// cleaner rewrites segments during one pass.
type cleaner struct {
	l                  *Log
	cfg                *LogConfig
	km                 *keyMap
	mapEnd             int64
	nowMs              int64
	producerLast       map[int64]int64
	bld                *batch.Builder
	it                 batch.Iterator
	keep               []bool
	hdrs               []batch.RecordHeader
	out                []byte
	minTombstoneExpiry int64
}

// abortedBatch reports whether a transactional batch belongs to an aborted transaction.
func (l *Log) abortedBatch(h batch.Header) bool {
	for _, a := range l.producers.txn.collect(h.BaseOffset, h.LastOffset()+1) {
		if a.ProducerID == h.ProducerID && a.FirstOffset <= h.BaseOffset && h.BaseOffset < a.LastOffset {
			return true
		}
	}
	return false
}

// keepRecord decides the fate of one record below mapEnd.
func (c *cleaner) keepRecord(rec *batch.Record, maxTs int64) bool {
	if rec.Offset >= c.mapEnd {
		return true
	}
	if rec.Key == nil {
		return false
	}
	if latest, ok := c.km.get(rec.Key); ok && latest > rec.Offset {
		return false
	}
	if rec.Value == nil { // a tombstone, the latest of its key
		expiry := max(maxTs, 0) + c.cfg.DeleteRetentionMs
		if expiry <= c.nowMs {
			return false
		}
		if c.minTombstoneExpiry == 0 || expiry < c.minTombstoneExpiry {
			c.minTombstoneExpiry = max(expiry, 1)
		}
	}
	return true
}

// clean rewrites one segment; false when nothing in it changes.
func (c *cleaner) clean(s *segment) (bool, error) {
	l := c.l
	dir := l.dir
	cleanedLog := segmentPath(dir, s.base, logSuffix+cleanedSuffix)
	f, err := os.OpenFile(cleanedLog, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return false, fmt.Errorf("creating %s: %w", cleanedLog, err)
	}
	committed := false
	defer func() {
		if !committed {
			f.Close()
			for _, sfx := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
				removeIfExists(segmentPath(dir, s.base, sfx+cleanedSuffix))
			}
		}
	}()
	w := bufio.NewWriterSize(f, 256<<10)
	ib := indexBuilder{base: s.base, interval: int64(c.cfg.IndexIntervalBytes), maxTs: -1, lastTimeEntry: -1}
	changed := false
	var pos int64
	var end int64 = s.base
	cur := batchCursor{s: s, r: newHeaderReader(s.file, s.size.Load())}
	defer cur.r.close()
	for {
		b, h, err := cur.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return false, err
		}
		out, err := c.cleanBatch(b, &h)
		if err != nil {
			return false, err
		}
		if len(out) != len(b) || (len(out) > 0 && &out[0] != &b[0]) {
			changed = true
		}
		if len(out) == 0 {
			continue
		}
		if _, err := w.Write(out); err != nil {
			return false, fmt.Errorf("writing %s: %w", cleanedLog, err)
		}
		oh := batch.Raw(out)
		ib.add(pos, int64(len(out)), oh.LastOffset(), oh.MaxTimestamp())
		pos += int64(len(out))
		end = oh.LastOffset() + 1
	}
	if !changed {
		return false, nil
	}
	if err := w.Flush(); err != nil {
		return false, fmt.Errorf("writing %s: %w", cleanedLog, err)
	}
	if err := f.Sync(); err != nil {
		return false, fmt.Errorf("fsync %s: %w", cleanedLog, err)
	}
	if err := f.Close(); err != nil {
		return false, fmt.Errorf("closing %s: %w", cleanedLog, err)
	}
	ib.finish()
	if err := writeSynced(segmentPath(dir, s.base, indexSuffix+cleanedSuffix), ib.oidx); err != nil {
		return false, err
	}
	if err := writeSynced(segmentPath(dir, s.base, timeIndexSuffix+cleanedSuffix), ib.tidx); err != nil {
		return false, err
	}
	if pos == 0 {
		committed = true
		f.Close()
		for _, sfx := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
			removeIfExists(segmentPath(dir, s.base, sfx+cleanedSuffix))
		}
		return true, l.dropEmptySegment(s)
	}
	// Bind the old segment's indexes to their current files before they are replaced.
	s.oidx.view()
	s.tidx.view()
	swap := segmentPath(dir, s.base, logSuffix+swapSuffix)
	if err := os.Rename(cleanedLog, swap); err != nil {
		return false, fmt.Errorf("committing compaction of %s: %w", s, err)
	}
	committed = true
	if err := syncDir(dir); err != nil {
		return true, err
	}
	for _, sfx := range []string{indexSuffix, timeIndexSuffix} {
		if err := os.Rename(segmentPath(dir, s.base, sfx+cleanedSuffix), segmentPath(dir, s.base, sfx)); err != nil {
			return true, fmt.Errorf("swapping compacted index of %s: %w", s, err)
		}
	}
	if err := os.Rename(swap, segmentPath(dir, s.base, logSuffix)); err != nil {
		return true, fmt.Errorf("swapping compacted %s: %w", s, err)
	}
	if err := syncDir(dir); err != nil {
		return true, err
	}
	ns, err := openSegmentFile(dir, s.base)
	if err != nil {
		return true, err
	}
	if ns.oidx, err = openSealedIndex(segmentPath(dir, s.base, indexSuffix), offsetIndexEntrySize); err == nil {
		ns.tidx, err = openSealedIndex(segmentPath(dir, s.base, timeIndexSuffix), timeIndexEntrySize)
	}
	if err != nil {
		ns.file.Close()
		return true, err
	}
	ns.verified.trustAll() // written from batches validated during this pass
	ns.end.Store(end)
	ns.maxTs.Store(ib.maxTs)
	ns.maxTsOff.Store(ib.maxTsOff)
	ns.idxSynced.Store(true)
	l.segMu.Lock()
	for i, x := range l.segs {
		if x == s {
			l.segs[i] = ns
			break
		}
	}
	l.segMu.Unlock()
	s.removed.Store(true)
	s.release() // the Log's reference; readers' references keep the old files open
	return true, nil
}

// dropEmptySegment removes a sealed segment that compaction emptied.
func (l *Log) dropEmptySegment(s *segment) error {
	l.segMu.Lock()
	for i, x := range l.segs {
		if x == s {
			l.segs = append(l.segs[:i:i], l.segs[i+1:]...)
			break
		}
	}
	l.segMu.Unlock()
	err := s.deleteFiles()
	s.release()
	if serr := syncDir(l.dir); err == nil {
		err = serr
	}
	return err
}

// cleanBatch returns the batch as it survives: b itself when unchanged, a rebuilt batch, or
// nothing.
func (c *cleaner) cleanBatch(b []byte, h *batch.Header) ([]byte, error) {
	if h.Attributes.Control() || h.BaseOffset >= c.mapEnd {
		return b, nil
	}
	it := &c.it
	if err := it.Reset(b, int(c.cfg.MaxUncompressedBatchBytes)); err != nil {
		return nil, batchError("compacting", err)
	}
	c.keep = c.keep[:0]
	kept := 0
	for it.Next() {
		rec := it.Record()
		k := c.keepRecord(&rec, h.MaxTimestamp)
		c.keep = append(c.keep, k)
		if k {
			kept++
		}
	}
	if err := it.Err(); err != nil {
		return nil, batchError("compacting", err)
	}
	switch {
	case kept == len(c.keep):
		return b, nil
	case kept == 0:
		if last, ok := c.producerLast[h.ProducerID]; h.ProducerID >= 0 && ok && last == h.LastOffset() {
			return c.emptyBatch(b), nil // keeps the producer's sequence state derivable
		}
		return nil, nil
	}
	bld := c.bld
	bld.Reset()
	bld.SetCodec(h.Attributes.Codec())
	bld.SetBaseOffset(h.BaseOffset)
	bld.SetPartitionLeaderEpoch(h.PartitionLeaderEpoch)
	bld.SetProducer(h.ProducerID, h.ProducerEpoch, h.BaseSequence)
	bld.SetTransactional(h.Attributes.Transactional())
	if h.Attributes.LogAppendTime() {
		bld.SetLogAppendTime(h.MaxTimestamp)
	}
	if err := it.Reset(b, int(c.cfg.MaxUncompressedBatchBytes)); err != nil {
		return nil, batchError("compacting", err)
	}
	for i := 0; it.Next(); i++ {
		if !c.keep[i] {
			continue
		}
		rec := it.Record()
		c.hdrs = rec.AppendHeaders(c.hdrs[:0])
		if err := bld.AppendAt(rec.OffsetDelta, h.BaseTimestamp+rec.TimestampDelta, rec.Key, rec.Value, c.hdrs); err != nil {
			return nil, fmt.Errorf("compacting batch at offset %d: %w", h.BaseOffset, err)
		}
	}
	out, err := bld.AppendBatch(c.out[:0])
	if err != nil {
		return nil, fmt.Errorf("compacting batch at offset %d: %w", h.BaseOffset, err)
	}
	c.out = out
	if batch.Raw(out).LastOffsetDelta() != h.LastOffsetDelta {
		binary.BigEndian.PutUint32(out[hdrLastOffsetDelta:], uint32(h.LastOffsetDelta))
		binary.BigEndian.PutUint32(out[hdrCRC:], batch.Checksum(out))
	}
	return out, nil
}

// emptyBatch is b's header alone: no records, no codec, the same offsets, producer fields and
// timestamps.
func (c *cleaner) emptyBatch(b []byte) []byte {
	out := append(c.out[:0], b[:batch.HeaderSize]...)
	be := binary.BigEndian
	be.PutUint32(out[hdrBatchLength:], uint32(batch.HeaderSize-batch.LogOverhead))
	attrs := be.Uint16(out[hdrAttributes:]) &^ uint16(batch.AttrCodecMask)
	be.PutUint16(out[hdrAttributes:], attrs)
	be.PutUint32(out[hdrRecordsCount:], 0)
	be.PutUint32(out[hdrCRC:], batch.Checksum(out))
	c.out = out
	return out
}

// indexBuilder computes the index files of a segment written sequentially.
type indexBuilder struct {
	base, interval int64
	oidx, tidx     []byte
	bytesSince     int64
	maxTs          int64
	maxTsOff       int64
	lastTimeEntry  int64
}

func (b *indexBuilder) add(pos, size, last, maxTs int64) {
	if maxTs > b.maxTs {
		b.maxTs, b.maxTsOff = maxTs, last
	}
	if b.bytesSince > b.interval && last-b.base <= math.MaxUint32 {
		var e [timeIndexEntrySize]byte
		putOffsetEntry(e[:], uint32(last-b.base), uint32(pos))
		b.oidx = append(b.oidx, e[:offsetIndexEntrySize]...)
		b.maybeTimeEntry()
		b.bytesSince = 0
	}
	b.bytesSince += size
}

func (b *indexBuilder) maybeTimeEntry() {
	if b.maxTs <= b.lastTimeEntry {
		return
	}
	var e [timeIndexEntrySize]byte
	putTimeEntry(e[:], b.maxTs, uint32(b.maxTsOff-b.base))
	b.tidx = append(b.tidx, e[:]...)
	b.lastTimeEntry = b.maxTs
}

func (b *indexBuilder) finish() { b.maybeTimeEntry() }

// writeSynced writes a new file and fsyncs it (not its directory).
func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

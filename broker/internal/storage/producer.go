package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
)

// producerBatchesKept is how many recent batches per producer are remembered for duplicate
// detection: the number of in-flight requests an idempotent producer may have (Kafka's 5).
const producerBatchesKept = 5

// producerBatch is the metadata of one idempotent batch.
type producerBatch struct {
	firstSeq, lastSeq       int32
	firstOffset, lastOffset int64
	timestamp               int64
}

// producerEntry is what the log knows about one producer id.
type producerEntry struct {
	epoch         int16
	n             int // batches cached, newest last
	batches       [producerBatchesKept]producerBatch
	lastTimestamp int64
}

func (e *producerEntry) lastSeq() int32 {
	if e.n == 0 {
		return -1
	}
	return e.batches[e.n-1].lastSeq
}

func (e *producerEntry) add(b producerBatch) {
	if e.n == producerBatchesKept {
		copy(e.batches[:], e.batches[1:])
		e.n--
	}
	e.batches[e.n] = b
	e.n++
}

func (e *producerEntry) findDuplicate(first, last int32) (producerBatch, bool) {
	for i := 0; i < e.n; i++ {
		if b := e.batches[i]; b.firstSeq == first && b.lastSeq == last {
			return b, true
		}
	}
	return producerBatch{}, false
}

// producerStateManager follows Kafka's ProducerStateManager for idempotent (non-transactional)
// producers: per producer id the epoch and the last five batches. It is guarded by the Log's
// appendMu. Snapshots "%020d.snapshot" hold the state as of an offset (all batches below it).
type producerStateManager struct {
	dir       string
	logger    *slog.Logger
	producers map[int64]*producerEntry
	lastSnap  int64
	pidIndex  map[int64]int // scratch for appends with many batches
}

func newProducerStateManager(dir string, logger *slog.Logger) *producerStateManager {
	return &producerStateManager{dir: dir, logger: logger, producers: map[int64]*producerEntry{}, lastSnap: -1}
}

// incSeq adds delta to a sequence number, wrapping past MaxInt32 to 0 as Kafka does.
func incSeq(seq, delta int32) int32 {
	if seq > math.MaxInt32-delta {
		return delta - (math.MaxInt32 - seq) - 1
	}
	return seq + delta
}

func inSequence(last, next int32) bool {
	return next == last+1 || (next == 0 && last == math.MaxInt32)
}

// check validates the idempotent batches of a leader append against the state (and earlier
// batches of the same append). A duplicate of a cached batch makes the whole append a
// duplicate answered with the original offsets.
func (m *producerStateManager) check(infos []batchInfo) (producerBatch, bool, error) {
	useIndex := len(infos) > 16
	if useIndex {
		clear(m.pidIndex)
		if m.pidIndex == nil {
			m.pidIndex = map[int64]int{}
		}
	}
	for i := range infos {
		b := &infos[i]
		if b.pid < 0 {
			continue
		}
		last := incSeq(b.seq, b.lastDelta)
		e := m.producers[b.pid]
		if e != nil && e.epoch == b.epoch {
			if d, ok := e.findDuplicate(b.seq, last); ok {
				return d, true, nil
			}
		}
		prev := -1
		if useIndex {
			if j, ok := m.pidIndex[b.pid]; ok {
				prev = j
			}
			m.pidIndex[b.pid] = i
		} else {
			for j := i - 1; j >= 0; j-- {
				if infos[j].pid == b.pid {
					prev = j
					break
				}
			}
		}
		var epoch int16
		var curLast int32
		switch {
		case prev >= 0:
			epoch, curLast = infos[prev].epoch, incSeq(infos[prev].seq, infos[prev].lastDelta)
		case e != nil:
			epoch, curLast = e.epoch, e.lastSeq()
		default:
			continue // unknown producer (new, or its state expired): any sequence starts it
		}
		switch {
		case b.epoch < epoch:
			return producerBatch{}, false, fmt.Errorf("%w: producer %d epoch %d is older than the current epoch %d", ErrInvalidProducerEpoch, b.pid, b.epoch, epoch)
		case b.epoch != epoch:
			if b.seq != 0 {
				return producerBatch{}, false, fmt.Errorf("%w: producer %d starts epoch %d at sequence %d, not 0", ErrOutOfOrderSequence, b.pid, b.epoch, b.seq)
			}
		case !inSequence(curLast, b.seq):
			return producerBatch{}, false, fmt.Errorf("%w: producer %d epoch %d sent sequence %d after %d", ErrOutOfOrderSequence, b.pid, b.epoch, b.seq, curLast)
		}
	}
	return producerBatch{}, false, nil
}

// update records an appended batch (leader, follower or replay).
func (m *producerStateManager) update(b *batchInfo) {
	m.record(b.pid, b.epoch, b.seq, b.lastDelta, b.base, b.last, b.maxTs)
}

// replay records a batch read back from the log.
func (m *producerStateManager) replay(h *headerView) {
	m.record(h.ProducerID, h.ProducerEpoch, h.BaseSequence, h.LastOffsetDelta, h.BaseOffset, h.LastOffset(), h.MaxTimestamp)
}

func (m *producerStateManager) record(pid int64, epoch int16, seq, lastDelta int32, base, last, ts int64) {
	e := m.producers[pid]
	if e == nil {
		e = &producerEntry{epoch: epoch}
		m.producers[pid] = e
	}
	if e.epoch != epoch {
		e.epoch, e.n = epoch, 0
	}
	e.add(producerBatch{firstSeq: seq, lastSeq: incSeq(seq, lastDelta), firstOffset: base, lastOffset: last, timestamp: ts})
	e.lastTimestamp = max(e.lastTimestamp, ts)
}

// expire forgets producers whose newest batch is older than the expiration.
func (m *producerStateManager) expire(nowMs, expirationMs int64) int {
	n := 0
	for pid, e := range m.producers {
		if e.lastTimestamp < nowMs-expirationMs {
			delete(m.producers, pid)
			n++
		}
	}
	return n
}

// lastOffsets returns each producer's newest batch's last offset (compaction keeps that batch).
func (m *producerStateManager) lastOffsets() map[int64]int64 {
	out := make(map[int64]int64, len(m.producers))
	for pid, e := range m.producers {
		if e.n > 0 {
			out[pid] = e.batches[e.n-1].lastOffset
		}
	}
	return out
}

// --- snapshots ---

// Snapshot file format (big-endian), all of it covered by a CRC-32C:
//
//	"SPPS" magic, uint16 version (1), uint16 zero, uint32 CRC-32C of the bytes after it,
//	int64 offset (the state covers batches below it), uint32 producer count, then per producer:
//	int64 producer id, int16 epoch, int64 last timestamp, uint8 batch count, then per batch:
//	int32 first sequence, int32 last sequence, int64 first offset, int64 last offset,
//	int64 max timestamp.
const (
	snapshotMagic   = "SPPS"
	snapshotVersion = 1
	snapshotsKept   = 2
)

func snapshotPath(dir string, offset int64) string { return segmentPath(dir, offset, snapshotSuffix) }

func (m *producerStateManager) encode(offset int64) []byte {
	pids := make([]int64, 0, len(m.producers))
	for pid := range m.producers {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	be := binary.BigEndian
	b := make([]byte, 0, 24+len(pids)*(19+producerBatchesKept*32))
	b = append(b, snapshotMagic...)
	b = be.AppendUint16(b, snapshotVersion)
	b = be.AppendUint16(b, 0)
	b = be.AppendUint32(b, 0) // CRC, below
	b = be.AppendUint64(b, uint64(offset))
	b = be.AppendUint32(b, uint32(len(pids)))
	for _, pid := range pids {
		e := m.producers[pid]
		b = be.AppendUint64(b, uint64(pid))
		b = be.AppendUint16(b, uint16(e.epoch))
		b = be.AppendUint64(b, uint64(e.lastTimestamp))
		b = append(b, byte(e.n))
		for _, pb := range e.batches[:e.n] {
			b = be.AppendUint32(b, uint32(pb.firstSeq))
			b = be.AppendUint32(b, uint32(pb.lastSeq))
			b = be.AppendUint64(b, uint64(pb.firstOffset))
			b = be.AppendUint64(b, uint64(pb.lastOffset))
			b = be.AppendUint64(b, uint64(pb.timestamp))
		}
	}
	be.PutUint32(b[8:], crc32.Checksum(b[12:], castagnoli))
	return b
}

var errBadSnapshot = errors.New("invalid producer snapshot")

func decodeSnapshot(b []byte) (int64, map[int64]*producerEntry, error) {
	be := binary.BigEndian
	if len(b) < 24 || string(b[:4]) != snapshotMagic {
		return 0, nil, fmt.Errorf("%w: bad header", errBadSnapshot)
	}
	if v := be.Uint16(b[4:]); v != snapshotVersion || be.Uint16(b[6:]) != 0 {
		return 0, nil, fmt.Errorf("%w: version %d", errBadSnapshot, v)
	}
	if sum := crc32.Checksum(b[12:], castagnoli); sum != be.Uint32(b[8:]) {
		return 0, nil, fmt.Errorf("%w: CRC mismatch", errBadSnapshot)
	}
	offset := int64(be.Uint64(b[12:]))
	count := int(be.Uint32(b[20:]))
	p := b[24:]
	if count > len(p)/19 {
		return 0, nil, fmt.Errorf("%w: %d producers in %d bytes", errBadSnapshot, count, len(p))
	}
	out := make(map[int64]*producerEntry, count)
	for range count {
		if len(p) < 19 {
			return 0, nil, fmt.Errorf("%w: truncated", errBadSnapshot)
		}
		pid := int64(be.Uint64(p))
		e := &producerEntry{epoch: int16(be.Uint16(p[8:])), lastTimestamp: int64(be.Uint64(p[10:]))}
		n := int(p[18])
		p = p[19:]
		if n > producerBatchesKept || len(p) < n*32 {
			return 0, nil, fmt.Errorf("%w: producer %d has %d batches", errBadSnapshot, pid, n)
		}
		for i := range n {
			e.batches[i] = producerBatch{
				firstSeq:    int32(be.Uint32(p)),
				lastSeq:     int32(be.Uint32(p[4:])),
				firstOffset: int64(be.Uint64(p[8:])),
				lastOffset:  int64(be.Uint64(p[16:])),
				timestamp:   int64(be.Uint64(p[24:])),
			}
			p = p[32:]
		}
		e.n = n
		out[pid] = e
	}
	if len(p) != 0 {
		return 0, nil, fmt.Errorf("%w: %d trailing bytes", errBadSnapshot, len(p))
	}
	return offset, out, nil
}

// snapshotOffsets lists the offsets of the snapshot files, ascending.
func (m *producerStateManager) snapshotOffsets() ([]int64, error) {
	ents, err := os.ReadDir(m.dir)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", m.dir, err)
	}
	var out []int64
	for _, e := range ents {
		if off, ok := parseSegmentName(e.Name(), snapshotSuffix); ok {
			out = append(out, off)
		}
	}
	slices.Sort(out)
	return out, nil
}

// writeSnapshot writes the state as of offset (crash-safe), then removes all but the newest
// snapshots.
func (m *producerStateManager) writeSnapshot(offset int64) error {
	if offset == m.lastSnap {
		return nil
	}
	if err := writeFileAtomic(snapshotPath(m.dir, offset), m.encode(offset)); err != nil {
		return fmt.Errorf("writing producer snapshot: %w", err)
	}
	m.lastSnap = offset
	offs, err := m.snapshotOffsets()
	if err != nil {
		return err
	}
	for len(offs) > snapshotsKept {
		if err := removeIfExists(snapshotPath(m.dir, offs[0])); err != nil {
			return err
		}
		offs = offs[1:]
	}
	return nil
}

// loadLatest loads the newest valid snapshot at or below maxOffset, deleting newer and invalid
// ones, and returns its offset (0, with an empty state, when there is none).
func (m *producerStateManager) loadLatest(maxOffset int64) (int64, error) {
	m.producers = map[int64]*producerEntry{}
	m.lastSnap = -1
	offs, err := m.snapshotOffsets()
	if err != nil {
		return 0, err
	}
	for i := len(offs) - 1; i >= 0; i-- {
		path := snapshotPath(m.dir, offs[i])
		if offs[i] > maxOffset {
			if err := removeIfExists(path); err != nil {
				return 0, err
			}
			continue
		}
		b, err := os.ReadFile(path)
		var off int64
		var prods map[int64]*producerEntry
		if err == nil {
			off, prods, err = decodeSnapshot(b)
		}
		if err == nil && off != offs[i] {
			err = fmt.Errorf("%w: holds offset %d", errBadSnapshot, off)
		}
		if err != nil {
			m.logger.Warn("ignoring a producer snapshot", "file", filepath.Base(path), "err", err)
			if err := removeIfExists(path); err != nil {
				return 0, err
			}
			continue
		}
		m.producers = prods
		m.lastSnap = off
		return off, nil
	}
	return 0, nil
}

// truncateSnapshots removes snapshots above offset (after a log truncation).
func (m *producerStateManager) removeSnapshotsFrom(offset int64) error {
	offs, err := m.snapshotOffsets()
	if err != nil {
		return err
	}
	for _, o := range offs {
		if o > offset {
			if err := removeIfExists(snapshotPath(m.dir, o)); err != nil {
				return err
			}
		}
	}
	if m.lastSnap > offset {
		m.lastSnap = -1
	}
	return nil
}

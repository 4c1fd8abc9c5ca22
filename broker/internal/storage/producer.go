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

	"github.com/spoolmq/spool/protocol-spec/wire/batch"
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
	txn       *txnState     // open and aborted transactions (see txn.go)
	logStart  func() int64  // the log start, to trim the aborted list in snapshots
}

func newProducerStateManager(dir string, logger *slog.Logger) *producerStateManager {
	return &producerStateManager{dir: dir, logger: logger, producers: map[int64]*producerEntry{}, lastSnap: -1, txn: newTxnState(), logStart: func() int64 { return 0 }}
}

// incSeq adds delta to a sequence number, wrapping past MaxInt32 to 0 as Kafka does.
// noSequence is a batch's base sequence when it has none (Kafka's RecordBatch.NO_SEQUENCE).
const noSequence = -1

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
		e := m.producers[b.pid]
		if b.control {
			// A marker carries no sequence; it must not come from an older epoch.
			if e != nil && b.epoch < e.epoch {
				return producerBatch{}, false, fmt.Errorf("%w: marker for producer %d epoch %d is older than the current epoch %d", ErrInvalidProducerEpoch, b.pid, b.epoch, e.epoch)
			}
			continue
		}
		if b.seq == noSequence {
			// A coordinator's transactional records (TxnOffsetCommit offsets in
			// __consumer_offsets, as Kafka writes them) carry no sequence: only the epoch
			// is checked.
			if e != nil && b.epoch < e.epoch {
				return producerBatch{}, false, fmt.Errorf("%w: producer %d epoch %d is older than the current epoch %d", ErrInvalidProducerEpoch, b.pid, b.epoch, e.epoch)
			}
			continue
		}
		last := incSeq(b.seq, b.lastDelta)
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
	m.record(b.pid, b.epoch, b.seq, b.lastDelta, b.base, b.last, b.maxTs, b.txn, b.control, b.ctype)
}

// replay records a batch read back from the log; read fetches the whole batch (control
// batches only, for their marker type).
func (m *producerStateManager) replay(h *headerView, read func(*headerView) ([]byte, error)) error {
	txn, control := h.Attributes.Transactional(), h.Attributes.Control()
	var ct batch.ControlType
	if control {
		b, err := read(h)
		if err == nil {
			ct, err = controlType(b)
		}
		if err != nil {
			return fmt.Errorf("control batch at offset %d: %w", h.BaseOffset, err)
		}
	}
	m.record(h.ProducerID, h.ProducerEpoch, h.BaseSequence, h.LastOffsetDelta, h.BaseOffset, h.LastOffset(), h.MaxTimestamp, txn, control, ct)
	return nil
}

func (m *producerStateManager) record(pid int64, epoch int16, seq, lastDelta int32, base, last, ts int64, txn, control bool, ct batch.ControlType) {
	e := m.producers[pid]
	if e == nil {
		e = &producerEntry{epoch: epoch}
		m.producers[pid] = e
	}
	if e.epoch != epoch {
		e.epoch, e.n = epoch, 0
	}
	if !control {
		e.add(producerBatch{firstSeq: seq, lastSeq: incSeq(seq, lastDelta), firstOffset: base, lastOffset: last, timestamp: ts})
	}
	e.lastTimestamp = max(e.lastTimestamp, ts)
	if txn {
		m.txn.track(pid, control, ct, base, last)
	}
}

// expire forgets producers whose newest batch is older than the expiration.
func (m *producerStateManager) expire(nowMs, expirationMs int64) int {
	n := 0
	for pid, e := range m.producers {
		if _, open := m.txn.ongoing[pid]; open {
			continue // an open transaction holds the LSO until its marker; the coordinator ends it
		}
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
//
// Version 2 continues with the transactions: uint32 open count, then per open transaction
// int64 producer id and int64 first offset; uint32 aborted count, then per aborted transaction
// int64 producer id, int64 first offset, int64 marker offset. Version 1 files (no
// transactions) are still read.
const (
	snapshotMagic   = "SPPS"
	snapshotVersion = 2
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
	open := make([]int64, 0, len(m.txn.ongoing))
	for pid := range m.txn.ongoing {
		open = append(open, pid)
	}
	slices.Sort(open)
	b = be.AppendUint32(b, uint32(len(open)))
	for _, pid := range open {
		b = be.AppendUint64(b, uint64(pid))
		b = be.AppendUint64(b, uint64(m.txn.ongoing[pid]))
	}
	aborted := m.txn.snapshotAborted(m.logStart())
	b = be.AppendUint32(b, uint32(len(aborted)))
	for _, a := range aborted {
		b = be.AppendUint64(b, uint64(a.ProducerID))
		b = be.AppendUint64(b, uint64(a.FirstOffset))
		b = be.AppendUint64(b, uint64(a.LastOffset))
	}
	be.PutUint32(b[8:], crc32.Checksum(b[12:], castagnoli))
	return b
}

// snapshotState is a decoded snapshot.
type snapshotState struct {
	offset    int64
	producers map[int64]*producerEntry
	ongoing   map[int64]int64
	aborted   []AbortedTxn
}

var errBadSnapshot = errors.New("invalid producer snapshot")

func decodeSnapshot(b []byte) (snapshotState, error) {
	be := binary.BigEndian
	if len(b) < 24 || string(b[:4]) != snapshotMagic {
		return snapshotState{}, fmt.Errorf("%w: bad header", errBadSnapshot)
	}
	version := be.Uint16(b[4:])
	if (version != 1 && version != snapshotVersion) || be.Uint16(b[6:]) != 0 {
		return snapshotState{}, fmt.Errorf("%w: version %d", errBadSnapshot, version)
	}
	if sum := crc32.Checksum(b[12:], castagnoli); sum != be.Uint32(b[8:]) {
		return snapshotState{}, fmt.Errorf("%w: CRC mismatch", errBadSnapshot)
	}
	offset := int64(be.Uint64(b[12:]))
	count := int(be.Uint32(b[20:]))
	p := b[24:]
	if count > len(p)/19 {
		return snapshotState{}, fmt.Errorf("%w: %d producers in %d bytes", errBadSnapshot, count, len(p))
	}
	out := make(map[int64]*producerEntry, count)
	for range count {
		if len(p) < 19 {
			return snapshotState{}, fmt.Errorf("%w: truncated", errBadSnapshot)
		}
		pid := int64(be.Uint64(p))
		e := &producerEntry{epoch: int16(be.Uint16(p[8:])), lastTimestamp: int64(be.Uint64(p[10:]))}
		n := int(p[18])
		p = p[19:]
		if n > producerBatchesKept || len(p) < n*32 {
			return snapshotState{}, fmt.Errorf("%w: producer %d has %d batches", errBadSnapshot, pid, n)
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
	st := snapshotState{offset: offset, producers: out, ongoing: map[int64]int64{}}
	if version >= 2 {
		if len(p) < 4 {
			return snapshotState{}, fmt.Errorf("%w: truncated", errBadSnapshot)
		}
		n := int(be.Uint32(p))
		p = p[4:]
		if n > len(p)/16 {
			return snapshotState{}, fmt.Errorf("%w: %d open transactions in %d bytes", errBadSnapshot, n, len(p))
		}
		for range n {
			st.ongoing[int64(be.Uint64(p))] = int64(be.Uint64(p[8:]))
			p = p[16:]
		}
		if len(p) < 4 {
			return snapshotState{}, fmt.Errorf("%w: truncated", errBadSnapshot)
		}
		n = int(be.Uint32(p))
		p = p[4:]
		if n > len(p)/24 {
			return snapshotState{}, fmt.Errorf("%w: %d aborted transactions in %d bytes", errBadSnapshot, n, len(p))
		}
		st.aborted = make([]AbortedTxn, n)
		for i := range n {
			st.aborted[i] = AbortedTxn{ProducerID: int64(be.Uint64(p)), FirstOffset: int64(be.Uint64(p[8:])), LastOffset: int64(be.Uint64(p[16:]))}
			p = p[24:]
		}
	}
	if len(p) != 0 {
		return snapshotState{}, fmt.Errorf("%w: %d trailing bytes", errBadSnapshot, len(p))
	}
	return st, nil
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
	m.txn.reset(nil, nil)
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
		var st snapshotState
		if err == nil {
			st, err = decodeSnapshot(b)
		}
		if err == nil && st.offset != offs[i] {
			err = fmt.Errorf("%w: holds offset %d", errBadSnapshot, st.offset)
		}
		if err != nil {
			m.logger.Warn("ignoring a producer snapshot", "file", filepath.Base(path), "err", err)
			if err := removeIfExists(path); err != nil {
				return 0, err
			}
			continue
		}
		m.producers = st.producers
		m.txn.reset(st.ongoing, st.aborted)
		m.lastSnap = st.offset
		return st.offset, nil
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

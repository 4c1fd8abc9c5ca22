package storage

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

// batchHeader is the decoded v2 batch header of package batch.
type batchHeader = batch.Header

// AppendOptions says how Append treats the batches.
type AppendOptions struct {
	// LeaderEpoch is stamped into every batch when AssignOffsets is set, and recorded in the
	// leader epoch cache when it is new.
	LeaderEpoch int32
	// AssignOffsets: a leader append. The log assigns offsets from its end, stamps the leader
	// epoch, applies LogAppendTime, and checks idempotent producers' sequences and epochs. When
	// false (a follower append) batches keep their offsets, which must be increasing from the
	// log end, and producer state is updated without checks.
	AssignOffsets bool
	// Now is the append time (LogAppendTime, segment.ms); zero means time.Now().
	Now time.Time
	// Markers: a leader append of transaction markers (control batches) on the transaction
	// coordinator's behalf, which clients may never produce.
	Markers bool
}

// AppendResult describes an append.
type AppendResult struct {
	// BaseOffset and LastOffset are the first and last offsets of the appended batches; -1
	// for an empty append. For a duplicate they are those of the original batch.
	BaseOffset, LastOffset int64
	// LogAppendTime is the time stamped under LogAppendTime, -1 under CreateTime.
	LogAppendTime int64
	// LogStartOffset is the log start offset after the append.
	LogStartOffset int64
	// Duplicate: the batch repeats one an idempotent producer already wrote (a retry); nothing
	// was appended.
	Duplicate bool
}

// appendScratch is the per-append state reused through a pool, so that an append allocates
// nothing per batch or record once warm.
type appendScratch struct {
	infos []batchInfo
	it    batch.Iterator
}

var appendScratches = sync.Pool{New: func() any { return new(appendScratch) }}

// Append validates records (one or more v2 batches) and appends them.
//
// Ownership: Append rewrites records in place (base offsets, leader epochs, and under
// LogAppendTime the timestamp and CRC) and does not keep the slice after it returns.
//
// Validation happens before any lock: each batch must pass batch validation (magic, lengths,
// CRC-32C, counts) and have its records parsed (decompressed within
// MaxUncompressedBatchBytes); a leader append also requires producer rules (records present,
// no offset gaps, no control batch) and, in a compacted log, a key on every record. The first
// bad batch fails the whole append with an error wrapping ErrCorruptMessage, ErrInvalidRecord,
// ErrUnsupportedMagic or ErrMessageTooLarge; an append larger than segment.bytes fails with
// ErrRecordListTooLarge. Idempotent producer checks may answer Duplicate,
// ErrOutOfOrderSequence or ErrInvalidProducerEpoch.
//
// The data is written (one write) but not necessarily durable: call WaitDurable with
// LastOffset+1 before acknowledging.
func (l *Log) Append(records []byte, opt AppendOptions) (AppendResult, error) {
	res := AppendResult{BaseOffset: -1, LastOffset: -1, LogAppendTime: -1}
	cfg := l.config()
	now := opt.Now
	if now.IsZero() {
		now = time.Now()
	}
	nowMs := now.UnixMilli()
	if len(records) == 0 {
		res.LogStartOffset = l.logStart.Load()
		return res, nil
	}
	if int64(len(records)) > cfg.SegmentBytes {
		return res, fmt.Errorf("%w: an append of %d bytes exceeds segment.bytes %d", ErrRecordListTooLarge, len(records), cfg.SegmentBytes)
	}
	sc := appendScratches.Get().(*appendScratch)
	defer appendScratches.Put(sc)
	infos, err := validateBatches(records, cfg, opt.AssignOffsets, opt.Markers, nowMs, sc)
	sc.infos = infos[:0]
	if err != nil {
		return res, err
	}

	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.usable(); err != nil {
		return res, err
	}
	leo := l.leo.Load()

	// Offsets, and the producer checks that depend on them.
	if opt.AssignOffsets {
		if dup, ok, err := l.producers.check(infos); err != nil {
			return res, err
		} else if ok {
			res.BaseOffset, res.LastOffset, res.Duplicate = dup.firstOffset, dup.lastOffset, true
			if cfg.TimestampType == LogAppendTime {
				res.LogAppendTime = dup.timestamp // the original batch's append time
			}
			res.LogStartOffset = l.logStart.Load()
			return res, nil
		}
		next := leo
		for i := range infos {
			b := &infos[i]
			buf := records[b.pos : b.pos+b.size]
			b.base = next
			b.last = next + int64(b.lastDelta)
			batch.SetBaseOffset(buf, b.base)
			batch.SetPartitionLeaderEpoch(buf, opt.LeaderEpoch)
			b.leaderEpoch = opt.LeaderEpoch
			if cfg.TimestampType == LogAppendTime {
				if err := batch.SetLogAppendTime(buf, nowMs); err != nil {
					return res, batchError(fmt.Sprintf("batch %d", i), err)
				}
				b.maxTs = nowMs
			}
			next = b.last + 1
		}
		if cfg.TimestampType == LogAppendTime {
			res.LogAppendTime = nowMs
		}
	} else {
		next := leo
		for i := range infos {
			b := &infos[i]
			if b.base < next {
				return res, fmt.Errorf("%w: batch %d starts at offset %d, expected at least %d", ErrUnexpectedAppendOffset, i, b.base, next)
			}
			next = b.last + 1
		}
	}
	first, last := infos[0].base, infos[len(infos)-1].last

	l.segMu.RLock()
	active := l.segs[len(l.segs)-1] // stays active: only the appender rolls
	l.segMu.RUnlock()
	if l.needsRoll(active, cfg, len(records), len(infos), first, last, nowMs) {
		if active, err = l.roll(active, first, nowMs); err != nil {
			return res, err
		}
	}
	if active.size.Load() == 0 {
		active.rollBase = nowMs
	}
	if err := active.appendBatches(records, infos, cfg.IndexIntervalBytes); err != nil {
		return res, err
	}
	var count int64
	for i := range infos {
		b := &infos[i]
		count += int64(b.count)
		if b.pid >= 0 {
			l.producers.update(b)
		}
		if b.leaderEpoch >= 0 && b.leaderEpoch > l.epochs.latestEpoch() {
			if err := l.epochs.assign(b.leaderEpoch, b.base); err != nil {
				l.logger.Error("writing the leader epoch checkpoint", "dir", l.dir, "err", err)
			}
		}
	}
	l.leo.Store(last + 1)
	l.notify()
	l.afterAppend(cfg, count)

	res.BaseOffset, res.LastOffset = first, last
	res.LogStartOffset = l.logStart.Load()
	return res, nil
}

// validateBatches splits records into batches and validates each, filling infos (from the
// scratch) with what the append needs. No lock is held: validation of concurrent appends runs
// in parallel.
func validateBatches(records []byte, cfg *LogConfig, client, markers bool, nowMs int64, sc *appendScratch) ([]batchInfo, error) {
	infos := sc.infos[:0]
	s := batch.NewScanner(records)
	for s.Next() {
		b := s.Batch()
		i := len(infos)
		if len(b) > int(cfg.MaxMessageBytes) {
			return infos, fmt.Errorf("%w: batch %d is %d bytes, max.message.bytes is %d", ErrMessageTooLarge, i, len(b), cfg.MaxMessageBytes)
		}
		var h batch.Header
		if client {
			it := &sc.it
			if err := it.Reset(b, int(cfg.MaxUncompressedBatchBytes)); err != nil {
				return infos, batchError(fmt.Sprintf("batch %d", i), err)
			}
			h = it.Header()
			switch {
			case h.RecordsCount == 0:
				return infos, fmt.Errorf("%w: batch %d has no records", ErrInvalidRecord, i)
			case int64(h.RecordsCount) != int64(h.LastOffsetDelta)+1:
				return infos, fmt.Errorf("%w: batch %d has %d records but lastOffsetDelta %d", ErrInvalidRecord, i, h.RecordsCount, h.LastOffsetDelta)
			case h.Attributes.Control() && !markers:
				return infos, fmt.Errorf("%w: batch %d: clients may not produce control batches", ErrInvalidRecord, i)
			case markers && !h.Attributes.Control():
				return infos, fmt.Errorf("%w: batch %d: a marker append holds control batches only", ErrInvalidRecord, i)
			}
			for it.Next() {
				r := it.Record()
				if h.Attributes.Control() {
					continue
				}
				if cfg.Compact && r.Key == nil {
					return infos, fmt.Errorf("%w: batch %d: a compacted topic does not accept a record without key", ErrInvalidRecord, i)
				}
				if cfg.TimestampType == CreateTime {
					if err := checkTimestamp(cfg, r.Timestamp, nowMs); err != nil {
						return infos, fmt.Errorf("%w: batch %d, offset delta %d: %v", ErrInvalidTimestamp, i, r.OffsetDelta, err)
					}
				}
			}
			if err := it.Err(); err != nil {
				return infos, batchError(fmt.Sprintf("batch %d", i), err)
			}
		} else {
			var err error
			if h, err = batch.Validate(b); err != nil {
				return infos, batchError(fmt.Sprintf("batch %d", i), err)
			}
			if h.LastOffset()-h.BaseOffset > math.MaxInt32 {
				return infos, fmt.Errorf("%w: batch %d spans too many offsets", ErrInvalidRecord, i)
			}
		}
		var ct batch.ControlType
		if h.Attributes.Control() {
			var err error
			if ct, err = controlType(b); err != nil {
				return infos, batchError(fmt.Sprintf("batch %d", i), err)
			}
		}
		infos = append(infos, batchInfo{
			pos:         s.Position(),
			size:        len(b),
			base:        h.BaseOffset,
			last:        h.LastOffset(),
			lastDelta:   h.LastOffsetDelta,
			maxTs:       h.MaxTimestamp,
			count:       h.RecordsCount,
			pid:         h.ProducerID,
			epoch:       h.ProducerEpoch,
			seq:         h.BaseSequence,
			leaderEpoch: h.PartitionLeaderEpoch,
			txn:         h.Attributes.Transactional(),
			control:     h.Attributes.Control(),
			ctype:       ct,
		})
	}
	if err := s.Err(); err != nil {
		return infos, batchError(fmt.Sprintf("batch %d", len(infos)), err)
	}
	return infos, nil
}

// checkTimestamp applies message.timestamp.before.max.ms and after.max.ms to a CreateTime
// record timestamp.
func checkTimestamp(cfg *LogConfig, ts, nowMs int64) error {
	switch {
	case ts < nowMs && nowMs-ts > cfg.TimestampBeforeMaxMs:
		return fmt.Errorf("timestamp %d is %d ms behind the broker's clock, more than message.timestamp.before.max.ms %d", ts, nowMs-ts, cfg.TimestampBeforeMaxMs)
	case ts > nowMs && ts-nowMs > cfg.TimestampAfterMaxMs:
		return fmt.Errorf("timestamp %d is %d ms ahead of the broker's clock, more than message.timestamp.after.max.ms %d", ts, ts-nowMs, cfg.TimestampAfterMaxMs)
	}
	return nil
}

// needsRoll decides whether the append must go to a new segment.
func (l *Log) needsRoll(s *segment, cfg *LogConfig, size, batches int, first, last int64, nowMs int64) bool {
	if s.size.Load() == 0 {
		return last-s.base > math.MaxInt32 || first < s.base
	}
	switch {
	case s.size.Load()+int64(size) > cfg.SegmentBytes:
	case nowMs-s.rollBase > cfg.SegmentMs-s.rollJitterMs:
	case !s.oidx.roomFor(batches) || !s.tidx.roomFor(batches+1): // +1: the entry sealing adds
	case last-s.base > math.MaxInt32:
	default:
		return false
	}
	return true
}

// roll seals the active segment old and starts a new one at base. appendMu held.
func (l *Log) roll(old *segment, base int64, nowMs int64) (*segment, error) {
	cfg := l.config()
	if old.size.Load() == 0 && old.base == base {
		return old, nil
	}
	s, err := createSegment(l.dir, base, cfg, nowMs)
	if err != nil {
		return nil, err
	}
	if err := syncDir(l.dir); err != nil {
		s.closeFiles(false)
		return nil, err
	}
	// The producer state as of the new segment's start, so that recovery replays at most one
	// segment.
	if err := l.producers.writeSnapshot(l.leo.Load()); err != nil {
		l.logger.Warn("writing a producer state snapshot", "dir", l.dir, "err", err)
	}
	l.segMu.Lock()
	err = old.seal()
	if old.size.Load() == 0 {
		// An empty segment (possible after a truncation) is replaced rather than kept.
		l.segs = slices.Delete(l.segs, len(l.segs)-1, len(l.segs))
		old.removed.Store(true)
		if derr := old.deleteFiles(); derr != nil && err == nil {
			err = derr
		}
		old.release()
	}
	l.segs = append(l.segs, s)
	l.segMu.Unlock()
	if err != nil {
		l.logger.Error("sealing a segment", "segment", old.String(), "err", err)
	}
	l.logger.Debug("rolled a new segment", "dir", l.dir, "base", base)
	l.kickFlush() // make the sealed segment durable without waiting for the next WaitDurable
	return s, nil
}

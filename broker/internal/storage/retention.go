package storage

import (
	"errors"
	"fmt"
	"time"
)

// EnforceRetention deletes whole old segments, oldest first, while one of these holds for the
// oldest: the next segment starts at or below the log start offset (DeleteRecordsBefore); with
// cleanup.policy=delete, its newest timestamp (the file's mtime when it has none) is more than
// RetentionMs old, or the log minus it is still at least RetentionBytes. The active segment is
// never deleted. It returns the number of segments deleted and raises the log start offset to
// the first remaining segment. Readers holding a ReadResult keep reading deleted segments.
func (l *Log) EnforceRetention(now time.Time) (int, error) {
	cfg := l.config()
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	if err := l.usable(); err != nil {
		return 0, err
	}
	nowMs := now.UnixMilli()
	l.segMu.RLock()
	segs := l.segs
	logStart := l.logStart.Load()
	var total int64
	for _, s := range segs {
		total += s.size.Load()
	}
	diff := total - cfg.RetentionBytes
	k := 0
	for k < len(segs)-1 {
		s := segs[k]
		size := s.size.Load()
		del := segs[k+1].base <= logStart
		if cfg.Delete {
			if cfg.RetentionMs >= 0 {
				ts := s.maxTs.Load()
				if ts < 0 {
					if fi, err := s.file.Stat(); err == nil {
						ts = fi.ModTime().UnixMilli()
					}
				}
				if nowMs-ts > cfg.RetentionMs {
					del = true
				}
			}
			if cfg.RetentionBytes >= 0 && diff-size >= 0 {
				del = true
			}
		}
		if !del {
			break
		}
		diff -= size
		k++
	}
	l.segMu.RUnlock()
	if k == 0 {
		return 0, nil
	}
	return k, l.deleteOldest(k, "retention")
}

// deleteOldest removes the k oldest segments (never the active one). cleanMu held.
func (l *Log) deleteOldest(k int, why string) error {
	l.segMu.Lock()
	k = min(k, len(l.segs)-1)
	removed := append([]*segment(nil), l.segs[:k]...)
	l.segs = append([]*segment(nil), l.segs[k:]...)
	start := max(l.logStart.Load(), l.segs[0].base)
	l.logStart.Store(start)
	l.segMu.Unlock()
	var errs []error
	for _, s := range removed {
		if err := s.deleteFiles(); err != nil {
			errs = append(errs, err)
		}
		s.release()
		l.logger.Info("deleted segment", "segment", s.String(), "reason", why)
	}
	l.appendMu.Lock()
	if err := l.epochs.truncateFromStart(start); err != nil {
		errs = append(errs, err)
	}
	l.appendMu.Unlock()
	l.notify()
	return errors.Join(errs...)
}

// DeleteRecordsBefore raises the log start offset to offset (DeleteRecords): reads below it
// fail with ErrOffsetOutOfRange at once, and the segments wholly below it are deleted. offset
// must be at most the log end (the caller checks the high watermark).
func (l *Log) DeleteRecordsBefore(offset int64) error {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	if offset < 0 || offset > l.leo.Load() {
		return fmt.Errorf("%w: cannot delete records before %d, log end is %d", ErrOffsetOutOfRange, offset, l.leo.Load())
	}
	if offset <= l.logStart.Load() {
		return nil
	}
	l.logStart.Store(offset)
	l.segMu.RLock()
	k := 0
	for k < len(l.segs)-1 && l.segs[k+1].base <= offset {
		k++
	}
	l.segMu.RUnlock()
	if k == 0 {
		l.appendMu.Lock()
		err := l.epochs.truncateFromStart(offset)
		l.appendMu.Unlock()
		l.notify()
		return err
	}
	return l.deleteOldest(k, "log start offset")
}

// Truncate removes every batch at or after endOffset (the batch containing endOffset too), for
// a follower that diverged from its leader. Later segments are deleted, the producer state is
// rebuilt, the leader epoch cache truncated. An endOffset below the first segment empties the
// log and restarts it there.
func (l *Log) Truncate(endOffset int64) error {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	if endOffset >= l.leo.Load() {
		return nil
	}
	l.segMu.RLock()
	first := l.segs[0].base
	l.segMu.RUnlock()
	if endOffset < first {
		return l.truncateFullyLocked(endOffset)
	}
	cfg := l.config()
	l.flushSem <- struct{}{}
	defer func() { <-l.flushSem }()

	l.segMu.Lock()
	i := l.floorSegment(endOffset)
	var errs []error
	for j := len(l.segs) - 1; j > i; j-- { // newest first: a crash leaves a prefix
		s := l.segs[j]
		if err := s.deleteFiles(); err != nil {
			errs = append(errs, err)
		}
		s.release()
	}
	l.segs = l.segs[:i+1]
	s := l.segs[i]
	var newEnd int64
	err := s.activate(cfg)
	if err == nil {
		newEnd, err = s.truncateTo(endOffset)
	}
	l.segMu.Unlock()
	if err != nil {
		l.fail(err)
		return err
	}
	if err := fdatasync(s.file); err != nil {
		l.fail(err)
		return err
	}
	if err := syncDir(l.dir); err != nil {
		errs = append(errs, err)
	}
	l.leo.Store(newEnd)
	if l.durable.Load() > newEnd {
		l.durable.Store(newEnd)
	}
	if l.logStart.Load() > newEnd {
		l.logStart.Store(newEnd)
	}
	if err := l.epochs.truncateFromEnd(newEnd); err != nil {
		errs = append(errs, err)
	}
	if err := l.producers.removeSnapshotsFrom(newEnd); err != nil {
		errs = append(errs, err)
	}
	if err := l.loadProducerState(); err != nil {
		errs = append(errs, err)
	}
	l.cleanerCheckpoint = min(l.cleanerCheckpoint, newEnd)
	l.logger.Info("truncated log", "dir", l.dir, "requested", endOffset, "log_end", newEnd)
	l.notify()
	return errors.Join(errs...)
}

// TruncateFullyAndStartAt deletes every segment and restarts the log empty at offset (a
// follower too far behind its leader's log start).
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	return l.truncateFullyLocked(offset)
}

func (l *Log) truncateFullyLocked(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("%w: cannot restart the log at %d", ErrOffsetOutOfRange, offset)
	}
	cfg := l.config()
	l.flushSem <- struct{}{}
	defer func() { <-l.flushSem }()
	l.segMu.Lock()
	var errs []error
	for j := len(l.segs) - 1; j >= 0; j-- {
		s := l.segs[j]
		if err := s.deleteFiles(); err != nil {
			errs = append(errs, err)
		}
		s.release()
	}
	l.segs = nil
	s, err := createSegment(l.dir, offset, cfg, time.Now().UnixMilli())
	if err != nil {
		l.segMu.Unlock()
		l.fail(err)
		return err
	}
	l.segs = []*segment{s}
	l.leo.Store(offset)
	l.durable.Store(offset)
	l.logStart.Store(offset)
	l.segMu.Unlock()
	if err := syncDir(l.dir); err != nil {
		errs = append(errs, err)
	}
	if err := l.epochs.clear(); err != nil {
		errs = append(errs, err)
	}
	if err := l.producers.removeSnapshotsFrom(-1); err != nil {
		errs = append(errs, err)
	}
	l.producers.producers = map[int64]*producerEntry{}
	l.producers.txn.reset(nil, nil)
	l.cleanerCheckpoint = offset
	l.logger.Info("restarted log", "dir", l.dir, "offset", offset)
	l.notify()
	return errors.Join(errs...)
}

// ExpireProducers forgets idempotent producers whose newest batch is older than
// ProducerIDExpirationMs, bounding the producer state. It returns how many it forgot.
func (l *Log) ExpireProducers(now time.Time) int {
	cfg := l.config()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed.Load() {
		return 0
	}
	return l.producers.expire(now.UnixMilli(), cfg.ProducerIDExpirationMs)
}

package storage

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Log is one partition's durable segmented log. See the package documentation for the on-disk
// format and the concurrency contract; in short, every method is safe for concurrent use.
type Log struct {
	dir    string
	logger *slog.Logger
	cfg    atomic.Pointer[LogConfig]

	// Lock order: cleanMu, appendMu, flushSem, segMu, chMu.

	// cleanMu serializes the operations that remove or rewrite whole segments: retention,
	// DeleteRecordsBefore, compaction, truncation, Close.
	cleanMu sync.Mutex
	// appendMu serializes appends and everything the appender owns: the active segment's
	// writes, rolls, producer state, the leader epoch cache.
	appendMu sync.Mutex
	// flushSem (capacity 1) admits one flush at a time: sync rounds, background flushes, Flush.
	flushSem chan struct{}
	// syncer runs the group commits WaitDurable waits for; syncRound and syncIndex say where
	// this log is queued in it (guarded by syncer.mu, a leaf lock).
	syncer    *syncer
	syncRound *syncRound
	syncIndex int
	// segMu guards segs: readers look segments up under RLock; seal, roll, truncation, swaps and
	// removals take Lock.
	segMu sync.RWMutex
	segs  []*segment // by base offset; the last one is active

	logStart atomic.Int64
	leo      atomic.Int64 // log end offset, published after the bytes are written
	durable  atomic.Int64 // every offset below is fsynced
	closed   atomic.Bool
	failed   atomic.Pointer[error] // a failed fsync: the log refuses further writes

	producers *producerStateManager // guarded by appendMu
	epochs    *epochCache           // guarded by appendMu

	// Background flushing (FsyncInterval, rolls).
	bgMu         sync.Mutex // guards bgWG.Add against Close
	bgWG         sync.WaitGroup
	bgPending    atomic.Bool
	timerArmed   atomic.Bool
	unflushedMsg atomic.Int64

	chMu      sync.Mutex
	changedCh chan struct{}

	flushCount atomic.Int64 // flushes that fsynced something (group commit metric)

	// Directory durability (dirsync.go): dirDirty marks a change to the log's directory not
	// yet fsynced; parentGen (not 0) the log's new entry in the Manager's data directory,
	// made durable by parent. The next flush settles both before the durable offset moves.
	dirDirty  atomic.Bool
	parent    *dirSyncer
	parentGen atomic.Uint64

	// Compaction state, guarded by cleanMu.
	cleanerCheckpoint int64 // offsets below were compacted by the last pass
	tombstoneExpiry   int64 // ms when a retained tombstone may go; 0 none known
}

// OpenOptions carries what a Manager knows about a log from its data-dir checkpoints.
type OpenOptions struct {
	// RecoveryPoint: offsets below it were fsynced with their indexes, so recovery checks only
	// the segments from the one holding it. 0 checks everything.
	RecoveryPoint int64
	// LogStartOffset is the checkpointed log start offset (raised by DeleteRecordsBefore).
	LogStartOffset int64
	// CleanerCheckpoint is where the last compaction pass stopped.
	CleanerCheckpoint int64
	// CleanShutdown: the data dir was closed cleanly and RecoveryPoint is the log end, so no
	// segment needs checking beyond index sanity.
	CleanShutdown bool
	// syncer is the Manager's, shared by its logs; nil gives the log its own.
	syncer *syncer
	// parent, when the log's directory is new, is the Manager's fsync of the data directory
	// that makes its entry durable (at the log's first flush).
	parent *dirSyncer
}

// Open opens the log in dir (<data>/<topic>-<partition>), creating it if needed. Without a
// Manager's checkpoints it knows no recovery point, so it checks every batch of every segment
// (see OpenWithOptions).
func Open(dir string, cfg LogConfig, log *slog.Logger) (*Log, error) {
	return OpenWithOptions(dir, cfg, log, OpenOptions{})
}

// OpenWithOptions opens or creates the log in dir, recovering it as opts allow: every segment
// from the one holding the recovery point is read batch by batch, the log is truncated at the
// first invalid or torn batch (later segments are deleted), and the indexes of the checked
// segments are rebuilt. Leftovers of an interrupted compaction are completed or discarded.
func OpenWithOptions(dir string, cfg LogConfig, log *slog.Logger, opts OpenOptions) (*Log, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := cfg.normalized()
	l := &Log{dir: dir, logger: log, flushSem: make(chan struct{}, 1), syncer: opts.syncer}
	if l.syncer == nil {
		l.syncer = new(syncer)
	}
	l.cfg.Store(&c)
	fresh := false
	if opts.parent != nil {
		_, err := os.Stat(dir)
		fresh = os.IsNotExist(err)
	}
	if err := l.load(opts); err != nil {
		for _, s := range l.segs {
			s.closeFiles(false)
		}
		return nil, fmt.Errorf("opening log %s: %w", dir, err)
	}
	if fresh {
		l.parent = opts.parent
		l.parentGen.Store(opts.parent.changed()) // after load created the directory
	}
	return l, nil
}

func (l *Log) config() *LogConfig { return l.cfg.Load() }

// Dir is the log's directory.
func (l *Log) Dir() string { return l.dir }

// SetConfig replaces the configuration; it applies to the next appends, rolls, retention and
// compaction passes. Index sizes apply to segments created afterwards.
func (l *Log) SetConfig(cfg LogConfig) {
	c := cfg.normalized()
	l.cfg.Store(&c)
}

// Config returns the configuration in use (normalized).
func (l *Log) Config() LogConfig { return *l.config() }

// LogStartOffset is the first offset readable.
func (l *Log) LogStartOffset() int64 { return l.logStart.Load() }

// LogEndOffset is the offset the next appended record gets.
func (l *Log) LogEndOffset() int64 { return l.leo.Load() }

// DurableEndOffset is the offset below which everything is fsynced (the recovery point).
func (l *Log) DurableEndOffset() int64 { return l.durable.Load() }

// Changed returns a channel closed at the next change: an append, a truncation, a durability
// advance, a log start change, or Close (after Close it is closed already). Take a new channel
// after each wake-up, then re-check the state (a change between the check and Changed is
// never missed if Changed is called before the check).
func (l *Log) Changed() <-chan struct{} {
	l.chMu.Lock()
	defer l.chMu.Unlock()
	if l.closed.Load() {
		return closedChan
	}
	if l.changedCh == nil {
		l.changedCh = make(chan struct{})
	}
	return l.changedCh
}

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// notify wakes the waiters of Changed. It costs a mutex when nobody waits.
func (l *Log) notify() {
	l.chMu.Lock()
	if l.changedCh != nil {
		close(l.changedCh)
		l.changedCh = nil
	}
	l.chMu.Unlock()
}

// usable returns ErrClosed or the sticky I/O failure.
func (l *Log) usable() error {
	if l.closed.Load() {
		return fmt.Errorf("log %s: %w", l.dir, ErrClosed)
	}
	if p := l.failed.Load(); p != nil {
		return fmt.Errorf("log %s failed earlier: %w", l.dir, *p)
	}
	return nil
}

// fail records an fsync failure: after one, the state of the page cache is unknown, so the log
// accepts no more writes (Kafka takes the log directory offline for the same reason).
func (l *Log) fail(err error) {
	if l.failed.CompareAndSwap(nil, &err) {
		l.logger.Error("storage failure: log refuses further writes", "dir", l.dir, "err", err)
	}
}

// --- loading and recovery ---

func parseSegmentName(name, suffix string) (int64, bool) {
	if len(name) != 20+len(suffix) || !strings.HasSuffix(name, suffix) {
		return 0, false
	}
	n, err := strconv.ParseInt(name[:20], 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

func (l *Log) load(opts OpenOptions) error {
	cfg := l.config()
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", l.dir, err)
	}
	// Pass 1: leftovers of interrupted work.
	ents, err := os.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("listing %s: %w", l.dir, err)
	}
	swapped := map[int64]bool{}
	for _, e := range ents {
		name := e.Name()
		path := filepath.Join(l.dir, name)
		switch {
		case strings.HasSuffix(name, ".tmp"), strings.HasSuffix(name, cleanedSuffix), strings.HasSuffix(name, deletedSuffix):
			if err := removeIfExists(path); err != nil {
				return err
			}
		case strings.HasSuffix(name, logSuffix+swapSuffix):
			base, ok := parseSegmentName(name, logSuffix+swapSuffix)
			if !ok {
				continue
			}
			// The swap was committed: finish it; the indexes may belong to either version.
			if err := os.Rename(path, segmentPath(l.dir, base, logSuffix)); err != nil {
				return fmt.Errorf("completing compaction swap of %s: %w", path, err)
			}
			for _, sfx := range []string{indexSuffix, timeIndexSuffix} {
				if err := removeIfExists(segmentPath(l.dir, base, sfx)); err != nil {
					return err
				}
			}
			swapped[base] = true
			l.logger.Info("completed an interrupted compaction swap", "segment", base)
		}
	}
	// Pass 2: segments, indexes, snapshots.
	if ents, err = os.ReadDir(l.dir); err != nil {
		return fmt.Errorf("listing %s: %w", l.dir, err)
	}
	var bases []int64
	logs := map[int64]bool{}
	var indexFiles []string
	for _, e := range ents {
		if base, ok := parseSegmentName(e.Name(), logSuffix); ok {
			bases = append(bases, base)
			logs[base] = true
		}
	}
	for _, e := range ents {
		name := e.Name()
		for _, sfx := range []string{indexSuffix, timeIndexSuffix} {
			if base, ok := parseSegmentName(name, sfx); ok && !logs[base] {
				indexFiles = append(indexFiles, filepath.Join(l.dir, name))
			}
		}
	}
	for _, p := range indexFiles { // indexes without a log file
		if err := removeIfExists(p); err != nil {
			return err
		}
	}
	slices.Sort(bases)
	nowMs := time.Now().UnixMilli()

	if len(bases) == 0 {
		s, err := createSegment(l.dir, max(opts.LogStartOffset, 0), cfg, nowMs)
		if err != nil {
			return err
		}
		l.segs = []*segment{s}
		l.dirDirty.Store(true) // the first flush makes the new files durable (dirsync.go)
	} else {
		if err := l.loadSegments(bases, swapped, opts); err != nil {
			return err
		}
	}

	active := l.segs[len(l.segs)-1]
	leo := active.end.Load()
	l.leo.Store(leo)
	l.durable.Store(leo)
	start := max(opts.LogStartOffset, l.segs[0].base)
	l.logStart.Store(min(start, leo))
	l.cleanerCheckpoint = max(opts.CleanerCheckpoint, 0)
	l.tombstoneExpiry = 1 // unknown after a restart: allow one pass

	if l.epochs, err = loadEpochCache(l.dir); err != nil {
		return err
	}
	if err := l.epochs.truncateFromEnd(leo); err != nil {
		return err
	}
	if err := l.epochs.truncateFromStart(l.logStart.Load()); err != nil {
		return err
	}
	l.epochs.dirDirty = &l.dirDirty // later changes: the directory's fsync waits for a flush
	l.producers = newProducerStateManager(l.dir, l.logger)
	l.producers.logStart = l.logStart.Load
	if err := l.loadProducerState(); err != nil {
		return err
	}
	l.logger.Debug("log opened", "dir", l.dir, "segments", len(l.segs), "log_start", l.logStart.Load(), "log_end", leo)
	return nil
}

// loadSegments opens existing segments, trusting those below the recovery point (index sanity
// only) and checking the others batch by batch.
func (l *Log) loadSegments(bases []int64, swapped map[int64]bool, opts OpenOptions) error {
	cfg := l.config()
	for _, base := range bases {
		s, err := openSegmentFile(l.dir, base)
		if err != nil {
			return err
		}
		l.segs = append(l.segs, s)
	}
	firstRecover := len(l.segs)
	if !opts.CleanShutdown {
		firstRecover = 0
		for i, s := range l.segs {
			if s.base <= opts.RecoveryPoint {
				firstRecover = i
			}
		}
	}
	last := len(l.segs) - 1
	for i := 0; i < firstRecover; i++ {
		s := l.segs[i]
		if swapped[s.base] {
			if err := l.recoverSegment(i, true); err != nil {
				return err
			}
			continue
		}
		var ierr error
		if s.oidx, ierr = openSealedIndex(segmentPath(l.dir, s.base, indexSuffix), offsetIndexEntrySize); ierr == nil {
			if s.tidx, ierr = openSealedIndex(segmentPath(l.dir, s.base, timeIndexSuffix), timeIndexEntrySize); ierr == nil {
				maxOffset := int64(math.MaxInt64)
				if i+1 < len(l.segs) {
					maxOffset = l.segs[i+1].base
				}
				ierr = s.checkIndexes(maxOffset)
			}
		}
		if ierr == nil && i == last {
			ierr = s.loadTail()
		} else if ierr == nil {
			ierr = s.loadSealedTimestamp()
		}
		if ierr != nil {
			l.logger.Warn("rebuilding the indexes of a segment", "segment", s.String(), "reason", ierr)
			if err := l.recoverSegment(i, true); err != nil {
				return err
			}
		}
	}
	began := time.Now()
	checked, from := len(l.segs)-firstRecover, int64(-1)
	if checked > 0 {
		from = l.segs[firstRecover].base
	}
	for i := firstRecover; i < len(l.segs); i++ {
		if err := l.recoverSegment(i, false); err != nil {
			return err
		}
	}
	if !opts.CleanShutdown && checked > 0 {
		l.logger.Info("recovered a log after an unclean shutdown", "dir", l.dir, "segments_checked", checked,
			"from_offset", from, "took", time.Since(began).Round(time.Microsecond))
	}
	// An empty last segment beyond the end of the previous one (its predecessor lost a torn
	// tail that ended on a batch boundary) would leave a hole at the log end: drop it.
	for len(l.segs) > 1 && l.segs[len(l.segs)-1].size.Load() == 0 {
		prev := l.segs[len(l.segs)-2]
		if prev.end.Load() < 0 {
			if err := prev.loadTail(); err != nil {
				return err
			}
		}
		lastSeg := l.segs[len(l.segs)-1]
		if prev.end.Load() >= lastSeg.base {
			break
		}
		l.logger.Warn("removing an empty last segment past the log end", "segment", lastSeg.String(), "log_end", prev.end.Load())
		lastSeg.closeFiles(false)
		if err := lastSeg.deleteFiles(); err != nil {
			return err
		}
		l.segs = l.segs[:len(l.segs)-1]
	}
	active := l.segs[len(l.segs)-1]
	if active.end.Load() < 0 {
		if err := active.loadTail(); err != nil {
			return err
		}
	}
	if err := active.activate(cfg); err != nil {
		return err
	}
	active.rollBase = time.Now().UnixMilli()
	active.rollJitterMs = cfg.randomRollJitter()
	if active.size.Load() > 0 {
		r := newHeaderReader(active.file, active.size.Load())
		if h, err := r.header(0); err == nil && h.MaxTimestamp > 0 && h.MaxTimestamp < active.rollBase {
			active.rollBase = h.MaxTimestamp
		}
		r.close()
	}
	if opts.CleanShutdown && len(swapped) == 0 {
		// Nothing was recovered: what changed (leftovers removed, a missing index created) can
		// wait for the first flush (dirsync.go).
		l.dirDirty.Store(true)
		return nil
	}
	return syncDir(l.dir)
}

// recoverSegment checks segment i batch by batch and rebuilds its indexes. When it finds an
// invalid batch it truncates there; for a segment that is not trusted (tail of the log) it
// also deletes every later segment, as the log ends at the first invalid batch.
func (l *Log) recoverSegment(i int, trusted bool) error {
	cfg := l.config()
	s := l.segs[i]
	maxOffset := int64(math.MaxInt64)
	if i+1 < len(l.segs) {
		maxOffset = l.segs[i+1].base
	}
	res, err := s.recoverIndexes(cfg, maxOffset)
	if err != nil {
		return err
	}
	if res.cause != nil {
		if errors.Is(res.cause, errTorn) && !trusted {
			l.logger.Warn("truncated a torn batch at the log end", "segment", s.String(), "position", res.validBytes, "reason", res.cause)
		} else {
			l.logger.Error("truncated the log at an invalid batch", "segment", s.String(), "position", res.validBytes, "reason", res.cause)
		}
		if !trusted {
			for _, later := range l.segs[i+1:] {
				l.logger.Warn("deleting a segment after the truncation point", "segment", later.String())
				later.closeFiles(false)
				if err := later.deleteFiles(); err != nil {
					return err
				}
			}
			l.segs = l.segs[:i+1]
		}
	}
	if err := fdatasync(s.file); err != nil {
		return err
	}
	if i < len(l.segs)-1 {
		if err := s.seal(); err != nil {
			return err
		}
	}
	if err := s.syncIndexes(); err != nil {
		return err
	}
	if s.sealed {
		s.idxSynced.Store(true)
	}
	return nil
}

// loadSealedTimestamp reads the newest timestamp of a sealed segment from the last entry of its
// time index without mapping it.
func (s *segment) loadSealedTimestamp() error {
	n := s.tidx.entries()
	if n == 0 {
		return nil
	}
	f, err := os.Open(s.tidx.path)
	if err != nil {
		return fmt.Errorf("opening %s: %w", s.tidx.path, err)
	}
	defer f.Close()
	var e [timeIndexEntrySize]byte
	if _, err := f.ReadAt(e[:], int64(n-1)*timeIndexEntrySize); err != nil {
		return fmt.Errorf("reading %s: %w", s.tidx.path, err)
	}
	s.maxTs.Store(int64(binary.BigEndian.Uint64(e[:])))
	s.maxTsOff.Store(s.base + int64(binary.BigEndian.Uint32(e[8:])))
	return nil
}

// loadProducerState restores the idempotent producers from the newest usable snapshot and the
// batches after it.
func (l *Log) loadProducerState() error {
	leo := l.leo.Load()
	from, err := l.producers.loadLatest(leo)
	if err != nil {
		return err
	}
	from = max(from, l.logStart.Load())
	if from >= leo {
		return nil
	}
	n := 0
	err = l.forEachHeader(from, func(h *headerView) error {
		if h.ProducerID >= 0 {
			if err := l.producers.replay(h, readWholeBatch); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("rebuilding producer state from offset %d: %w", from, err)
	}
	if n > 0 {
		l.logger.Debug("rebuilt producer state from the log", "from", from, "batches", n)
	}
	return nil
}

// readWholeBatch reads the batch a header view describes.
func readWholeBatch(h *headerView) ([]byte, error) {
	b := make([]byte, h.TotalSize())
	if _, err := h.seg.file.ReadAt(b, h.pos); err != nil {
		return nil, fmt.Errorf("reading the batch at offset %d: %w", h.BaseOffset, err)
	}
	return b, nil
}

// headerView is a batch header with its place in the log.
type headerView struct {
	batchHeader
	seg *segment
	pos int64
}

// forEachHeader calls fn for every batch whose last offset is at least from, in order, reading
// headers only. It holds segMu for reading.
func (l *Log) forEachHeader(from int64, fn func(h *headerView) error) error {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	for i := l.floorSegment(from); i < len(l.segs); i++ {
		s := l.segs[i]
		r := newHeaderReader(s.file, s.size.Load())
		pos, h, err := s.findBatch(&r, from, 0)
		for err == nil {
			v := headerView{batchHeader: batchHeader(h), seg: s, pos: pos}
			if err = fn(&v); err != nil {
				r.close()
				return err
			}
			pos += int64(h.TotalSize())
			h, err = r.header(pos)
		}
		r.close()
		if err != io.EOF {
			return fmt.Errorf("segment %s: %w", s, err)
		}
	}
	return nil
}

// floorSegment is the index of the segment that holds offset: the last one whose base is at
// most offset, or 0. segMu held.
func (l *Log) floorSegment(offset int64) int {
	i, found := slices.BinarySearchFunc(l.segs, offset, func(s *segment, o int64) int {
		switch {
		case s.base < o:
			return -1
		case s.base > o:
			return 1
		}
		return 0
	})
	if found {
		return i
	}
	return max(i-1, 0)
}

// --- flushing ---

// Flush fsyncs everything appended so far, whatever the policy.
func (l *Log) Flush() error {
	if l.closed.Load() {
		return fmt.Errorf("log %s: %w", l.dir, ErrClosed)
	}
	l.flushSem <- struct{}{}
	defer func() { <-l.flushSem }()
	return l.flushLocked()
}

// WaitDurable returns once every offset below offset is durable under the flush policy. With
// FsyncAlways it waits for a sync round (see WaitAllDurable): each round covers everything
// appended before it started, so concurrent waiters, of this log and of the other logs sharing
// its syncer, share fsyncs (group commit). With the other policies it returns at once. Offsets
// beyond the log end are waited for up to the log end.
func (l *Log) WaitDurable(ctx context.Context, offset int64) error {
	if l.config().Fsync != FsyncAlways {
		return nil
	}
	var err error
	WaitAllDurable(ctx, []DurableTarget{{Log: l, Offset: offset}}, func(_ int, e error) { err = e })
	return err
}

// flushLocked fsyncs every segment holding data below the current log end that is not yet
// durable, the indexes of sealed ones included, then advances the durable offset. The caller
// holds flushSem.
func (l *Log) flushLocked() error {
	if err := l.usable(); err != nil {
		return err
	}
	target := l.leo.Load() // before the segments: data below target is in them
	if l.durable.Load() >= target {
		return nil
	}
	type item struct {
		s      *segment
		sealed bool
	}
	var buf [4]item
	todo := buf[:0]
	l.segMu.RLock()
	for i := len(l.segs) - 1; i >= 0; i-- {
		s := l.segs[i]
		if s.sealed && s.idxSynced.Load() && s.flushed.Load() >= s.size.Load() {
			break // sealed segments become durable in order: the older ones are too
		}
		s.acquire()
		todo = append(todo, item{s, s.sealed})
	}
	l.segMu.RUnlock()
	defer func() {
		for _, it := range todo {
			it.s.release()
		}
	}()
	began := time.Now()
	for i := len(todo) - 1; i >= 0; i-- { // oldest first
		s := todo[i].s
		if err := s.flush(); err != nil {
			l.fail(err)
			return err
		}
		if todo[i].sealed && !s.idxSynced.Load() {
			// Index files can be rebuilt: a failure here is an error, not a failed log.
			if err := s.syncIndexes(); err != nil {
				return err
			}
			s.idxSynced.Store(true)
		}
	}
	if err := l.syncDirs(); err != nil { // new files and renames, before anything counts as durable
		l.fail(err)
		return err
	}
	l.unflushedMsg.Store(0)
	l.flushCount.Add(1)
	l.syncer.fsyncs.Add(1)
	took := time.Since(began)
	l.syncer.fsyncNanos.Add(int64(took))
	if f := l.syncer.observe.Load(); f != nil {
		(*f)(took)
	}
	l.advanceDurable(target)
	return nil
}

func (l *Log) advanceDurable(target int64) {
	for {
		d := l.durable.Load()
		if d >= target {
			return
		}
		if l.durable.CompareAndSwap(d, target) {
			l.notify()
			return
		}
	}
}

// kickFlush starts a background flush unless one is already waiting to run.
func (l *Log) kickFlush() {
	if !l.bgPending.CompareAndSwap(false, true) {
		return
	}
	l.bgMu.Lock()
	if l.closed.Load() {
		l.bgMu.Unlock()
		l.bgPending.Store(false)
		return
	}
	l.bgWG.Add(1)
	l.bgMu.Unlock()
	go func() {
		defer l.bgWG.Done()
		l.flushSem <- struct{}{}
		l.bgPending.Store(false)
		var err error
		if !l.closed.Load() {
			err = l.flushLocked()
		}
		<-l.flushSem
		if err != nil && !errors.Is(err, ErrClosed) {
			l.logger.Error("background flush failed", "dir", l.dir, "err", err)
		}
	}()
}

// afterAppend applies the interval policy after count records were appended.
func (l *Log) afterAppend(cfg *LogConfig, count int64) {
	if cfg.Fsync != FsyncInterval {
		return
	}
	if l.unflushedMsg.Add(count) >= cfg.FlushIntervalMessages {
		l.kickFlush()
		return
	}
	if cfg.FlushIntervalMs < math.MaxInt64/int64(time.Millisecond) && l.timerArmed.CompareAndSwap(false, true) {
		time.AfterFunc(time.Duration(cfg.FlushIntervalMs)*time.Millisecond, func() {
			l.timerArmed.Store(false)
			l.kickFlush()
		})
	}
}

// recoveryPoint returns an offset below which data and indexes are durable, for the
// recovery-point checkpoint: the durable offset, after making the indexes below it durable.
func (l *Log) recoveryPoint() (int64, error) {
	if l.closed.Load() {
		return l.durable.Load(), nil
	}
	l.flushSem <- struct{}{}
	defer func() { <-l.flushSem }()
	d := l.durable.Load()
	var buf [4]*segment
	todo := buf[:0]
	l.segMu.RLock()
	for i := len(l.segs) - 1; i >= 0; i-- {
		s := l.segs[i]
		if s.sealed && s.idxSynced.Load() {
			break
		}
		if s.base < d {
			s.acquire()
			todo = append(todo, s)
		}
	}
	l.segMu.RUnlock()
	defer func() {
		for _, s := range todo {
			s.release()
		}
	}()
	for _, s := range todo {
		if err := s.syncIndexes(); err != nil {
			return 0, err
		}
	}
	return d, nil
}

// --- closing ---

// Close flushes everything, writes a producer state snapshot at the log end, trims the active
// indexes and closes the files. Readers holding a ReadResult keep their files until Release.
// Close waits for a running compaction or retention pass.
func (l *Log) Close() error {
	return l.close(true)
}

func (l *Log) close(flush bool) error {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed.Load() {
		return nil
	}
	var errs []error
	if flush && l.failed.Load() == nil {
		l.flushSem <- struct{}{}
		if err := l.flushLocked(); err != nil {
			errs = append(errs, err)
		}
		<-l.flushSem
	}
	l.bgMu.Lock()
	l.closed.Store(true)
	l.bgMu.Unlock()
	l.bgWG.Wait()
	l.flushSem <- struct{}{} // no flush may run past this point
	// A log never written to has no producer state to keep (and thousands of new replicas
	// would pay two fsyncs each at shutdown for an empty snapshot).
	if flush && l.failed.Load() == nil && len(errs) == 0 && l.leo.Load() > 0 {
		if err := l.producers.writeSnapshot(l.leo.Load()); err != nil {
			errs = append(errs, err)
		}
	}
	l.segMu.Lock()
	active := l.segs[len(l.segs)-1]
	if err := active.seal(); err != nil {
		errs = append(errs, err)
	} else if flush {
		if err := active.syncIndexes(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range l.segs {
		s.release()
	}
	l.segs = nil
	l.segMu.Unlock()
	<-l.flushSem
	l.notify()
	return errors.Join(errs...)
}

// Delete closes the log without flushing and removes its directory: it is renamed to
// "<dir>.<time>-delete" first (Kafka's convention, so a crash leaves a recognizable leftover
// that OpenManager removes), then deleted.
func (l *Log) Delete() error {
	if err := l.close(false); err != nil {
		l.logger.Warn("closing a log to delete it", "dir", l.dir, "err", err)
	}
	tomb := fmt.Sprintf("%s.%x-delete", l.dir, time.Now().UnixNano())
	if err := os.Rename(l.dir, tomb); err != nil {
		return fmt.Errorf("deleting log %s: %w", l.dir, err)
	}
	if err := syncDir(filepath.Dir(l.dir)); err != nil {
		return err
	}
	if err := os.RemoveAll(tomb); err != nil {
		return fmt.Errorf("deleting log %s: %w", l.dir, err)
	}
	return nil
}

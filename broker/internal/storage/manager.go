package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Data-dir level files, with Kafka's names.
const (
	recoveryPointFile  = "recovery-point-offset-checkpoint"
	logStartFile       = "log-start-offset-checkpoint"
	cleanerOffsetFile  = "cleaner-offset-checkpoint"
	cleanShutdownFile  = ".kafka_cleanshutdown"
	checkpointInterval = 60 * time.Second // log.flush.offset.checkpoint.interval.ms
	closeWorkers       = 16               // logs a Manager's Close closes at once
)

// Manager owns the partition logs of one data directory: it opens them with the recovery
// points its checkpoints hold, runs background maintenance, and on Close leaves checkpoints and
// a clean-shutdown marker so that the next start skips recovery. A Manager is safe for
// concurrent use.
type Manager struct {
	dir    string
	logger *slog.Logger
	lock   *os.File
	clean  bool // the previous run shut down cleanly

	mu             sync.Mutex
	logs           map[TopicPartition]*Log
	recoveryPoints map[TopicPartition]int64
	logStarts      map[TopicPartition]int64
	cleanerOffsets map[TopicPartition]int64
	closed         bool
	opening        map[TopicPartition]chan struct{} // Opens in progress: closed when each ends
	ckptMu         sync.Mutex                       // serializes checkpoint writes
	syncer         syncer                           // group commit across all the logs
	dirs           dirSyncer                        // fsyncs of the data directory (new logs' entries)
}

// OpenManager opens (creating it if needed) the data directory dataDir: it takes the directory
// lock, reads the checkpoints and the clean-shutdown marker (then removes the marker, so that a
// crash from now on is detected), and removes leftovers of deleted partitions. Logs are opened
// on demand with Open.
func OpenManager(dataDir string, log *slog.Logger) (*Manager, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating data directory %s: %w", dataDir, err)
	}
	// A directory with nothing in it (a lock file left by a run that stopped before writing
	// anything aside) is a fresh one: it has no shutdown to have been unclean.
	fresh := true
	if ents, err := os.ReadDir(dataDir); err == nil {
		for _, e := range ents {
			if e.Name() != ".lock" {
				fresh = false
				break
			}
		}
	}
	lock, err := lockDir(dataDir)
	if err != nil {
		return nil, err
	}
	m := &Manager{dir: dataDir, logger: log, lock: lock, logs: map[TopicPartition]*Log{},
		opening: map[TopicPartition]chan struct{}{}, dirs: dirSyncer{dir: dataDir}}
	fail := func(err error) (*Manager, error) {
		lock.Close()
		return nil, err
	}
	marker := filepath.Join(dataDir, cleanShutdownFile)
	if _, err := os.Stat(marker); err == nil {
		m.clean = true
	}
	for _, f := range []struct {
		name string
		dst  *map[TopicPartition]int64
	}{{recoveryPointFile, &m.recoveryPoints}, {logStartFile, &m.logStarts}, {cleanerOffsetFile, &m.cleanerOffsets}} {
		v, err := readOffsetCheckpoint(filepath.Join(dataDir, f.name))
		if err != nil {
			log.Warn("ignoring an unreadable checkpoint: affected logs are fully recovered", "file", f.name, "err", err)
			v = nil
			if f.name == recoveryPointFile {
				m.clean = false
			}
		}
		if v == nil {
			v = map[TopicPartition]int64{}
		}
		*f.dst = v
	}
	if m.clean {
		if err := os.Remove(marker); err != nil {
			return fail(fmt.Errorf("removing %s: %w", marker, err))
		}
		if err := syncDir(dataDir); err != nil {
			return fail(err)
		}
	} else if !fresh {
		log.Warn("no clean shutdown marker: logs recover from their recovery points", "dir", dataDir)
	}
	ents, err := os.ReadDir(dataDir)
	if err != nil {
		return fail(fmt.Errorf("listing %s: %w", dataDir, err))
	}
	for _, e := range ents {
		if e.IsDir() && strings.HasSuffix(e.Name(), "-delete") {
			if err := os.RemoveAll(filepath.Join(dataDir, e.Name())); err != nil {
				return fail(fmt.Errorf("removing deleted log %s: %w", e.Name(), err))
			}
		}
	}
	return m, nil
}

// Dir is the data directory.
func (m *Manager) Dir() string { return m.dir }

// Stats are cumulative counters over the manager's logs.
type Stats struct {
	Fsyncs    int64         // flushes that fsynced something (one may cover many appends)
	FsyncTime time.Duration // time those flushes took
}

// Stats reads the counters; safe for concurrent use, and cheap (two atomic loads).
func (m *Manager) Stats() Stats {
	return Stats{Fsyncs: m.syncer.fsyncs.Load(), FsyncTime: time.Duration(m.syncer.fsyncNanos.Load())}
}

// ObserveFsyncs makes every later flush that fsyncs report its time to f (a metric); nil
// stops it. f runs on the flushing goroutine and must not block.
func (m *Manager) ObserveFsyncs(f func(time.Duration)) {
	if f == nil {
		m.syncer.observe.Store(nil)
		return
	}
	m.syncer.observe.Store(&f)
}

// HadCleanShutdown reports whether the previous run closed the data directory cleanly.
func (m *Manager) HadCleanShutdown() bool { return m.clean }

func validTopic(topic string) error {
	if topic == "" || topic == "." || topic == ".." || len(topic) > 249 ||
		strings.ContainsAny(topic, "/\\\x00") {
		return fmt.Errorf("storage: invalid topic name %q", topic)
	}
	return nil
}

// Open returns the log of topic-partition, opening (or creating) it with cfg if it is not
// open yet; an open log keeps its configuration (use SetConfig). Opens of different
// partitions run in parallel (m.mu is not held across the I/O); a second Open of a partition
// being opened waits for the first and returns its log. A new log's directory is made durable
// by its first flush (dirsync.go), so creating one costs no fsync.
func (m *Manager) Open(topic string, partition int32, cfg LogConfig) (*Log, error) {
	if err := validTopic(topic); err != nil {
		return nil, err
	}
	if partition < 0 {
		return nil, fmt.Errorf("storage: invalid partition %d", partition)
	}
	tp := TopicPartition{topic, partition}
	m.mu.Lock()
	m.waitOpeningLocked(tp)
	if m.closed {
		m.mu.Unlock()
		return nil, fmt.Errorf("storage manager: %w", ErrClosed)
	}
	if l := m.logs[tp]; l != nil {
		m.mu.Unlock()
		return l, nil
	}
	rp, hasRP := m.recoveryPoints[tp]
	opts := OpenOptions{
		RecoveryPoint:     rp,
		LogStartOffset:    m.logStarts[tp],
		CleanerCheckpoint: m.cleanerOffsets[tp],
		CleanShutdown:     m.clean && hasRP,
		syncer:            &m.syncer,
		parent:            &m.dirs,
	}
	done := make(chan struct{})
	m.opening[tp] = done
	m.mu.Unlock()

	dir := filepath.Join(m.dir, tp.String())
	l, err := OpenWithOptions(dir, cfg, m.logger.With("topic", topic, "partition", partition), opts)

	if err != nil {
		m.mu.Lock()
		delete(m.opening, tp)
		close(done)
		m.mu.Unlock()
		return nil, err
	}
	m.mu.Lock()
	if m.closed { // Close waits for this open before it closes the logs and checkpoints
		m.mu.Unlock()
		l.Close()
		m.mu.Lock()
		delete(m.opening, tp)
		close(done)
		m.mu.Unlock()
		return nil, fmt.Errorf("storage manager: %w", ErrClosed)
	}
	m.logs[tp] = l
	delete(m.opening, tp)
	close(done)
	m.mu.Unlock()
	return l, nil
}

// waitOpeningLocked waits, m.mu held (released while waiting), until no Open of tp runs.
func (m *Manager) waitOpeningLocked(tp TopicPartition) {
	for {
		done, ok := m.opening[tp]
		if !ok {
			return
		}
		m.mu.Unlock()
		<-done
		m.mu.Lock()
	}
}

// Get returns the open log of topic-partition, or nil.
func (m *Manager) Get(topic string, partition int32) *Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.logs[TopicPartition{topic, partition}]
}

// Remove closes the log of topic-partition and deletes its directory (opened or not).
func (m *Manager) Remove(topic string, partition int32) error {
	if err := validTopic(topic); err != nil {
		return err
	}
	tp := TopicPartition{topic, partition}
	m.mu.Lock()
	m.waitOpeningLocked(tp)
	l := m.logs[tp]
	delete(m.logs, tp)
	delete(m.recoveryPoints, tp)
	delete(m.logStarts, tp)
	delete(m.cleanerOffsets, tp)
	m.mu.Unlock()
	if l != nil {
		return l.Delete()
	}
	dir := filepath.Join(m.dir, tp.String())
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing %s: %w", dir, err)
	}
	return syncDir(m.dir)
}

// Partitions lists the open logs, sorted.
func (m *Manager) Partitions() []TopicPartition {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]TopicPartition, 0, len(m.logs))
	for tp := range m.logs {
		out = append(out, tp)
	}
	sortTopicPartitions(out)
	return out
}

// OnDisk lists the partition directories present in the data directory, sorted, open or not.
func (m *Manager) OnDisk() ([]TopicPartition, error) {
	ents, err := os.ReadDir(m.dir)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", m.dir, err)
	}
	var out []TopicPartition
	for _, e := range ents {
		if !e.IsDir() || strings.HasSuffix(e.Name(), "-delete") {
			continue
		}
		name := e.Name()
		i := strings.LastIndexByte(name, '-')
		if i <= 0 {
			continue
		}
		p, err := strconv.ParseInt(name[i+1:], 10, 32)
		if err != nil || p < 0 || strconv.FormatInt(p, 10) != name[i+1:] {
			continue
		}
		out = append(out, TopicPartition{name[:i], int32(p)})
	}
	sortTopicPartitions(out)
	return out, nil
}

func sortTopicPartitions(tps []TopicPartition) {
	slices.SortFunc(tps, func(a, b TopicPartition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition) - int(b.Partition)
	})
}

func (m *Manager) openLogs() map[TopicPartition]*Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[TopicPartition]*Log, len(m.logs))
	for tp, l := range m.logs {
		out[tp] = l
	}
	return out
}

// Checkpoint writes the recovery-point, log-start-offset and cleaner-offset checkpoints of the
// open logs (other entries are kept). RunBackground calls it every minute; Close at the end.
func (m *Manager) Checkpoint() error {
	m.ckptMu.Lock()
	defer m.ckptMu.Unlock()
	logs := m.openLogs()
	rps := make(map[TopicPartition]int64, len(logs))
	var errs []error
	for tp, l := range logs {
		rp, err := l.recoveryPoint()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", tp, err))
			continue
		}
		rps[tp] = rp
	}
	m.mu.Lock()
	for tp, l := range logs {
		if m.logs[tp] != l {
			continue // removed meanwhile
		}
		if rp, ok := rps[tp]; ok {
			m.recoveryPoints[tp] = rp
		}
		m.logStarts[tp] = l.LogStartOffset()
		m.cleanerOffsets[tp] = l.cleanerOffset()
	}
	rp := maps(m.recoveryPoints)
	ls := maps(m.logStarts)
	co := maps(m.cleanerOffsets)
	m.mu.Unlock()
	for _, f := range []struct {
		name string
		v    map[TopicPartition]int64
	}{{recoveryPointFile, rp}, {logStartFile, ls}, {cleanerOffsetFile, co}} {
		if err := writeOffsetCheckpoint(filepath.Join(m.dir, f.name), f.v); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func maps(m map[TopicPartition]int64) map[TopicPartition]int64 {
	out := make(map[TopicPartition]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// cleanerOffset is where the next compaction pass starts.
func (l *Log) cleanerOffset() int64 {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	return l.cleanerCheckpoint
}

// RunBackground runs maintenance until ctx ends: every retentionCheckInterval
// (log.retention.check.interval.ms) retention, compaction when due, and producer expiration
// for each open log; every minute the checkpoints. Interval flushes (FsyncInterval) and the
// flush of rolled segments run from each log's own timers, not from here.
func (m *Manager) RunBackground(ctx context.Context, retentionCheckInterval time.Duration) {
	if retentionCheckInterval <= 0 {
		retentionCheckInterval = 5 * time.Minute
	}
	retention := time.NewTicker(retentionCheckInterval)
	defer retention.Stop()
	ckpt := time.NewTicker(checkpointInterval)
	defer ckpt.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-retention.C:
			m.maintain(ctx, now)
		case <-ckpt.C:
			if err := m.Checkpoint(); err != nil && !errors.Is(err, ErrClosed) {
				m.logger.Error("writing checkpoints", "dir", m.dir, "err", err)
			}
		}
	}
}

// maintain runs one round of retention, compaction and producer expiration.
func (m *Manager) maintain(ctx context.Context, now time.Time) {
	for tp, l := range m.openLogs() {
		if ctx.Err() != nil {
			return
		}
		if n, err := l.EnforceRetention(now); err != nil && !errors.Is(err, ErrClosed) {
			m.logger.Error("retention", "partition", tp.String(), "err", err)
		} else if n > 0 {
			m.logger.Debug("retention deleted segments", "partition", tp.String(), "segments", n)
		}
		if _, err := l.compactIfNeeded(now); err != nil && !errors.Is(err, ErrClosed) {
			m.logger.Error("compaction", "partition", tp.String(), "err", err)
		}
		l.ExpireProducers(now)
	}
}

// Close closes every log (each flushes and snapshots its producer state), writes the
// checkpoints, and, when all of that succeeded, the clean-shutdown marker. It releases the
// directory lock.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	for len(m.opening) > 0 { // an Open in progress closes its log when it sees closed
		for tp := range m.opening {
			m.waitOpeningLocked(tp)
			break
		}
	}
	logs := make(map[TopicPartition]*Log, len(m.logs))
	for tp, l := range m.logs {
		logs[tp] = l
	}
	m.mu.Unlock()
	// Logs close in parallel: each flushes, snapshots and trims its indexes, mostly waiting
	// for the disk, and a broker with thousands of them must stop within its grace period.
	open := make([]*Log, 0, len(logs))
	names := make([]TopicPartition, 0, len(logs))
	for tp, l := range logs {
		open, names = append(open, l), append(names, tp)
	}
	closeErrs := make([]error, len(open))
	Parallel(len(open), closeWorkers, func(i int) {
		if err := open[i].Close(); err != nil {
			closeErrs[i] = fmt.Errorf("closing %s: %w", names[i], err)
		}
	})
	errs := slices.DeleteFunc(closeErrs, func(err error) bool { return err == nil })
	if err := m.Checkpoint(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		if err := writeFileAtomic(filepath.Join(m.dir, cleanShutdownFile), nil); err != nil {
			errs = append(errs, err)
		}
	}
	if err := m.lock.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

package partition

import (
	"context"
	"log/slog"
	"time"

	"github.com/spoolmq/spool/broker/internal/storage"
	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

// Storage settings and policies, so that the server resolves a topic's configs into a log's
// without importing storage.
type (
	// LogConfig is one partition log's settings (segment.bytes, retention.ms, ...).
	LogConfig = storage.LogConfig
	// Log is a local replica's log, as Logs opens it for the reconciler.
	Log = storage.Log
	// FsyncMode is the durability policy (spool.fsync).
	FsyncMode = storage.FsyncMode
	// LogStats are cumulative counters over the data directory's logs (fsyncs and their time).
	LogStats = storage.Stats
)

// Durability policies and timestamp types.
const (
	FsyncAlways   = storage.FsyncAlways
	FsyncInterval = storage.FsyncInterval
	FsyncNever    = storage.FsyncNever

	CreateTime    = storage.CreateTime
	LogAppendTime = storage.LogAppendTime
)

// DefaultLogConfig is Kafka's defaults for a partition log.
func DefaultLogConfig() LogConfig { return storage.DefaultLogConfig() }

// Logs is the data directory: the logs of the local partitions, opened and removed by
// reconciliation, and the background work over all of them (retention, compaction,
// checkpoints). It is the only way into storage the server has; request handlers use
// Partition's methods instead.
//
// Logs is safe for concurrent use (storage.Manager's own locks; see package storage). Open
// and Remove do file I/O and are called by reconciliation only, never under Manager.mu;
// RunBackground blocks until its context ends.
type Logs struct{ m *storage.Manager }

// OpenLogs opens the data directory, recovering the logs an unclean stop left.
func OpenLogs(dir string, log *slog.Logger) (*Logs, error) {
	m, err := storage.OpenManager(dir, log)
	if err != nil {
		return nil, err
	}
	return &Logs{m: m}, nil
}

// Open returns the log of topic-partition, opening or creating it with cfg if it is not
// open yet (an open log keeps its config: see Partition.SetConfig). Wrap it with New.
func (l *Logs) Open(topic string, index int32, cfg LogConfig) (*storage.Log, error) {
	return l.m.Open(topic, index, cfg)
}

// Remove closes the log of topic-partition and deletes its data (opened or not). Drop the
// partition from the Manager first, so no reader finds it.
func (l *Logs) Remove(topic string, index int32) error { return l.m.Remove(topic, index) }

// Dir is the data directory.
func (l *Logs) Dir() string { return l.m.Dir() }

// VolumeSpace is the total and usable bytes of the data directory's file system.
func (l *Logs) VolumeSpace() (total, usable int64, err error) { return l.m.VolumeSpace() }

// Stats reads the fsync counters (two atomic loads).
func (l *Logs) Stats() LogStats { return l.m.Stats() }

// ObserveFsyncs reports every later fsync's time to f (nil stops); f must not block.
func (l *Logs) ObserveFsyncs(f func(time.Duration)) { l.m.ObserveFsyncs(f) }

// RunBackground runs retention, compaction and checkpoints until ctx ends.
func (l *Logs) RunBackground(ctx context.Context, retentionCheckInterval time.Duration) {
	l.m.RunBackground(ctx, retentionCheckInterval)
}

// Close flushes, checkpoints and closes every log.
func (l *Logs) Close() error { return l.m.Close() }

// SetConfig applies changed topic configs to the partition's log.
func (p *Partition) SetConfig(cfg LogConfig) { p.log.SetConfig(cfg) }

// CompressionType is the topic's compression.type ("producer" keeps the producer's codec).
func (p *Partition) CompressionType() string { return p.log.CompressionType() }

// CompressionLevel is the level of the topic's compression.<codec>.level, for a recompressed
// batch.
func (p *Partition) CompressionLevel() int { return p.log.CompressionLevel() }

// MaxUncompressedBatchBytes bounds what decompressing one produced batch may allocate.
func (p *Partition) MaxUncompressedBatchBytes() int32 {
	return p.log.Config().MaxUncompressedBatchBytes
}

// Size is the bytes of the partition's batches (DescribeLogDirs' PartitionSize); a snapshot.
func (p *Partition) Size() int64 { return p.log.Size() }

// SegmentCount is the number of the log's segments.
func (p *Partition) SegmentCount() int { return p.log.SegmentCount() }

// EachRecord replays the partition's log from its start (a coordinator loading its internal
// topic's partition).
func (p *Partition) EachRecord(fn func(batch.Record)) error { return p.log.EachRecord(fn) }

// EachBatchRecord is EachRecord with each record's batch header.
func (p *Partition) EachBatchRecord(fn func(batch.Header, batch.Record)) error {
	return p.log.EachBatchRecord(fn)
}

// Parallel calls fn(0..n-1) on at most workers goroutines and returns when all calls have
// (storage.Parallel): the reconciler opens logs and applies states with it.
func Parallel(n, workers int, fn func(i int)) { storage.Parallel(n, workers, fn) }

package storage

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// FsyncMode is the durability policy: when appended data is forced to disk, and so when
// WaitDurable returns.
type FsyncMode int

const (
	// FsyncAlways makes WaitDurable fsync before it returns (before the broker acks). Concurrent
	// waiters share one sync round, across the logs of a Manager (group commit). The default.
	FsyncAlways FsyncMode = iota
	// FsyncInterval fsyncs in the background once FlushIntervalMs has passed since the oldest
	// unflushed append, or once FlushIntervalMessages records are unflushed. WaitDurable
	// returns at once.
	FsyncInterval
	// FsyncNever leaves flushing to the kernel, except that a rolled segment is fsynced in the
	// background and Flush and Close fsync everything. WaitDurable returns at once.
	FsyncNever
)

// String returns the --fsync flag value of m.
func (m FsyncMode) String() string {
	switch m {
	case FsyncAlways:
		return "always"
	case FsyncInterval:
		return "interval"
	case FsyncNever:
		return "never"
	}
	return fmt.Sprintf("FsyncMode(%d)", int(m))
}

// TimestampType is message.timestamp.type.
type TimestampType int

const (
	// CreateTime keeps the producer's timestamps.
	CreateTime TimestampType = iota
	// LogAppendTime stamps every batch with the broker's clock at append.
	LogAppendTime
)

// String returns Kafka's name of t.
func (t TimestampType) String() string {
	if t == LogAppendTime {
		return "LogAppendTime"
	}
	return "CreateTime"
}

// LogConfig holds the settings of one partition log. Field comments name the Kafka topic config
// each one implements. Zero values are not defaults: start from DefaultLogConfig.
type LogConfig struct {
	// SegmentBytes (segment.bytes) is the size at which the active segment rolls. At most
	// 2 GiB - 1: index positions are 32-bit.
	SegmentBytes int64
	// SegmentMs (segment.ms) rolls a non-empty active segment this long after its first append.
	SegmentMs int64
	// SegmentJitterMs (segment.jitter.ms): each segment rolls up to this much (drawn at random
	// when it is created, less than SegmentMs) before SegmentMs. 0: exactly at SegmentMs.
	SegmentJitterMs int64
	// RetentionMs (retention.ms) deletes a segment whose newest timestamp is older; -1 keeps
	// segments forever.
	RetentionMs int64
	// RetentionBytes (retention.bytes) deletes the oldest segments while the log stays at least
	// this large without them; -1 means no limit.
	RetentionBytes int64
	// IndexIntervalBytes (index.interval.bytes) is the distance between offset index entries.
	IndexIntervalBytes int32
	// MaxIndexBytes (segment.index.bytes) is the size of each index file of the active
	// segment; a full index rolls the segment.
	MaxIndexBytes int32
	// Delete and Compact are cleanup.policy: retention deletes whole segments, compaction keeps
	// the latest record of each key. Both may be set.
	Delete, Compact bool
	// DeleteRetentionMs (delete.retention.ms) is how long compaction keeps a tombstone, counted
	// from the tombstone batch's maxTimestamp.
	DeleteRetentionMs int64
	// MinCompactionLagMs (min.compaction.lag.ms): a segment is compacted only when its newest
	// timestamp is at least this old.
	MinCompactionLagMs int64
	// MinCleanableDirtyRatio (min.cleanable.dirty.ratio) is the share of uncompacted bytes that
	// makes the background compact the log. Compact called directly ignores it.
	MinCleanableDirtyRatio float64
	// MaxCompactionLagMs (max.compaction.lag.ms): a closed segment not yet compacted whose
	// newest record is at least this old is compacted whatever the dirty ratio, so no record
	// stays uncompacted much longer than this plus one segment's span. math.MaxInt64: never.
	MaxCompactionLagMs int64
	// TimestampType (message.timestamp.type).
	TimestampType TimestampType
	// TimestampBeforeMaxMs and TimestampAfterMaxMs (message.timestamp.before.max.ms and
	// after.max.ms): with CreateTime, a produced record whose timestamp is further behind or
	// ahead of the broker's clock is refused with ErrInvalidTimestamp. math.MaxInt64: no bound.
	TimestampBeforeMaxMs, TimestampAfterMaxMs int64
	// MaxMessageBytes (max.message.bytes) is the largest batch accepted, measured after offset
	// assignment (the batch's total size).
	MaxMessageBytes int32
	// MaxUncompressedBatchBytes bounds what one compressed batch may decompress to when Append
	// validates its records; a batch beyond it is refused with ErrMessageTooLarge.
	MaxUncompressedBatchBytes int32
	// Fsync is the durability policy.
	Fsync FsyncMode
	// FlushIntervalMs (flush.ms) and FlushIntervalMessages (flush.messages) drive FsyncInterval.
	FlushIntervalMs       int64
	FlushIntervalMessages int64
	// ProducerIDExpirationMs (producer.id.expiration.ms) forgets an idempotent producer whose
	// last batch is older than this, which bounds the producer state.
	ProducerIDExpirationMs int64
	// CompressionType (compression.type: producer, uncompressed, gzip, snappy, lz4, zstd; ""
	// means producer). The log itself does not read it: the leader's produce path recompresses
	// a batch whose codec differs before Append, as Kafka's LogValidator does.
	CompressionType string
	// CompressionLevel is the level the leader recompresses at: the compression.<codec>.level
	// of the codec CompressionType names, in Kafka's terms (compress.CompressLevel; 0: the
	// codec's default).
	CompressionLevel int
	// CompactionMaxKeys bounds the key map of one compaction pass (log.cleaner.dedupe.buffer.size
	// in keys): a pass compacts as many segments as their keys fit.
	CompactionMaxKeys int
}

// DefaultLogConfig returns Kafka's defaults: 1 GiB segments rolled after 7 days, 7 days of
// retention and no size limit, an index entry every 4096 bytes, 10 MiB index files,
// cleanup.policy=delete, 1 day delete retention, no compaction lag, CreateTime, 1048588-byte
// batches, and (Spool's default) fsync before ack.
func DefaultLogConfig() LogConfig {
	return LogConfig{
		SegmentBytes:              1 << 30,
		SegmentMs:                 7 * 24 * 3600 * 1000,
		RetentionMs:               7 * 24 * 3600 * 1000,
		RetentionBytes:            -1,
		IndexIntervalBytes:        4096,
		MaxIndexBytes:             10 << 20,
		Delete:                    true,
		DeleteRetentionMs:         24 * 3600 * 1000,
		MinCompactionLagMs:        0,
		MinCleanableDirtyRatio:    0.5,
		TimestampType:             CreateTime,
		MaxMessageBytes:           1048588,
		TimestampBeforeMaxMs:      math.MaxInt64,
		MaxCompactionLagMs:        math.MaxInt64,
		TimestampAfterMaxMs:       math.MaxInt64,
		MaxUncompressedBatchBytes: 64 << 20,
		Fsync:                     FsyncAlways,
		FlushIntervalMs:           math.MaxInt64,
		FlushIntervalMessages:     math.MaxInt64,
		ProducerIDExpirationMs:    24 * 3600 * 1000,
		CompactionMaxKeys:         1 << 18,
	}
}

// randomRollJitter draws a segment's roll jitter, as Kafka does: uniform below
// min(segment.jitter.ms, segment.ms).
func (cfg *LogConfig) randomRollJitter() int64 {
	if cfg.SegmentJitterMs <= 0 || cfg.SegmentMs <= 0 {
		return 0
	}
	return rand.Int64N(min(cfg.SegmentJitterMs, cfg.SegmentMs))
}

// Smallest sizes accepted; smaller settings are raised to them.
const (
	minSegmentBytes  = 14 // Kafka's minimum for segment.bytes, which it honours however small
	minMaxIndexBytes = 4 * timeIndexEntrySize
)

// normalized returns cfg with out-of-range values brought into range, so that a bad value can
// degrade a log but never break its invariants.
func (cfg LogConfig) normalized() LogConfig {
	d := DefaultLogConfig()
	cfg.SegmentBytes = min(max(cfg.SegmentBytes, minSegmentBytes), math.MaxInt32)
	if cfg.SegmentMs <= 0 {
		cfg.SegmentMs = math.MaxInt64
	}
	if cfg.IndexIntervalBytes < 0 {
		cfg.IndexIntervalBytes = 0
	}
	cfg.MaxIndexBytes = max(cfg.MaxIndexBytes, minMaxIndexBytes)
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = d.MaxMessageBytes
	}
	if cfg.MaxUncompressedBatchBytes <= 0 {
		cfg.MaxUncompressedBatchBytes = d.MaxUncompressedBatchBytes
	}
	if cfg.MaxCompactionLagMs <= 0 {
		cfg.MaxCompactionLagMs = math.MaxInt64
	}
	if cfg.TimestampBeforeMaxMs < 0 {
		cfg.TimestampBeforeMaxMs = math.MaxInt64
	}
	if cfg.TimestampAfterMaxMs < 0 {
		cfg.TimestampAfterMaxMs = math.MaxInt64
	}
	if cfg.FlushIntervalMs <= 0 {
		cfg.FlushIntervalMs = math.MaxInt64
	}
	if cfg.FlushIntervalMessages <= 0 {
		cfg.FlushIntervalMessages = math.MaxInt64
	}
	if cfg.ProducerIDExpirationMs <= 0 {
		cfg.ProducerIDExpirationMs = d.ProducerIDExpirationMs
	}
	if cfg.CompactionMaxKeys <= 0 {
		cfg.CompactionMaxKeys = d.CompactionMaxKeys
	}
	if cfg.MinCleanableDirtyRatio <= 0 || cfg.MinCleanableDirtyRatio > 1 {
		cfg.MinCleanableDirtyRatio = d.MinCleanableDirtyRatio
	}
	if cfg.Fsync < FsyncAlways || cfg.Fsync > FsyncNever {
		cfg.Fsync = FsyncAlways
	}
	return cfg
}

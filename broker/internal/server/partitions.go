package server

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spoolmq/spool/broker/internal/cluster"
	"github.com/spoolmq/spool/broker/internal/config"
	"github.com/spoolmq/spool/broker/internal/partition"
	"github.com/spoolmq/spool/protocol-spec/wire"
	"github.com/spoolmq/spool/protocol-spec/wire/compress"
)

type topicPartition struct {
	topic     string
	partition int32
}

// topicValue is a topic config's effective value and where it comes from: the topic's
// override, else the broker property behind it.
func (s *Server) topicValue(t cluster.Topic, name string) (string, config.Source) {
	if v, ok := t.Configs[name]; ok {
		return v, config.SourceTopic
	}
	d := config.LookupTopic(name)
	if d.Broker == "" {
		return d.Default, config.SourceDefault
	}
	return s.conf.Get(d.Broker), s.conf.Source(d.Broker)
}

// logConfig resolves a topic's storage settings.
func (s *Server) logConfig(t cluster.Topic) partition.LogConfig {
	num := func(name string) int64 {
		v, _ := s.topicValue(t, name)
		n, _ := strconv.ParseInt(v, 10, 64)
		return n
	}
	cfg := partition.DefaultLogConfig()
	cfg.SegmentBytes = num("segment.bytes")
	cfg.SegmentMs = num("segment.ms")
	cfg.SegmentJitterMs = num("segment.jitter.ms")
	cfg.RetentionMs = num("retention.ms")
	cfg.RetentionBytes = num("retention.bytes")
	cfg.IndexIntervalBytes = int32(num("index.interval.bytes"))
	cfg.MaxIndexBytes = int32(num("segment.index.bytes"))
	cfg.DeleteRetentionMs = num("delete.retention.ms")
	cfg.MinCompactionLagMs = num("min.compaction.lag.ms")
	cfg.MaxCompactionLagMs = num("max.compaction.lag.ms")
	cfg.MaxMessageBytes = int32(num("max.message.bytes"))
	// Kafka's message.timestamp.difference.max.ms bounds both directions where before/after
	// are left at their default (no bound).
	cfg.TimestampBeforeMaxMs, cfg.TimestampAfterMaxMs = num("message.timestamp.before.max.ms"), num("message.timestamp.after.max.ms")
	if diff := num("message.timestamp.difference.max.ms"); diff != math.MaxInt64 {
		if cfg.TimestampBeforeMaxMs == math.MaxInt64 {
			cfg.TimestampBeforeMaxMs = diff
		}
		if cfg.TimestampAfterMaxMs == math.MaxInt64 {
			cfg.TimestampAfterMaxMs = diff
		}
	}
	cfg.FlushIntervalMessages = num("flush.messages")
	cfg.FlushIntervalMs = num("flush.ms")
	ratio, _ := s.topicValue(t, "min.cleanable.dirty.ratio")
	cfg.MinCleanableDirtyRatio, _ = strconv.ParseFloat(ratio, 64)
	policy, _ := s.topicValue(t, "cleanup.policy")
	cfg.Delete = strings.Contains(policy, "delete")
	cfg.Compact = strings.Contains(policy, "compact")
	if ts, _ := s.topicValue(t, "message.timestamp.type"); ts == "LogAppendTime" {
		cfg.TimestampType = partition.LogAppendTime
	} else {
		cfg.TimestampType = partition.CreateTime
	}
	cfg.CompressionType, _ = s.topicValue(t, "compression.type")
	if codec, err := compress.ParseCodec(cfg.CompressionType); err == nil {
		if _, _, _, ok := compress.LevelRange(codec); ok { // compression.gzip.level, .lz4.level, .zstd.level
			cfg.CompressionLevel = int(num("compression." + codec.String() + ".level"))
		}
	}
	cfg.Fsync = s.cfg.fsync
	return cfg
}

// reconfigureTopic applies changed topic configs to open logs.
func (s *Server) reconfigureTopic(t cluster.Topic) {
	cfg := s.logConfig(t)
	for _, p := range t.Partitions {
		if part := s.parts.Get(t.Name, p.Index); part != nil {
			part.SetConfig(cfg)
			part.Replica().SetMinISR(s.minISR(t))
		}
	}
}

// highWatermark is the offset below which consumers may read: the replica's high watermark
// (with fsync before ack, never past what every ISR member has on disk).
func (s *Server) highWatermark(p *partition.Partition) int64 { return p.Offsets().HighWatermark }

// leaderPart finds a partition this broker leads, for a client request. A partition that
// exists but is led elsewhere (or has no leader now) is NOT_LEADER_OR_FOLLOWER, so the client
// refreshes its metadata; only a partition that does not exist is UNKNOWN_TOPIC_OR_PARTITION.
func (s *Server) leaderPart(topic string, index int32) (*partition.Partition, error) {
	if p := s.parts.Get(topic, index); p != nil {
		if leader, _ := p.IsLeader(); leader {
			return p, nil
		}
		return nil, fmt.Errorf("%w: %s-%d is led by another broker", wire.ErrNotLeaderOrFollower, topic, index)
	}
	if t, ok := s.images.Current().Topic(topic); ok && index >= 0 && int(index) < len(t.Partitions) {
		return nil, fmt.Errorf("%w: %s-%d is led by another broker", wire.ErrNotLeaderOrFollower, topic, index)
	}
	return nil, fmt.Errorf("%w: %s-%d", wire.ErrUnknownTopicOrPartition, topic, index)
}

// checkLeaderEpoch applies a client's CurrentLeaderEpoch (Fetch v9+, ListOffsets v4+; -1 means
// none) to a partition led here: older than the leader's is FENCED_LEADER_EPOCH (the client's
// metadata is stale), newer is UNKNOWN_LEADER_EPOCH (this broker has not learnt it yet), as
// Kafka answers. Both make the client refresh its metadata.
func checkLeaderEpoch(p *partition.Partition, current int32) error {
	if current < 0 {
		return nil
	}
	epoch := p.LeaderEpoch()
	switch {
	case current < epoch:
		return fmt.Errorf("%w: %s-%d is at leader epoch %d, the request at %d", wire.ErrFencedLeaderEpoch, p.Topic, p.Index, epoch, current)
	case current > epoch:
		return fmt.Errorf("%w: %s-%d is at leader epoch %d, the request at %d", wire.ErrUnknownLeaderEpoch, p.Topic, p.Index, epoch, current)
	}
	return nil
}

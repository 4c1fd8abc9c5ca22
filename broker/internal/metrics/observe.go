package metrics

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// PartitionState is one local replica as the partition gauges report it.
type PartitionState struct {
	Topic          string
	Partition      int32
	LogStartOffset int64
	LogEndOffset   int64
	HighWatermark  int64
	Leader         bool
	Size           int64 // bytes of the log's segments (Kafka's Log Size)
	Segments       int   // segment count (Kafka's Log NumLogSegments)
}

// ClusterState is the cluster-mode view of this broker, as Kafka's ReplicaManager and
// KafkaController gauges report it: under-replicated and under-min-ISR partitions among those
// this broker leads; offline partitions (no live leader) reported by the controller only.
type ClusterState struct {
	UnderReplicated int64
	UnderMinISR     int64
	Offline         int64
	Controller      bool
	// ZooKeeperState is the session's state: connected, connecting, disconnected, expired
	// or auth_failed (ZooKeeperStates).
	ZooKeeperState string
}

// ZooKeeperStates are the session states the spool.zookeeper.session gauge always reports
// (1 for the current one, 0 for the others), Kafka's SessionState.
var ZooKeeperStates = []string{"connected", "connecting", "disconnected", "expired", "auth_failed"}

var attrZKState = attribute.Key("spool.zookeeper.state")

// StorageStats are the storage's cumulative counters.
type StorageStats struct {
	Fsyncs    int64
	FsyncTime time.Duration
}

// Observe registers the observable instruments. partitions lists the local replicas at each
// collection; cluster (nil on a single node) and storage are read at each collection too. The
// callbacks run on the scraping goroutine and must not block.
func (m *Metrics) Observe(partitions func() []PartitionState, cluster func() ClusterState, storage func() StorageStats) error {
	if m == nil {
		return nil
	}
	b := &builder{meter: m.meter}
	gauge := b.gauge
	var errs []error
	start := gauge("spool.partition.log.start_offset", "{offset}", "First offset of the local log, by topic and partition.")
	end := gauge("spool.partition.log.end_offset", "{offset}", "Offset the next appended record gets in the local log, by topic and partition.")
	hw := gauge("spool.partition.high_watermark", "{offset}", "High watermark (last offset consumers may read, plus one) of the local replica.")
	leader := gauge("spool.partition.leader", "", "1 where this broker leads the partition, 0 where it follows.")
	size := gauge("spool.partition.log.size", "By", "Bytes of the local log's segments (record batches, without indexes), by topic and partition.")
	segments := gauge("spool.partition.log.segments", "{segment}", "Segments of the local log, by topic and partition.")
	instruments := []metric.Observable{start, end, hw, leader, size, segments}
	var ur, umi, offline, ctrl metric.Int64ObservableGauge
	var shrinks, expands, elections, zkExpired, zkDisconnected metric.Int64ObservableCounter
	var zkSession metric.Int64ObservableGauge
	counter := b.observedCounter
	if cluster != nil {
		ur = gauge("spool.partitions.under_replicated", "{partition}", "Partitions led here whose ISR is smaller than their replica set.")
		umi = gauge("spool.partitions.under_min_isr", "{partition}", "Partitions led here whose ISR is smaller than min.insync.replicas.")
		offline = gauge("spool.partitions.offline", "{partition}", "Partitions without a live leader (reported by the controller only).")
		ctrl = gauge("spool.controller.active", "", "1 where this broker is the controller.")
		shrinks = counter("spool.isr.shrinks", "{change}", "ISR changes written here (by a partition leader or the controller) that removed replicas.")
		expands = counter("spool.isr.expands", "{change}", "ISR changes written here (by a partition leader or the controller) that added replicas.")
		elections = counter("spool.controller.leader_elections", "{election}", "Partition leaders elected by this broker while it was the controller (new partitions' first leaders included).")
		zkSession = gauge("spool.zookeeper.session", "", "1 for the ZooKeeper session's current state (spool.zookeeper.state), 0 for the others.")
		zkExpired = counter("spool.zookeeper.session.expirations", "{expiration}", "ZooKeeper sessions of this broker that expired.")
		zkDisconnected = counter("spool.zookeeper.disconnects", "{disconnect}", "Connections to ZooKeeper this broker lost.")
		instruments = append(instruments, ur, umi, offline, ctrl, shrinks, expands, elections, zkSession, zkExpired, zkDisconnected)
	}
	fsyncs, err := m.meter.Int64ObservableCounter("spool.storage.fsyncs", metric.WithUnit("{fsync}"),
		metric.WithDescription("fsync rounds of the partition logs (one round may cover many appends: group commit)."))
	errs = append(errs, err)
	fsyncTime, err := m.meter.Float64ObservableCounter("spool.storage.fsync.time", metric.WithUnit("s"),
		metric.WithDescription("Time spent in fsync rounds of the partition logs; divided by spool.storage.fsyncs, the mean fsync latency."))
	errs = append(errs, err)
	instruments = append(instruments, fsyncs, fsyncTime)
	if err := errors.Join(append(errs, b.errs...)...); err != nil {
		return fmt.Errorf("creating observable instruments: %w", err)
	}
	_, err = m.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, p := range partitions() {
			a := metric.WithAttributeSet(attribute.NewSet(attrTopic.String(p.Topic), attrPartition.String(strconv.Itoa(int(p.Partition)))))
			o.ObserveInt64(start, p.LogStartOffset, a)
			o.ObserveInt64(end, p.LogEndOffset, a)
			o.ObserveInt64(hw, p.HighWatermark, a)
			o.ObserveInt64(leader, boolInt(p.Leader), a)
			o.ObserveInt64(size, p.Size, a)
			o.ObserveInt64(segments, int64(p.Segments), a)
		}
		if cluster != nil {
			c := cluster()
			o.ObserveInt64(ur, c.UnderReplicated)
			o.ObserveInt64(umi, c.UnderMinISR)
			o.ObserveInt64(offline, c.Offline)
			o.ObserveInt64(ctrl, boolInt(c.Controller))
			o.ObserveInt64(shrinks, isrShrinks.Load())
			o.ObserveInt64(expands, isrExpands.Load())
			o.ObserveInt64(elections, leaderElections.Load())
			for i, state := range ZooKeeperStates {
				o.ObserveInt64(zkSession, boolInt(c.ZooKeeperState == state), zkStateAttrs[i])
			}
			o.ObserveInt64(zkExpired, zkExpirations.Load())
			o.ObserveInt64(zkDisconnected, zkDisconnects.Load())
		}
		st := storage()
		o.ObserveInt64(fsyncs, st.Fsyncs)
		o.ObserveFloat64(fsyncTime, st.FsyncTime.Seconds())
		return nil
	}, instruments...)
	if err != nil {
		return fmt.Errorf("registering the metrics callback: %w", err)
	}
	return nil
}

// zkStateAttrs[i] is the attribute set of ZooKeeperStates[i].
var zkStateAttrs = func() []metric.ObserveOption {
	out := make([]metric.ObserveOption, len(ZooKeeperStates))
	for i, st := range ZooKeeperStates {
		out[i] = metric.WithAttributeSet(attribute.NewSet(attrZKState.String(st)))
	}
	return out
}()

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// RequestsWaiting are the requests whose reply waits for something (Kafka's purgatory
// sizes): produce requests for fsync or replication, fetches for data (long polls).
type RequestsWaiting struct{ Produce, Fetch int64 }

// ObserveWaiting registers the gauge of requests waiting, read from waiting at each collection.
func (m *Metrics) ObserveWaiting(waiting func() RequestsWaiting) error {
	if m == nil {
		return nil
	}
	g, err := m.meter.Int64ObservableGauge("spool.requests.waiting", metric.WithUnit("{request}"),
		metric.WithDescription("Requests whose reply waits (rpc.method Produce: for fsync or replicas; Fetch: for data to arrive)."))
	if err != nil {
		return fmt.Errorf("creating the requests-waiting gauge: %w", err)
	}
	produce := metric.WithAttributeSet(attribute.NewSet(attrMethod.String("Produce")))
	fetch := metric.WithAttributeSet(attribute.NewSet(attrMethod.String("Fetch")))
	_, err = m.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		w := waiting()
		o.ObserveInt64(g, w.Produce, produce)
		o.ObserveInt64(g, w.Fetch, fetch)
		return nil
	}, g)
	if err != nil {
		return fmt.Errorf("registering the requests-waiting callback: %w", err)
	}
	return nil
}

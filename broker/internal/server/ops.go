package server

// Operations: the metrics and health listener (spool.metrics.listener) and the startup
// summary. The metrics package owns the instruments; this file feeds its observable ones
// from the replicas and the metadata image, and answers /readyz.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spoolmq/spool/broker/internal/config"
	"github.com/spoolmq/spool/broker/internal/metrics"
	"github.com/spoolmq/spool/broker/internal/replication"
)

// initOps makes the meter when spool.metrics.listener is set and the tracer when
// spool.otlp.endpoint is; each stays nil (off, a nil check per request) otherwise.
func (s *Server) initOps() error {
	if ep := s.conf.Get(config.OTLPEndpoint); ep != "" {
		t, err := metrics.NewTracer(ep)
		if err != nil {
			return fmt.Errorf("traces: %w", err)
		}
		s.tracer = t
		s.log.Info("exporting a span per request over OTLP", "endpoint", ep)
	}
	if s.conf.Get(config.MetricsListener) == "" {
		return nil
	}
	return s.initMetrics()
}

// initMetrics makes the meter and registers the observable instruments.
func (s *Server) initMetrics() error {
	m, err := metrics.New()
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	var clusterState func() metrics.ClusterState
	if s.clustered {
		clusterState = s.clusterState
	}
	storageStats := func() metrics.StorageStats {
		st := s.logs.Stats()
		return metrics.StorageStats{Fsyncs: st.Fsyncs, FsyncTime: st.FsyncTime}
	}
	if err := m.Observe(s.partitionStates, clusterState, storageStats); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	if err := m.ObserveGroups(s.groupStates); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	s.metrics = m
	return nil
}

// listenOps binds the metrics listener, when there is one, and serves it at once so that
// /healthz and /readyz answer before the broker is ready.
func (s *Server) listenOps() error {
	if s.metrics == nil {
		return nil
	}
	addr := s.conf.Get(config.MetricsListener)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics listener %s: %w", addr, err)
	}
	s.opsLn = ln
	s.opsHTTP = &http.Server{Handler: s.metrics.Handler(s.readiness), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := s.opsHTTP.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("metrics listener", "err", err)
		}
	}()
	s.log.Info("metrics listening", "addr", ln.Addr().String(), "paths", "/metrics /healthz /readyz")
	return nil
}

// MetricsAddr is the bound metrics listener address, or nil when metrics are off.
func (s *Server) MetricsAddr() net.Addr {
	if s.opsLn == nil {
		return nil
	}
	return s.opsLn.Addr()
}

func (s *Server) closeOps() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.tracer.Shutdown(ctx); err != nil {
		s.log.Warn("exporting the last spans", "err", err)
	}
	if s.opsHTTP == nil {
		return
	}
	if err := s.opsHTTP.Shutdown(ctx); err != nil {
		s.log.Warn("stopping the metrics listener", "err", err)
	}
	if err := s.metrics.Shutdown(ctx); err != nil {
		s.log.Warn("stopping the meter", "err", err)
	}
}

// readiness is /readyz: storage is loaded once New returns; the broker is ready once it
// serves, in cluster mode after registering in ZooKeeper.
func (s *Server) readiness() error {
	if s.ready.Load() {
		return nil
	}
	if s.clustered {
		return errors.New("storage loaded; not yet registered in ZooKeeper")
	}
	return errors.New("storage loaded; not yet serving")
}

// partitionStates lists the local replicas for the partition gauges.
func (s *Server) partitionStates() []metrics.PartitionState {
	parts := s.parts.all()
	out := make([]metrics.PartitionState, 0, len(parts))
	for _, p := range parts {
		role, _ := p.replica.Role()
		out = append(out, metrics.PartitionState{
			Topic: p.topic, Partition: p.index,
			LogStartOffset: p.log.LogStartOffset(), LogEndOffset: p.log.LogEndOffset(),
			HighWatermark: s.highWatermark(p), Leader: role == replication.RoleLeader,
		})
	}
	return out
}

// groupStates lists the groups coordinated here with their lag: each committed offset
// against the high watermark of the local replica of its partition.
func (s *Server) groupStates() []metrics.GroupState {
	snaps := s.groups.Snapshot()
	out := make([]metrics.GroupState, 0, len(snaps))
	for _, g := range snaps {
		st := metrics.GroupState{GroupID: g.GroupID, State: g.State, Members: len(g.Members)}
		for _, o := range g.Offsets {
			p := s.parts.get(o.Topic, o.Partition)
			if p == nil {
				continue
			}
			st.Lag = append(st.Lag, metrics.PartitionLag{Topic: o.Topic, Partition: o.Partition,
				Committed: o.Offset, Lag: max(0, s.highWatermark(p)-o.Offset)})
		}
		out = append(out, st)
	}
	return out
}

// clusterState computes the cluster gauges from the metadata image, as Kafka does: a leader
// reports its under-replicated and under-min-ISR partitions, the controller the offline ones.
func (s *Server) clusterState() metrics.ClusterState {
	var st metrics.ClusterState
	st.Controller = s.md.ControllerID() == s.self.NodeID
	for _, t := range s.md.Topics() {
		minISR := s.minISR(t)
		for _, p := range t.Partitions {
			if p.Leader < 0 && st.Controller {
				st.Offline++
			}
			if p.Leader != s.self.NodeID {
				continue
			}
			if len(p.ISR) < len(p.Replicas) {
				st.UnderReplicated++
			}
			if len(p.ISR) < minISR {
				st.UnderMinISR++
			}
		}
	}
	return st
}

// logStartup is the startup summary: what was loaded and in which mode.
func (s *Server) logStartup() {
	topics, partitions := 0, 0
	for _, t := range s.md.Topics() {
		topics++
		partitions += len(t.Partitions)
	}
	mode := "single node (embedded metadata)"
	if s.clustered {
		mode = "cluster (ZooKeeper " + s.conf.Get(config.ZooKeeperConnect) + ")"
	}
	s.log.Info("storage loaded", "mode", mode, "topics", topics, "partitions", partitions,
		"local_replicas", len(s.parts.all()), "data_dir", s.conf.Get(config.LogDirs), "took", time.Since(s.started).Round(time.Millisecond))
}

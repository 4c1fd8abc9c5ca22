package server

// Operations: the metrics and health listener (spool.metrics.listener) and the startup
// summary. The metrics package owns the instruments; this file feeds its observable ones
// from the replicas and the metadata image, and answers /readyz.

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/spoolmq/spool/broker/internal/config"
	"github.com/spoolmq/spool/broker/internal/console"
	"github.com/spoolmq/spool/broker/internal/metrics"
	"github.com/spoolmq/spool/broker/internal/replication"
	"github.com/spoolmq/spool/protocol-spec/wire"
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
	if err := m.ObserveWaiting(func() metrics.RequestsWaiting {
		return metrics.RequestsWaiting{Produce: s.waitingProduce.Load(), Fetch: s.waitingFetch.Load()}
	}); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	if err := m.ObserveGroups(s.groupStates); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	if err := m.ObserveLimits(s.limitStats); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	if err := m.ObserveScale(s.scaleStats); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	if err := m.ObservePeerAuth(s.peerAuthStats); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	s.logs.ObserveFsyncs(m.Fsync)
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
	mux := http.NewServeMux()
	mux.Handle("/", s.metrics.Handler(s.readiness))
	mux.Handle("/console/", console.Files())
	mux.Handle("/console/api/", s.consoleAPI())
	mux.Handle("GET /{$}", http.RedirectHandler("/console/", http.StatusFound))
	s.opsHTTP = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := s.opsHTTP.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("metrics listener", "err", err)
		}
	}()
	s.log.Info("metrics listening", "addr", ln.Addr().String(), "paths", "/metrics /healthz /readyz /console/")
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
// serves. In cluster mode it must also be registered in ZooKeeper and caught up: every
// partition it follows is in the ISR, or has fetched up to its leader's high watermark at
// least once since the broker started (replication.Replica.CaughtUp). Once caught up it
// stays ready until shutdown: a follower falling out of the ISR later is the
// under-replicated gauge's business, not a reason to take the broker out of service.
func (s *Server) readiness() error {
	if !s.ready.Load() {
		if s.clustered {
			return errors.New("storage loaded; not yet registered in ZooKeeper")
		}
		return errors.New("storage loaded; not yet serving")
	}
	if !s.clustered || s.caughtUp.Load() {
		return nil
	}
	var behind []string
	parts := s.parts.All()
	for _, p := range parts {
		if !p.Replica().CaughtUp() {
			behind = append(behind, fmt.Sprintf("%s-%d", p.Topic, p.Index))
		}
	}
	if len(behind) > 0 {
		slices.Sort(behind)
		return fmt.Errorf("registered in ZooKeeper; %d of %d local replicas not caught up with their leaders (%s)",
			len(behind), len(parts), strings.Join(behind[:min(len(behind), 5)], ", "))
	}
	if s.caughtUp.CompareAndSwap(false, true) {
		s.log.Info("caught up: every local replica is in sync; ready", "local_replicas", len(parts))
	}
	return nil
}

// partitionStates lists the local replicas for the partition gauges.
func (s *Server) partitionStates() []metrics.PartitionState {
	parts := s.parts.All()
	out := make([]metrics.PartitionState, 0, len(parts))
	for _, p := range parts {
		role, _ := p.Replica().Role()
		out = append(out, metrics.PartitionState{
			Topic: p.Topic, Partition: p.Index,
			LogStartOffset: p.Log().LogStartOffset(), LogEndOffset: p.Log().LogEndOffset(),
			HighWatermark: s.highWatermark(p), Leader: role == replication.RoleLeader,
			Size: p.Log().Size(), Segments: p.Log().SegmentCount(),
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
			p := s.parts.Get(o.Topic, o.Partition)
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

// consoleState is the web console's document: the metadata image, this broker's replicas'
// offsets and the groups it coordinates, read when the page asks.
func (s *Server) consoleState() console.State {
	st := console.State{Broker: console.BrokerInfo{NodeID: s.self.NodeID, Controller: s.md.ControllerID(),
		Mode: "single node", Version: buildVersion(), Started: s.started, Now: time.Now()}}
	if s.clustered {
		st.Broker.Mode = "cluster (ZooKeeper " + s.conf.Get(config.ZooKeeperConnect) + ")"
	}
	for _, b := range s.md.Brokers() {
		st.Brokers = append(st.Brokers, console.Broker{NodeID: b.NodeID, Host: b.Host, Port: b.Port, Rack: b.Rack})
	}
	slices.SortFunc(st.Brokers, func(a, b console.Broker) int { return cmp.Compare(a.NodeID, b.NodeID) })
	for _, t := range s.md.Topics() {
		ct := console.Topic{Name: t.Name, ID: base64.RawURLEncoding.EncodeToString(t.ID[:]), Internal: t.Internal,
			Configs: t.Configs, Partitions: make([]console.Partition, 0, len(t.Partitions))}
		if ct.Configs == nil {
			ct.Configs = map[string]string{}
		}
		for _, p := range t.Partitions {
			cp := console.Partition{Index: p.Index, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
				Replicas: nonNil(p.Replicas), ISR: nonNil(p.ISR), Offline: nonNil(p.Offline)}
			if lp := s.parts.Get(t.Name, p.Index); lp != nil {
				cp.Local = true
				cp.LogStartOffset, cp.LogEndOffset = lp.Log().LogStartOffset(), lp.Log().LogEndOffset()
				cp.HighWatermark = s.highWatermark(lp)
			}
			ct.Partitions = append(ct.Partitions, cp)
		}
		st.Topics = append(st.Topics, ct)
	}
	for _, g := range s.groups.Snapshot() {
		cg := console.Group{ID: g.GroupID, State: g.State, ProtocolType: g.ProtocolType, Protocol: g.Protocol,
			Generation: g.Generation, Members: []console.Member{}, Offsets: []console.GroupOffset{}}
		for _, m := range g.Members {
			cm := console.Member{MemberID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID,
				ClientHost: m.ClientHost, Assignment: []console.TopicPartitions{}}
			var a wire.ConsumerProtocolAssignment
			if g.ProtocolType == "consumer" && len(m.Assignment) > 0 {
				if _, err := a.DecodeVersioned(m.Assignment); err == nil {
					for _, tp := range a.AssignedPartitions {
						cm.Assignment = append(cm.Assignment, console.TopicPartitions{Topic: tp.Topic, Partitions: nonNil(tp.Partitions)})
					}
				}
			}
			cg.Members = append(cg.Members, cm)
		}
		for _, o := range g.Offsets {
			co := console.GroupOffset{Topic: o.Topic, Partition: o.Partition, Committed: o.Offset}
			if p := s.parts.Get(o.Topic, o.Partition); p != nil {
				co.HasEnd, co.HighWatermark = true, s.highWatermark(p)
				co.Lag = max(0, co.HighWatermark-o.Offset)
				cg.Lag += co.Lag
			}
			cg.Offsets = append(cg.Offsets, co)
		}
		st.Groups = append(st.Groups, cg)
	}
	if st.Groups == nil {
		st.Groups = []console.Group{}
	}
	if st.Topics == nil {
		st.Topics = []console.Topic{}
	}
	return st
}

// nonNil makes a nil list an empty one, so the console's JSON has [] rather than null.
func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}

// buildVersion is the module version and VCS commit the binary was built from.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(devel)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	for _, kv := range bi.Settings {
		if kv.Key == "vcs.revision" && len(kv.Value) >= 12 {
			v += " " + kv.Value[:12]
		}
	}
	return v
}

// clusterState computes the cluster gauges from the metadata image, as Kafka does: a leader
// reports its under-replicated and under-min-ISR partitions, the controller the offline ones.
func (s *Server) clusterState() metrics.ClusterState {
	var st metrics.ClusterState
	st.Controller = s.md.ControllerID() == s.self.NodeID
	if s.zk != nil {
		st.ZooKeeperState = s.zk.SessionState()
	}
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
			if len(p.ISR) < min(minISR, len(p.Replicas)) { // Kafka's effective minimum: at most the replicas
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
	segments, bytes := 0, int64(0)
	local := s.parts.All()
	for _, p := range local {
		segments += p.Log().SegmentCount()
		bytes += p.Log().Size()
	}
	s.log.Info("storage loaded", "mode", mode, "topics", topics, "partitions", partitions,
		"local_replicas", len(local), "segments", segments, "bytes", bytes,
		"data_dir", s.conf.Get(config.LogDirs), "took", time.Since(s.started).Round(time.Millisecond))
}

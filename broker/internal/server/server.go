// Package server is the broker's network front: it accepts Kafka-protocol connections, decodes
// requests with the generated codec, dispatches them to one handler per API (files NN_name.go,
// each listing the versions it serves) and writes responses in request order.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/broker/internal/cluster"
	zkstore "github.com/spoolmq/spool/broker/internal/cluster/zk"
	"github.com/spoolmq/spool/broker/internal/config"
	"github.com/spoolmq/spool/broker/internal/group"
	"github.com/spoolmq/spool/broker/internal/metrics"
	"github.com/spoolmq/spool/broker/internal/partition"
	"github.com/spoolmq/spool/broker/internal/peer"
	"github.com/spoolmq/spool/broker/internal/replication"
	"github.com/spoolmq/spool/broker/internal/security"
)

// settings are the config values the hot paths read, parsed once.
type settings struct {
	maxRequestBytes int64
	idleTimeout     time.Duration
	writeTimeout    time.Duration
	autoCreate      bool
	numPartitions   int32
	replication     int16
	fsync           partition.FsyncMode
	sendfile        bool
}

// Server is one broker.
type Server struct {
	conf *config.Config
	cfg  settings
	log  *slog.Logger
	md   cluster.Metadata
	// images is the metadata as requests read it: one consistent version per request
	// (Metadata reads it; the other handlers still read md).
	images *cluster.Images
	logs   *partition.Logs // the data directory: opened logs, retention, checkpoints
	self   cluster.Broker

	listeners []*listener // bound by Listen, in the order of the listeners property
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	// lifeMu orders Serve's start against Close, so a Close that comes first makes Serve a
	// no-op instead of racing its WaitGroup.
	lifeMu sync.Mutex
	closed bool

	parts       *partition.Manager
	reconcileMu sync.Mutex // serialises reconcile
	scale       scaleState // offline replicas, accept retries (scale.go)
	repl        *replication.Settings
	fetchers    *replication.Fetchers
	// leaderQuota is the leader side of the replication throttle: the bytes this broker sends
	// to followers of partitions marked leader-throttled (leader.replication.throttled.rate).
	leaderQuota  replication.Quota
	clustered    bool           // zookeeper.connect is set
	zk           *zkstore.Store // nil on a single node
	producers    *producerIDs
	offsetsMu    sync.Mutex  // serialises the creation of __consumer_offsets
	offsetsReady atomic.Bool // __consumer_offsets exists
	groups       *group.Coordinator
	txn          txnSide    // the transaction coordinator (txn.go)
	createMu     sync.Mutex // serialises topic creation with opening its logs
	closeOnce    sync.Once
	closeError   error

	fetchSessions *fetchSessionCache // KIP-227 sessions, broker-wide as in Kafka
	authz         *authz             // nil without authorizer.class.name (authorize.go)
	scram         *scramUsers        // SCRAM credentials (scram.go)
	connLimits    *connLimits        // max.connections* (limits.go)
	reqMem        *requestMemory     // queued.max.request.bytes (limits.go)
	peerAuth      peer.AuthCounts    // SASL authentications to other brokers (interbroker.go)
	logLines      logLines           // rate-limited and summarized info lines (loglines.go)

	// Operations: metrics is nil unless spool.metrics.listener is set; ready is set once the
	// broker serves (and, in cluster mode, is registered in ZooKeeper).
	metrics *metrics.Metrics
	tracer  *metrics.Tracer // nil unless spool.otlp.endpoint is set
	opsLn   net.Listener
	opsHTTP *http.Server
	ready   atomic.Bool
	// caughtUp is set the first time /readyz finds every local replica in sync (cluster mode).
	caughtUp atomic.Bool
	started  time.Time
	// waitingProduce and waitingFetch count the produce requests waiting for fsync or
	// replication and the fetches long-polling (Kafka's purgatory sizes).
	waitingProduce, waitingFetch atomic.Int64
}

// New opens the data directory (metadata and logs) and prepares a broker; Serve starts it.
func New(conf *config.Config, log *slog.Logger) (*Server, error) {
	s := &Server{conf: conf, log: log, started: time.Now(), fetchSessions: newFetchSessionCache(conf.Int(config.FetchSessionCacheSlots), fetchSessionEvictAfter)}
	// Made here, not in Serve, so a Close racing a Serve that has not started yet is safe.
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.cfg = settings{
		maxRequestBytes: conf.Int64(config.SocketRequestMaxBytes),
		idleTimeout:     time.Duration(conf.Int64(config.ConnectionsMaxIdleMs)) * time.Millisecond,
		writeTimeout:    30 * time.Second,
		autoCreate:      conf.Bool(config.AutoCreateTopics),
		numPartitions:   int32(conf.Int(config.NumPartitions)),
		replication:     int16(conf.Int(config.DefaultReplicationFactor)),
		fsync:           fsyncMode(conf.Get(config.Fsync)),
		sendfile:        conf.Bool(config.FetchSendfile),
	}
	err := s.selfEndpoints()
	if err != nil {
		return nil, err
	}
	if r := conf.Get(config.BrokerRack); r != "" {
		s.self.Rack = &r
	}
	peerSec, err := s.peerSecurity()
	if err != nil {
		return nil, err
	}
	dataDir := conf.Get(config.LogDirs)
	if s.logs, err = partition.OpenLogs(dataDir, log); err != nil {
		return nil, fmt.Errorf("opening logs: %w", err)
	}
	if err := s.openMetadata(dataDir, peerSec); err != nil {
		s.logs.Close()
		return nil, fmt.Errorf("opening metadata: %w", err)
	}
	// The images first: the authorizer and the SCRAM loader set their sections.
	s.images = cluster.NewImages(s.md)
	if err := s.openAuthorizer(); err != nil {
		s.logs.Close()
		s.md.Close()
		return nil, fmt.Errorf("starting the authorizer: %w", err)
	}
	if err := s.openScram(); err != nil {
		s.logs.Close()
		s.md.Close()
		return nil, err
	}
	s.producers = &producerIDs{md: s.md}
	s.repl = &replication.Settings{
		Self:        s.self.NodeID,
		LagMax:      time.Duration(conf.Int64(config.ReplicaLagTimeMaxMs)) * time.Millisecond,
		DurableOnly: s.cfg.fsync == partition.FsyncAlways,
		WriteISR:    s.md.AlterISR,
		Log:         log.With("component", "replication"),
	}
	s.fetchers = replication.NewFetchers(s.ctx, replication.FetchSettings{
		MaxWait:        time.Duration(conf.Int(config.ReplicaFetchWaitMaxMs)) * time.Millisecond,
		MaxBytes:       int32(conf.Int(config.ReplicaFetchResponseMaxBytes)),
		PartitionMax:   int32(conf.Int(config.ReplicaFetchMaxBytes)),
		Backoff:        time.Duration(conf.Int(config.ReplicaFetchBackoffMs)) * time.Millisecond,
		DurableOnly:    s.cfg.fsync == partition.FsyncAlways,
		Self:           s.self.NodeID,
		Address:        s.brokerAddress,
		Log:            log.With("component", "fetcher"),
		RequestTimeout: 30 * time.Second,
		ConnectTimeout: 5 * time.Second,
		Security:       peerSec,
		ThrottleRate:   s.followerThrottleRate,
	})
	s.parts = partition.NewManager()
	if s.groups, err = s.newGroupCoordinator(); err != nil {
		s.logs.Close()
		s.md.Close()
		return nil, fmt.Errorf("starting the group coordinator: %w", err)
	}
	s.startTxnCoordinator()
	// A replica that cannot be opened is offline (logged, counted, retried by the
	// reconciler), never the broker.
	_ = s.reconcile()
	if err := s.initOps(); err != nil {
		s.txn.coord.Close()
		s.txn.peers.close()
		s.groups.Close()
		s.logs.Close()
		s.md.Close()
		return nil, err
	}
	s.logStartup()
	return s, nil
}

// openMetadata opens the metadata store: ZooKeeper when zookeeper.connect is set, else the
// embedded single-node store in the data directory.
func (s *Server) openMetadata(dataDir string, peerSec *peer.Security) error {
	connect := s.conf.Get(config.ZooKeeperConnect)
	if connect == "" {
		md, err := cluster.OpenEmbedded(dataDir, s.self)
		if err != nil {
			return err
		}
		s.md = md
		return nil
	}
	ms := func(key string) time.Duration { return time.Duration(s.conf.Int64(key)) * time.Millisecond }
	ctx, cancel := context.WithTimeout(context.Background(), ms(config.ZooKeeperConnectionTimeoutMs))
	defer cancel()
	var rebalance time.Duration
	if s.conf.Bool(config.AutoLeaderRebalanceEnable) {
		rebalance = time.Duration(s.conf.Int64(config.LeaderImbalanceCheckInterval)) * time.Second
	}
	store, err := zkstore.Open(ctx, zkstore.Config{
		LeaderRebalanceInterval: rebalance,
		Connect:                 connect,
		SessionTimeout:          ms(config.ZooKeeperSessionTimeoutMs),
		ConnectTimeout:          ms(config.ZooKeeperConnectionTimeoutMs),
		Self:                    s.self,
		InterBrokerListener:     s.conf.InterBrokerListener(),
		PeerSecurity:            peerSec,
		LivenessTimeout:         ms(config.BrokerSessionTimeoutMs),
		ProbeInterval:           ms(config.BrokerHeartbeatIntervalMs),
		LeaderImbalancePercent:  int(s.conf.Int64(config.LeaderImbalancePerBroker)),
		Unclean: func(configs map[string]string) bool {
			if v, ok := configs["unclean.leader.election.enable"]; ok {
				return v == "true"
			}
			return s.conf.Bool(config.UncleanLeaderElection)
		},
		Log: s.log,
	})
	if err != nil {
		return err
	}
	s.md, s.zk, s.clustered = store, store, true
	return nil
}

// brokerAddress is a live broker's HOST:PORT on the inter-broker listener.
func (s *Server) brokerAddress(id int32) (string, bool) {
	for _, b := range s.md.Brokers() {
		if b.NodeID == id {
			return net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), true
		}
	}
	return "", false
}

// syncBeforeAck: spool.fsync=always, an ack waits for fsync (and a sole replica's high
// watermark is its durable end).
func (s *Server) syncBeforeAck() bool { return s.cfg.fsync == partition.FsyncAlways }

func fsyncMode(v string) partition.FsyncMode {
	switch v {
	case "interval":
		return partition.FsyncInterval
	case "never":
		return partition.FsyncNever
	}
	return partition.FsyncAlways
}

func splitHostPort(addr string) (string, int32, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("address %q: %w", addr, err)
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("address %q: bad port", addr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return host, int32(port), nil
}

// Listen binds every listener. A listener bound on port 0 that advertised.listeners does not
// name is advertised on the port it got (tests use this).
func (s *Server) Listen() error {
	if err := s.initLimits(); err != nil {
		return err
	}
	for _, lc := range s.conf.Listeners() {
		l := &listener{conf: lc}
		if lc.SASL() {
			sc := s.conf.SASL(lc.Name)
			l.sasl = &saslConfig{mechanisms: sc.Mechanisms, plain: sc.PlainUsers,
				maxReceive: s.conf.Int64("sasl.server.max.receive.size"),
				failDelay:  time.Duration(s.conf.Int64("connection.failed.authentication.delay.ms")) * time.Millisecond,
				reauth:     time.Duration(s.conf.Int64("connections.max.reauth.ms")) * time.Millisecond}
		}
		if lc.TLS() {
			t, err := security.NewTLS(s.conf.SSL(lc.Name), s.log.With("listener", lc.Name))
			if err != nil {
				s.closeListeners()
				return &config.UsageError{Err: fmt.Errorf("listener %s: %w", lc.Name, err)}
			}
			l.tls = t.Config()
			if l.principals, err = security.ParsePrincipalRules(s.conf.ListenerValue(lc.Name, "ssl.principal.mapping.rules")); err != nil {
				s.closeListeners()
				return &config.UsageError{Err: fmt.Errorf("listener %s: %w", lc.Name, err)}
			}
		}
		ln, err := net.Listen("tcp", lc.Addr)
		if err != nil {
			s.closeListeners()
			return fmt.Errorf("listening on %s://%s: %w", lc.Name, lc.Addr, err)
		}
		l.ln = ln
		s.listeners = append(s.listeners, l)
	}
	if err := s.selfEndpoints(); err != nil {
		s.closeListeners()
		return err
	}
	if err := s.listenOps(); err != nil {
		s.closeListeners()
		return err
	}
	if e, ok := s.md.(interface{ SetSelf(cluster.Broker) }); ok {
		e.SetSelf(s.self)
		s.images.Invalidate() // the embedded store does not signal its own endpoint's change
	}
	return nil
}

// selfEndpoints sets this broker's endpoints (and its Host and Port, the inter-broker
// listener's) from the config and, once bound, the listeners' ports.
func (s *Server) selfEndpoints() error {
	self := cluster.Broker{NodeID: int32(s.conf.Int(config.NodeID)), Rack: s.self.Rack}
	for i, lc := range s.conf.Listeners() {
		addr := lc.Advertised
		if addr == "" {
			addr = lc.AdvertisedAddr()
			if i < len(s.listeners) {
				_, port, _ := splitHostPort(s.listeners[i].ln.Addr().String())
				host, _, _ := splitHostPort(addr)
				addr = net.JoinHostPort(host, strconv.Itoa(int(port)))
			}
		}
		host, port, err := splitHostPort(addr)
		if err != nil {
			return fmt.Errorf("listener %s: %w", lc.Name, err)
		}
		self.Endpoints = append(self.Endpoints, cluster.Endpoint{Listener: lc.Name, Protocol: lc.Protocol, Host: host, Port: port})
		if lc.Name == s.conf.InterBrokerListener() {
			self.Host, self.Port = host, port
		}
	}
	s.self = self
	return nil
}

func (s *Server) closeListeners() {
	for _, l := range s.listeners {
		l.ln.Close()
	}
}

// Addr is the first listener's bound address.
func (s *Server) Addr() net.Addr { return s.listeners[0].ln.Addr() }

// ListenerAddr is the bound address of the listener named name, or nil.
func (s *Server) ListenerAddr(name string) net.Addr {
	for _, l := range s.listeners {
		if l.conf.Name == name {
			return l.ln.Addr()
		}
	}
	return nil
}

// Serve accepts connections on every listener until Close. It returns nil after Close.
func (s *Server) Serve() error {
	if s.listeners == nil {
		if err := s.Listen(); err != nil {
			return err
		}
	}
	s.lifeMu.Lock()
	if s.closed {
		s.lifeMu.Unlock()
		return nil
	}
	// Both goroutines join wg here, under lifeMu, so a Close racing this Serve either
	// finds closed unset and waits for both, or set and Serve starts neither: an Add
	// after Close's Wait began would be a WaitGroup misuse.
	s.wg.Add(2)
	s.lifeMu.Unlock()
	go func() {
		defer s.wg.Done()
		s.logs.RunBackground(s.ctx, time.Duration(s.conf.Int64(config.LogRetentionCheckIntervalMs))*time.Millisecond)
	}()
	if s.zk != nil {
		if err := s.zk.Start(); err != nil {
			s.wg.Done()
			return err
		}
	}
	s.ready.Store(true)
	go func() {
		defer s.wg.Done()
		s.runReconciler(s.ctx)
	}()
	var eps []string
	for _, l := range s.listeners {
		eps = append(eps, l.conf.Name+"://"+l.ln.Addr().String())
	}
	var adv []string
	for _, e := range s.self.Endpoints {
		adv = append(adv, e.Listener+"://"+net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))))
	}
	s.log.Info("broker started", "listeners", strings.Join(eps, ","), "advertised", strings.Join(adv, ","),
		"node_id", s.self.NodeID, "cluster_id", s.md.ClusterID(), "data_dir", s.conf.Get(config.LogDirs), "fsync", s.conf.Get(config.Fsync))
	errc := make(chan error, len(s.listeners))
	for _, l := range s.listeners {
		go func() { errc <- s.accept(l) }()
	}
	for range s.listeners {
		if err := <-errc; err != nil {
			return err
		}
	}
	return nil
}

// Close stops accepting, ends every connection (pending long polls end), flushes and
// checkpoints the logs and closes the metadata store.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.lifeMu.Lock()
		s.closed = true
		s.lifeMu.Unlock()
		if s.zk != nil && s.conf.Bool(config.ControlledShutdownEnable) {
			// Controlled shutdown: leaderships move away while this broker still serves
			// its followers' fetches, so they are caught up when they take over.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := s.zk.Deregister(ctx); err != nil {
				s.log.Warn("controlled shutdown", "err", err)
			}
			cancel()
		}
		s.ready.Store(false)
		s.cancel()
		s.closeListeners()
		s.closeOps()
		s.wg.Wait()
		s.txn.coord.Close()
		s.txn.peers.close()
		s.groups.Close()
		s.fetchers.Wait()
		s.closeError = errors.Join(s.md.Close(), s.logs.Close())
		s.log.Info("broker stopped", "err", s.closeError)
	})
	return s.closeError
}

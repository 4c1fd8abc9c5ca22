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
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/broker/internal/cluster"
	zkstore "github.com/spoolmq/spool/broker/internal/cluster/zk"
	"github.com/spoolmq/spool/broker/internal/config"
	"github.com/spoolmq/spool/broker/internal/group"
	"github.com/spoolmq/spool/broker/internal/metrics"
	"github.com/spoolmq/spool/broker/internal/replication"
	"github.com/spoolmq/spool/broker/internal/storage"
)

// settings are the config values the hot paths read, parsed once.
type settings struct {
	maxRequestBytes int64
	idleTimeout     time.Duration
	writeTimeout    time.Duration
	autoCreate      bool
	numPartitions   int32
	replication     int16
	fsync           storage.FsyncMode
	sendfile        bool
}

// Server is one broker.
type Server struct {
	conf *config.Config
	cfg  settings
	log  *slog.Logger
	md   cluster.Metadata
	logs *storage.Manager
	self cluster.Broker

	ln     net.Listener
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// lifeMu orders Serve's start against Close, so a Close that comes first makes Serve a
	// no-op instead of racing its WaitGroup.
	lifeMu sync.Mutex
	closed bool

	parts        partitions
	reconcileMu  sync.Mutex // serialises reconcile
	repl         *replication.Settings
	fetchers     *replication.Fetchers
	clustered    bool           // zookeeper.connect is set
	zk           *zkstore.Store // nil on a single node
	producers    *producerIDs
	offsetsMu    sync.Mutex  // serialises the creation of __consumer_offsets
	offsetsReady atomic.Bool // __consumer_offsets exists
	groups       *group.Coordinator
	createMu     sync.Mutex // serialises topic creation with opening its logs
	closeOnce    sync.Once
	closeError   error

	fetchSessions *fetchSessionCache // KIP-227 sessions, broker-wide as in Kafka

	// Operations: metrics is nil unless spool.metrics.listener is set; ready is set once the
	// broker serves (and, in cluster mode, is registered in ZooKeeper).
	metrics *metrics.Metrics
	opsLn   net.Listener
	opsHTTP *http.Server
	ready   atomic.Bool
	started time.Time
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
	host, port, err := splitHostPort(conf.Advertised())
	if err != nil {
		return nil, err
	}
	s.self = cluster.Broker{NodeID: int32(conf.Int(config.NodeID)), Host: host, Port: port}
	if r := conf.Get(config.BrokerRack); r != "" {
		s.self.Rack = &r
	}
	dataDir := conf.Get(config.LogDirs)
	if s.logs, err = storage.OpenManager(dataDir, log); err != nil {
		return nil, fmt.Errorf("opening logs: %w", err)
	}
	if err := s.openMetadata(dataDir); err != nil {
		s.logs.Close()
		return nil, fmt.Errorf("opening metadata: %w", err)
	}
	s.producers = &producerIDs{md: s.md}
	s.repl = &replication.Settings{
		Self:        s.self.NodeID,
		LagMax:      time.Duration(conf.Int64(config.ReplicaLagTimeMaxMs)) * time.Millisecond,
		DurableOnly: s.cfg.fsync == storage.FsyncAlways,
		WriteISR:    s.md.AlterISR,
		Log:         log.With("component", "replication"),
	}
	s.fetchers = replication.NewFetchers(s.ctx, replication.FetchSettings{
		MaxWait:        time.Duration(conf.Int(config.ReplicaFetchWaitMaxMs)) * time.Millisecond,
		MaxBytes:       int32(conf.Int(config.ReplicaFetchResponseMaxBytes)),
		PartitionMax:   int32(conf.Int(config.ReplicaFetchMaxBytes)),
		Backoff:        time.Duration(conf.Int(config.ReplicaFetchBackoffMs)) * time.Millisecond,
		DurableOnly:    s.cfg.fsync == storage.FsyncAlways,
		Self:           s.self.NodeID,
		Address:        s.brokerAddress,
		Log:            log.With("component", "fetcher"),
		RequestTimeout: 30 * time.Second,
		ConnectTimeout: 5 * time.Second,
	})
	s.parts.init()
	if s.groups, err = s.newGroupCoordinator(); err != nil {
		s.logs.Close()
		s.md.Close()
		return nil, fmt.Errorf("starting the group coordinator: %w", err)
	}
	if err := s.reconcile(); err != nil {
		s.groups.Close()
		s.logs.Close()
		s.md.Close()
		return nil, err
	}
	if conf.Get(config.MetricsListener) != "" {
		if err := s.initMetrics(); err != nil {
			s.groups.Close()
			s.logs.Close()
			s.md.Close()
			return nil, err
		}
	}
	s.logStartup()
	return s, nil
}

// openMetadata opens the metadata store: ZooKeeper when zookeeper.connect is set, else the
// embedded single-node store in the data directory.
func (s *Server) openMetadata(dataDir string) error {
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
	store, err := zkstore.Open(ctx, zkstore.Config{
		Connect:         connect,
		SessionTimeout:  ms(config.ZooKeeperSessionTimeoutMs),
		ConnectTimeout:  ms(config.ZooKeeperConnectionTimeoutMs),
		Self:            s.self,
		LivenessTimeout: ms(config.BrokerSessionTimeoutMs),
		ProbeInterval:   ms(config.BrokerHeartbeatIntervalMs),
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

// brokerAddress is a live broker's HOST:PORT.
func (s *Server) brokerAddress(id int32) (string, bool) {
	for _, b := range s.md.Brokers() {
		if b.NodeID == id {
			return net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), true
		}
	}
	return "", false
}

func fsyncMode(v string) storage.FsyncMode {
	switch v {
	case "interval":
		return storage.FsyncInterval
	case "never":
		return storage.FsyncNever
	}
	return storage.FsyncAlways
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

// Listen binds the listen address. When the advertised address was left to its default and
// the port was 0, the advertised port becomes the bound one (tests use this).
func (s *Server) Listen() error {
	ln, err := net.Listen("tcp", s.conf.Get(config.Listeners))
	if err != nil {
		return fmt.Errorf("listening: %w", err)
	}
	s.ln = ln
	if err := s.listenOps(); err != nil {
		ln.Close()
		return err
	}
	if s.conf.Get(config.AdvertisedListeners) == "" {
		_, port, _ := splitHostPort(ln.Addr().String())
		s.self.Port = port
		if e, ok := s.md.(interface{ SetSelf(cluster.Broker) }); ok {
			e.SetSelf(s.self)
		}
	}
	return nil
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve accepts connections until Close. It returns nil after Close.
func (s *Server) Serve() error {
	if s.ln == nil {
		if err := s.Listen(); err != nil {
			return err
		}
	}
	s.lifeMu.Lock()
	if s.closed {
		s.lifeMu.Unlock()
		return nil
	}
	s.wg.Add(1)
	s.lifeMu.Unlock()
	go func() {
		defer s.wg.Done()
		s.logs.RunBackground(s.ctx, time.Duration(s.conf.Int64(config.LogRetentionCheckIntervalMs))*time.Millisecond)
	}()
	if s.zk != nil {
		if err := s.zk.Start(); err != nil {
			return err
		}
	}
	s.ready.Store(true)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.runReconciler(s.ctx)
	}()
	s.log.Info("broker started", "listen", s.ln.Addr().String(), "advertised", fmt.Sprintf("%s:%d", s.self.Host, s.self.Port),
		"node_id", s.self.NodeID, "cluster_id", s.md.ClusterID(), "data_dir", s.conf.Get(config.LogDirs), "fsync", s.conf.Get(config.Fsync))
	var tempDelay time.Duration
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			if s.ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				tempDelay = min(max(2*tempDelay, 5*time.Millisecond), time.Second)
				time.Sleep(tempDelay)
				continue
			}
			return fmt.Errorf("accepting: %w", err)
		}
		tempDelay = 0
		if tc, ok := nc.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serveConn(s.ctx, nc)
		}()
	}
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
		if s.ln != nil {
			s.ln.Close()
		}
		s.closeOps()
		s.wg.Wait()
		s.groups.Close()
		s.fetchers.Wait()
		s.closeError = errors.Join(s.md.Close(), s.logs.Close())
		s.log.Info("broker stopped", "err", s.closeError)
	})
	return s.closeError
}

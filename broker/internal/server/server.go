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
	"strconv"
	"sync"
	"time"

	"github.com/spoolmq/spool/broker/internal/cluster"
	"github.com/spoolmq/spool/broker/internal/config"
	"github.com/spoolmq/spool/broker/internal/group"
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

	parts      partitions
	producers  *producerIDs
	groups     *group.Coordinator
	createMu   sync.Mutex // serialises topic creation with opening its logs
	closeOnce  sync.Once
	closeError error

	fetchSessions *fetchSessionCache // KIP-227 sessions, broker-wide as in Kafka
}

// New opens the data directory (metadata and logs) and prepares a broker; Serve starts it.
func New(conf *config.Config, log *slog.Logger) (*Server, error) {
	s := &Server{conf: conf, log: log, fetchSessions: newFetchSessionCache(conf.Int(config.FetchSessionCacheSlots), fetchSessionEvictAfter)}
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
	if conf.Get(config.ZooKeeperConnect) != "" {
		return nil, errors.New("cluster mode (zookeeper.connect) is not available yet; leave it empty for a single node")
	}
	dataDir := conf.Get(config.LogDirs)
	if s.md, err = cluster.OpenEmbedded(dataDir, s.self); err != nil {
		return nil, fmt.Errorf("opening metadata: %w", err)
	}
	if s.logs, err = storage.OpenManager(dataDir, log); err != nil {
		s.md.Close()
		return nil, fmt.Errorf("opening logs: %w", err)
	}
	if s.producers, err = openProducerIDs(dataDir); err != nil {
		s.logs.Close()
		s.md.Close()
		return nil, err
	}
	s.parts.init()
	for _, t := range s.md.Topics() {
		if err := s.openTopic(t); err != nil {
			s.logs.Close()
			s.md.Close()
			return nil, err
		}
	}
	if s.groups, err = s.newGroupCoordinator(); err != nil {
		s.producers.close()
		s.logs.Close()
		s.md.Close()
		return nil, fmt.Errorf("loading consumer groups: %w", err)
	}
	return s, nil
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
		s.cancel()
		if s.ln != nil {
			s.ln.Close()
		}
		s.wg.Wait()
		s.groups.Close()
		s.closeError = errors.Join(s.logs.Close(), s.producers.close(), s.md.Close())
		s.log.Info("broker stopped", "err", s.closeError)
	})
	return s.closeError
}

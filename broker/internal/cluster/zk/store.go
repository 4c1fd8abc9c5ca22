// Package zk is the cluster-mode metadata store: Kafka's ZooKeeper layout (registry.go),
// read into an image of brokers, topics and partition states that watches keep current, and
// the controller (controller.go) that one broker of the cluster runs.
//
// # Read side
//
// Store keeps the image under mu. Watch goroutines (one per watched znode: the broker list,
// the topic list, each topic's assignment and config, each partition's state, the controller)
// re-read their znode on every ZooKeeper event and update the image, then close the Changes
// channel. Readers get copies (Topics, Topic, Brokers): nothing they hold changes under them.
// ZooKeeper delivers a znode's events in order, so the image follows each znode's history; the
// image as a whole may briefly mix states of different moments (a new assignment before its
// partition states), which its users tolerate: a partition without a state has leader -1.
//
// # Write side
//
// Topic creation, deletion, partition growth and config changes may run on any broker, as in
// Kafka's ZooKeeper mode: they write the assignment, config or deletion marker, and the
// controller turns them into partition states. The leader of a partition changes its ISR with
// a conditional write on the partition state's znode version (AlterISR); the controller's
// writes are fenced by the controller epoch: a multi that checks /controller_epoch's version,
// so a deposed controller's writes fail. Every write waits, up to its context, until the image
// shows its effect, so a caller that returns has a consistent view.
//
// # Sessions
//
// The broker registers /brokers/ids/N (ephemeral; its czxid is the broker epoch) once it
// serves (Start). On session expiry ZooKeeper drops it and the controller role; when the new
// session comes up the broker registers again, re-arms every watch and stands for election.
// A broker restarted before its previous session expired finds its old registration: the
// session that owned it is recorded under /spool/broker_sessions/N, so it recognises and
// replaces its own stale node instead of failing as Kafka 3.9 does.
package zk

import (
	"context"
	"errors"
	"fmt"
	"github.com/spoolmq/spool/broker/internal/peer"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/spoolmq/spool/broker/internal/cluster"
	"github.com/spoolmq/spool/broker/internal/metrics"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// Config configures a Store.
type Config struct {
	// Connect is HOST:PORT[,HOST:PORT...][/chroot], Kafka's zookeeper.connect.
	Connect        string
	SessionTimeout time.Duration
	// ConnectTimeout bounds the wait for the first session (zookeeper.connection.timeout.ms).
	ConnectTimeout time.Duration
	// Self is this broker; its address may be set later by SetSelf, before Start.
	Self cluster.Broker
	// InterBrokerListener names the endpoint of other brokers' registrations that replication
	// and liveness probes connect to (inter.broker.listener.name); empty: the first one.
	InterBrokerListener string
	// PeerSecurity is how the controller's liveness probes connect (nil: PLAINTEXT).
	PeerSecurity *peer.Security
	// NotificationExpiry is how long ACL and config change notifications are kept; 0:
	// Kafka's 15 minutes (notifications.go).
	NotificationExpiry time.Duration
	// LivenessTimeout: a broker that answers no probe for this long is taken for dead by the
	// controller (broker.session.timeout.ms).
	LivenessTimeout time.Duration
	// ProbeInterval is the gap between liveness probes.
	ProbeInterval time.Duration
	// LeaderRebalanceInterval is how often the controller checks the leader imbalance
	// (leader.imbalance.check.interval.seconds); 0 turns the automatic rebalance off
	// (auto.leader.rebalance.enable=false).
	LeaderRebalanceInterval time.Duration
	// LeaderImbalancePercent is leader.imbalance.per.broker.percentage.
	LeaderImbalancePercent int
	// Unclean reports whether a topic allows unclean leader election.
	Unclean func(configs map[string]string) bool
	Log     *slog.Logger
}

// Store is the ZooKeeper metadata store. See the package documentation.
type Store struct {
	cfg    Config
	conn   timedConn
	chroot string
	log    *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu         sync.RWMutex
	self       cluster.Broker
	clusterID  string
	brokers    map[int32]brokerEntry
	fenced     map[int32]bool // registered brokers the controller found dead
	controller int32
	topics     map[string]*topicEntry
	deleting   map[string]bool
	// elections are the leader elections asked for (/admin/preferred_replica_election) and
	// electionsVersion that znode's version (-1: none asked for).
	brokerCfg        map[string]map[string]string // dynamic configs of this broker and of <default>
	elections        []electionRequest
	electionsVersion int32
	changed          chan struct{}
	started          bool
	sessionID        int64

	ctrl *controller
	ctrlProbeState
}

type brokerEntry struct {
	broker cluster.Broker
	epoch  int64 // czxid of the registration
}

type topicEntry struct {
	id      wire.UUID
	assign  assignment
	moves   topicAssignment // the assignment with the moves in progress
	configs map[string]string
	states  map[int32]partitionState
	version int32         // the topic znode's version (partition growth is conditional on it)
	watched []bool        // partitions whose state watch runs
	gone    chan struct{} // closed when the topic leaves the image: its watches end
}

// Open connects to ZooKeeper, creates Kafka's persistent paths and the cluster id when
// missing, and loads the image. The broker is not registered until Start.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	servers, chroot, err := ParseConnect(cfg.Connect)
	if err != nil {
		return nil, err
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	s := &Store{cfg: cfg, chroot: chroot, log: cfg.Log.With("component", "zookeeper"), self: cfg.Self, controller: -1,
		brokers: map[int32]brokerEntry{}, topics: map[string]*topicEntry{}, deleting: map[string]bool{}, changed: make(chan struct{})}
	conn, events, err := zk.Connect(servers, cfg.SessionTimeout, zk.WithLogger(zkLogger{s.log}), zk.WithLogInfo(false),
		zk.WithDialer(handshakeDialer(cfg.SessionTimeout*2/3)))
	if err != nil {
		return nil, fmt.Errorf("connecting to zookeeper %s: %w", cfg.Connect, err)
	}
	s.conn = timedConn{conn}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := s.waitSession(ctx, events); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.bootstrap(); err != nil {
		s.Close()
		return nil, err
	}
	s.wg.Add(1)
	go s.sessionLoop(events)
	s.startWatches()
	return s, nil
}

// ParseConnect splits zookeeper.connect into servers and a chroot ("" for none).
func ParseConnect(connect string) ([]string, string, error) {
	hosts, chroot := connect, ""
	if i := strings.IndexByte(connect, '/'); i >= 0 {
		hosts, chroot = connect[:i], strings.TrimRight(connect[i:], "/")
	}
	var servers []string
	for _, h := range strings.Split(hosts, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if !strings.Contains(h, ":") {
			h += ":2181"
		}
		servers = append(servers, h)
	}
	if len(servers) == 0 {
		return nil, "", fmt.Errorf("zookeeper.connect %q names no server (HOST:PORT[,HOST:PORT...][/chroot])", connect)
	}
	return servers, chroot, nil
}

func (s *Store) waitSession(ctx context.Context, events <-chan zk.Event) error {
	timeout := s.cfg.ConnectTimeout
	if timeout <= 0 {
		timeout = 18 * time.Second
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				s.sessionID = s.conn.SessionID()
				return nil
			}
		case <-t.C:
			return fmt.Errorf("zookeeper %s: no session within %v (zookeeper.connection.timeout.ms)", s.cfg.Connect, timeout)
		case <-ctx.Done():
			return fmt.Errorf("zookeeper %s: %w", s.cfg.Connect, ctx.Err())
		}
	}
}

// p is a path under the chroot.
func (s *Store) p(path string) string { return s.chroot + path }

// bootstrap creates the chroot, Kafka's persistent paths and the cluster id.
func (s *Store) bootstrap() error {
	if s.chroot != "" {
		parts := strings.Split(strings.TrimPrefix(s.chroot, "/"), "/")
		for i := range parts {
			if err := s.ensure("/" + strings.Join(parts[:i+1], "/")); err != nil {
				return err
			}
		}
	}
	for _, p := range persistentPaths {
		if err := s.ensure(s.p(p)); err != nil {
			return err
		}
	}
	id := cluster.NewClusterID()
	_, err := s.conn.Create(s.p(clusterIDPath), mustJSON(clusterIDZNode{Version: "1", ID: id}), 0, zk.WorldACL(zk.PermAll))
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("creating %s: %w", clusterIDPath, err)
	}
	data, _, err := s.conn.Get(s.p(clusterIDPath))
	if err != nil {
		return fmt.Errorf("reading %s: %w", clusterIDPath, err)
	}
	var z clusterIDZNode
	if err := jsonUnmarshal(data, &z); err != nil || z.ID == "" {
		return fmt.Errorf("%s holds %q, not a cluster id", clusterIDPath, data)
	}
	s.clusterID = z.ID
	return nil
}

// ensure creates a persistent node with no data if it is missing (an absolute path).
func (s *Store) ensure(path string) error {
	_, err := s.conn.Create(path, nil, 0, zk.WorldACL(zk.PermAll))
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	return nil
}

// sessionLoop follows the session: after an expiry, the new session re-registers the broker
// and stands for election again (watches re-arm by themselves).
func (s *Store) sessionLoop(events <-chan zk.Event) {
	defer s.wg.Done()
	for {
		select {
		case <-s.ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			switch ev.State {
			case zk.StateExpired:
				metrics.ZooKeeperSessionExpired()
				s.log.Warn("zookeeper session expired; re-registering when a new session is up")
				s.stopController()
			case zk.StateDisconnected:
				metrics.ZooKeeperDisconnected()
				s.log.Info("zookeeper disconnected; reconnecting")
			case zk.StateHasSession:
				id := s.conn.SessionID()
				s.mu.Lock()
				renewed := id != s.sessionID
				s.sessionID = id
				started := s.started
				s.mu.Unlock()
				if renewed && started {
					s.log.Info("new zookeeper session", "session", fmt.Sprintf("0x%x", id))
					s.wg.Add(1)
					go func() {
						defer s.wg.Done()
						if err := s.register(); err != nil {
							s.log.Error("re-registering after session expiry", "err", err)
						}
						s.startElection()
					}()
				}
			}
		}
	}
}

// Start registers this broker under /brokers/ids and stands for controller election. Call it
// once the broker accepts connections.
func (s *Store) Start() error {
	s.mu.Lock()
	s.started = true
	s.mu.Unlock()
	if err := s.register(); err != nil {
		return err
	}
	s.startElection()
	return nil
}

// register creates /brokers/ids/N, replacing a registration left by this broker's previous
// session (a restart before that session expired).
func (s *Store) register() error {
	s.mu.RLock()
	self := s.self
	s.mu.RUnlock()
	path := s.p(brokerPath(self.NodeID))
	for attempt := 0; ; attempt++ {
		_, err := s.conn.Create(path, encodeBroker(self), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		if err == nil {
			break
		}
		if !errors.Is(err, zk.ErrNodeExists) || attempt > 0 {
			return fmt.Errorf("registering broker %d: %w", self.NodeID, err)
		}
		_, stat, gerr := s.conn.Get(path)
		if gerr != nil {
			continue // gone meanwhile: create again
		}
		if stat.EphemeralOwner == s.conn.SessionID() {
			return nil // ours already (a retried create)
		}
		prev, _, perr := s.conn.Get(s.p(brokerSessionPath(self.NodeID)))
		if perr != nil || strconv.FormatInt(stat.EphemeralOwner, 16) != string(prev) {
			return fmt.Errorf("registering broker %d: %s is held by another live broker (session 0x%x); node ids must be unique", self.NodeID, brokerPath(self.NodeID), stat.EphemeralOwner)
		}
		s.log.Info("replacing this broker's registration from its previous session", "session", fmt.Sprintf("0x%x", stat.EphemeralOwner))
		if err := s.conn.Delete(path, stat.Version); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("removing the stale registration of broker %d: %w", self.NodeID, err)
		}
	}
	sess := []byte(strconv.FormatInt(s.conn.SessionID(), 16))
	if _, err := s.conn.Set(s.p(brokerSessionPath(self.NodeID)), sess, -1); errors.Is(err, zk.ErrNoNode) {
		_, err = s.conn.Create(s.p(brokerSessionPath(self.NodeID)), sess, 0, zk.WorldACL(zk.PermAll))
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("recording broker %d's session: %w", self.NodeID, err)
		}
	} else if err != nil {
		return fmt.Errorf("recording broker %d's session: %w", self.NodeID, err)
	}
	s.log.Info("registered in zookeeper", "node_id", self.NodeID, "endpoint", fmt.Sprintf("%s:%d", self.Host, self.Port))
	return nil
}

// Deregister removes this broker's registration (controlled shutdown: the controller moves
// its leaderships away) and waits until no partition names it leader, or ctx ends.
func (s *Store) Deregister(ctx context.Context) error {
	s.mu.Lock()
	s.started = false
	id := s.self.NodeID
	s.mu.Unlock()
	s.stopController()
	if err := s.conn.Delete(s.p(brokerPath(id)), -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("deregistering broker %d: %w", id, err)
	}
	for {
		changed := s.Changes()
		if !s.leadsMovable(id) {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("controlled shutdown: leaderships still here: %w", ctx.Err())
		}
	}
}

// leadsMovable reports whether broker id leads a partition that another live ISR member could
// take over.
func (s *Store) leadsMovable(id int32) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, t := range s.topics {
		for _, st := range t.states {
			if st.Leader != id {
				continue
			}
			for _, r := range st.ISR {
				if _, live := s.brokers[r]; live && r != id {
					return true
				}
			}
		}
	}
	return false
}

// SetSelf updates this broker's endpoint before Start.
func (s *Store) SetSelf(b cluster.Broker) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.self = b
}

// Close stops the watches and the controller and closes the session (its ephemeral nodes go
// at once).
func (s *Store) Close() error {
	s.stopController()
	s.cancel()
	s.conn.Close()
	s.wg.Wait()
	return nil
}

// notifyLocked wakes every Changes waiter; s.mu is held for writing.
func (s *Store) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Changes implements cluster.Metadata.
func (s *Store) Changes() <-chan struct{} {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.changed
}

// ClusterID implements cluster.Metadata.
func (s *Store) ClusterID() string { return s.clusterID }

// ControllerID implements cluster.Metadata.
func (s *Store) ControllerID() int32 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.controller
}

// Brokers implements cluster.Metadata: the live brokers (registered and not fenced by the
// controller), by id.
func (s *Store) Brokers() []cluster.Broker {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]cluster.Broker, 0, len(s.brokers))
	for _, id := range slices.Sorted(maps.Keys(s.brokers)) {
		if !s.fenced[id] {
			out = append(out, s.brokers[id].broker)
		}
	}
	return out
}

// registeredBrokers are the brokers registered in ZooKeeper, fenced or not.
func (s *Store) registeredBrokers() []cluster.Broker {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]cluster.Broker, 0, len(s.brokers))
	for _, id := range slices.Sorted(maps.Keys(s.brokers)) {
		out = append(out, s.brokers[id].broker)
	}
	return out
}

// Topics implements cluster.Metadata, sorted by name.
func (s *Store) Topics() []cluster.Topic {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]cluster.Topic, 0, len(s.topics))
	for _, name := range slices.Sorted(maps.Keys(s.topics)) {
		if t := s.topics[name]; t.assign != nil {
			out = append(out, s.topicLocked(name, t))
		}
	}
	return out
}

// Topic implements cluster.Metadata.
func (s *Store) Topic(name string) (cluster.Topic, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.topics[name]
	if !ok || t.assign == nil {
		return cluster.Topic{}, false // not known yet, or its assignment not read yet
	}
	return s.topicLocked(name, t), true
}

// TopicByID implements cluster.Metadata.
func (s *Store) TopicByID(id wire.UUID) (cluster.Topic, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for name, t := range s.topics {
		if t.id == id && t.assign != nil {
			return s.topicLocked(name, t), true
		}
	}
	return cluster.Topic{}, false
}

func (s *Store) topicLocked(name string, t *topicEntry) cluster.Topic {
	ct := cluster.Topic{Name: name, ID: t.id, Internal: strings.HasPrefix(name, "__"), Configs: maps.Clone(t.configs)}
	if ct.Configs == nil {
		ct.Configs = map[string]string{}
	}
	for i, replicas := range t.assign {
		p := cluster.Partition{Index: int32(i), Leader: -1, LeaderEpoch: -1, Replicas: slices.Clone(replicas), ISR: []int32{}, Offline: []int32{},
			Adding: slices.Clone(t.moves.Adding[int32(i)]), Removing: slices.Clone(t.moves.Removing[int32(i)])}
		if st, ok := t.states[int32(i)]; ok {
			p.Leader, p.LeaderEpoch, p.ISR, p.Version = st.Leader, st.LeaderEpoch, slices.Clone(st.ISR), st.ZkVersion
		}
		for _, r := range replicas {
			if _, ok := s.brokers[r]; !ok || s.fenced[r] {
				p.Offline = append(p.Offline, r)
			}
		}
		ct.Partitions = append(ct.Partitions, p)
	}
	return ct
}

// zkLogger sends the client library's messages to slog at debug level.
type zkLogger struct{ log *slog.Logger }

func (l zkLogger) Printf(format string, args ...any) { l.log.Debug(fmt.Sprintf(format, args...)) }

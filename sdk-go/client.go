// Package spool is the Go client of Spool, and of any Kafka broker: a Client that discovers
// the cluster, keeps one pipelined connection per broker and negotiates API versions, an
// asynchronous batching idempotent producer, a partition consumer, and admin requests.
package spool

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// ErrNoBrokers is returned when no broker could be reached (after a few attempts).
var ErrNoBrokers = errors.New("spool: no broker reachable")

// ErrClosed is returned by calls on a closed Client.
var ErrClosed = errors.New("spool: client closed")

// Client talks to a cluster. It is safe for concurrent use.
type Client struct {
	cfg config

	mu      sync.Mutex
	conns   map[string]*conn // by address
	dialing map[string]*dialWait
	brokers map[int32]string // node id → address, from metadata

	meta      atomic.Pointer[metadata]
	metaMu    sync.Mutex // serializes refreshes
	topicsMu  sync.Mutex
	topics    map[string]struct{} // topics this client uses
	refreshCh chan struct{}

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	prod *producer
	cons *consumer
	grp  *grouper   // nil without ConsumerGroup; set once in NewClient
	tel  *telemetry // nil without TracerProvider and MeterProvider (otel.go)
}

type dialWait struct {
	done chan struct{}
	c    *conn
	err  error
}

// metadata is an immutable snapshot of the cluster.
type metadata struct {
	clusterID  string
	controller int32
	brokers    map[int32]string
	topics     map[string]*topicMeta
	at         time.Time
}

type topicMeta struct {
	name       string
	err        error
	partitions []partitionMeta
}

type partitionMeta struct {
	leader int32
	err    error
}

// NewClient checks the options and returns a Client. It connects lazily: the first call that
// needs the cluster dials the seed brokers.
func NewClient(opts ...Opt) (*Client, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, fmt.Errorf("spool: %w", err)
		}
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	for _, s := range cfg.seeds {
		if err := checkBrokerAddr(s); err != nil {
			return nil, fmt.Errorf("spool: seed broker %q: %w", s, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cl := &Client{
		cfg: cfg, conns: map[string]*conn{}, dialing: map[string]*dialWait{},
		brokers: map[int32]string{}, topics: map[string]struct{}{},
		refreshCh: make(chan struct{}, 1), ctx: ctx, cancel: cancel,
	}
	cl.prod = newProducer(cl)
	cl.cons = newConsumer(cl)
	if err := cl.initTelemetry(); err != nil {
		cancel()
		return nil, err
	}
	cl.wg.Add(1)
	go cl.metadataLoop()
	if cfg.group.id != "" {
		cl.grp = newGrouper(cl)
		go cl.grp.run()
	}
	return cl, nil
}

// ParseBrokers splits a comma-separated list of HOST:PORT addresses, the form of
// $SPOOL_BROKERS and of the spool CLI's --brokers, for SeedBrokers. Spaces around an address
// are dropped. An empty entry, a missing port or a port outside 1-65535 is an error, the same
// check NewClient applies to each seed.
func ParseBrokers(list string) ([]string, error) {
	var out []string
	for _, a := range strings.Split(list, ",") {
		a = strings.TrimSpace(a)
		if err := checkBrokerAddr(a); err != nil {
			return nil, fmt.Errorf("spool: broker address %q in %q: %w", a, list, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// checkBrokerAddr rejects an address that could never be dialed, so the mistake shows up
// when the client is made rather than as a connection error later.
func checkBrokerAddr(addr string) error {
	if addr == "" {
		return errors.New("empty address")
	}
	_, port, err := net.SplitHostPort(addr)
	var ae *net.AddrError
	if errors.As(err, &ae) {
		return errors.New(ae.Err) // its Error() repeats the address
	}
	if err != nil {
		return err
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	return nil
}

// Close waits up to RequestTimeout for buffered records to be delivered (call Flush first
// to wait longer), then stops background work and closes every connection. Records still
// buffered fail with ErrClosed. A group member first commits (with auto commit), runs
// OnRevoked and leaves the group (unless static). Close is idempotent.
func (cl *Client) Close() {
	if cl.grp != nil {
		cl.grp.close()
	}
	if !cl.closed() && cl.prod.buffered.Load() > 0 {
		ctx, cancel := context.WithTimeout(cl.ctx, cl.cfg.requestTimeout)
		cl.Flush(ctx)
		cancel()
	}
	cl.cancel()
	cl.prod.close()
	cl.cons.close()
	cl.wg.Wait()
	cl.tel.close()
	cl.mu.Lock()
	for _, c := range cl.conns {
		c.close(ErrClosed)
	}
	cl.mu.Unlock()
}

func (cl *Client) closed() bool { return cl.ctx.Err() != nil }

// connTo returns the connection to addr, dialing it if needed.
func (cl *Client) connTo(ctx context.Context, addr string) (*conn, error) {
	if cl.closed() {
		return nil, ErrClosed
	}
	cl.mu.Lock()
	if c, ok := cl.conns[addr]; ok && !c.isClosed() {
		cl.mu.Unlock()
		return c, nil
	}
	w, ok := cl.dialing[addr]
	if !ok {
		w = &dialWait{done: make(chan struct{})}
		cl.dialing[addr] = w
		go func() {
			dctx, cancel := context.WithTimeout(cl.ctx, cl.cfg.dialTimeout+cl.cfg.requestTimeout)
			defer cancel()
			w.c, w.err = dialConn(dctx, &cl.cfg, addr)
			cl.mu.Lock()
			delete(cl.dialing, addr)
			if w.err == nil {
				if cl.closed() {
					w.c.close(ErrClosed)
					w.err = ErrClosed
				} else {
					cl.conns[addr] = w.c
				}
			}
			cl.mu.Unlock()
			close(w.done)
		}()
	}
	cl.mu.Unlock()
	select {
	case <-w.done:
		return w.c, w.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// connToNode returns the connection to broker id.
func (cl *Client) connToNode(ctx context.Context, id int32) (*conn, error) {
	cl.mu.Lock()
	addr, ok := cl.brokers[id]
	cl.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("spool: unknown broker %d: %w", id, wire.ErrBrokerNotAvailable)
	}
	return cl.connTo(ctx, addr)
}

// anyConn returns a connection to some live broker: a known one, else a seed.
func (cl *Client) anyConn(ctx context.Context) (*conn, error) {
	cl.mu.Lock()
	for _, c := range cl.conns {
		if !c.isClosed() {
			cl.mu.Unlock()
			return c, nil
		}
	}
	addrs := make([]string, 0, len(cl.brokers)+len(cl.cfg.seeds))
	for _, a := range cl.brokers {
		addrs = append(addrs, a)
	}
	addrs = append(addrs, cl.cfg.seeds...)
	cl.mu.Unlock()
	var errs []error
	for _, a := range addrs {
		c, err := cl.connTo(ctx, a)
		if err == nil {
			return c, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("%w: %w", ErrNoBrokers, errors.Join(errs...))
}

// backoff is the wait before retry attempt n (0-based).
func (cl *Client) backoff(n int) time.Duration {
	d := cl.cfg.retryBackoff
	for i := 0; i < n && d < cl.cfg.retryBackoffMax; i++ {
		d *= 2
	}
	return min(d, cl.cfg.retryBackoffMax)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// retriable reports whether err is worth another attempt: a retriable protocol error or a
// broken connection.
func retriable(err error) bool {
	var f finalError
	if errors.As(err, &f) {
		return false
	}
	if wire.IsRetriable(err) || errors.Is(err, ErrConnClosed) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// withRetries runs fn until it succeeds, fails with a non-retriable error, or ctx ends,
// waiting with backoff in between.
func (cl *Client) withRetries(ctx context.Context, fn func(ctx context.Context) error) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cl.cfg.apiTimeout)
		defer cancel()
	}
	for attempt := 0; ; attempt++ {
		rctx, cancel := context.WithTimeout(ctx, cl.cfg.requestTimeout)
		err := fn(rctx)
		cancel()
		if err == nil || !retriable(err) || ctx.Err() != nil || cl.closed() {
			return err
		}
		if errors.Is(err, ErrNoBrokers) && attempt >= 2 {
			return err
		}
		if isLeadershipErr(err) {
			cl.triggerRefresh()
		}
		if e := sleepCtx(ctx, cl.backoff(attempt)); e != nil {
			return err
		}
	}
}

// finalError marks an error as not worth retrying even if its code is retriable, such as
// UNKNOWN_TOPIC_OR_PARTITION from the controller for a topic an admin request names.
type finalError struct{ error }

func (f finalError) Unwrap() error { return f.error }

func isLeadershipErr(err error) bool {
	if errors.Is(err, wire.ErrNotLeaderOrFollower) || errors.Is(err, wire.ErrUnknownTopicOrPartition) ||
		errors.Is(err, wire.ErrLeaderNotAvailable) || errors.Is(err, wire.ErrBrokerNotAvailable) ||
		errors.Is(err, ErrConnClosed) || errors.Is(err, wire.ErrFencedLeaderEpoch) || errors.Is(err, wire.ErrNotController) {
		return true
	}
	// A leader that cannot be reached (refused, reset, timed out) has most likely failed,
	// and its partitions moved: as with NOT_LEADER, fresh metadata says where.
	var ne net.Error
	return errors.As(err, &ne)
}

// Request sends a raw protocol request to any broker at the negotiated version and decodes the
// response into resp. It is the escape hatch for APIs the SDK does not wrap. The round trip is
// bounded by ctx and by RequestTimeout plus the time the request lets the broker wait (a
// Fetch's MaxWaitMs, a JoinGroup's RebalanceTimeoutMs, the TimeoutMs of Produce and of topic
// and partition creation and deletion). A response that does not come in time closes the
// connection, failing what else is in flight on it: responses come in request order, so
// everything behind a stalled one would stall too, and the next request dials afresh.
func (cl *Client) Request(ctx context.Context, req, resp wire.Message) error {
	_, err := cl.requestAny(ctx, req, resp)
	return err
}

// requestAny is Request, also reporting whether a broker was reached at all.
func (cl *Client) requestAny(ctx context.Context, req, resp wire.Message) (reached bool, err error) {
	ctx, cancel := cl.requestCtx(ctx, req)
	defer cancel()
	c, err := cl.anyConn(ctx)
	if err != nil {
		return false, err
	}
	return true, roundTrip(ctx, c, req, resp)
}

// RequestNode is Request to broker id.
func (cl *Client) RequestNode(ctx context.Context, id int32, req, resp wire.Message) error {
	ctx, cancel := cl.requestCtx(ctx, req)
	defer cancel()
	c, err := cl.connToNode(ctx, id)
	if err != nil {
		return err
	}
	return roundTrip(ctx, c, req, resp)
}

// requestCtx bounds one round trip of req: ctx's deadline or RequestTimeout plus the broker's
// allowed wait, whichever comes first.
func (cl *Client) requestCtx(ctx context.Context, req wire.Message) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, cl.cfg.requestTimeout+brokerWait(req))
}

// brokerWait is how long req lets the broker hold its answer on purpose.
func brokerWait(req wire.Message) time.Duration {
	var ms int32
	switch r := req.(type) {
	case *wire.FetchRequest:
		ms = r.MaxWaitMs
	case *wire.JoinGroupRequest:
		ms = max(r.RebalanceTimeoutMs, r.SessionTimeoutMs)
	case *wire.ProduceRequest:
		ms = r.TimeoutMs
	case *wire.CreateTopicsRequest:
		ms = r.TimeoutMs
	case *wire.DeleteTopicsRequest:
		ms = r.TimeoutMs
	case *wire.CreatePartitionsRequest:
		ms = r.TimeoutMs
	}
	return time.Duration(max(ms, 0)) * time.Millisecond
}

// roundTrip sends req on c and waits for resp. When a deadline ends the wait, c is closed as
// the producer closes a connection whose produce response is late; a cancelled ctx leaves c
// alone, since that says nothing about the broker.
func roundTrip(ctx context.Context, c *conn, req, resp wire.Message) error {
	err := c.request(ctx, req, resp)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		c.close(fmt.Errorf("%s response timeout: %w", apiName(req.APIKey()), err))
	}
	return err
}

func apiName(key int16) string {
	if api := wire.LookupAPI(key); api != nil {
		return api.Name
	}
	return fmt.Sprintf("API %d", key)
}

// --- metadata ---

func (cl *Client) addTopics(names ...string) {
	cl.topicsMu.Lock()
	for _, n := range names {
		cl.topics[n] = struct{}{}
	}
	cl.topicsMu.Unlock()
}

func (cl *Client) triggerRefresh() {
	select {
	case cl.refreshCh <- struct{}{}:
	default:
	}
}

func (cl *Client) metadataLoop() {
	defer cl.wg.Done()
	t := time.NewTicker(cl.cfg.metadataMaxAge)
	defer t.Stop()
	for {
		select {
		case <-cl.ctx.Done():
			return
		case <-t.C:
		case <-cl.refreshCh:
		}
		ctx, cancel := context.WithTimeout(cl.ctx, cl.cfg.requestTimeout)
		if _, err := cl.refreshMetadata(ctx); err != nil {
			cl.cfg.logger.Debug("metadata refresh failed", "err", err)
		}
		cancel()
		// Bound how often error-driven refreshes run.
		if sleepCtx(cl.ctx, cl.cfg.retryBackoff) != nil {
			return
		}
		cl.prod.wake()
		cl.cons.wake()
	}
}

// refreshMetadata asks for the metadata of the client's topics and installs it.
func (cl *Client) refreshMetadata(ctx context.Context) (*metadata, error) {
	cl.topicsMu.Lock()
	names := make([]string, 0, len(cl.topics))
	for n := range cl.topics {
		names = append(names, n)
	}
	cl.topicsMu.Unlock()
	if len(names) == 0 && cl.meta.Load() != nil {
		return cl.meta.Load(), nil
	}
	cl.metaMu.Lock()
	defer cl.metaMu.Unlock()
	m, err := cl.fetchMetadata(ctx, names, false)
	if err != nil {
		return nil, err
	}
	cl.meta.Store(m)
	return m, nil
}

// fetchMetadata requests metadata for topics (all topics when all is set).
func (cl *Client) fetchMetadata(ctx context.Context, topics []string, all bool) (*metadata, error) {
	return cl.fetchMetadataCreate(ctx, topics, all, false)
}

// fetchMetadataCreate is fetchMetadata asking the broker to create the topics it does not
// have when create is set.
func (cl *Client) fetchMetadataCreate(ctx context.Context, topics []string, all, create bool) (*metadata, error) {
	req := &wire.MetadataRequest{}
	req.Default()
	if all {
		req.Topics = nil
	} else {
		req.Topics = make([]wire.MetadataRequestTopic, len(topics))
		for i := range topics {
			req.Topics[i].Name = &topics[i]
		}
	}
	req.AllowAutoTopicCreation = create
	resp := &wire.MetadataResponse{}
	var err error
	for attempt := 0; ; attempt++ {
		var reached bool
		reached, err = cl.requestAny(ctx, req, resp)
		if err == nil {
			break
		}
		if !reached && attempt >= 2 {
			return nil, err // no broker reachable at all
		}
		if ctx.Err() != nil || cl.closed() || !retriable(err) {
			return nil, err
		}
		if sleepCtx(ctx, cl.backoff(attempt)) != nil {
			return nil, err
		}
	}
	m := &metadata{controller: resp.ControllerId, brokers: map[int32]string{}, topics: map[string]*topicMeta{}, at: time.Now()}
	if resp.ClusterId != nil {
		m.clusterID = *resp.ClusterId
	}
	for _, b := range resp.Brokers {
		m.brokers[b.NodeId] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
	}
	for _, t := range resp.Topics {
		if t.Name == nil {
			continue
		}
		tm := &topicMeta{name: *t.Name, err: wire.ErrorForCode(t.ErrorCode)}
		maxP := int32(-1)
		for _, p := range t.Partitions {
			maxP = max(maxP, p.PartitionIndex)
		}
		tm.partitions = make([]partitionMeta, maxP+1)
		for i := range tm.partitions {
			tm.partitions[i] = partitionMeta{leader: -1, err: wire.ErrLeaderNotAvailable}
		}
		for _, p := range t.Partitions {
			tm.partitions[p.PartitionIndex] = partitionMeta{leader: p.LeaderId, err: wire.ErrorForCode(p.ErrorCode)}
		}
		m.topics[tm.name] = tm
	}
	cl.mu.Lock()
	for id, a := range m.brokers {
		cl.brokers[id] = a
	}
	cl.mu.Unlock()
	return m, nil
}

// topic returns the metadata of topic, refreshing until it is known, it is reported as not
// existing (after a few tries, in case it is being created), or ctx ends.
func (cl *Client) topic(ctx context.Context, name string) (*topicMeta, error) {
	if m := cl.meta.Load(); m != nil {
		if tm, ok := m.topics[name]; ok && tm.err == nil && len(tm.partitions) > 0 {
			return tm, nil
		}
	}
	cl.addTopics(name)
	var last error
	for attempt := 0; attempt < 5; attempt++ {
		m, err := cl.refreshMetadata(ctx)
		if err != nil {
			return nil, err
		}
		tm, ok := m.topics[name]
		switch {
		case ok && tm.err == nil && len(tm.partitions) > 0:
			return tm, nil
		case ok && tm.err != nil && !wire.IsRetriable(tm.err):
			return nil, fmt.Errorf("spool: topic %q: %w", name, tm.err)
		case ok && tm.err != nil:
			last = tm.err
		default:
			last = wire.ErrUnknownTopicOrPartition
		}
		if err := sleepCtx(ctx, cl.backoff(attempt)); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("spool: topic %q: %w", name, last)
}

// leaderOf returns the leader of a partition from the current metadata, or -1.
func (cl *Client) leaderOf(topic string, partition int32) int32 {
	m := cl.meta.Load()
	if m == nil {
		return -1
	}
	tm, ok := m.topics[topic]
	if !ok || partition < 0 || int(partition) >= len(tm.partitions) {
		return -1
	}
	return tm.partitions[partition].leader
}

package spool

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// ErrNoGroup is returned by group calls on a Client without ConsumerGroup.
var ErrNoGroup = errors.New("spool: client is not in a consumer group (ConsumerGroup option)")

// ErrGroupStopped is returned by group calls after LeaveGroup or Close.
var ErrGroupStopped = errors.New("spool: group membership stopped")

// errRejoin ends the stable phase: the member must join again.
var errRejoin = errors.New("spool: rejoin the group")

// grouper runs the classic consumer group protocol for a Client: it finds the coordinator,
// joins and syncs, heartbeats, and applies assignments to the Client's consumer.
type grouper struct {
	cl   *Client
	cfg  *groupConfig
	bals []balancer

	ctx      context.Context // ends when membership stops
	cancel   context.CancelFunc
	done     chan struct{}
	rejoinCh chan struct{}
	failed   chan struct{} // closed with fatal set
	stopOnce sync.Once
	leave    atomic.Bool // send LeaveGroup when stopping

	// mu guards the fields below.
	mu         sync.Mutex
	memberID   string
	generation int32
	protocol   string
	assigned   map[string][]int32
	committed  map[tp]int64 // last committed (or fetched) offset per assigned partition
	releasing  map[tp]int64 // polled offsets of partitions being revoked, for their last commit
	coordAddr  string
	// The group's own connections to the coordinator: JoinGroup blocks for a whole rebalance,
	// and a broker answers a connection's requests in order, so neither joins nor heartbeats
	// and commits may queue behind the consumer's long-polling fetches, or each other.
	joinConn *conn
	ctrlConn *conn
	fatal    error
	watched  map[string]int32 // partition counts the current assignment was computed from
	beating  bool             // heartbeats are due: the member has a generation

	beats    chan beat    // failed heartbeats, for the group goroutine
	lastBeat atomic.Int64 // Unix ns of the last successful heartbeat (or of SyncGroup)
	hbDone   chan struct{}

	async asyncCommitter
}

func newGrouper(cl *Client) *grouper {
	cfg := &cl.cfg.group
	g := &grouper{
		cl: cl, cfg: cfg, done: make(chan struct{}), rejoinCh: make(chan struct{}, 1), failed: make(chan struct{}),
		beats: make(chan beat, 1), hbDone: make(chan struct{}),
		generation: -1, assigned: map[string][]int32{}, committed: map[tp]int64{},
	}
	for _, n := range cfg.balancers {
		g.bals = append(g.bals, balancerByName(n))
	}
	g.ctx, g.cancel = context.WithCancel(cl.ctx)
	g.async.g = g
	return g
}

func (cl *Client) group() (*grouper, error) {
	if cl.grp == nil {
		return nil, ErrNoGroup
	}
	return cl.grp, nil
}

// groupFailed is closed when group membership failed for good (nil without a group, which
// blocks forever in a select).
func (cl *Client) groupFailed() <-chan struct{} {
	if cl.grp == nil {
		return nil
	}
	return cl.grp.failed
}

func (cl *Client) groupErr() error {
	g := cl.grp
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.fatal
}

// GroupMemberID returns the member id the coordinator gave this client and the generation
// of the group it last synced with; empty and -1 before the first join or without a group.
func (cl *Client) GroupMemberID() (memberID string, generation int32) {
	g := cl.grp
	if g == nil {
		return "", -1
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.memberID, g.generation
}

// LeaveGroup gives up this member's partitions (committing them first with auto commit, after
// OnRevoked) and leaves the group, also for a static member. The client consumes nothing
// afterwards.
func (cl *Client) LeaveGroup(ctx context.Context) error {
	g, err := cl.group()
	if err != nil {
		return err
	}
	g.stop(true)
	select {
	case <-g.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stop ends membership; leave asks for a LeaveGroup even for a static member. Close calls it
// with leave false, and dynamic members leave anyway.
func (g *grouper) stop(leave bool) {
	g.stopOnce.Do(func() {
		g.leave.Store(leave || g.cfg.instanceID == "")
		g.cancel()
	})
}

func (g *grouper) close() {
	g.async.wait() // queued commits go out while still a member
	g.stop(false)
	<-g.done
}

func (g *grouper) setFatal(err error) {
	g.mu.Lock()
	if g.fatal == nil {
		g.fatal = err
		close(g.failed)
	}
	g.mu.Unlock()
	g.cl.cfg.logger.Error("consumer group membership failed", "group", g.cfg.id, "err", err)
}

func (g *grouper) requestRejoin() {
	select {
	case g.rejoinCh <- struct{}{}:
	default:
	}
}

// run is the group goroutine: join, stay stable until a rebalance, repeat.
func (g *grouper) run() {
	go func() { defer close(g.hbDone); g.heartbeater() }()
	defer close(g.done)
	defer func() { <-g.hbDone }()
	defer g.cancel() // stops the heartbeater also after a fatal error
	defer g.shutdown()
	for attempt := 0; g.ctx.Err() == nil; {
		err := g.joinAndSync()
		if err == nil {
			attempt = 0
			err = g.stable()
		}
		switch {
		case g.ctx.Err() != nil:
			return
		case err == nil || errors.Is(err, errRejoin):
			continue
		case isFatalGroupErr(err):
			g.lose()
			g.setFatal(err)
			return
		}
		g.cl.cfg.logger.Debug("consumer group: retrying", "group", g.cfg.id, "err", err)
		if sleepCtx(g.ctx, g.cl.backoff(attempt)) != nil {
			return
		}
		attempt++
	}
}

func isFatalGroupErr(err error) bool {
	// A refused SASL login is fatal too: retrying the same credentials would wait in silence.
	for _, e := range []error{wire.ErrFencedInstanceId, wire.ErrInconsistentGroupProtocol, wire.ErrInvalidSessionTimeout,
		wire.ErrGroupAuthorizationFailed, wire.ErrGroupMaxSizeReached, wire.ErrInvalidGroupId, wire.ErrUnsupportedVersion,
		wire.ErrSaslAuthenticationFailed} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// shutdown runs when membership stops: commit, revoke and leave, on a fresh context since
// the group's has ended.
func (g *grouper) shutdown() {
	ctx, cancel := context.WithTimeout(g.cl.ctx, g.cl.cfg.requestTimeout)
	defer cancel()
	g.mu.Lock()
	all, member, failed := clonePartitions(g.assigned), g.memberID, g.fatal != nil
	g.mu.Unlock()
	if !failed {
		g.revoke(ctx, all)
	}
	if g.leave.Load() && member != "" && !failed {
		if err := g.sendLeave(ctx, member); err != nil {
			g.cl.cfg.logger.Warn("consumer group: leave failed", "group", g.cfg.id, "err", err)
		}
	}
	g.mu.Lock()
	g.closeConnsLocked(ErrGroupStopped)
	g.memberID, g.generation = "", -1
	g.mu.Unlock()
}

func (g *grouper) closeConnsLocked(err error) {
	for _, c := range []**conn{&g.joinConn, &g.ctrlConn} {
		if *c != nil {
			(*c).close(err)
			*c = nil
		}
	}
}

func (g *grouper) sendLeave(ctx context.Context, member string) error {
	req := &wire.LeaveGroupRequest{GroupId: g.cfg.id, MemberId: member}
	id := wire.LeaveGroupRequestMemberIdentity{MemberId: member}
	if g.cfg.instanceID != "" {
		id.GroupInstanceId = &g.cfg.instanceID
	}
	req.Members = []wire.LeaveGroupRequestMemberIdentity{id}
	resp := &wire.LeaveGroupResponse{}
	return g.coordRequest(ctx, req, resp, func() error {
		if err := wire.ErrorForCode(resp.ErrorCode); err != nil {
			return err
		}
		for _, m := range resp.Members {
			if err := wire.ErrorForCode(m.ErrorCode); err != nil && !errors.Is(err, wire.ErrUnknownMemberId) {
				return err
			}
		}
		return nil
	})
}

// --- coordinator ---

// coordinator returns the coordinator's address, asking FindCoordinator when unknown.
func (g *grouper) coordinator(ctx context.Context) (string, error) {
	g.mu.Lock()
	addr := g.coordAddr
	g.mu.Unlock()
	if addr != "" {
		return addr, nil
	}
	err := g.cl.withRetries(ctx, func(ctx context.Context) (err error) {
		addr, err = g.cl.findCoordinator(ctx, g.cfg.id)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("spool: %w", err)
	}
	g.mu.Lock()
	g.coordAddr = addr
	g.mu.Unlock()
	return addr, nil
}

// coordinatorMoved forgets the coordinator after an error that says it moved or is gone.
func (g *grouper) coordinatorMoved(err error) bool {
	if !errors.Is(err, wire.ErrNotCoordinator) && !errors.Is(err, wire.ErrCoordinatorNotAvailable) && !errors.Is(err, ErrConnClosed) {
		var ne net.Error
		if !errors.As(err, &ne) {
			return false
		}
	}
	g.mu.Lock()
	g.coordAddr = ""
	g.closeConnsLocked(err)
	g.mu.Unlock()
	return true
}

// coordRequest sends req to the coordinator with retries; check reads resp's error codes.
func (g *grouper) coordRequest(ctx context.Context, req, resp wire.Message, check func() error) error {
	return g.cl.withRetries(ctx, func(ctx context.Context) error {
		err := g.coordOnce(ctx, req, resp, check)
		g.coordinatorMoved(err)
		return err
	})
}

func (g *grouper) coordOnce(ctx context.Context, req, resp wire.Message, check func() error) error {
	if err := g.dedicated(ctx, &g.ctrlConn, req, resp); err != nil {
		return err
	}
	return check()
}

// joinRequest sends a JoinGroup or SyncGroup on the group's join connection.
func (g *grouper) joinRequest(ctx context.Context, req, resp wire.Message) error {
	err := g.dedicated(ctx, &g.joinConn, req, resp)
	g.coordinatorMoved(err)
	return err
}

// dedicated sends req on one of the group's own connections to the coordinator (slot, guarded
// by g.mu), dialing it when needed.
func (g *grouper) dedicated(ctx context.Context, slot **conn, req, resp wire.Message) error {
	addr, err := g.coordinator(ctx)
	if err != nil {
		return err
	}
	g.mu.Lock()
	c := *slot
	g.mu.Unlock()
	if c == nil || c.isClosed() {
		if c, err = dialConn(ctx, &g.cl.cfg, addr); err != nil {
			g.coordinatorMoved(err)
			return err
		}
		g.mu.Lock()
		if old := *slot; old != nil {
			old.close(ErrConnClosed)
		}
		*slot = c
		g.mu.Unlock()
	}
	err = c.request(ctx, req, resp)
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		// Requests queued behind it would wait for its late answer (a JoinGroup can take a
		// whole rebalance): start afresh.
		c.close(err)
	}
	return err
}

// --- join and sync ---

// subscribedTopics returns the topics this member subscribes to, sorted: the configured
// names, or the cluster's topics matching the patterns.
func (g *grouper) subscribedTopics(ctx context.Context) ([]string, error) {
	if len(g.cfg.regexps) == 0 {
		return slices.Compact(slices.Sorted(slices.Values(g.cfg.topics))), nil
	}
	m, err := g.cl.fetchMetadata(ctx, nil, true)
	if err != nil {
		return nil, fmt.Errorf("spool: listing topics for ConsumeRegex: %w", err)
	}
	var out []string
	for name := range m.topics {
		if name == "__consumer_offsets" || name == "__transaction_state" {
			continue // internal, as Kafka's exclude.internal.topics
		}
		for _, re := range g.cfg.regexps {
			if re.MatchString(name) {
				out = append(out, name)
				break
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// partitionCounts returns the partition count of each existing topic among topics.
func (g *grouper) partitionCounts(ctx context.Context, topics []string) (map[string]int32, error) {
	out := map[string]int32{}
	if len(topics) == 0 {
		return out, nil
	}
	m, err := g.cl.fetchMetadata(ctx, topics, false)
	if err != nil {
		return nil, fmt.Errorf("spool: metadata of subscribed topics: %w", err)
	}
	for _, t := range topics {
		if tm, ok := m.topics[t]; ok && tm.err == nil && len(tm.partitions) > 0 {
			out[t] = int32(len(tm.partitions))
		}
	}
	return out, nil
}

// joinAndSync runs one JoinGroup + SyncGroup round and applies the assignment.
func (g *grouper) joinAndSync() error {
	ctx := g.ctx
	g.mu.Lock()
	eager := g.protocol == "" || !balancerByName(g.protocol).cooperative()
	owned, gen := clonePartitions(g.assigned), g.generation
	g.mu.Unlock()
	if eager {
		// Eager protocols give up everything before rejoining. Their subscription then names
		// no owned partitions and no generation, so a restarted static member's metadata is
		// unchanged and the coordinator can skip the rebalance (KIP-345).
		g.revoke(ctx, owned)
		owned, gen = map[string][]int32{}, -1
	}
	topics, err := g.subscribedTopics(ctx)
	if err != nil {
		return err
	}

	jctx, cancel := context.WithTimeout(ctx, g.cfg.rebalanceTimeout+g.cl.cfg.requestTimeout)
	defer cancel()
	g.setBeating(false)
	join, err := g.join(jctx, topics, owned, gen)
	if err != nil {
		return err
	}
	protocol := ""
	if join.ProtocolName != nil {
		protocol = *join.ProtocolName
	}
	bal := balancerByName(protocol)
	if bal == nil {
		return fmt.Errorf("spool: group %q chose protocol %q, which this member did not offer: %w", g.cfg.id, protocol, wire.ErrInconsistentGroupProtocol)
	}
	g.mu.Lock()
	g.memberID, g.generation, g.protocol = join.MemberId, join.GenerationId, protocol
	g.mu.Unlock()

	var plan plan
	watched := map[string]int32{}
	if join.Leader == join.MemberId {
		if plan, watched, err = g.lead(ctx, bal, join.Members); err != nil {
			return err
		}
	} else if watched, err = g.partitionCounts(ctx, topics); err != nil {
		return err
	}

	sync := &wire.SyncGroupRequest{GroupId: g.cfg.id, GenerationId: join.GenerationId, MemberId: join.MemberId,
		ProtocolType: strp(consumerProtocolType), ProtocolName: &protocol}
	if g.cfg.instanceID != "" {
		sync.GroupInstanceId = &g.cfg.instanceID
	}
	for _, id := range slices.Sorted(maps.Keys(plan)) {
		a := assignment{version: 0, partitions: plan[id]}
		sync.Assignments = append(sync.Assignments, wire.SyncGroupRequestAssignment{MemberId: id, Assignment: a.encode(nil)})
	}
	syncResp := &wire.SyncGroupResponse{}
	if err := g.joinRequest(jctx, sync, syncResp); err != nil {
		return fmt.Errorf("spool: sync group %q: %w", g.cfg.id, err)
	}
	if err := wire.ErrorForCode(syncResp.ErrorCode); err != nil {
		switch {
		case errors.Is(err, wire.ErrUnknownMemberId), errors.Is(err, wire.ErrIllegalGeneration):
			// Out of the group: what a cooperative member kept through the join is lost.
			g.lose()
			g.resetMember(errors.Is(err, wire.ErrUnknownMemberId))
			return errRejoin
		case errors.Is(err, wire.ErrRebalanceInProgress):
			return errRejoin
		}
		g.coordinatorMoved(err)
		return fmt.Errorf("spool: sync group %q: %w", g.cfg.id, err)
	}
	g.setBeating(true)
	asg, err := decodeAssignment(syncResp.Assignment)
	if err != nil {
		return err
	}
	g.mu.Lock()
	g.watched = watched
	g.mu.Unlock()
	return g.apply(ctx, bal, asg.partitions)
}

// join sends JoinGroup until the coordinator accepts the member, taking the member id it
// hands out (MEMBER_ID_REQUIRED) or dropping one it forgot (UNKNOWN_MEMBER_ID).
func (g *grouper) join(ctx context.Context, topics []string, owned map[string][]int32, gen int32) (*wire.JoinGroupResponse, error) {
	sub := subscription{version: subscriptionVersion, topics: topics, owned: owned, generation: gen}
	meta := sub.encode(nil)
	for range 5 {
		g.mu.Lock()
		member := g.memberID
		g.mu.Unlock()
		req := &wire.JoinGroupRequest{GroupId: g.cfg.id, SessionTimeoutMs: int32(g.cfg.sessionTimeout / time.Millisecond),
			RebalanceTimeoutMs: int32(g.cfg.rebalanceTimeout / time.Millisecond), MemberId: member, ProtocolType: consumerProtocolType}
		if g.cfg.instanceID != "" {
			req.GroupInstanceId = &g.cfg.instanceID
		}
		for _, b := range g.bals {
			req.Protocols = append(req.Protocols, wire.JoinGroupRequestProtocol{Name: b.name(), Metadata: meta})
		}
		resp := &wire.JoinGroupResponse{}
		if err := g.joinRequest(ctx, req, resp); err != nil {
			return nil, fmt.Errorf("spool: join group %q: %w", g.cfg.id, err)
		}
		err := wire.ErrorForCode(resp.ErrorCode)
		switch {
		case err == nil:
			return resp, nil
		case errors.Is(err, wire.ErrMemberIdRequired):
			g.mu.Lock()
			g.memberID = resp.MemberId
			g.mu.Unlock()
			continue
		case errors.Is(err, wire.ErrUnknownMemberId):
			// A cooperative member that still holds partitions is no longer in the group: they
			// are lost, and the subscription must stop naming them.
			g.lose()
			g.resetMember(true)
			return nil, errRejoin
		case errors.Is(err, wire.ErrRebalanceInProgress):
			continue
		}
		g.coordinatorMoved(err)
		return nil, fmt.Errorf("spool: join group %q: %w", g.cfg.id, err)
	}
	// Not errRejoin: the caller backs off before trying again.
	return nil, fmt.Errorf("spool: join group %q: no stable membership after 5 attempts", g.cfg.id)
}

func (g *grouper) resetMember(dropID bool) {
	g.mu.Lock()
	if dropID {
		g.memberID = ""
	}
	g.generation, g.beating = -1, false
	g.mu.Unlock()
}

// lead computes the assignment as the group leader. It also returns the partition counts
// it used, to notice when they change.
func (g *grouper) lead(ctx context.Context, bal balancer, raw []wire.JoinGroupResponseMember) (plan, map[string]int32, error) {
	members := make([]groupMember, 0, len(raw))
	all := map[string]bool{}
	for _, m := range raw {
		sub, err := decodeSubscription(m.Metadata)
		if err != nil {
			return nil, nil, fmt.Errorf("spool: member %s of group %q: %w", m.MemberId, g.cfg.id, err)
		}
		for _, t := range sub.topics {
			all[t] = true
		}
		members = append(members, groupMember{id: m.MemberId, instanceID: m.GroupInstanceId, sub: sub})
	}
	counts, err := g.partitionCounts(ctx, slices.Sorted(maps.Keys(all)))
	if err != nil {
		return nil, nil, err
	}
	return bal.assign(members, counts), counts, nil
}

// apply installs a new assignment: partitions no longer assigned are revoked (cooperative:
// then the member rejoins so the leader can hand them on), new ones start at their committed
// offsets.
func (g *grouper) apply(ctx context.Context, bal balancer, next map[string][]int32) error {
	g.mu.Lock()
	cur := clonePartitions(g.assigned)
	g.mu.Unlock()
	g.cl.tel.rebalanced(g.cfg.id) // counted before the new partitions' records can be polled
	revoked := diffPartitions(cur, next)
	added := diffPartitions(next, cur)
	if len(revoked) > 0 {
		g.revoke(ctx, revoked)
	}
	if len(added) > 0 {
		offs, err := g.fetchCommitted(ctx, added)
		if err != nil {
			return err
		}
		if fn := g.cfg.onAssigned; fn != nil {
			fn(ctx, clonePartitions(added))
		}
		assign := map[string]map[int32]Offset{}
		g.mu.Lock()
		for t, ps := range added {
			assign[t] = map[int32]Offset{}
			for _, p := range ps {
				o, ok := offs[tp{t, p}]
				if ok && o >= 0 {
					assign[t][p] = OffsetAt(o)
					g.committed[tp{t, p}] = o
				} else {
					assign[t][p] = Offset{kind: 4} // AutoOffsetReset
				}
				g.assigned[t] = append(g.assigned[t], p)
			}
			slices.Sort(g.assigned[t])
		}
		g.mu.Unlock()
		g.cl.assign(assign)
	}
	g.cl.cfg.logger.Info("consumer group: assigned", "group", g.cfg.id, "generation", g.generationNow(),
		"protocol", bal.name(), "added", added, "revoked", revoked)
	if len(revoked) > 0 && bal.cooperative() {
		return errRejoin // the partitions given up go to their new owners in a follow-up round
	}
	return nil
}

func (g *grouper) generationNow() int32 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.generation
}

// revoke gives partitions up in order: Poll stops returning them, what it returned is
// committed (auto commit), OnRevoked runs, and only then may the member rejoin. Stopping Poll
// first makes the commit cover every record handed out, so the next owner starts right after.
func (g *grouper) revoke(ctx context.Context, ps map[string][]int32) {
	if len(ps) == 0 {
		return
	}
	released := g.cl.cons.release(ps)
	g.mu.Lock()
	g.releasing = released // CommitUncommitted in OnRevoked still sees them
	g.mu.Unlock()
	if g.cfg.autoCommit {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.cl.cfg.requestTimeout)
		if err := g.commitPolled(cctx, ps); err != nil {
			g.cl.cfg.logger.Warn("consumer group: commit before revoke failed", "group", g.cfg.id, "err", err)
		}
		cancel()
	}
	if fn := g.cfg.onRevoked; fn != nil {
		fn(ctx, clonePartitions(ps))
	}
	g.forget(ps)
}

// lose gives partitions up without committing: the member is no longer in the group.
func (g *grouper) lose() {
	g.mu.Lock()
	ps := clonePartitions(g.assigned)
	g.mu.Unlock()
	if len(ps) == 0 {
		return
	}
	g.cl.cons.release(ps)
	if fn := g.cfg.onLost; fn != nil {
		fn(g.ctx, clonePartitions(ps))
	}
	g.forget(ps)
}

// forget drops the group's bookkeeping of partitions already released from the consumer.
func (g *grouper) forget(ps map[string][]int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.releasing = nil
	for t, parts := range ps {
		for _, p := range parts {
			delete(g.committed, tp{t, p})
		}
		g.assigned[t] = slices.DeleteFunc(g.assigned[t], func(p int32) bool { return slices.Contains(parts, p) })
		if len(g.assigned[t]) == 0 {
			delete(g.assigned, t)
		}
	}
}

// --- stable phase ---

// beat is a failed heartbeat of a generation.
type beat struct {
	gen int32
	err error
}

// heartbeater heartbeats on its own goroutine whenever the member has a generation (from
// SyncGroup until the next JoinGroup), so that callbacks, offset fetches and commits on the
// group goroutine never delay heartbeats. Failures go to g.beats, latest first.
func (g *grouper) heartbeater() {
	t := time.NewTicker(g.cfg.heartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-t.C:
		}
		g.mu.Lock()
		on, gen := g.beating, g.generation
		g.mu.Unlock()
		if !on {
			continue
		}
		err := g.heartbeat(gen)
		if err == nil {
			g.lastBeat.Store(time.Now().UnixNano())
			continue
		}
		select {
		case <-g.beats: // replaced by the newer failure
		default:
		}
		g.beats <- beat{gen, err}
	}
}

// setBeating turns heartbeats on (after SyncGroup) or off (before JoinGroup).
func (g *grouper) setBeating(on bool) {
	g.mu.Lock()
	g.beating = on
	g.mu.Unlock()
	if on {
		g.lastBeat.Store(time.Now().UnixNano())
	}
}

// stable auto-commits, watches the subscription and reacts to failed heartbeats until the
// group rebalances or the member must rejoin.
func (g *grouper) stable() error {
	watch := time.NewTicker(g.cl.cfg.metadataMaxAge)
	defer watch.Stop()
	var commitC <-chan time.Time
	if g.cfg.autoCommit {
		ac := time.NewTicker(g.cfg.autoCommitEvery)
		defer ac.Stop()
		commitC = ac.C
	}
	for {
		select {
		case <-g.ctx.Done():
			return g.ctx.Err()
		case <-g.rejoinCh:
			return errRejoin
		case <-commitC:
			ctx, cancel := context.WithTimeout(g.ctx, g.cl.cfg.requestTimeout)
			if err := g.commitPolled(ctx, nil); err != nil {
				g.cl.cfg.logger.Warn("consumer group: auto commit failed", "group", g.cfg.id, "err", err)
			}
			cancel()
		case <-watch.C:
			if g.subscriptionChanged() {
				return errRejoin
			}
		case b := <-g.beats:
			if b.gen != g.generationNow() {
				continue // from before the last join
			}
			err := b.err
			switch {
			case errors.Is(err, wire.ErrRebalanceInProgress):
				return errRejoin
			case errors.Is(err, wire.ErrUnknownMemberId), errors.Is(err, wire.ErrIllegalGeneration):
				g.lose()
				g.resetMember(errors.Is(err, wire.ErrUnknownMemberId))
				return errRejoin
			case errors.Is(err, wire.ErrFencedInstanceId):
				return err
			case time.Since(time.Unix(0, g.lastBeat.Load())) > g.cfg.sessionTimeout:
				// The coordinator has surely dropped us by now.
				g.lose()
				g.resetMember(true)
				return errRejoin
			default:
				g.cl.cfg.logger.Debug("consumer group: heartbeat failed", "group", g.cfg.id, "err", err)
			}
		}
	}
}

func (g *grouper) heartbeat(gen int32) error {
	g.mu.Lock()
	req := &wire.HeartbeatRequest{GroupId: g.cfg.id, GenerationId: gen, MemberId: g.memberID}
	g.mu.Unlock()
	if g.cfg.instanceID != "" {
		req.GroupInstanceId = &g.cfg.instanceID
	}
	resp := &wire.HeartbeatResponse{}
	ctx, cancel := context.WithTimeout(g.ctx, min(g.cl.cfg.requestTimeout, g.cfg.sessionTimeout))
	defer cancel()
	err := g.coordOnce(ctx, req, resp, func() error { return wire.ErrorForCode(resp.ErrorCode) })
	g.coordinatorMoved(err)
	return err
}

// subscriptionChanged reports whether the topics matched or their partition counts differ
// from those the current assignment was computed from.
func (g *grouper) subscriptionChanged() bool {
	ctx, cancel := context.WithTimeout(g.ctx, g.cl.cfg.requestTimeout)
	defer cancel()
	topics, err := g.subscribedTopics(ctx)
	if err != nil {
		return false
	}
	g.mu.Lock()
	watched := maps.Clone(g.watched)
	g.mu.Unlock()
	for t := range watched {
		if !slices.Contains(topics, t) {
			topics = append(topics, t) // another member's topic, watched by the leader
		}
	}
	counts, err := g.partitionCounts(ctx, topics)
	if err != nil {
		return false
	}
	if !maps.Equal(counts, watched) {
		g.cl.cfg.logger.Info("consumer group: subscription changed, rejoining", "group", g.cfg.id, "was", watched, "now", counts)
		return true
	}
	return false
}

// --- partition sets ---

func clonePartitions(m map[string][]int32) map[string][]int32 {
	out := make(map[string][]int32, len(m))
	for t, ps := range m {
		if len(ps) > 0 {
			out[t] = slices.Clone(ps)
		}
	}
	return out
}

// diffPartitions returns the partitions of a that b lacks.
func diffPartitions(a, b map[string][]int32) map[string][]int32 {
	out := map[string][]int32{}
	for t, ps := range a {
		for _, p := range ps {
			if !slices.Contains(b[t], p) {
				out[t] = append(out[t], p)
			}
		}
	}
	return out
}

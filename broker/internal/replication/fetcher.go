package replication

// Followers' fetchers: one goroutine and one connection per leader broker, fetching every
// partition this broker follows on that leader with Fetch v12 (replica id set, sessionless).
// Each response's records are appended as they are (offsets kept); the next fetch is sent only
// once they are durable by the flush policy, so the offset a fetch reports to the leader is on
// disk here. A leader that reports a divergence (KIP-320's DivergingEpoch) makes the follower
// truncate by leader epoch and fetch again.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/spoolmq/spool/broker/internal/peer"
	"github.com/spoolmq/spool/broker/internal/storage"
	"github.com/spoolmq/spool/protocol-spec/wire"
	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

// FetchSettings are the follower fetch settings (Kafka's replica.fetch.* properties).
type FetchSettings struct {
	MaxWait          time.Duration // replica.fetch.wait.max.ms
	MaxBytes         int32         // replica.fetch.response.max.bytes
	PartitionMax     int32         // replica.fetch.max.bytes
	Backoff          time.Duration // replica.fetch.backoff.ms
	DurableOnly      bool          // wait for fsync before fetching again (spool.fsync=always)
	Self             int32
	Address          func(broker int32) (string, bool) // a live broker's address
	Log              *slog.Logger
	RequestTimeout   time.Duration
	ConnectTimeout   time.Duration
	Security         *peer.Security // the inter-broker listener's TLS and SASL; nil: PLAINTEXT
	OnLeaderGoneHint func()         // a hint that the metadata may be stale (not used for safety)
	// ThrottleRate is the byte rate of throttled partitions (follower.replication.throttled.rate;
	// 0 or nil: no limit), read before every fetch so that a change applies at once.
	ThrottleRate func() int64
}

// Fetchers runs the fetchers of one broker.
type Fetchers struct {
	set FetchSettings
	ctx context.Context

	mu       sync.Mutex
	byLeader map[int32]*fetcher
	wg       sync.WaitGroup

	// quota is the budget the fetchers of every leader share for throttled partitions
	// (throttle.go).
	quota Quota
}

// NewFetchers prepares the fetchers; they run until ctx ends.
func NewFetchers(ctx context.Context, set FetchSettings) *Fetchers {
	return &Fetchers{set: set, ctx: ctx, byLeader: map[int32]*fetcher{}}
}

type fetcher struct {
	f      *Fetchers
	leader int32
	cancel context.CancelFunc

	mu    sync.Mutex
	parts map[*Replica]struct{}
	wake  chan struct{} // a partition was added: interrupt the long poll
	conn  *peer.Conn
}

// Follow makes r fetch from leader (and from no other broker).
func (fs *Fetchers) Follow(r *Replica, leader int32) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for id, f := range fs.byLeader {
		if id != leader {
			f.remove(r)
		}
	}
	f, ok := fs.byLeader[leader]
	if !ok {
		ctx, cancel := context.WithCancel(fs.ctx)
		f = &fetcher{f: fs, leader: leader, cancel: cancel, parts: map[*Replica]struct{}{}, wake: make(chan struct{}, 1)}
		fs.byLeader[leader] = f
		fs.wg.Add(1)
		go func() {
			defer fs.wg.Done()
			f.run(ctx)
		}()
	}
	f.add(r)
}

// Stop makes r fetch from nobody (it became leader, or it is being removed). When Stop
// returns, no append of r's fetcher is in progress or will start.
func (fs *Fetchers) Stop(r *Replica) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, f := range fs.byLeader {
		f.remove(r)
	}
}

// Wait waits for every fetcher to end (after the context ended).
func (fs *Fetchers) Wait() { fs.wg.Wait() }

func (f *fetcher) add(r *Replica) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.parts[r]; ok {
		return
	}
	f.parts[r] = struct{}{}
	f.interruptLocked()
}

// remove takes r out; it holds f.mu, which the fetcher holds while it appends, so no append to
// r runs after remove returns.
func (f *fetcher) remove(r *Replica) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.parts[r]; ok {
		delete(f.parts, r)
		f.interruptLocked()
	}
}

// interruptLocked ends a long poll in flight so that the next fetch has the new partition set.
func (f *fetcher) interruptLocked() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
	if f.conn != nil {
		f.conn.Close()
	}
}

func (f *fetcher) run(ctx context.Context) {
	log := f.f.set.Log.With("leader", f.leader)
	var conn *peer.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for ctx.Err() == nil {
		f.mu.Lock()
		n := len(f.parts)
		f.mu.Unlock()
		if n == 0 {
			select {
			case <-ctx.Done():
				return
			case <-f.wake:
			}
			continue
		}
		if conn == nil {
			addr, ok := f.f.set.Address(f.leader)
			if !ok {
				sleepCtx(ctx, f.f.set.Backoff)
				continue
			}
			c, err := peer.Dial(ctx, addr, f.f.set.ConnectTimeout, f.f.set.Security)
			if err != nil {
				log.Debug("follower fetcher cannot connect", "err", err)
				sleepCtx(ctx, f.f.set.Backoff)
				continue
			}
			conn = c
			f.mu.Lock()
			f.conn = c
			select {
			case <-f.wake: // the new connection sees the current partition set
			default:
			}
			f.mu.Unlock()
		}
		if err := f.fetchOnce(ctx, conn, log); err != nil {
			f.mu.Lock()
			f.conn = nil
			f.mu.Unlock()
			conn.Close()
			conn = nil
			if ctx.Err() == nil && !errors.Is(err, errInterrupted) {
				log.Debug("follower fetch failed", "err", err)
				sleepCtx(ctx, f.f.set.Backoff)
			}
		}
	}
}

var errInterrupted = errors.New("partition set changed")

type fetchTarget struct {
	r     *Replica
	epoch int32
	off   int64
}

// fetchOnce sends one fetch for every partition and applies the response.
func (f *fetcher) fetchOnce(ctx context.Context, conn *peer.Conn, log *slog.Logger) error {
	set := f.f.set
	req := &wire.FetchRequest{}
	req.Default()
	req.ReplicaId = set.Self
	req.MaxWaitMs = int32(set.MaxWait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = set.MaxBytes
	req.SessionId, req.SessionEpoch = 0, -1
	var targets []fetchTarget
	now := time.Now()
	if set.ThrottleRate != nil {
		f.f.quota.SetRate(set.ThrottleRate(), now)
	}
	throttleWait := f.f.quota.Wait(now)
	f.mu.Lock()
	byTopic := map[string]int{}
	var byTopicTargets [][]fetchTarget
	for r := range f.parts {
		leader, epoch := r.Leader()
		if leader != f.leader {
			continue
		}
		throttled := r.Throttled()
		if throttled && throttleWait > 0 {
			continue // over the budget: left out until it refills
		}
		fp := wire.FetchRequestPartition{}
		fp.Default()
		fp.Partition = r.Index
		fp.CurrentLeaderEpoch = epoch
		fp.FetchOffset = r.Log.LogEndOffset()
		fp.LastFetchedEpoch = r.Log.LatestEpoch()
		fp.LogStartOffset = r.Log.LogStartOffset()
		fp.PartitionMaxBytes = set.PartitionMax
		if throttled {
			fp.PartitionMaxBytes = f.f.quota.Limit(set.PartitionMax)
		}
		i, ok := byTopic[r.Topic]
		if !ok {
			i = len(req.Topics)
			byTopic[r.Topic] = i
			req.Topics = append(req.Topics, wire.FetchRequestTopic{Topic: r.Topic})
			byTopicTargets = append(byTopicTargets, nil)
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, fp)
		byTopicTargets[i] = append(byTopicTargets[i], fetchTarget{r: r, epoch: epoch, off: fp.FetchOffset})
	}
	f.mu.Unlock()
	for _, ts := range byTopicTargets { // in the request's order
		targets = append(targets, ts...)
	}
	if len(targets) == 0 {
		sleepCtx(ctx, max(set.Backoff, min(throttleWait, set.MaxWait)))
		return nil
	}
	resp := &wire.FetchResponse{}
	deadline := time.Now().Add(set.MaxWait + set.RequestTimeout)
	if err := conn.RoundTrip(req, resp, 12, deadline); err != nil {
		select {
		case <-f.wake:
			return errInterrupted
		default:
		}
		return fmt.Errorf("fetching from broker %d: %w", f.leader, err)
	}
	if resp.ErrorCode != 0 {
		sleepCtx(ctx, set.Backoff)
		return nil
	}
	var waits []storage.DurableTarget
	backoff := false
	f.mu.Lock()
	next := 0 // a leader answers in the request's order: targets are found in one pass
	for _, rt := range resp.Responses {
		for i := range rt.Partitions {
			pd := &rt.Partitions[i]
			t, ok := findTarget(targets, &next, rt.Topic, pd.PartitionIndex)
			if !ok {
				continue
			}
			if _, still := f.parts[t.r]; !still {
				continue // removed meanwhile: it may be leader now
			}
			end, err := f.apply(t, pd, log)
			if err != nil {
				backoff = true
				continue
			}
			if end > t.off {
				waits = append(waits, storage.DurableTarget{Log: t.r.Log, Offset: end})
			}
			if t.r.Throttled() {
				f.f.quota.Record(len(pd.Records), time.Now())
			}
		}
	}
	f.mu.Unlock()
	if set.DurableOnly && len(waits) > 0 {
		var failed error
		storage.WaitAllDurable(ctx, waits, func(_ int, err error) { failed = err })
		if failed != nil {
			return fmt.Errorf("making fetched data durable: %w", failed)
		}
	}
	if backoff {
		sleepCtx(ctx, set.Backoff)
	}
	return nil
}

// findTarget finds the target of a response's partition: at *next first (the request's
// order, which the leader keeps), else by a scan; *next moves past the one found.
func findTarget(ts []fetchTarget, next *int, topic string, index int32) (fetchTarget, bool) {
	if i := *next; i < len(ts) && ts[i].r.Index == index && ts[i].r.Topic == topic {
		*next = i + 1
		return ts[i], true
	}
	for i, t := range ts {
		if t.r.Topic == topic && t.r.Index == index {
			*next = i + 1
			return t, true
		}
	}
	return fetchTarget{}, false
}

// apply handles one partition of a fetch response; f.mu is held. It returns the log end after
// the append.
func (f *fetcher) apply(t fetchTarget, pd *wire.FetchResponsePartitionData, log *slog.Logger) (int64, error) {
	r := t.r
	switch pd.ErrorCode {
	case 0:
	case wire.ErrOffsetOutOfRange.Code:
		if t.off < pd.LogStartOffset {
			log.Info("follower behind the leader's log start: restarting the log there", "topic", r.Topic, "partition", r.Index, "offset", pd.LogStartOffset)
			if err := r.Log.TruncateFullyAndStartAt(pd.LogStartOffset); err != nil {
				return 0, err
			}
			r.truncated()
			return r.Log.LogEndOffset(), nil
		}
		return 0, wire.ErrOffsetOutOfRange
	default:
		return 0, fmt.Errorf("%s-%d: error %d", r.Topic, r.Index, pd.ErrorCode)
	}
	if pd.DivergingEpoch.EndOffset >= 0 || pd.DivergingEpoch.Epoch >= 0 {
		localEpoch, localEnd := r.Log.EndOffsetForEpoch(pd.DivergingEpoch.Epoch)
		to := TruncationOffset(pd.DivergingEpoch.Epoch, pd.DivergingEpoch.EndOffset, localEpoch, localEnd)
		log.Info("follower diverged from its leader: truncating", "topic", r.Topic, "partition", r.Index,
			"leader_epoch", pd.DivergingEpoch.Epoch, "leader_end", pd.DivergingEpoch.EndOffset, "truncate_to", to)
		if err := r.Log.Truncate(to); err != nil {
			return 0, err
		}
		r.truncated()
		return r.Log.LogEndOffset(), nil
	}
	records := wholeBatches(pd.Records)
	if len(records) > 0 {
		if _, err := r.Log.Append(records, storage.AppendOptions{}); err != nil {
			log.Warn("follower append failed", "topic", r.Topic, "partition", r.Index, "err", err)
			return 0, err
		}
	}
	r.SetFollowerHighWatermark(pd.HighWatermark)
	return r.Log.LogEndOffset(), nil
}

// wholeBatches trims a trailing partial batch (a leader may cut the last one at the size
// limit).
func wholeBatches(b []byte) []byte {
	n := 0
	for n+batch.HeaderSize <= len(b) {
		size := batch.Raw(b[n:]).TotalSize()
		if size < batch.HeaderSize || n+size > len(b) {
			break
		}
		n += size
	}
	return b[:n]
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

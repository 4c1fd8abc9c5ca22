package spool

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// fetchCommitted asks the coordinator for the committed offsets of ps; a partition without a
// commit is absent from the result.
func (g *grouper) fetchCommitted(ctx context.Context, ps map[string][]int32) (map[tp]int64, error) {
	// A read_committed member asks for stable offsets (KIP-447, as the Java client): while a
	// transaction holding offsets of these partitions is still being completed, the
	// coordinator answers UNSTABLE_OFFSET_COMMIT (retried) rather than the offsets before it,
	// from which this member would copy again what the transaction already copied.
	req := &wire.OffsetFetchRequest{GroupId: g.cfg.id, RequireStable: g.cl.cfg.isolation == ReadCommitted}
	for _, t := range slices.Sorted(maps.Keys(ps)) {
		req.Topics = append(req.Topics, wire.OffsetFetchRequestTopic{Name: t, PartitionIndexes: slices.Clone(ps[t])})
	}
	out := map[tp]int64{}
	resp := &wire.OffsetFetchResponse{}
	err := g.coordRequest(ctx, req, resp, func() error {
		if err := wire.ErrorForCode(resp.ErrorCode); err != nil {
			return err
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := wire.ErrorForCode(p.ErrorCode); err != nil {
					return fmt.Errorf("%s[%d]: %w", t.Name, p.PartitionIndex, err)
				}
				if p.CommittedOffset >= 0 {
					out[tp{t.Name, p.PartitionIndex}] = p.CommittedOffset
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("spool: fetching committed offsets of group %q: %w", g.cfg.id, err)
	}
	return out, nil
}

// commit commits offsets (the next offset to consume, per partition) as the current member
// and generation.
func (g *grouper) commit(ctx context.Context, offsets map[tp]int64) error {
	if len(offsets) == 0 {
		return nil
	}
	g.mu.Lock()
	req := &wire.OffsetCommitRequest{GroupId: g.cfg.id, GenerationIdOrMemberEpoch: g.generation, MemberId: g.memberID, RetentionTimeMs: -1}
	g.mu.Unlock()
	if req.MemberId == "" && g.ctx.Err() != nil {
		return ErrGroupStopped
	}
	if g.cfg.instanceID != "" {
		req.GroupInstanceId = &g.cfg.instanceID
	}
	keys := slices.SortedFunc(maps.Keys(offsets), tpCompare)
	empty := ""
	for _, k := range keys {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Name != k.topic {
			req.Topics = append(req.Topics, wire.OffsetCommitRequestTopic{Name: k.topic})
		}
		t := &req.Topics[len(req.Topics)-1]
		t.Partitions = append(t.Partitions, wire.OffsetCommitRequestPartition{PartitionIndex: k.partition,
			CommittedOffset: offsets[k], CommittedLeaderEpoch: -1, CommittedMetadata: &empty})
	}
	resp := &wire.OffsetCommitResponse{}
	var failed []error
	err := g.coordRequest(ctx, req, resp, func() error {
		failed = failed[:0]
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				err := wire.ErrorForCode(p.ErrorCode)
				if err == nil {
					continue
				}
				if wire.IsRetriable(err) {
					return err // the whole request again; commits are idempotent
				}
				failed = append(failed, fmt.Errorf("%s[%d]: %w", t.Name, p.PartitionIndex, err))
			}
		}
		return nil
	})
	if err == nil {
		err = errors.Join(failed...)
	}
	if err != nil {
		if errors.Is(err, wire.ErrRebalanceInProgress) || errors.Is(err, wire.ErrIllegalGeneration) || errors.Is(err, wire.ErrUnknownMemberId) {
			g.requestRejoin()
		}
		return fmt.Errorf("spool: committing offsets of group %q: %w", g.cfg.id, err)
	}
	g.mu.Lock()
	for k, o := range offsets {
		g.committed[k] = o
	}
	g.mu.Unlock()
	return nil
}

// commitPolled commits what Poll has returned from ps (every assigned partition when nil)
// and is not committed yet.
func (g *grouper) commitPolled(ctx context.Context, ps map[string][]int32) error {
	polled := g.cl.cons.polledOffsets(ps)
	g.mu.Lock()
	for k, o := range g.releasing {
		if ps == nil || slices.Contains(ps[k.topic], k.partition) {
			polled[k] = o
		}
	}
	for k, o := range polled {
		if c, ok := g.committed[k]; (ok && c == o) || !slices.Contains(g.assigned[k.topic], k.partition) {
			delete(polled, k)
		}
	}
	g.mu.Unlock()
	return g.commit(ctx, polled)
}

// CommitOffsets commits offsets synchronously for the group: per topic and partition, the
// offset of the next record to consume (the last processed offset + 1).
func (cl *Client) CommitOffsets(ctx context.Context, offsets map[string]map[int32]int64) error {
	g, err := cl.group()
	if err != nil {
		return err
	}
	flat := map[tp]int64{}
	for t, ps := range offsets {
		for p, o := range ps {
			if o < 0 {
				return fmt.Errorf("spool: CommitOffsets: negative offset %d for %s[%d]", o, t, p)
			}
			flat[tp{t, p}] = o
		}
	}
	return g.commit(ctx, flat)
}

// CommitRecords commits, per partition, the offset after the highest of recs.
func (cl *Client) CommitRecords(ctx context.Context, recs ...*Record) error {
	g, err := cl.group()
	if err != nil {
		return err
	}
	flat := map[tp]int64{}
	for _, r := range recs {
		k := tp{r.Topic, r.Partition}
		flat[k] = max(flat[k], r.Offset+1)
	}
	return g.commit(ctx, flat)
}

// CommitUncommitted commits, for every assigned partition, the offset after the last record
// Poll has returned, where that is not committed yet.
func (cl *Client) CommitUncommitted(ctx context.Context) error {
	g, err := cl.group()
	if err != nil {
		return err
	}
	return g.commitPolled(ctx, nil)
}

// CommitAsync commits offsets (as CommitOffsets) in the background and calls done, if not nil,
// with the result from another goroutine. Asynchronous commits are sent in call order, so a
// later one is never overwritten by an earlier. Close waits for queued commits.
func (cl *Client) CommitAsync(offsets map[string]map[int32]int64, done func(error)) {
	g, err := cl.group()
	if err != nil {
		if done != nil {
			done(err)
		}
		return
	}
	copied := make(map[string]map[int32]int64, len(offsets))
	for t, ps := range offsets {
		copied[t] = maps.Clone(ps)
	}
	g.async.enqueue(asyncCommit{offsets: copied, done: done})
}

type asyncCommit struct {
	offsets map[string]map[int32]int64
	done    func(error)
}

// asyncCommitter sends queued commits one at a time, in order, on one goroutine that lives
// while the queue is not empty.
type asyncCommitter struct {
	g       *grouper
	mu      sync.Mutex
	queue   []asyncCommit
	running bool
	idle    sync.WaitGroup
}

func (a *asyncCommitter) enqueue(c asyncCommit) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.queue = append(a.queue, c)
	if !a.running {
		a.running = true
		a.idle.Add(1)
		go a.drain()
	}
}

func (a *asyncCommitter) drain() {
	defer a.idle.Done()
	for {
		a.mu.Lock()
		if len(a.queue) == 0 {
			a.running = false
			a.mu.Unlock()
			return
		}
		c := a.queue[0]
		a.queue = a.queue[1:]
		a.mu.Unlock()
		ctx, cancel := context.WithTimeout(a.g.cl.ctx, a.g.cl.cfg.requestTimeout)
		err := a.g.cl.CommitOffsets(ctx, c.offsets)
		cancel()
		if c.done != nil {
			c.done(err)
		}
	}
}

func (a *asyncCommitter) wait() { a.idle.Wait() }

package spool

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

// Offset is a consumer position: an exact offset, the start or end of the partition, or the
// first offset at or after a time.
type Offset struct {
	at   int64
	kind int8 // 0 exact, 1 start, 2 end, 3 time, 4 reset policy
}

// OffsetAt is the exact offset o.
func OffsetAt(o int64) Offset { return Offset{at: o} }

// OffsetStart is the log start offset of the partition.
func OffsetStart() Offset { return Offset{kind: 1} }

// OffsetEnd is the log end offset (only records produced from now on).
func OffsetEnd() Offset { return Offset{kind: 2} }

// OffsetTime is the first offset whose timestamp is at or after t (the end if none).
func OffsetTime(t time.Time) Offset { return Offset{at: t.UnixMilli(), kind: 3} }

func (o Offset) String() string {
	switch o.kind {
	case 1:
		return "start"
	case 2:
		return "end"
	case 3:
		return fmt.Sprintf("time %d", o.at)
	case 4:
		return "reset"
	}
	return fmt.Sprint(o.at)
}

// ErrOffsetOutOfRange is returned from Poll when a position is out of range and the reset
// policy is ResetNone.
var ErrOffsetOutOfRange = wire.ErrOffsetOutOfRange

type cpart struct {
	tp
	offset   int64
	pending  *Offset // position to resolve with ListOffsets
	paused   bool
	fetching bool
	epoch    uint64 // bumped on every seek: results fetched before are dropped
	polled   int64  // offset after the last record Poll returned, 0 when none: what a group commits
	retryAt  time.Time
}

type fetchedPart struct {
	p     *cpart
	epoch uint64
	recs  []*Record
	err   error
}

type consumer struct {
	cl      *Client
	mu      sync.Mutex
	parts   map[tp]*cpart
	busy    map[int32]bool // brokers with a fetch outstanding
	buf     chan []fetchedPart
	wakeCh  chan struct{}
	quit    chan struct{}
	once    sync.Once
	start   sync.Once
	wg      sync.WaitGroup
	pending []fetchedPart // taken from buf, not yet returned
}

func newConsumer(cl *Client) *consumer {
	return &consumer{
		cl: cl, parts: map[tp]*cpart{}, busy: map[int32]bool{},
		buf: make(chan []fetchedPart, cl.cfg.maxBufferedFetches), wakeCh: make(chan struct{}, 1), quit: make(chan struct{}),
	}
}

func (c *consumer) wake() {
	select {
	case c.wakeCh <- struct{}{}:
	default:
	}
}

func (c *consumer) close() {
	c.once.Do(func() { close(c.quit) })
	c.wg.Wait()
}

// ErrGroupManaged is returned by Assign, AssignTopic and Unassign on a client built with
// ConsumerGroup: the group decides which partitions the member consumes, and a partition
// assigned by hand would be fetched while another member owns it, or be lost at the next
// rebalance. Match it with errors.Is.
var ErrGroupManaged = errors.New("spool: partitions are assigned by the consumer group (ConsumerGroup option); Assign and Unassign are for clients without one")

// Assign adds partitions to consume, each starting at its Offset; assigning a partition again
// seeks it. A client in a consumer group gets ErrGroupManaged and nothing changes.
func (cl *Client) Assign(assignments map[string]map[int32]Offset) error {
	if cl.grp != nil {
		return ErrGroupManaged
	}
	cl.assign(assignments)
	return nil
}

// assign is Assign without the group check: the group's own way in.
func (cl *Client) assign(assignments map[string]map[int32]Offset) {
	c := cl.cons
	c.mu.Lock()
	for topic, ps := range assignments {
		cl.addTopics(topic)
		for p, o := range ps {
			k := tp{topic, p}
			cp := c.parts[k]
			if cp == nil {
				cp = &cpart{tp: k}
				c.parts[k] = cp
			}
			c.seekLocked(cp, o)
		}
	}
	c.mu.Unlock()
	c.start.Do(func() {
		c.wg.Add(1)
		go c.run()
	})
	cl.triggerRefresh()
	c.wake()
}

// AssignTopic assigns every partition of topic at o. It blocks to look the topic up. A client
// in a consumer group gets ErrGroupManaged.
func (cl *Client) AssignTopic(ctx context.Context, topic string, o Offset) error {
	if cl.grp != nil {
		return ErrGroupManaged
	}
	tm, err := cl.topic(ctx, topic)
	if err != nil {
		return err
	}
	ps := make(map[int32]Offset, len(tm.partitions))
	for i := range tm.partitions {
		ps[int32(i)] = o
	}
	cl.assign(map[string]map[int32]Offset{topic: ps})
	return nil
}

// Unassign stops consuming the partitions; records already buffered for them are dropped. A
// client in a consumer group gets ErrGroupManaged and keeps its partitions.
func (cl *Client) Unassign(topic string, partitions ...int32) error {
	if cl.grp != nil {
		return ErrGroupManaged
	}
	c := cl.cons
	c.mu.Lock()
	for _, p := range partitions {
		if cp := c.parts[tp{topic, p}]; cp != nil {
			cp.epoch++
			delete(c.parts, cp.tp)
		}
	}
	c.mu.Unlock()
	return nil
}

// Seek moves an assigned partition to o; records fetched before are dropped.
func (cl *Client) Seek(topic string, partition int32, o Offset) error {
	c := cl.cons
	c.mu.Lock()
	defer c.mu.Unlock()
	cp := c.parts[tp{topic, partition}]
	if cp == nil {
		return fmt.Errorf("spool: seek: %s[%d] is not assigned", topic, partition)
	}
	c.seekLocked(cp, o)
	c.wake()
	return nil
}

func (c *consumer) seekLocked(cp *cpart, o Offset) {
	cp.epoch++
	cp.retryAt = time.Time{}
	if o.kind == 0 && o.at >= 0 {
		cp.offset, cp.pending = o.at, nil
	} else {
		cp.offset, cp.pending = -1, &o
	}
}

// Position returns the next offset to be fetched for a partition, or -1 when unknown.
func (cl *Client) Position(topic string, partition int32) int64 {
	c := cl.cons
	c.mu.Lock()
	defer c.mu.Unlock()
	if cp := c.parts[tp{topic, partition}]; cp != nil {
		return cp.offset
	}
	return -1
}

// Pause stops fetching the partitions until Resume; Poll still returns records already
// buffered.
func (cl *Client) Pause(topic string, partitions ...int32) {
	cl.cons.setPaused(topic, partitions, true)
}

// Resume undoes Pause.
func (cl *Client) Resume(topic string, partitions ...int32) {
	cl.cons.setPaused(topic, partitions, false)
}

func (c *consumer) setPaused(topic string, partitions []int32, paused bool) {
	c.mu.Lock()
	for _, p := range partitions {
		if cp := c.parts[tp{topic, p}]; cp != nil {
			cp.paused = paused
		}
	}
	c.mu.Unlock()
	c.wake()
}

// Poll waits until records or an error are available, or ctx ends, and returns them. Records
// of one partition come in offset order. An error names a partition problem (such as
// ErrOffsetOutOfRange with ResetNone); records may accompany it.
func (cl *Client) Poll(ctx context.Context) ([]*Record, error) {
	for {
		rs, err := cl.poll(ctx)
		if len(rs) > 0 || err != nil {
			return rs, err
		}
	}
}

func (cl *Client) poll(ctx context.Context) ([]*Record, error) {
	c := cl.cons
	var got [][]fetchedPart
	select {
	case fp := <-c.buf:
		got = append(got, fp)
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.quit:
		return nil, ErrClosed
	case <-cl.groupFailed():
		return nil, cl.groupErr()
	}
more:
	for {
		select {
		case fp := <-c.buf:
			got = append(got, fp)
		default:
			break more
		}
	}
	var out []*Record
	var errs []error
	c.mu.Lock()
	for _, fps := range got {
		for _, fp := range fps {
			if c.parts[fp.p.tp] != fp.p || fp.p.epoch != fp.epoch {
				continue // sought or unassigned since
			}
			if fp.p.paused {
				// Fetched before the pause: drop and fetch again after Resume.
				if len(fp.recs) > 0 {
					fp.p.offset = fp.recs[0].Offset
					fp.p.epoch++
				}
				continue
			}
			if fp.err != nil {
				errs = append(errs, fp.err)
			}
			if n := len(fp.recs); n > 0 {
				fp.p.polled = fp.recs[n-1].Offset + 1
			}
			out = append(out, fp.recs...)
		}
	}
	c.mu.Unlock()
	return out, errors.Join(errs...)
}

// polledOffsets returns the offset after the last record Poll returned, for each partition
// of ps (all assigned partitions when ps is nil) that Poll returned records of.
func (c *consumer) polledOffsets(ps map[string][]int32) map[tp]int64 {
	out := map[tp]int64{}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, cp := range c.parts {
		if cp.polled > 0 && (ps == nil || slices.Contains(ps[k.topic], k.partition)) {
			out[k] = cp.polled
		}
	}
	return out
}

// release unassigns ps and returns, for those Poll returned records of, the offset after
// the last one. Poll returns no record of them afterwards, so the offsets cover everything
// handed out.
func (c *consumer) release(ps map[string][]int32) map[tp]int64 {
	out := map[tp]int64{}
	c.mu.Lock()
	defer c.mu.Unlock()
	for topic, parts := range ps {
		for _, p := range parts {
			cp := c.parts[tp{topic, p}]
			if cp == nil {
				continue
			}
			if cp.polled > 0 {
				out[cp.tp] = cp.polled
			}
			cp.epoch++
			delete(c.parts, cp.tp)
		}
	}
	return out
}

// Records iterates over consumed records until ctx ends or Poll fails; the error of the
// last pair, if any, is why it stopped.
func (cl *Client) Records(ctx context.Context) iter.Seq2[*Record, error] {
	return func(yield func(*Record, error) bool) {
		for {
			rs, err := cl.Poll(ctx)
			for _, r := range rs {
				if !yield(r, nil) {
					return
				}
			}
			if err != nil {
				yield(nil, err)
				return
			}
		}
	}
}

func (c *consumer) run() {
	defer c.wg.Done()
	cl := c.cl
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case <-c.quit:
			return
		case <-cl.ctx.Done():
			return
		case <-c.wakeCh:
		case <-timer.C:
		}
		next := c.step()
		if !next.IsZero() {
			timer.Reset(max(time.Until(next), time.Millisecond))
		}
	}
}

// step resolves pending positions and starts a fetch on every idle leader.
func (c *consumer) step() (next time.Time) {
	cl := c.cl
	now := time.Now()
	soonest := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	// Resolve positions.
	type want struct {
		cp    *cpart
		epoch uint64
		ts    int64
	}
	resolve := map[string][]want{}
	c.mu.Lock()
	for _, cp := range c.parts {
		if cp.pending == nil || cp.retryAt.After(now) {
			if cp.pending != nil {
				soonest(cp.retryAt)
			}
			continue
		}
		o := *cp.pending
		var ts int64
		switch o.kind {
		case 1:
			ts = OffsetEarliest
		case 2:
			ts = OffsetLatest
		case 3:
			ts = o.at
		case 4:
			if cl.cfg.offsetReset == ResetLatest {
				ts = OffsetLatest
			} else {
				ts = OffsetEarliest
			}
		default:
			ts = OffsetEarliest
		}
		resolve[cp.topic] = append(resolve[cp.topic], want{cp, cp.epoch, ts})
	}
	c.mu.Unlock()
	for topic, ws := range resolve {
		ts := make(map[int32]int64, len(ws))
		for _, w := range ws {
			ts[w.cp.partition] = w.ts
		}
		ctx, cancel := context.WithTimeout(cl.ctx, cl.cfg.requestTimeout)
		offs, err := cl.listOffsets(ctx, topic, ts)
		cancel()
		var endOffs map[int32]int64
		c.mu.Lock()
		for _, w := range ws {
			if w.cp.epoch != w.epoch {
				continue
			}
			if err != nil {
				w.cp.retryAt = time.Now().Add(cl.cfg.retryBackoff)
				soonest(w.cp.retryAt)
				continue
			}
			o := offs[w.cp.partition]
			if o < 0 && w.ts >= 0 {
				// No record at or after the time: the end.
				if endOffs == nil {
					c.mu.Unlock()
					ps := map[int32]int64{}
					for _, w2 := range ws {
						ps[w2.cp.partition] = OffsetLatest
					}
					ctx, cancel := context.WithTimeout(cl.ctx, cl.cfg.requestTimeout)
					endOffs, _ = cl.listOffsets(ctx, topic, ps)
					cancel()
					c.mu.Lock()
					if w.cp.epoch != w.epoch {
						continue
					}
				}
				o = endOffs[w.cp.partition]
			}
			if o < 0 {
				w.cp.retryAt = time.Now().Add(cl.cfg.retryBackoff)
				soonest(w.cp.retryAt)
				continue
			}
			w.cp.offset, w.cp.pending = o, nil
		}
		c.mu.Unlock()
	}

	// Fetch.
	reqs := map[int32][]*cpart{}
	c.mu.Lock()
	needMeta := false
	for _, cp := range c.parts {
		if cp.paused || cp.fetching || cp.pending != nil || cp.offset < 0 {
			continue
		}
		if cp.retryAt.After(now) {
			soonest(cp.retryAt)
			continue
		}
		l := cl.leaderOf(cp.topic, cp.partition)
		if l < 0 {
			needMeta = true
			soonest(now.Add(cl.cfg.retryBackoff))
			continue
		}
		if c.busy[l] {
			continue
		}
		reqs[l] = append(reqs[l], cp)
	}
	for l, cps := range reqs {
		c.busy[l] = true
		for _, cp := range cps {
			cp.fetching = true
		}
		c.fetch(l, cps)
	}
	c.mu.Unlock()
	if needMeta {
		cl.triggerRefresh()
	}
	return next
}

// fetch sends one Fetch to leader for cps (c.mu held) and handles the response on another
// goroutine.
func (c *consumer) fetch(leader int32, cps []*cpart) {
	cl := c.cl
	req := &wire.FetchRequest{}
	req.Default()
	req.ReplicaId = -1
	req.MaxWaitMs = int32(cl.cfg.fetchMaxWait / time.Millisecond)
	req.MinBytes, req.MaxBytes = cl.cfg.fetchMinBytes, cl.cfg.fetchMaxBytes
	req.IsolationLevel = int8(cl.cfg.isolation)
	req.SessionId, req.SessionEpoch = 0, -1
	epochs := make([]uint64, len(cps))
	offsets := make([]int64, len(cps))
	for i, cp := range cps {
		epochs[i], offsets[i] = cp.epoch, cp.offset
		ti := -1
		for j := range req.Topics {
			if req.Topics[j].Topic == cp.topic {
				ti = j
			}
		}
		if ti < 0 {
			req.Topics = append(req.Topics, wire.FetchRequestTopic{Topic: cp.topic})
			ti = len(req.Topics) - 1
		}
		req.Topics[ti].Partitions = append(req.Topics[ti].Partitions, wire.FetchRequestPartition{
			Partition: cp.partition, CurrentLeaderEpoch: -1, FetchOffset: cp.offset, LastFetchedEpoch: -1,
			LogStartOffset: -1, PartitionMaxBytes: cl.cfg.fetchPartMaxBytes,
		})
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		ctx, cancel := context.WithTimeout(cl.ctx, cl.cfg.requestTimeout+cl.cfg.fetchMaxWait)
		resp := &wire.FetchResponse{}
		err := cl.RequestNode(ctx, leader, req, resp)
		cancel()
		if err == nil {
			err = wire.ErrorForCode(resp.ErrorCode)
		}
		byTP := map[tp]*wire.FetchResponsePartitionData{}
		if err == nil {
			for ti := range resp.Responses {
				t := &resp.Responses[ti]
				for pi := range t.Partitions {
					byTP[tp{t.Topic, t.Partitions[pi].PartitionIndex}] = &t.Partitions[pi]
				}
			}
		}
		var out []fetchedPart
		refresh := false
		c.mu.Lock()
		for i, cp := range cps {
			cp.fetching = false
			if c.parts[cp.tp] != cp || cp.epoch != epochs[i] {
				continue
			}
			if err != nil {
				cp.retryAt = time.Now().Add(cl.cfg.retryBackoff)
				refresh = refresh || isLeadershipErr(err)
				continue
			}
			pd := byTP[cp.tp]
			if pd == nil {
				continue
			}
			perr := wire.ErrorForCode(pd.ErrorCode)
			switch {
			case perr == nil:
			case errors.Is(perr, wire.ErrOffsetOutOfRange):
				if cl.cfg.offsetReset == ResetNone {
					cp.retryAt = time.Now().Add(time.Hour) // until the user seeks
					out = append(out, fetchedPart{p: cp, epoch: cp.epoch,
						err: fmt.Errorf("spool: %s[%d] offset %d: %w", cp.topic, cp.partition, offsets[i], perr)})
				} else {
					cp.pending = &Offset{kind: 4}
					cp.offset = -1
				}
				continue
			default:
				cp.retryAt = time.Now().Add(cl.cfg.retryBackoff)
				refresh = refresh || isLeadershipErr(perr) || wire.IsRetriable(perr)
				if !wire.IsRetriable(perr) {
					out = append(out, fetchedPart{p: cp, epoch: cp.epoch, err: fmt.Errorf("spool: fetching %s[%d]: %w", cp.topic, cp.partition, perr)})
				}
				continue
			}
			recs, nextOff, derr := decodeRecords(cp.topic, cp.partition, pd.Records, offsets[i], cl.cfg.fetchMaxBytes)
			if nextOff > cp.offset {
				cp.offset = nextOff
			}
			if len(recs) > 0 || derr != nil {
				out = append(out, fetchedPart{p: cp, epoch: cp.epoch, recs: recs, err: derr})
			}
		}
		delete(c.busy, leader)
		c.mu.Unlock()
		if refresh {
			cl.triggerRefresh()
		}
		if len(out) > 0 {
			select {
			case c.buf <- out:
			case <-c.quit:
			case <-cl.ctx.Done():
			}
		}
		c.wake()
	}()
}

// decodeRecords parses a fetched records region into records at or after from. Uncompressed
// keys and values alias the response buffer, which is never reused; compressed batches are
// decompressed into a buffer of their own.
func decodeRecords(topic string, partition int32, region []byte, from int64, limit int32) ([]*Record, int64, error) {
	next := from
	recs := make([]Record, 0, countRecords(region, from))
	var n int
	sc := batch.NewScanner(region)
	for sc.Next() {
		b := sc.Batch()
		h, err := batch.ParseHeader(b)
		if err != nil {
			return ptrs(recs[:n]), next, fmt.Errorf("spool: %s[%d]: %w", topic, partition, err)
		}
		last := h.BaseOffset + int64(h.LastOffsetDelta)
		if last < from {
			continue
		}
		if h.Attributes&batch.AttrControl != 0 {
			next = max(next, last+1)
			continue
		}
		var it batch.Iterator
		if err := it.Reset(b, int(max(limit, 64<<20))); err != nil {
			return ptrs(recs[:n]), next, fmt.Errorf("spool: %s[%d] batch at %d: %w", topic, partition, h.BaseOffset, err)
		}
		for it.Next() {
			r := it.Record()
			if r.Offset < from {
				continue
			}
			rec := Record{Topic: topic, Partition: partition, Offset: r.Offset, Key: r.Key, Value: r.Value,
				Timestamp: time.UnixMilli(r.Timestamp), LeaderEpoch: h.PartitionLeaderEpoch}
			if r.NumHeaders > 0 {
				rec.Headers = r.AppendHeaders(make([]Header, 0, r.NumHeaders))
			}
			recs = append(recs, rec)
			n++
		}
		if err := it.Err(); err != nil {
			return ptrs(recs[:n]), next, fmt.Errorf("spool: %s[%d] batch at %d: %w", topic, partition, h.BaseOffset, err)
		}
		next = max(next, last+1)
	}
	return ptrs(recs[:n]), next, nil
}

// countRecords is how many records the batch headers in region announce at or after from
// (an upper bound: a batch straddling from counts whole), so decodeRecords allocates its
// records once instead of growing the slice batch by batch.
func countRecords(region []byte, from int64) int {
	n := 0
	sc := batch.NewScanner(region)
	for sc.Next() {
		h, err := batch.ParseHeader(sc.Batch())
		if err != nil {
			break
		}
		if h.BaseOffset+int64(h.LastOffsetDelta) >= from && h.Attributes&batch.AttrControl == 0 {
			n += int(max(h.RecordsCount, 0))
		}
	}
	return min(n, len(region)/7) // a record takes at least 7 bytes, whatever the header claims
}

func ptrs(rs []Record) []*Record {
	if len(rs) == 0 {
		return nil
	}
	out := make([]*Record, len(rs))
	for i := range rs {
		out[i] = &rs[i]
	}
	return out
}

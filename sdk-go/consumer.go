package spool

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
	"github.com/spoolmq/spool/protocol-spec/wire/batch"
	"github.com/spoolmq/spool/protocol-spec/wire/compress"
)

// Offset is a consumer position: an exact offset, the start or end of the partition, or the
// first offset at or after a time.
type Offset struct {
	at   int64
	kind int8 // 0 exact, 1 start, 2 end, 3 time, 4 reset policy
}

// OffsetAt is the exact offset o. Kafka's special values -1 (OffsetLatest) and -2
// (OffsetEarliest) mean OffsetEnd and OffsetStart; any other negative offset is refused by
// Assign, AssignTopic and Seek.
func OffsetAt(o int64) Offset {
	switch o {
	case OffsetLatest:
		return OffsetEnd()
	case OffsetEarliest:
		return OffsetStart()
	}
	return Offset{at: o}
}

// check refuses an exact offset below zero.
func (o Offset) check() error {
	if o.kind == 0 && o.at < 0 {
		return fmt.Errorf("spool: offset %d is negative: use OffsetStart, OffsetEnd or an offset >= 0", o.at)
	}
	return nil
}

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

// ErrNoOffset is returned from Poll, wrapped with the partition, when a consumer group
// member gets a partition its group has no committed offset for and the reset policy is
// ResetNone (the Java client's NoOffsetForPartitionException). The partition is not fetched
// until Seek gives it a position.
var ErrNoOffset = errors.New("no committed offset and AutoOffsetReset is ResetNone")

type cpart struct {
	tp
	offset   int64
	pending  *Offset // position to resolve with ListOffsets
	paused   bool
	fetching bool
	epoch    uint64 // bumped on every seek: results fetched before are dropped
	polled   int64  // offset after the last record Poll returned, 0 when none: what a group commits
	// pos is what Position reports: the offset of the next record Poll will return, -1 while
	// unknown. Fetched records count only once Poll has returned them; offset (the prefetch
	// cursor) runs ahead of it.
	pos     int64
	retryAt time.Time
}

// fetchedPart is what one fetch brought for one partition: records, an error, or both (the
// records before a batch that failed to decode).
type fetchedPart struct {
	p     *cpart
	epoch uint64
	recs  *fetchedRecords // nil when none
	err   error
	// next is where the partition's position goes once this is handed out (0: stays): past
	// the batches it held, skipped ones (control, aborted) included.
	next int64
}

type consumer struct {
	cl    *Client
	mu    sync.Mutex
	parts map[tp]*cpart
	// busy counts, per broker, the fetches sent and not yet handed to buf: up to
	// maxUndelivered, so that the next fetch goes out while the last one decodes.
	busy   map[int32]int
	buf    chan []fetchedPart
	wakeCh chan struct{}
	quit   chan struct{}
	once   sync.Once
	start  sync.Once
	wg     sync.WaitGroup
	// delivered is closed when the last fetch started has handed its records to buf (or
	// given up): fetches decode in parallel but deliver in the order they were sent, so that
	// a partition's records reach Poll in offset order.
	delivered chan struct{}
}

// maxUndelivered is how many fetches a broker may have sent and not yet handed to Poll's
// buffer: one decoding while the next is on the wire.
const maxUndelivered = 2

func newConsumer(cl *Client) *consumer {
	return &consumer{
		cl: cl, parts: map[tp]*cpart{}, busy: map[int32]int{},
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
	for topic, ps := range assignments {
		for p, o := range ps {
			if err := o.check(); err != nil {
				return fmt.Errorf("spool: assign %s[%d]: %w", topic, p, err)
			}
		}
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
	if err := o.check(); err != nil {
		return fmt.Errorf("spool: assign %s: %w", topic, err)
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
	if err := o.check(); err != nil {
		return fmt.Errorf("spool: seek %s[%d]: %w", topic, partition, err)
	}
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
		cp.offset, cp.pending, cp.pos = o.at, nil, o.at
	} else {
		cp.offset, cp.pending, cp.pos = -1, &o, -1
	}
}

// Position returns the offset of the next record Poll will return for a partition (the
// Java client's position): the offset after the last record Poll returned, or where the
// partition was sought or reset to if Poll returned none since. Records fetched ahead and not
// yet returned by Poll do not count, so "Position has reached the end offset" means every
// record before it was handed out. It is -1 when unknown (not assigned, or a position still
// being looked up).
func (cl *Client) Position(topic string, partition int32) int64 {
	c := cl.cons
	c.mu.Lock()
	defer c.mu.Unlock()
	if cp := c.parts[tp{topic, partition}]; cp != nil {
		return cp.pos
	}
	return -1
}

// Pause stops fetching the partitions until Resume, and Poll returns none of their records
// meanwhile: records fetched before the pause are dropped and fetched again after Resume.
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
// ErrOffsetOutOfRange with ResetNone); records may accompany it. The records are the
// caller's: they stay valid after the next Poll.
func (cl *Client) Poll(ctx context.Context) ([]*Record, error) {
	for {
		got, err := cl.take(ctx)
		if len(got) > 0 {
			recs := records(got)
			if cl.tel != nil {
				for _, r := range recs {
					cl.consumed(ctx, r)
				}
			}
			return recs, err
		}
		if err != nil {
			return nil, err
		}
	}
}

// PollFunc waits as Poll does, then calls fn with each record Poll would have returned, in
// the same order, and returns how many there were with the error Poll would have returned.
// It allocates nothing per record, which makes it the fastest way to read, at a price: fn
// gets the same *Record every time, overwritten for the next record. fn must not keep r, but
// may keep a copy of it (rec := *r): the bytes of Key, Value and Headers are never reused.
// For a group's commits the records count as polled before fn sees them, as with Poll.
func (cl *Client) PollFunc(ctx context.Context, fn func(r *Record)) (int, error) {
	if fn == nil {
		return 0, errors.New("spool: PollFunc needs a function to call")
	}
	for {
		got, err := cl.take(ctx)
		var r Record
		n := 0
		for _, f := range got {
			for i := range f.entries {
				f.fill(i, &r)
				if cl.tel != nil {
					cl.consumed(ctx, &r)
				}
				fn(&r)
			}
			n += len(f.entries)
			f.release()
		}
		if n > 0 || err != nil {
			return n, err
		}
	}
}

// take waits until fetches arrive, ctx ends or the client closes, and returns the records
// Poll hands out, in order, with the partition errors that came with them. It may return
// neither.
func (cl *Client) take(ctx context.Context) ([]*fetchedRecords, error) {
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
	var out []*fetchedRecords
	var errs []error
	c.mu.Lock()
	for _, fps := range got {
		for _, fp := range fps {
			if c.parts[fp.p.tp] != fp.p || fp.p.epoch != fp.epoch {
				continue // sought or unassigned since
			}
			if fp.p.paused {
				// Fetched before the pause: drop and fetch again after Resume.
				if fp.recs != nil {
					fp.p.offset = fp.recs.entries[0].offset
					fp.p.epoch++
				} else if fp.err == nil && fp.next > 0 && fp.next > fp.p.pos {
					fp.p.pos = fp.next // only skipped batches: nothing to hand out again
				}
				continue
			}
			if fp.next > 0 && fp.next > fp.p.pos {
				fp.p.pos = fp.next
			}
			if fp.err != nil {
				errs = append(errs, fp.err)
			}
			if fp.recs != nil {
				fp.p.polled = fp.recs.entries[len(fp.recs.entries)-1].offset + 1
				out = append(out, fp.recs)
			}
		}
	}
	c.mu.Unlock()
	return out, errors.Join(errs...)
}

// records builds the Records of got, in two allocations whatever their number.
func records(got []*fetchedRecords) []*Record {
	n := 0
	for _, f := range got {
		n += len(f.entries)
	}
	recs := make([]Record, n)
	out := make([]*Record, n)
	i := 0
	for _, f := range got {
		for j := range f.entries {
			f.fill(j, &recs[i])
			out[i] = &recs[i]
			i++
		}
		f.release()
	}
	return out
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
	var noOffset []fetchedPart
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
			switch cl.cfg.offsetReset {
			case ResetLatest:
				ts = OffsetLatest
			case ResetNone:
				// Parked without a position (no fetch) until the user seeks.
				cp.pending, cp.offset, cp.pos = nil, -1, -1
				noOffset = append(noOffset, fetchedPart{p: cp, epoch: cp.epoch,
					err: fmt.Errorf("spool: %s[%d]: %w", cp.topic, cp.partition, ErrNoOffset)})
				continue
			default:
				ts = OffsetEarliest
			}
		default:
			ts = OffsetEarliest
		}
		resolve[cp.topic] = append(resolve[cp.topic], want{cp, cp.epoch, ts})
	}
	c.mu.Unlock()
	c.deliver(nil, noOffset)
	var refused []fetchedPart
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
				if isAuthError(err) {
					// Poll reports it (retrying later, as librdkafka does), rather than a
					// silent wait for a password that will not become right.
					w.cp.retryAt = time.Now().Add(cl.cfg.retryBackoffMax)
					refused = append(refused, fetchedPart{p: w.cp, epoch: w.epoch, err: fmt.Errorf("spool: %s[%d]: %w", w.cp.topic, w.cp.partition, err)})
				}
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
			w.cp.offset, w.cp.pending, w.cp.pos = o, nil, o
		}
		c.mu.Unlock()
	}
	c.deliver(nil, refused)

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
		if c.busy[l] >= maxUndelivered {
			continue
		}
		reqs[l] = append(reqs[l], cp)
	}
	for l, cps := range reqs {
		c.busy[l]++
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
	prev, delivered := c.delivered, make(chan struct{})
	c.delivered = delivered
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer close(delivered)
		ctx, cancel := context.WithTimeout(cl.ctx, cl.cfg.requestTimeout+cl.cfg.fetchMaxWait)
		resp := &wire.FetchResponse{}
		began := time.Now()
		err := cl.RequestNode(ctx, leader, req, resp)
		cancel()
		if err == nil {
			cl.tel.request("receive", began)
		}
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
		out, todo, refresh := c.settle(cps, epochs, offsets, byTP, err)
		c.wake() // the next fetch goes out while this one decodes
		if refresh {
			cl.triggerRefresh()
		}
		for _, d := range todo {
			recs, next, derr := decodeRecords(d.cp.topic, d.cp.partition, d.region, d.from, cl.cfg.fetchMaxBytes, newAbortFilter(d.aborted))
			if derr != nil {
				d.epoch = c.rewind(d.cp, d.epoch, next)
			} else {
				next = d.next
			}
			// Handed out even without records when the position moves (past control or
			// aborted batches), so that Position reaches the end.
			if recs != nil || derr != nil || next > d.from {
				out = append(out, fetchedPart{p: d.cp, epoch: d.epoch, recs: recs, err: derr, next: next})
			}
		}
		c.deliver(prev, out)
		c.mu.Lock()
		c.busy[leader]--
		if c.busy[leader] <= 0 {
			delete(c.busy, leader)
		}
		c.mu.Unlock()
		c.wake()
	}()
}

// toDecode is a partition's records region from a fetch response, to decode from offset from.
type toDecode struct {
	cp     *cpart
	epoch  uint64
	from   int64
	next   int64 // offset after the last batch of region
	region []byte
	// aborted lists the aborted transactions overlapping region (read_committed only).
	aborted []wire.FetchResponseAbortedTransaction
}

// settle applies a fetch response to the partitions it was for: it reports their errors (in
// out), moves their positions past the batches it holds, read from the batch headers alone
// so that the next fetch need not wait for the decoding, and returns what to decode.
func (c *consumer) settle(cps []*cpart, epochs []uint64, offsets []int64, byTP map[tp]*wire.FetchResponsePartitionData, err error) (out []fetchedPart, todo []toDecode, refresh bool) {
	cl := c.cl
	c.mu.Lock()
	defer c.mu.Unlock()
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
		next := nextOffset(pd.Records, offsets[i])
		if next > cp.offset {
			cp.offset = next
		}
		d := toDecode{cp: cp, epoch: cp.epoch, from: offsets[i], next: next, region: pd.Records}
		if cl.cfg.isolation == ReadCommitted {
			d.aborted = pd.AbortedTransactions
		}
		todo = append(todo, d)
	}
	return out, todo, refresh
}

// rewind puts cp back at offset, where its records failed to decode, if no seek came in
// between, and drops what was fetched past it. It returns the epoch the failure belongs to.
func (c *consumer) rewind(cp *cpart, epoch uint64, offset int64) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.parts[cp.tp] != cp || cp.epoch != epoch {
		return epoch
	}
	cp.epoch++
	cp.offset = offset
	cp.retryAt = time.Time{}
	return cp.epoch
}

// deliver hands out to Poll once the fetch sent before, prev, has handed out its own.
func (c *consumer) deliver(prev <-chan struct{}, out []fetchedPart) {
	cl := c.cl
	if prev != nil {
		select {
		case <-prev:
		case <-c.quit:
			return
		case <-cl.ctx.Done():
			return
		}
	}
	if len(out) == 0 {
		return
	}
	select {
	case c.buf <- out:
	case <-c.quit:
	case <-cl.ctx.Done():
	}
}

// nextOffset is the offset after the last batch of region whose header parses (from if
// none): where the next fetch starts. A truncated last batch is fetched again.
func nextOffset(region []byte, from int64) int64 {
	next := from
	for sc := batch.NewScanner(region); sc.Next(); {
		h, err := batch.ParseHeader(sc.Batch())
		if err != nil {
			break
		}
		next = max(next, h.NextOffset())
	}
	return next
}

// span locates a key or value in a region of fetchedRecords; n is -1 for null.
type span struct{ at, n int32 }

func (s span) in(region []byte) []byte {
	if s.n < 0 {
		return nil
	}
	end := s.at + s.n
	return region[s.at:end:end]
}

// recEntry is one fetched record. It holds no pointer, so that the records of a fetch are one
// block the garbage collector neither scans nor guards with write barriers: as Records they
// would be tens of thousands of objects of five pointers each.
type recEntry struct {
	offset, timestamp int64
	key, value        span
	region            int32 // in fetchedRecords.regions
	headers           int32 // in fetchedRecords.headers; -1 for none
	leaderEpoch       int32
}

// fetchedRecords are the records of one partition from one fetch, in offset order; at least
// one.
type fetchedRecords struct {
	topic     string
	partition int32
	// regions are the fetch response's records region, then the buffer of each compressed
	// batch. Records alias them: none is ever written again.
	regions [][]byte
	entries []recEntry
	headers [][]Header
}

// entryPool recycles the entries of fetches already handed out: a fetch of 6 MiB of small
// records needs megabytes of them, which fresh memory would make the runtime clear and the
// kernel fault in on every fetch.
var entryPool sync.Pool // of *[]recEntry

// getEntries returns an empty slice with room for n entries.
func getEntries(n int) []recEntry {
	if p, ok := entryPool.Get().(*[]recEntry); ok && cap(*p) >= n {
		return (*p)[:0]
	}
	return make([]recEntry, 0, n)
}

// release gives f's entries back to entryPool once nothing reads them any more; f is empty
// afterwards.
func (f *fetchedRecords) release() {
	if cap(f.entries) > 0 {
		e := f.entries[:0]
		entryPool.Put(&e)
	}
	f.entries = nil
}

// fill sets *r to record i.
func (f *fetchedRecords) fill(i int, r *Record) {
	e := &f.entries[i]
	region := f.regions[e.region]
	*r = Record{Topic: f.topic, Partition: f.partition, Offset: e.offset, Key: e.key.in(region), Value: e.value.in(region),
		Timestamp: time.UnixMilli(e.timestamp), LeaderEpoch: e.leaderEpoch}
	if e.headers >= 0 {
		r.Headers = f.headers[e.headers]
	}
}

// decodeRecords parses a fetched records region into the records at or after from (nil if
// none), and returns the offset after the last batch it read whole: on error, that of the
// batch that failed. Uncompressed keys and values alias the response buffer, which is never
// reused; each compressed batch is decompressed into a buffer of its own.
func decodeRecords(topic string, partition int32, region []byte, from int64, limit int32, aborts *abortFilter) (*fetchedRecords, int64, error) {
	f := &fetchedRecords{topic: topic, partition: partition, regions: [][]byte{region},
		entries: getEntries(countRecords(region, from))}
	result := func(next int64, err error) (*fetchedRecords, int64, error) {
		if len(f.entries) == 0 {
			f.release()
			return nil, next, err
		}
		return f, next, err
	}
	next := from
	var it batch.Iterator
	sc := batch.NewScanner(region)
	for sc.Next() {
		b := sc.Batch()
		h, err := batch.ParseHeader(b)
		if err != nil {
			return result(next, fmt.Errorf("spool: %s[%d]: %w", topic, partition, err))
		}
		last := h.BaseOffset + int64(h.LastOffsetDelta)
		if aborts.skip(b, h, last) {
			next = max(next, last+1)
			continue
		}
		if last < from {
			continue
		}
		if h.Attributes&batch.AttrControl != 0 {
			next = max(next, last+1)
			continue
		}
		if err := it.Reset(b, int(max(limit, 64<<20))); err != nil {
			return result(next, fmt.Errorf("spool: %s[%d] batch at %d: %w", topic, partition, h.BaseOffset, err))
		}
		// Positions are in the iterator's region: the batch's records, which start
		// HeaderSize into the batch, or a decompression buffer, kept as a region of its own.
		ri, base := int32(0), int32(sc.Position()+batch.HeaderSize)
		compressed := h.Attributes.Codec() != compress.None
		if compressed {
			ri, base = int32(len(f.regions)), 0
		}
		added := len(f.entries)
		for it.Next() {
			r := it.Record()
			if r.Offset < from {
				continue
			}
			k, v := it.Positions()
			e := recEntry{offset: r.Offset, timestamp: r.Timestamp, region: ri, headers: -1, leaderEpoch: h.PartitionLeaderEpoch,
				key: span{base + int32(k), int32(len(r.Key))}, value: span{base + int32(v), int32(len(r.Value))}}
			if r.Key == nil {
				e.key = span{0, -1}
			}
			if r.Value == nil {
				e.value = span{0, -1}
			}
			if r.NumHeaders > 0 {
				e.headers = int32(len(f.headers))
				f.headers = append(f.headers, r.AppendHeaders(make([]Header, 0, r.NumHeaders)))
			}
			f.entries = append(f.entries, e)
		}
		err = it.Err()
		if compressed && len(f.entries) > added {
			// The records alias the buffer: the next batch needs a fresh one.
			f.regions = append(f.regions, it.Region())
			it = batch.Iterator{}
		}
		if err != nil {
			return result(next, fmt.Errorf("spool: %s[%d] batch at %d: %w", topic, partition, h.BaseOffset, err))
		}
		next = max(next, last+1)
	}
	return result(next, nil)
}

// abortFilter drops the records of aborted transactions from a read_committed fetch, as
// Kafka's consumers do. The response lists each aborted transaction it overlaps by producer
// id and first offset; from that offset on, that producer's transactional batches are
// aborted until its abort marker, a control batch.
type abortFilter struct {
	ahead    []wire.FetchResponseAbortedTransaction // by first offset, not reached yet
	aborting map[int64]bool                         // producer ids inside an aborted transaction
}

func newAbortFilter(txns []wire.FetchResponseAbortedTransaction) *abortFilter {
	if len(txns) == 0 {
		return nil
	}
	ahead := slices.Clone(txns)
	slices.SortFunc(ahead, func(a, b wire.FetchResponseAbortedTransaction) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	return &abortFilter{ahead: ahead, aborting: map[int64]bool{}}
}

// skip reports whether batch b (header h, last offset last) belongs to an aborted
// transaction or is the marker ending one. Batches must come in offset order.
func (f *abortFilter) skip(b []byte, h batch.Header, last int64) bool {
	if f == nil || h.ProducerID < 0 {
		return false
	}
	for len(f.ahead) > 0 && f.ahead[0].FirstOffset <= last {
		f.aborting[f.ahead[0].ProducerId] = true
		f.ahead = f.ahead[1:]
	}
	if !f.aborting[h.ProducerID] {
		return false
	}
	if h.Attributes.Control() {
		if isAbortMarker(b) {
			delete(f.aborting, h.ProducerID)
		}
		return true
	}
	return h.Attributes.Transactional()
}

// isAbortMarker reports whether control batch b holds an ABORT marker: its record's key is
// a version (int16) and a type (int16), 0 for abort, 1 for commit.
func isAbortMarker(b []byte) bool {
	var it batch.Iterator
	if it.Reset(b, 1<<20) != nil || !it.Next() {
		return false
	}
	k := it.Record().Key
	return len(k) >= 4 && binary.BigEndian.Uint16(k[2:4]) == 0
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

package main

/*
#include "spool_impl.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"
	"unsafe"

	spool "github.com/spoolmq/spool/sdk-go"
)

type tp struct {
	topic     string
	partition int32
}

// consumer is the Go side of a spool_consumer_t. The SDK's Poll returns records in batches;
// they wait in pending and C takes them one by one. Commits cover only what C took
// (handed), so the SDK's own auto commit, which counts what Poll returned, is off and this
// side commits instead: every interval from spoolgo_consumer_poll, on revocation and on close.
type consumer struct {
	conf       *spool.Conf
	group      bool
	autoCommit bool
	every      time.Duration

	mu         sync.Mutex
	cl         *spool.Client // nil until subscribe in a group
	stopping   bool          // close started: poll returns nothing, commits still work
	closed     bool          // the client is closed
	closeDone  chan struct{} // closed once close finished; nil before close
	pending    []*spool.Record
	handed     map[tp]int64 // next offset after the last record handed to C
	dirty      bool         // handed changed since the last commit
	lastCommit time.Time
	asyncErr   error // the last failed asynchronous commit, returned by the next commit

	// Outcomes of commits for C's offset commit callback (spool_conf_set_offset_commit_cb),
	// in the order they finished: queued by the goroutine that committed, taken by the shim
	// inside poll and close.
	commitCb bool // a callback is set: asynchronous failures go to it, not to asyncErr
	commits  []commitOutcome

	// Rebalance events for C's callback (spool_conf_set_rebalance_cb): queued by the group's
	// goroutine, taken by the shim inside poll and close on the caller's thread.
	rebalance bool // a callback is set
	events    []*rebalanceEvent
	serving   *rebalanceEvent // taken by a thread, its callback not returned yet
	lastID    C.uintptr_t
	wake      context.CancelFunc // ends wakeCtx: a poll waiting in the SDK returns to serve events
	wakeCtx   context.Context
}

// commitOutcome is one call of C's offset commit callback.
type commitOutcome struct {
	err     error
	offsets map[string]map[int32]int64
}

// rebalanceEvent is one call of C's rebalance callback.
type rebalanceEvent struct {
	id   C.uintptr_t
	what C.int // SPOOL_REBALANCE_*
	ps   map[string][]int32
	done chan struct{} // closed once the callback returned
}

//export spoolgo_consumer_new
func spoolgo_consumer_new(confH C.uintptr_t, hasRebalance, hasCommitCb C.int, errstr *C.char, size C.size_t) C.uintptr_t {
	sc := checkedConf(confH, "spool_consumer_new", errstr, size)
	if sc == nil {
		return 0
	}
	c := &consumer{conf: sc, autoCommit: true, every: 5 * time.Second, handed: map[tp]int64{}, lastCommit: time.Now(),
		rebalance: hasRebalance != 0, commitCb: hasCommitCb != 0}
	c.wakeCtx, c.wake = context.WithCancel(context.Background())
	_, c.group = sc.Get("group.id")
	if v, ok := sc.Get("enable.auto.commit"); ok {
		c.autoCommit = v == "true"
	}
	if v, ok := sc.Get("auto.commit.interval.ms"); ok {
		n, _ := strconv.Atoi(v)
		c.every = time.Duration(n) * time.Millisecond
	}
	if !c.group {
		cl, err := spool.NewClient(sc.Opts()...)
		if err != nil {
			setErrstr(errstr, size, "spool_consumer_new: "+err.Error())
			return 0
		}
		c.cl = cl
	}
	return newHandle(c)
}

//export spoolgo_consumer_subscribe
func spoolgo_consumer_subscribe(h C.uintptr_t, topics **C.char, n C.size_t) C.int {
	c := value[consumer](h)
	if c == nil {
		return errBadArg
	}
	names := make([]string, n)
	for i, t := range unsafe.Slice(topics, int(n)) {
		names[i] = C.GoString(t)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.stopping:
		return errClosed
	case !c.group || c.cl != nil:
		return errState
	}
	opts := append(c.conf.Opts(), spool.ConsumeTopics(names...), spool.DisableAutoCommit(),
		spool.OnRevoked(c.revoked), spool.OnLost(func(_ context.Context, ps map[string][]int32) {
			c.forget(ps)
			c.queueRebalance(context.Background(), C.SPOOL_REBALANCE_LOST, ps, false)
		}))
	if c.rebalance {
		opts = append(opts, spool.OnAssigned(func(ctx context.Context, ps map[string][]int32) {
			c.queueRebalance(ctx, C.SPOOL_REBALANCE_ASSIGN, ps, false)
		}))
	}
	cl, err := spool.NewClient(opts...)
	if err != nil {
		return errCode(err)
	}
	c.cl = cl
	return 0
}

// revoked runs on the group's goroutine before partitions go to another member: what C took
// of them is committed (with auto commit), what it did not take is dropped.
func (c *consumer) revoked(ctx context.Context, ps map[string][]int32) {
	offsets := c.forget(ps)
	c.mu.Lock()
	cl := c.cl
	c.mu.Unlock()
	if c.autoCommit && len(offsets) > 0 && cl != nil {
		// The group goes on without this commit when it fails; the partition's next owner
		// then reads from the last committed offset again.
		c.reported(offsets, cl.CommitOffsets(ctx, offsets))
	}
	c.queueRebalance(ctx, C.SPOOL_REBALANCE_REVOKE, ps, true)
}

// queueRebalance queues an event for C's rebalance callback, if one is set, and wakes a
// poll waiting in the SDK so that it returns to the shim, which serves it. With wait, it
// returns once the callback returned or ctx ended (or after max.poll.interval.ms); during
// close the shim serves events while it waits for the client to close.
func (c *consumer) queueRebalance(ctx context.Context, what C.int, ps map[string][]int32, wait bool) {
	if !c.rebalance {
		return
	}
	c.mu.Lock()
	c.lastID++
	ev := &rebalanceEvent{id: c.lastID, what: what, ps: ps, done: make(chan struct{})}
	c.events = append(c.events, ev)
	c.wake()
	c.wakeCtx, c.wake = context.WithCancel(context.Background())
	c.mu.Unlock()
	if !wait {
		return
	}
	// A consumer that does not poll holds the rebalance up to max.poll.interval.ms, as in
	// the Java client.
	bound := 60 * time.Second
	if v, ok := c.conf.Get("max.poll.interval.ms"); ok {
		n, _ := strconv.Atoi(v)
		bound = time.Duration(n) * time.Millisecond
	}
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-ev.done:
	case <-ctx.Done():
	case <-t.C:
	}
}

//export spoolgo_consumer_take_rebalance
func spoolgo_consumer_take_rebalance(h C.uintptr_t, what *C.int, parts **C.spool_topic_partition_t, count *C.size_t) C.uintptr_t {
	c := value[consumer](h)
	if c == nil {
		return 0
	}
	c.mu.Lock()
	if len(c.events) == 0 || c.serving != nil {
		c.mu.Unlock()
		return 0
	}
	ev := c.events[0]
	c.events[0] = nil
	c.events = c.events[1:]
	c.serving = ev
	c.mu.Unlock()
	block, n := topicBlock(ev.ps, func(name *C.char, ps []int32, out []C.spool_topic_partition_t) {
		for i, p := range slices.Sorted(slices.Values(ps)) {
			out[i] = C.spool_topic_partition_t{topic: name, partition: C.int32_t(p)}
		}
	})
	*what, *parts, *count = ev.what, block, C.size_t(n)
	return ev.id
}

// topicBlock mallocs one block for C of an element of T per partition of m (a topic's
// partitions are a slice or a map, len(v) of them), zeroed, then the topics' names,
// NUL-terminated; fill writes a topic's elements, pointing at its name. It returns the block
// (which C frees, even when n is 0) and the number of elements.
func topicBlock[V []int32 | map[int32]int64, T any](m map[string]V, fill func(name *C.char, v V, out []T)) (*T, int) {
	var zero T
	n, size := 0, 0
	for t, v := range m {
		n += len(v)
		size += len(t) + 1
	}
	arrBytes := n * int(unsafe.Sizeof(zero))
	base := C.malloc(C.size_t(arrBytes + size + 1))
	if base == nil {
		panic("libspool: out of memory")
	}
	// Zeroed before the typed stores (see fillMessage): malloc'd memory may hold stale pointers.
	clear(unsafe.Slice((*byte)(base), arrBytes))
	arr := unsafe.Slice((*T)(base), n)
	names := unsafe.Slice((*byte)(unsafe.Add(base, arrBytes)), size+1)
	i, at := 0, 0
	for _, t := range slices.Sorted(maps.Keys(m)) {
		name := (*C.char)(unsafe.Pointer(&names[at]))
		at += copy(names[at:], t)
		names[at] = 0
		at++
		fill(name, m[t], arr[i:i+len(m[t])])
		i += len(m[t])
	}
	return (*T)(base), n
}

//export spoolgo_consumer_rebalance_done
func spoolgo_consumer_rebalance_done(h C.uintptr_t, id C.uintptr_t) {
	c := value[consumer](h)
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.serving != nil && c.serving.id == id {
		close(c.serving.done)
		c.serving = nil
	}
}

// forget drops the pending records of ps and returns the handed offsets of ps not yet
// committed.
func (c *consumer) forget(ps map[string][]int32) map[string]map[int32]int64 {
	in := func(k tp) bool {
		for _, p := range ps[k.topic] {
			if p == k.partition {
				return true
			}
		}
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := c.pending[:0]
	for _, r := range c.pending {
		if !in(tp{r.Topic, r.Partition}) {
			kept = append(kept, r)
		}
	}
	clear(c.pending[len(kept):])
	c.pending = kept
	out := map[string]map[int32]int64{}
	for k, o := range c.handed {
		if in(k) {
			if out[k.topic] == nil {
				out[k.topic] = map[int32]int64{}
			}
			out[k.topic][k.partition] = o
			delete(c.handed, k)
		}
	}
	return out
}

// client returns the consumer's client, or nil with errClosed after close and errState
// before a group consumer subscribed.
func (c *consumer) client() (*spool.Client, C.int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.stopping:
		return nil, errClosed
	case c.cl == nil:
		return nil, errState
	}
	return c.cl, 0
}

//export spoolgo_consumer_assign
func spoolgo_consumer_assign(h C.uintptr_t, topic *C.char, partition C.int32_t, offset C.int64_t, seek C.int) C.int {
	c := value[consumer](h)
	if c == nil {
		return errBadArg
	}
	cl, code := c.client()
	if cl == nil {
		return code
	}
	var o spool.Offset
	switch offset {
	case C.SPOOL_OFFSET_BEGINNING:
		o = spool.OffsetStart()
	case C.SPOOL_OFFSET_END:
		o = spool.OffsetEnd()
	default:
		o = spool.OffsetAt(int64(offset))
	}
	name, p := C.GoString(topic), int32(partition)
	c.forget(map[string][]int32{name: {p}})
	if seek != 0 {
		return errCode(cl.Seek(name, p, o))
	}
	return errCode(cl.Assign(map[string]map[int32]spool.Offset{name: {p: o}}))
}

//export spoolgo_consumer_poll
func spoolgo_consumer_poll(h C.uintptr_t, timeoutMS C.int, woken *C.int) *C.spool_message_t {
	c := value[consumer](h)
	if c == nil {
		return nil
	}
	return c.poll(timeoutMS, woken)
}

//export spoolgo_consumer_poll_batch
func spoolgo_consumer_poll_batch(h C.uintptr_t, timeoutMS C.int, msgs **C.spool_message_t, max C.size_t, woken *C.int) C.size_t {
	c := value[consumer](h)
	if c == nil {
		return 0
	}
	out := unsafe.Slice(msgs, int(max))
	n := 0
	for m := c.poll(timeoutMS, woken); m != nil; m = c.next() {
		storeC(unsafe.Pointer(&out[n]), unsafe.Pointer(m))
		if n++; n == len(out) {
			break
		}
	}
	return C.size_t(n)
}

// poll returns the next message, waiting up to timeoutMS for records. It sets *woken when it
// returns nil early because a rebalance event is queued: the shim serves it and polls again
// for the rest of the timeout.
func (c *consumer) poll(timeoutMS C.int, woken *C.int) *C.spool_message_t {
	if m := c.next(); m != nil {
		return m
	}
	cl, code := c.client()
	switch {
	case code == errClosed:
		return nil
	case cl == nil:
		return newMessage(nil, fmt.Errorf("%w: spool_consumer_poll before spool_consumer_subscribe", errStateSentinel), 0)
	}
	ctx, cancel := timeoutCtx(timeoutMS)
	defer cancel()
	if c.rebalance {
		// A rebalance event ends the wait: the shim serves it on return.
		c.mu.Lock()
		queued, wakeCtx := len(c.events) > 0, c.wakeCtx
		c.mu.Unlock()
		if queued {
			*woken = 1
			return nil
		}
		defer context.AfterFunc(wakeCtx, cancel)()
	}
	recs, err := cl.Poll(ctx)
	c.mu.Lock()
	c.pending = append(c.pending, recs...)
	closed := c.stopping
	c.mu.Unlock()
	if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && !(closed && errors.Is(err, spool.ErrClosed)) {
		return newMessage(nil, err, 0)
	}
	m := c.next()
	if m == nil && errors.Is(err, context.Canceled) {
		*woken = 1 // only wakeCtx cancels ctx early
	}
	return m
}

// next hands the first pending record to C, and commits in the background when auto commit
// is due.
func (c *consumer) next() *C.spool_message_t {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) == 0 || c.stopping {
		return nil
	}
	r := c.pending[0]
	c.pending[0] = nil
	c.pending = c.pending[1:]
	c.handed[tp{r.Topic, r.Partition}] = r.Offset + 1
	c.dirty = true
	if c.autoCommit && c.group && time.Since(c.lastCommit) >= c.every {
		c.commitAsyncLocked()
	}
	return newMessage(r, nil, 0)
}

func (c *consumer) offsetsLocked() map[string]map[int32]int64 {
	out := map[string]map[int32]int64{}
	for k, o := range c.handed {
		if out[k.topic] == nil {
			out[k.topic] = map[int32]int64{}
		}
		out[k.topic][k.partition] = o
	}
	return out
}

func (c *consumer) commitAsyncLocked() {
	c.lastCommit, c.dirty = time.Now(), false
	offsets := c.offsetsLocked()
	c.cl.CommitAsync(offsets, c.asyncDone(offsets))
}

// asyncDone is what an asynchronous commit of offsets calls when it has finished: its
// outcome goes to C's offset commit callback, or without one a failure is kept for the next
// commit or close to return. The SDK makes asynchronous commits one at a time, in order.
func (c *consumer) asyncDone(offsets map[string]map[int32]int64) func(error) {
	return func(err error) {
		if c.commitCb {
			c.reported(offsets, err)
			return
		}
		if err != nil {
			c.mu.Lock()
			c.asyncErr = err
			c.mu.Unlock()
		}
	}
}

// reported queues the outcome of a commit of offsets for C's offset commit callback, when
// one is set and offsets is not empty, and returns err.
func (c *consumer) reported(offsets map[string]map[int32]int64, err error) error {
	if c.commitCb && len(offsets) > 0 {
		c.mu.Lock()
		c.commits = append(c.commits, commitOutcome{err, offsets})
		c.mu.Unlock()
	}
	return err
}

// spoolgo_consumer_take_commit takes the oldest commit outcome queued for C's offset commit
// callback: its code, and its offsets as one malloc'd block (the array, then the
// NUL-terminated topics) that the shim frees. 0 when none is queued.
//
//export spoolgo_consumer_take_commit
func spoolgo_consumer_take_commit(h C.uintptr_t, code *C.int, offs **C.spool_topic_partition_offset_t, count *C.size_t) C.int {
	c := value[consumer](h)
	if c == nil {
		return 0
	}
	c.mu.Lock()
	if len(c.commits) == 0 {
		c.mu.Unlock()
		return 0
	}
	o := c.commits[0]
	c.commits[0] = commitOutcome{}
	c.commits = c.commits[1:]
	c.mu.Unlock()
	block, n := topicBlock(o.offsets, func(name *C.char, ps map[int32]int64, out []C.spool_topic_partition_offset_t) {
		for i, p := range slices.Sorted(maps.Keys(ps)) {
			out[i] = C.spool_topic_partition_offset_t{topic: name, partition: C.int32_t(p), offset: C.int64_t(ps[p])}
		}
	})
	*code, *offs, *count = errCode(o.err), block, C.size_t(n)
	return 1
}

// commitSync commits what C took, and returns that error or an earlier asynchronous one.
func (c *consumer) commitSync() error {
	c.mu.Lock()
	cl, offsets, prev := c.cl, c.offsetsLocked(), c.asyncErr
	c.asyncErr, c.lastCommit, c.dirty = nil, time.Now(), false
	c.mu.Unlock()
	if cl == nil {
		return fmt.Errorf("%w: commit before subscribe", errStateSentinel)
	}
	err := c.reported(offsets, cl.CommitOffsets(context.Background(), offsets))
	return errors.Join(err, prev)
}

//export spoolgo_consumer_commit
func spoolgo_consumer_commit(h C.uintptr_t, async C.int) C.int {
	c := value[consumer](h)
	if c == nil {
		return errBadArg
	}
	c.mu.Lock()
	if code := c.commitStateLocked(); code != 0 {
		c.mu.Unlock()
		return code
	}
	if async != 0 {
		defer c.mu.Unlock()
		prev := c.asyncErr
		c.asyncErr = nil
		c.commitAsyncLocked()
		return errCode(prev)
	}
	c.mu.Unlock()
	return errCode(c.commitSync())
}

// commitStateLocked is 0 when C may commit now, else the code saying why not: the consumer
// is closed, or has no group, or has not subscribed yet. With mu held.
func (c *consumer) commitStateLocked() C.int {
	switch {
	case c.closed:
		return errClosed
	case !c.group || c.cl == nil:
		return errState
	}
	return 0
}

// spoolgo_consumer_commit_offsets commits the n offsets at offs (checked by the shim),
// which are only read during the call, as spoolgo_consumer_commit commits what C took.
//
//export spoolgo_consumer_commit_offsets
func spoolgo_consumer_commit_offsets(h C.uintptr_t, offs *C.spool_topic_partition_offset_t, n C.size_t, async C.int) C.int {
	c := value[consumer](h)
	if c == nil {
		return errBadArg
	}
	offsets := map[string]map[int32]int64{}
	for _, o := range unsafe.Slice(offs, int(n)) {
		topic := C.GoString(o.topic)
		if offsets[topic] == nil {
			offsets[topic] = map[int32]int64{}
		}
		offsets[topic][int32(o.partition)] = int64(o.offset)
	}
	c.mu.Lock()
	if code := c.commitStateLocked(); code != 0 {
		c.mu.Unlock()
		return code
	}
	cl, prev := c.cl, c.asyncErr
	c.asyncErr = nil
	c.mu.Unlock()
	if len(offsets) == 0 {
		return errCode(prev)
	}
	if async != 0 {
		cl.CommitAsync(offsets, c.asyncDone(offsets))
		return errCode(prev)
	}
	return errCode(errors.Join(c.reported(offsets, cl.CommitOffsets(context.Background(), offsets)), prev))
}

// spoolgo_consumer_close_start commits (with auto commit) and starts closing the client in
// the background; the shim waits with spoolgo_consumer_close_wait and serves rebalance
// events meanwhile, so that the revocation on close runs C's callback on the caller's
// thread, where it may still commit.
//
//export spoolgo_consumer_close_start
func spoolgo_consumer_close_start(h C.uintptr_t) C.int {
	c := value[consumer](h)
	if c == nil {
		return errBadArg
	}
	c.mu.Lock()
	if c.closeDone != nil {
		c.mu.Unlock()
		return 0
	}
	c.closeDone = make(chan struct{})
	dirty := c.group && c.autoCommit && c.dirty && c.cl != nil
	c.mu.Unlock()
	var err error
	if dirty {
		err = c.commitSync()
	}
	c.mu.Lock()
	c.stopping = true
	cl := c.cl
	clear(c.pending)
	c.pending = nil
	c.mu.Unlock()
	go func() {
		if cl != nil {
			cl.Close()
		}
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		close(c.closeDone)
	}()
	return errCode(err)
}

// spoolgo_consumer_close_wait waits up to timeoutMS (-1: without limit) for close to finish;
// 1 when it did.
//
//export spoolgo_consumer_close_wait
func spoolgo_consumer_close_wait(h C.uintptr_t, timeoutMS C.int) C.int {
	c := value[consumer](h)
	if c == nil {
		return 1
	}
	c.mu.Lock()
	done := c.closeDone
	c.mu.Unlock()
	if done == nil {
		return 1
	}
	ctx, cancel := timeoutCtx(timeoutMS)
	defer cancel()
	select {
	case <-done:
		return 1
	case <-ctx.Done():
		return 0
	}
}

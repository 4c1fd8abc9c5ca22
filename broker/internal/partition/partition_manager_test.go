package partition

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/internal/replication"
	"github.com/spoolmq/spool/broker/internal/storage"
	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

// open returns a partition on a real log (fsync before ack), applied as leader of replicas
// with this broker (1) first, all in the ISR.
func open(t *testing.T, topic string, replicas []int32, minISR int) *Partition {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	m, err := storage.OpenManager(t.TempDir(), logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	cfg := storage.DefaultLogConfig()
	cfg.Fsync = storage.FsyncAlways
	l, err := m.Open(topic, 0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	set := &replication.Settings{Self: 1, LagMax: time.Minute, DurableOnly: true, Log: logger,
		WriteISR: func(_ context.Context, _ string, _ int32, _ int32, _ []int32, version int32) (int32, error) {
			return version + 1, nil
		}}
	p := New(topic, 0, l, set)
	if _, _, err := p.Replica().Apply(replication.State{Leader: 1, LeaderEpoch: 1, Replicas: replicas, ISR: replicas, MinISR: minISR}); err != nil {
		t.Fatal(err)
	}
	return p
}

func records(t *testing.T, n int) []byte {
	t.Helper()
	b := batch.NewBuilder()
	for i := 0; i < n; i++ {
		b.Append(time.Now().UnixMilli(), nil, []byte("value"), nil)
	}
	out, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), out...)
}

// appendDurable appends as leader and waits until the append is durable (not replicated).
func appendDurable(t *testing.T, p *Partition, n int) Appended {
	t.Helper()
	_, a, err := p.AppendAsLeader(records(t, n), true, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	durable := a
	durable.AcksAll = false
	Commit(context.Background(), []Appended{durable}, func(_ int, err error) { t.Fatal(err) })
	return a
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func followerFetch(t *testing.T, p *Partition, id int32, offset int64) {
	t.Helper()
	if d, err := p.Replica().OnFollowerFetch(replication.FollowerFetch{ID: id, CurrentEpoch: 1, FetchOffset: offset, LastFetchedEpoch: -1}, time.Now()); err != nil || d != nil {
		t.Fatalf("follower fetch: %v %v", d, err)
	}
}

func TestWakeAppendBelowHighWatermarkDoesNotWakeConsumer(t *testing.T) {
	p := open(t, "t", []int32{1, 2, 3}, 2)
	consumer, follower := p.Changed(Consumer), p.Changed(Follower)
	a := appendDurable(t, p, 3)
	if closed(consumer) {
		t.Fatal("an append the followers do not hold yet woke a consumer's fetch")
	}
	if !closed(follower) {
		t.Fatal("an append did not wake a follower's fetch")
	}
	if o := p.Offsets(); o.HighWatermark != 0 || o.LogEnd != a.End {
		t.Fatalf("offsets %+v, want high watermark 0 and log end %d", o, a.End)
	}
	res, _, err := p.Read(0, 1<<20, ReadUncommitted, Consumer)
	if err != nil || res.Size != 0 {
		t.Fatalf("consumer read below the high watermark: %d bytes, %v", res.Size, err)
	}
	res.Release()
}

func TestWakeHighWatermarkAdvanceWakesConsumer(t *testing.T) {
	p := open(t, "t", []int32{1, 2, 3}, 2)
	a := appendDurable(t, p, 3)
	consumer := p.Changed(Consumer)
	followerFetch(t, p, 2, a.End)
	if closed(consumer) {
		t.Fatal("one follower of two holding the append woke consumers; the high watermark needs the whole ISR")
	}
	followerFetch(t, p, 3, a.End)
	if !closed(consumer) {
		t.Fatal("a high watermark advance did not wake a consumer's fetch")
	}
	res, o, err := p.Read(0, 1<<20, ReadUncommitted, Consumer)
	if err != nil || res.Size == 0 {
		t.Fatalf("consumer read after the advance: %d bytes, %v", res.Size, err)
	}
	res.Release()
	if o.HighWatermark != a.End || o.LastStable != a.End {
		t.Fatalf("offsets %+v, want high watermark and last stable offset %d", o, a.End)
	}
	// acks=all commits once the ISR holds it.
	Commit(context.Background(), []Appended{a}, func(_ int, err error) { t.Fatalf("commit: %v", err) })
}

func TestWakeFollowerReadIsWokenByAppend(t *testing.T) {
	p := open(t, "t", []int32{1, 2, 3}, 2)
	follower := p.Changed(Follower)
	done := make(chan bool)
	var tries, empty atomic.Int32
	go func() {
		done <- Delay(context.Background(), time.Minute, []*Partition{p}, Follower, func() bool {
			tries.Add(1)
			res, _, err := p.Read(0, 1<<20, ReadUncommitted, Follower)
			defer res.Release()
			if err == nil && res.Size == 0 {
				empty.Add(1)
				return false
			}
			return true
		})
	}()
	waitFor(t, func() bool { return empty.Load() >= 1 }) // parked, having found nothing
	_, _, err := p.AppendAsLeader(records(t, 1), false, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !closed(follower) {
		t.Fatal("an append did not raise the follower signal")
	}
	if !<-done || tries.Load() < 2 {
		t.Fatal("the parked follower fetch was not woken to complete with the appended records")
	}
	if hw := p.Offsets().HighWatermark; hw != 0 {
		t.Fatalf("the follower read the records but the high watermark is %d, want 0", hw)
	}
}

func TestWakeMinBytesAcrossPartitions(t *testing.T) {
	a, b := open(t, "a", []int32{1}, 1), open(t, "b", []int32{1}, 1)
	one := int64(len(records(t, 1)))
	var tries atomic.Int32
	var seen atomic.Int64
	done := make(chan bool, 1)
	go func() {
		done <- Delay(context.Background(), time.Minute, []*Partition{a, b}, Consumer, func() bool {
			tries.Add(1)
			var size int64
			for _, p := range []*Partition{a, b} {
				res, _, err := p.Read(0, 1<<20, ReadUncommitted, Consumer)
				if err != nil {
					return true
				}
				size += res.Size
				res.Release()
			}
			seen.Store(size)
			return size >= 2*one // fetch.min.bytes: one batch from each partition
		})
	}()
	waitFor(t, func() bool { return tries.Load() >= 1 })
	appendDurable(t, a, 1)
	waitFor(t, func() bool { return seen.Load() == one })
	select {
	case <-done:
		t.Fatal("the fetch completed with fewer bytes than fetch.min.bytes")
	default:
	}
	appendDurable(t, b, 1)
	if !<-done {
		t.Fatal("the fetch did not complete once both partitions together reached fetch.min.bytes")
	}
}

func TestDelayExpiresAtMaxWait(t *testing.T) {
	p := open(t, "t", []int32{1}, 1)
	if Delay(context.Background(), time.Millisecond, []*Partition{p}, Consumer, func() bool { return false }) {
		t.Fatal("an unsatisfied fetch reported satisfied")
	}
}

func TestDropWakesParkedFetches(t *testing.T) {
	p := open(t, "t", []int32{1}, 1)
	m := NewManager()
	m.Put(p)
	c, f := p.Changed(Consumer), p.Changed(Follower)
	m.Drop(p)
	if !closed(c) || !closed(f) {
		t.Fatal("dropping a partition did not wake its parked fetches")
	}
	if m.Get("t", 0) != nil {
		t.Fatal("a dropped partition is still found")
	}
}

func TestReadOutOfRange(t *testing.T) {
	p := open(t, "t", []int32{1}, 1)
	appendDurable(t, p, 2)
	if _, _, err := p.Read(3, 100, ReadUncommitted, Consumer); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read past the log end: %v, want ErrOffsetOutOfRange", err)
	}
	res, o, err := p.Read(0, -1, ReadUncommitted, Consumer)
	if err != nil || res.Size != 0 || o.HighWatermark != 2 {
		t.Fatalf("offsets-only read: %d bytes, %+v, %v", res.Size, o, err)
	}
}

func TestCommitFailsWhenLeadershipMoves(t *testing.T) {
	p := open(t, "t", []int32{1, 2, 3}, 2)
	_, a, err := p.AppendAsLeader(records(t, 1), true, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	CommitAsync(context.Background(), a, func(err error) { errc <- err })
	if _, _, err := p.Replica().Apply(replication.State{Leader: 2, LeaderEpoch: 2, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, MinISR: 2}); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, replication.ErrNotLeader) {
		t.Fatalf("commit after losing leadership: %v, want ErrNotLeader", err)
	}
}

// waitFor waits for cond, polling: the conditions here are set by another goroutine.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

package txn

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/internal/storage"
	"github.com/spoolmq/spool/protocol-spec/wire"
	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

// logPartition is a __transaction_state partition on a real log alone (one node); its Log
// call can be held, to observe a load in progress.
type logPartition struct {
	l    *storage.Log
	hold chan struct{} // closed to let Log return; nil never holds
	held chan struct{} // closed when Log was called
}

func (p *logPartition) Append(records []byte) (storage.AppendResult, error) {
	return p.l.Append(records, storage.AppendOptions{AssignOffsets: true})
}
func (p *logPartition) Wait(ctx context.Context, end int64) error { return p.l.WaitDurable(ctx, end) }
func (p *logPartition) EachRecord(fn func(batch.Record)) error {
	if p.hold != nil {
		close(p.held)
		<-p.hold
	}
	return p.l.EachRecord(fn)
}

// markerLog records the markers the coordinator writes; while failing is set it refuses them.
type markerLog struct {
	mu      sync.Mutex
	written []Markers
	failing bool
	changed chan struct{}
}

func newMarkerLog() *markerLog { return &markerLog{changed: make(chan struct{}, 100)} }

func (m *markerLog) WriteMarkers(_ context.Context, mk Markers) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failing {
		return errors.New("leader unavailable")
	}
	m.written = append(m.written, mk)
	m.changed <- struct{}{}
	return nil
}

func openLog(t *testing.T, dir string) *storage.Log {
	t.Helper()
	l, err := storage.Open(dir, storage.DefaultLogConfig(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func newCoordinator(t *testing.T, markers MarkerWriter) *Coordinator {
	t.Helper()
	next := int64(1000)
	var mu sync.Mutex
	c := New(Config{Markers: markers, AbortInterval: time.Hour, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		NewProducerID: func(context.Context) (int64, error) {
			mu.Lock()
			defer mu.Unlock()
			next++
			return next, nil
		}})
	t.Cleanup(c.Close)
	return c
}

// call runs one coordinator call and waits for its answer.
func call[T any](t *testing.T, f func(done func(T))) T {
	t.Helper()
	ch := make(chan T, 1)
	f(func(v T) { ch <- v })
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatal("no answer")
	}
	panic("unreachable")
}

type initAnswer struct {
	pid   int64
	epoch int16
	err   *wire.Error
}

func initPID(t *testing.T, c *Coordinator, id string) initAnswer {
	return call(t, func(done func(initAnswer)) {
		c.InitProducerID(id, 60000, -1, -1, func(p int64, e int16, err *wire.Error) { done(initAnswer{p, e, err}) })
	})
}

func waitState(t *testing.T, c *Coordinator, id string, s State) Described {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		d, e := c.Describe(id)
		if e == nil && d.Found && d.State == s {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never reached %s: %+v %v", id, s, d, e)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCoordinatorLoadsAndServes follows the coordinator's rules end to end on a real log:
// NOT_COORDINATOR before its partition is led here, COORDINATOR_LOAD_IN_PROGRESS while it
// loads; a commit writes its markers and completes; the state survives a reload from the log;
// a transaction left preparing (markers not written) is resumed by the next leader.
func TestCoordinatorLoadsAndServes(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir)
	id := "tx-a"
	p := PartitionFor(id, 1)
	mk := newMarkerLog()
	c := newCoordinator(t, mk)
	if a := initPID(t, c, id); a.err != wire.ErrNotCoordinator {
		t.Fatalf("before its partition is led here: %v, want NOT_COORDINATOR", a.err)
	}
	part := &logPartition{l: l, hold: make(chan struct{}), held: make(chan struct{})}
	elected := make(chan error, 1)
	go func() { elected <- c.OnElection(p, 1, 7, part) }()
	<-part.held
	if e := c.Serving(id); e != wire.ErrCoordinatorLoadInProgress {
		t.Fatalf("while loading: %v, want COORDINATOR_LOAD_IN_PROGRESS", e)
	}
	close(part.hold)
	if err := <-elected; err != nil {
		t.Fatal(err)
	}
	a := initPID(t, c, id)
	if a.err != nil || a.pid != 1001 || a.epoch != 0 {
		t.Fatalf("first init: %+v", a)
	}
	parts := []TopicPartition{{"out", 1}, {"out", 0}}
	if e := call(t, func(done func(*wire.Error)) { c.AddPartitions(id, a.pid, a.epoch, parts, done) }); e != nil {
		t.Fatalf("add partitions: %v", e)
	}
	if e := c.Verify(id, a.pid, a.epoch, TopicPartition{"out", 0}); e != nil {
		t.Fatalf("verify of an added partition: %v", e)
	}
	if e := c.Verify(id, a.pid, a.epoch, TopicPartition{"other", 0}); e != wire.ErrInvalidTxnState {
		t.Fatalf("verify of a partition not added: %v, want INVALID_TXN_STATE", e)
	}
	if e := call(t, func(done func(*wire.Error)) { c.EndTxn(id, a.pid, a.epoch, true, done) }); e != nil {
		t.Fatalf("commit: %v", e)
	}
	waitState(t, c, id, CompleteCommit)
	mk.mu.Lock()
	if len(mk.written) != 1 || !mk.written[0].Commit || mk.written[0].CoordinatorEpoch != 7 || len(mk.written[0].Partitions) != 2 || mk.written[0].ProducerID != a.pid {
		t.Fatalf("markers written: %+v", mk.written)
	}
	mk.mu.Unlock()

	// A second instance bumps the epoch: the first is fenced.
	b := initPID(t, c, id)
	if b.err != nil || b.pid != a.pid || b.epoch != 1 {
		t.Fatalf("second init: %+v", b)
	}
	if e := call(t, func(done func(*wire.Error)) { c.AddPartitions(id, a.pid, a.epoch, parts, done) }); e != wire.ErrProducerFenced {
		t.Fatalf("the fenced instance adds partitions: %v, want PRODUCER_FENCED", e)
	}
	// Leave a commit preparing: its markers cannot be written.
	if e := call(t, func(done func(*wire.Error)) { c.AddPartitions(id, b.pid, b.epoch, parts[:1], done) }); e != nil {
		t.Fatal(e)
	}
	mk.mu.Lock()
	mk.failing = true
	mk.mu.Unlock()
	if e := call(t, func(done func(*wire.Error)) { c.EndTxn(id, b.pid, b.epoch, true, done) }); e != nil {
		t.Fatalf("commit: %v", e)
	}
	if e := call(t, func(done func(*wire.Error)) { c.EndTxn(id, b.pid, b.epoch, true, done) }); e != wire.ErrConcurrentTransactions {
		t.Fatalf("a repeated commit while its markers are pending: %v, want CONCURRENT_TRANSACTIONS", e)
	}
	c.OnResignation(p)
	c.Close()

	// The next leader loads the log and resumes the markers.
	mk2 := newMarkerLog()
	c2 := newCoordinator(t, mk2)
	if err := c2.OnElection(p, 1, 8, &logPartition{l: l}); err != nil {
		t.Fatal(err)
	}
	d := waitState(t, c2, id, CompleteCommit)
	if d.ProducerID != a.pid || d.Epoch != 1 {
		t.Fatalf("reloaded: %+v", d)
	}
	mk2.mu.Lock()
	if len(mk2.written) != 1 || mk2.written[0].CoordinatorEpoch != 8 || mk2.written[0].Epoch != 1 || !mk2.written[0].Commit {
		t.Fatalf("resumed markers: %+v", mk2.written)
	}
	mk2.mu.Unlock()
}

package spool_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/spoolmq/spool/protocol-spec/wire"
	spool "github.com/spoolmq/spool/sdk-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// pollValues polls cl, assigned to topic's one partition from the start, until it has
// consumed the record whose value is last, and returns the values in offset order.
func pollValues(t *testing.T, cl *spool.Client, topic, last string) []string {
	t.Helper()
	ctx := testCtx(t)
	if err := cl.Assign(map[string]map[int32]spool.Offset{topic: {0: spool.OffsetStart()}}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for !slices.Contains(got, last) {
		rs, err := cl.Poll(ctx)
		if err != nil {
			t.Fatalf("poll after %v: %v", got, err)
		}
		for _, r := range rs {
			got = append(got, string(r.Value))
		}
	}
	return got
}

// txnWriter writes to a topic through franz-go, plainly or in transactions.
type txnWriter struct {
	t          *testing.T
	ctx        context.Context
	plain, txn *kgo.Client
}

func newTxnWriter(t *testing.T, addr, topic string) *txnWriter {
	w := &txnWriter{t: t, ctx: testCtx(t)}
	var err error
	if w.plain, err = kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.plain.Close)
	if w.txn, err = kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.TransactionalID("iso-"+topic)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.txn.Close)
	return w
}

func (w *txnWriter) produce(cl *kgo.Client, vals ...string) {
	w.t.Helper()
	for _, v := range vals {
		if err := cl.ProduceSync(w.ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
			w.t.Fatalf("produce %s: %v", v, err)
		}
	}
}

// begin opens a transaction and writes vals in it.
func (w *txnWriter) begin(vals ...string) {
	w.t.Helper()
	if err := w.txn.BeginTransaction(); err != nil {
		w.t.Fatal(err)
	}
	w.produce(w.txn, vals...)
}

// end commits or aborts the open transaction, which writes its control record.
func (w *txnWriter) end(how kgo.TransactionEndTry) {
	w.t.Helper()
	if err := w.txn.EndTransaction(w.ctx, how); err != nil {
		w.t.Fatal(err)
	}
}

// TestIsolationTransactions runs on kfake, which has transactions (our broker has them on a
// single node since issue 29; the broker tests cover them there).
// A read_uncommitted consumer sees every data record, aborted ones too, and never the control
// records that end each transaction. A read_committed consumer asks for the last stable
// offset, so the records of an open transaction, and the plain ones behind them, reach it only
// once the transaction commits. It also drops the records of aborted transactions (the
// Fetch response lists them), and only those: the same producer's next transaction, after
// its abort marker, is delivered.
func TestIsolationTransactions(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	addr := c.ListenAddrs()[0]
	ctx := testCtx(t)

	t.Run("aborted", func(t *testing.T) {
		topic := createTopic(t, newClient(t, addr), 1)
		w := newTxnWriter(t, addr, topic)
		w.produce(w.plain, "plain-1")
		w.begin("committed-1", "committed-2")
		w.end(kgo.TryCommit)
		w.produce(w.plain, "plain-2")
		w.begin("aborted-1", "aborted-2")
		w.end(kgo.TryAbort)
		w.begin("after-abort")
		w.end(kgo.TryCommit)
		w.produce(w.plain, "plain-3")
		want := []string{"plain-1", "committed-1", "committed-2", "plain-2", "aborted-1", "aborted-2", "after-abort", "plain-3"}
		if got := pollValues(t, newClient(t, addr, spool.Isolation(spool.ReadUncommitted)), topic, "plain-3"); !slices.Equal(got, want) {
			t.Errorf("read_uncommitted: %q, want %q", got, want)
		}
		want = []string{"plain-1", "committed-1", "committed-2", "plain-2", "after-abort", "plain-3"}
		if got := pollValues(t, newClient(t, addr, spool.Isolation(spool.ReadCommitted)), topic, "plain-3"); !slices.Equal(got, want) {
			t.Errorf("read_committed: %q, want %q", got, want)
		}
	})

	t.Run("open", func(t *testing.T) {
		topic := createTopic(t, newClient(t, addr), 1)
		w := newTxnWriter(t, addr, topic)
		w.produce(w.plain, "plain-1")
		w.begin("open-1")
		w.produce(w.plain, "plain-2")

		uncommitted := newClient(t, addr, spool.Isolation(spool.ReadUncommitted))
		if got, want := pollValues(t, uncommitted, topic, "plain-2"), []string{"plain-1", "open-1", "plain-2"}; !slices.Equal(got, want) {
			t.Errorf("read_uncommitted with a transaction open: %q, want %q", got, want)
		}
		committed := newClient(t, addr, spool.Isolation(spool.ReadCommitted))
		if got := pollValues(t, committed, topic, "plain-1"); !slices.Equal(got, []string{"plain-1"}) {
			t.Fatalf("read_committed with a transaction open: %q, want only plain-1, the record before it", got)
		}
		w.end(kgo.TryCommit)
		var got []string
		for !slices.Contains(got, "plain-2") {
			rs, err := committed.Poll(ctx)
			if err != nil {
				t.Fatalf("poll after %q: %v", got, err)
			}
			for _, r := range rs {
				got = append(got, string(r.Value))
			}
		}
		if want := []string{"open-1", "plain-2"}; !slices.Equal(got, want) {
			t.Errorf("read_committed after the commit: %q, want %q", got, want)
		}
	})
}

// fetchLevels records the isolation level of every Fetch request.
type fetchLevels struct {
	mu     sync.Mutex
	levels []int8
}

func (f *fetchLevels) request(_, _ int16, req wire.Message) {
	if r, ok := req.(*wire.FetchRequest); ok {
		f.mu.Lock()
		f.levels = append(f.levels, r.IsolationLevel)
		f.mu.Unlock()
	}
}

// TestIsolationOurBroker: with no transaction written, our broker's last stable offset is the
// high watermark: both levels read every record, and every fetch carries the level the
// consumer chose.
func TestIsolationOurBroker(t *testing.T) {
	t.Parallel()
	addr := targets[0].start(t)
	prod := newClient(t, addr)
	topic := createTopic(t, prod, 1)
	vals := []string{"r-0", "r-1", "r-2", "r-3", "r-4"}
	for _, v := range vals {
		if err := prod.ProduceSync(testCtx(t), &spool.Record{Topic: topic, Value: []byte(v)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, level := range []spool.IsolationLevel{spool.ReadUncommitted, spool.ReadCommitted} {
		seen := &fetchLevels{}
		rr := startRewriteRelay(t, addr, rewriteHooks{request: seen.request})
		cl := newClient(t, addr, spool.Dialer(rr.dial), spool.Isolation(level))
		if got := pollValues(t, cl, topic, vals[len(vals)-1]); !slices.Equal(got, vals) {
			t.Errorf("isolation %d: %q, want %q", level, got, vals)
		}
		cl.Close()
		seen.mu.Lock()
		if len(seen.levels) == 0 || slices.ContainsFunc(seen.levels, func(l int8) bool { return l != int8(level) }) {
			t.Errorf("isolation %d: fetch requests asked for levels %v", level, seen.levels)
		}
		seen.mu.Unlock()
	}
}

package spool_test

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/protocol-spec/wire"
	spool "github.com/spoolmq/spool/sdk-go"
)

// The transactional producer against Spool (one node) and Apache Kafka 3.9, the same cases on
// both: transactions committed and aborted, read back at both isolation levels; records not
// yet sent when a transaction aborts; a producer fenced by a newer one with its
// transactional.id; consume-transform-produce with the offsets in the transaction.

func TestTransactionsSpool(t *testing.T) {
	t.Parallel()
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	txnCases(t, addr)
}

func TestTransactionsKafka(t *testing.T) {
	brokertest.SkipShort(t)
	t.Parallel()
	k := brokertest.StartKafka(t, map[string]string{"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "1",
		"transaction.state.log.num.partitions": "1"})
	txnCases(t, k.Addr)
}

func txnCases(t *testing.T, addr string) {
	t.Run("commit and abort at both isolation levels", func(t *testing.T) {
		t.Parallel()
		txnCommitAbort(t, addr)
	})
	t.Run("abort drops unsent records", func(t *testing.T) {
		t.Parallel()
		txnAbortUnsent(t, addr)
	})
	t.Run("failed record makes the transaction abortable", func(t *testing.T) {
		t.Parallel()
		txnAbortable(t, addr)
	})
	t.Run("fenced producer", func(t *testing.T) {
		t.Parallel()
		txnFenced(t, addr)
	})
	t.Run("consume-transform-produce", func(t *testing.T) {
		t.Parallel()
		txnConsumeTransformProduce(t, addr)
	})
	for _, bal := range []string{"range", "cooperative-sticky"} {
		t.Run("session under rebalances/"+bal, func(t *testing.T) {
			t.Parallel()
			txnSessionRebalance(t, addr, bal)
		})
	}
}

// txnProducer is a transactional client of addr that has called InitTransactions. Linger is
// an hour: records leave only when a transaction commits or ProduceSync asks.
func txnProducer(t *testing.T, addr, id string, opts ...spool.Opt) *spool.Client {
	t.Helper()
	cl := newClient(t, addr, append([]spool.Opt{spool.TransactionalID(id), spool.Linger(time.Hour)}, opts...)...)
	if err := cl.InitTransactions(testCtx(t)); err != nil {
		t.Fatalf("InitTransactions: %v", err)
	}
	return cl
}

func produceAsync(t *testing.T, cl *spool.Client, topic string, errs chan<- error, vals ...string) {
	t.Helper()
	for _, v := range vals {
		cl.Produce(testCtx(t), &spool.Record{Topic: topic, Value: []byte(v)}, func(_ *spool.Record, err error) { errs <- err })
	}
}

// readAll reads topic's partitions from the start at level until it has seen the record
// valued last, and returns every value in order per partition (partitions in order).
func readAll(t *testing.T, addr, topic string, level spool.IsolationLevel, want int) []string {
	t.Helper()
	cl := newClient(t, addr, spool.Isolation(level))
	var got []string
	for _, r := range consumeN(t, cl, topic, want) {
		got = append(got, string(r.Value))
	}
	return got
}

func txnCommitAbort(t *testing.T, addr string) {
	ctx := testCtx(t)
	admin := newClient(t, addr)
	topic := createTopic(t, admin, 1)
	p := txnProducer(t, addr, "ca-"+topic)
	rec := func(v string) *spool.Record { return &spool.Record{Topic: topic, Value: []byte(v)} }

	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	must("begin 1", p.BeginTransaction())
	// Committed: buffered with linger, sent by the commit.
	errs := make(chan error, 3)
	produceAsync(t, p, topic, errs, "c1", "c2", "c3")
	must("commit 1", p.CommitTransaction(ctx))
	for range 3 {
		must("record of commit 1", <-errs)
	}
	must("begin 2", p.BeginTransaction())
	// Aborted after the records were written: read_uncommitted sees them, read_committed not.
	must("produce in txn 2", p.ProduceSync(ctx, rec("a1"), rec("a2")))
	must("abort 2", p.AbortTransaction(ctx))
	must("begin 3", p.BeginTransaction())
	must("produce in txn 3", p.ProduceSync(ctx, rec("c4")))
	must("commit 3", p.CommitTransaction(ctx))
	// A record outside a transaction is refused.
	if err := p.ProduceSync(ctx, rec("outside")); err == nil || !strings.Contains(err.Error(), "BeginTransaction") {
		t.Fatalf("record outside a transaction: %v, want a BeginTransaction error", err)
	}
	// c1..c3, a1, a2, c4 and three markers: read_committed must skip the aborted two.
	committed := readAll(t, addr, topic, spool.ReadCommitted, 4)
	if want := []string{"c1", "c2", "c3", "c4"}; !slices.Equal(committed, want) {
		t.Errorf("read_committed: %q, want %q", committed, want)
	}
	all := readAll(t, addr, topic, spool.ReadUncommitted, 6)
	if want := []string{"c1", "c2", "c3", "a1", "a2", "c4"}; !slices.Equal(all, want) {
		t.Errorf("read_uncommitted: %q, want %q", all, want)
	}
}

func txnAbortUnsent(t *testing.T, addr string) {
	ctx := testCtx(t)
	admin := newClient(t, addr)
	topic := createTopic(t, admin, 3)
	p := txnProducer(t, addr, "au-"+topic)
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 10)
	produceAsync(t, p, topic, errs, "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9")
	if err := p.AbortTransaction(ctx); err != nil {
		t.Fatalf("abort: %v", err)
	}
	for i := range 10 {
		if err := <-errs; !errors.Is(err, spool.ErrTransactionAborted) {
			t.Fatalf("record %d of the aborted transaction: %v, want ErrTransactionAborted", i, err)
		}
	}
	// The producer goes on: a transaction over the three partitions commits.
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	var vals []string
	for i := range 9 {
		vals = append(vals, "y"+strconv.Itoa(i))
	}
	produceAsync(t, p, topic, errs, vals...)
	if err := p.CommitTransaction(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	for range vals {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	got := readAll(t, addr, topic, spool.ReadCommitted, len(vals))
	slices.Sort(got)
	if !slices.Equal(got, vals) {
		t.Errorf("read_committed after the abort: %q, want %q", got, vals)
	}
}

// txnAbortable: a record the broker refuses for good (larger than the topic's
// max.message.bytes) dooms its transaction. The commit says it must be aborted, the abort
// bumps the epoch (the partition's sequence has a gap), and the next transaction commits.
func txnAbortable(t *testing.T, addr string) {
	ctx := testCtx(t)
	admin := newClient(t, addr)
	topic := fmt.Sprintf("abortable-%d", time.Now().UnixNano()%1e9)
	if err := admin.Admin().CreateTopic(ctx, topic, 1, 1, map[string]string{"max.message.bytes": "2000"}); err != nil {
		t.Fatal(err)
	}
	p := txnProducer(t, addr, "ab-"+topic)
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	big := &spool.Record{Topic: topic, Value: make([]byte, 5000)}
	err := p.ProduceSync(ctx, &spool.Record{Topic: topic, Value: []byte("before")})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, big); !errors.Is(err, wire.ErrMessageTooLarge) && !errors.Is(err, wire.ErrRecordListTooLarge) {
		t.Fatalf("a record over max.message.bytes: %v, want MESSAGE_TOO_LARGE", err)
	}
	err = p.CommitTransaction(ctx)
	if !spool.TxnRequiresAbort(err) || spool.IsFatal(err) {
		t.Fatalf("commit after a failed record: %v, want an abortable error", err)
	}
	if err := p.BeginTransaction(); err == nil {
		t.Fatal("BeginTransaction before aborting the failed transaction succeeded")
	}
	if err := p.AbortTransaction(ctx); err != nil {
		t.Fatalf("abort: %v", err)
	}
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &spool.Record{Topic: topic, Value: []byte("after")}); err != nil {
		t.Fatalf("a record after the abort: %v", err)
	}
	if err := p.CommitTransaction(ctx); err != nil {
		t.Fatalf("commit after the abort: %v", err)
	}
	if got := readAll(t, addr, topic, spool.ReadCommitted, 1); !slices.Equal(got, []string{"after"}) {
		t.Errorf("read_committed: %q, want only the record of the committed transaction", got)
	}
}

func txnFenced(t *testing.T, addr string) {
	ctx := testCtx(t)
	admin := newClient(t, addr)
	topic := createTopic(t, admin, 1)
	id := "fence-" + topic
	old := txnProducer(t, addr, id)
	rec := func(v string) *spool.Record { return &spool.Record{Topic: topic, Value: []byte(v)} }
	if err := old.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := old.ProduceSync(ctx, rec("zombie")); err != nil {
		t.Fatal(err)
	}
	// The new instance fences the old one and aborts its open transaction.
	young := txnProducer(t, addr, id)
	err := old.CommitTransaction(ctx)
	if !spool.IsFatal(err) || !(errors.Is(err, wire.ErrProducerFenced) || errors.Is(err, wire.ErrInvalidProducerEpoch)) {
		t.Fatalf("commit of the fenced producer: %v, want a fatal PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", err)
	}
	if err := old.BeginTransaction(); !spool.IsFatal(err) {
		t.Fatalf("BeginTransaction after being fenced: %v, want the fatal error again", err)
	}
	if err := old.AbortTransaction(ctx); !spool.IsFatal(err) {
		t.Fatalf("AbortTransaction after being fenced: %v, want the fatal error again", err)
	}
	if err := young.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := young.ProduceSync(ctx, rec("young")); err != nil {
		t.Fatal(err)
	}
	if err := young.CommitTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, addr, topic, spool.ReadCommitted, 1); !slices.Equal(got, []string{"young"}) {
		t.Errorf("read_committed: %q, want only the new producer's record", got)
	}
}

// txnConsumeTransformProduce copies an input topic to an output topic in transactions that
// carry the group's offsets. One transaction is aborted midway and its member closed; a new
// member of the group resumes from the committed offsets. The output then holds every input
// record exactly once, and the group's offsets are at the input's end.
func txnConsumeTransformProduce(t *testing.T, addr string) {
	ctx := testCtx(t)
	admin := newClient(t, addr)
	in, out := createTopic(t, admin, 2), createTopic(t, admin, 2)
	group := "ctp-" + in
	const n = 200
	var recs []*spool.Record
	for i := range n {
		recs = append(recs, &spool.Record{Topic: in, Key: []byte(strconv.Itoa(i)), Value: []byte(strconv.Itoa(i))})
	}
	if err := admin.ProduceSync(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	member := func(id string) *spool.Client {
		return txnProducer(t, addr, id, spool.ConsumerGroup(group), spool.ConsumeTopics(in),
			spool.DisableAutoCommit(), spool.Isolation(spool.ReadCommitted))
	}
	// copyTxn copies rs in one transaction with their offsets, committing or aborting it.
	copyTxn := func(cl *spool.Client, rs []*spool.Record, commit bool) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		offsets := map[string]map[int32]int64{}
		for _, r := range rs {
			cl.Produce(ctx, &spool.Record{Topic: out, Key: r.Key, Value: []byte("out-" + string(r.Value))}, nil)
			if offsets[r.Topic] == nil {
				offsets[r.Topic] = map[int32]int64{}
			}
			offsets[r.Topic][r.Partition] = r.Offset + 1
		}
		gm, err := cl.GroupMetadata()
		if err != nil {
			t.Fatal(err)
		}
		if gm.GroupID != group || gm.GenerationID < 0 || gm.MemberID == "" {
			t.Fatalf("group metadata of a member that polled records: %+v", gm)
		}
		if err := cl.SendOffsetsToTransaction(ctx, offsets, gm); err != nil {
			t.Fatalf("SendOffsetsToTransaction: %v", err)
		}
		if commit {
			if err := cl.CommitTransaction(ctx); err != nil {
				t.Fatalf("commit: %v", err)
			}
		} else if err := cl.AbortTransaction(ctx); err != nil {
			t.Fatalf("abort: %v", err)
		}
	}
	poll := func(cl *spool.Client) []*spool.Record {
		t.Helper()
		for {
			rs, err := cl.Poll(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) > 0 {
				return rs
			}
		}
	}
	// The first member commits the first half of what it polled and aborts the rest, then
	// goes away; the second resumes from the committed offsets.
	first := member("ctp-a-" + in)
	rs := poll(first)
	half := max(len(rs)/2, 1)
	copyTxn(first, rs[:half], true)
	if half < len(rs) {
		copyTxn(first, rs[half:], false)
	}
	done := half
	first.Close()
	second := member("ctp-b-" + in)
	for done < n {
		rs := poll(second)
		copyTxn(second, rs, true)
		done += len(rs)
	}
	if done != n {
		t.Errorf("the second member polled %d records after the first committed %d, want %d in all", done-half, half, n)
	}
	got := readAll(t, addr, out, spool.ReadCommitted, n)
	seen := map[string]int{}
	for _, v := range got {
		seen[v]++
	}
	for i := range n {
		if c := seen[fmt.Sprintf("out-%d", i)]; c != 1 {
			t.Errorf("input record %d is in the output %d times, want once", i, c)
		}
	}
	offs, err := admin.Admin().FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if s := committedSum(offs[in]); s != n {
		t.Errorf("committed offsets of %s add up to %d, want %d: %v", in, s, n, offs[in])
	}
}

func committedSum(m map[int32]spool.OffsetInfo) int64 {
	var s int64
	for _, o := range m {
		s += o.Offset
	}
	return s
}

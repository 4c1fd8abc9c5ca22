package server_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTxnFranzGroupTransactSession: franz-go's consume-transform-produce helper copies a topic
// through transactions that carry the group's offsets (AddOffsetsToTxn, TxnOffsetCommit),
// aborting every third one on purpose. The output holds every input record exactly once under
// read_committed, and the group's committed offsets are the input's ends.
func TestTxnFranzGroupTransactSession(t *testing.T) {
	parallel(t)
	b := startBroker(t, map[string]string{"group.initial.rebalance.delay.ms": "0"})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	for _, topic := range []string{"etl-in", "etl-out"} {
		if _, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	const n = 300
	in, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic("etl-in"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	// Small batches, so that the session's fetches (FetchMaxBytes) take a few at a time.
	for i := 0; i < n; i += 10 {
		var recs []*kgo.Record
		for j := i; j < i+10; j++ {
			recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint(j)), Value: []byte(fmt.Sprintf("in-%03d", j))})
		}
		if err := in.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(b.Addr), kgo.TransactionalID("etl-tx"), kgo.ConsumerGroup("etl-group"),
		kgo.ConsumeTopics("etl-in"), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
		kgo.DefaultProduceTopic("etl-out"), kgo.FetchMaxBytes(400), kgo.FetchMaxPartitionBytes(400), kgo.TransactionTimeout(60*time.Second),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	round, aborted, committedIn := 0, 0, 0
	for committedIn < n {
		fs := sess.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("after %d rounds (%d records committed, %d aborts): %v", round, committedIn, aborted, ctx.Err())
		}
		for _, e := range fs.Errors() {
			t.Fatalf("fetch: %v", e.Err)
		}
		if fs.NumRecords() == 0 {
			continue
		}
		round++
		if err := sess.Begin(); err != nil {
			t.Fatal(err)
		}
		count := 0
		fs.EachRecord(func(r *kgo.Record) {
			count++
			sess.Produce(ctx, &kgo.Record{Key: r.Key, Value: append([]byte("out-"), r.Value...)}, nil)
		})
		commit := round%3 != 0
		committed, err := sess.End(ctx, kgo.TransactionEndTry(commit))
		if err != nil {
			t.Fatalf("round %d: end: %v", round, err)
		}
		switch {
		case committed:
			committedIn += count
		case commit:
			t.Logf("round %d: the session aborted instead of committing (a rebalance)", round)
		default:
			aborted++
		}
	}
	if aborted == 0 {
		t.Fatal("no transaction was aborted: the test proves nothing about aborts")
	}
	out := readTxnTopic(ctx, t, b.Addr, "etl-out", 2, true)
	seen := map[string]int{}
	for _, v := range out {
		seen[v]++
	}
	for i := range n {
		if v := fmt.Sprintf("out-in-%03d", i); seen[v] != 1 {
			t.Errorf("%s is in the output %d times, want exactly once", v, seen[v])
		}
	}
	if len(out) != n {
		t.Errorf("the output holds %d records, want %d", len(out), n)
	}
	ends, err := adm.ListEndOffsets(ctx, "etl-in")
	if err != nil {
		t.Fatal(err)
	}
	offs, err := adm.FetchOffsets(ctx, "etl-group")
	if err != nil {
		t.Fatal(err)
	}
	for p, e := range ends["etl-in"] {
		if o, ok := offs.Lookup("etl-in", p); !ok || o.At != e.Offset {
			t.Errorf("etl-in-%d: committed offset %v, want the end %d", p, o.At, e.Offset)
		}
	}
	t.Logf("%d rounds, %d aborted on purpose; output %d records", round, aborted, len(out))
}

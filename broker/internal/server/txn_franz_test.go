package server_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spoolmq/spool/broker/brokertest"
)

// txnProducer is a franz-go transactional producer of topic.
func txnProducer(t *testing.T, addr, id, topic string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic),
		kgo.TransactionTimeout(60 * time.Second), kgo.RecordPartitioner(kgo.RoundRobinPartitioner())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// txnRound runs one transaction of n records "<prefix>-<i>" and commits or aborts it.
func txnRound(ctx context.Context, t *testing.T, p *kgo.Client, prefix string, n int, commit bool) {
	t.Helper()
	if err := p.BeginTransaction(); err != nil {
		t.Fatalf("%s: begin: %v", prefix, err)
	}
	for i := range n {
		r := &kgo.Record{Value: []byte(fmt.Sprintf("%s-%d", prefix, i))}
		if err := p.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("%s: produce: %v", prefix, err)
		}
	}
	if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("%s: end (commit=%v): %v", prefix, commit, err)
	}
}

// readTxnTopic reads every partition of topic from the start at the isolation level and returns
// the values. With no transaction open it knows where the end is: it first appends a sentinel
// record to each partition with a plain producer, then reads until it has seen them all (a
// partition is read in offset order, so everything before its sentinel was seen).
func readTxnTopic(ctx context.Context, t *testing.T, addr, topic string, partitions int32, committed bool) []string {
	t.Helper()
	nonce := fmt.Sprint(time.Now().UnixNano())
	sp, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	for p := range partitions {
		if err := sp.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte("sentinel-" + nonce)}).FirstErr(); err != nil {
			t.Fatalf("sentinel to %s-%d: %v", topic, p, err)
		}
	}
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(iso),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []string
	seen := map[int32]bool{}
	for int32(len(seen)) < partitions {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s (committed=%v): %v; have %d records, sentinels of %v", topic, committed, ctx.Err(), len(out), seen)
		}
		for _, e := range fs.Errors() {
			t.Fatalf("fetch %s-%d: %v", e.Topic, e.Partition, e.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			switch {
			case v == "sentinel-"+nonce:
				seen[r.Partition] = true
			case strings.HasPrefix(v, "sentinel-"):
			default:
				out = append(out, v)
			}
		})
	}
	return out
}

func countPrefix(vals []string, prefix string) int {
	n := 0
	for _, v := range vals {
		if strings.HasPrefix(v, prefix+"-") {
			n++
		}
	}
	return n
}

// TestTxnFranzCommitAbort: franz-go's transactional producer commits and aborts; a
// read_committed consumer sees exactly the committed records, a read_uncommitted one sees the
// aborted ones too, and an open transaction holds the last stable offset below the high
// watermark until it ends.
func TestTxnFranzCommitAbort(t *testing.T) {
	parallel(t)
	b := startBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "txn-ca"); err != nil {
		t.Fatal(err)
	}
	p := txnProducer(t, b.Addr, "tx-ca", "txn-ca")
	txnRound(ctx, t, p, "c1", 10, true)
	txnRound(ctx, t, p, "a1", 7, false)
	txnRound(ctx, t, p, "c2", 5, true)

	// An open transaction: its records are past the LSO.
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("open-0")}, &kgo.Record{Value: []byte("open-1")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	lso, err := adm.ListCommittedOffsets(ctx, "txn-ca")
	if err != nil {
		t.Fatal(err)
	}
	hw, err := adm.ListEndOffsets(ctx, "txn-ca")
	if err != nil {
		t.Fatal(err)
	}
	held := 0
	for part, o := range hw["txn-ca"] {
		l := lso["txn-ca"][part]
		if l.Offset > o.Offset {
			t.Fatalf("partition %d: LSO %d above the high watermark %d", part, l.Offset, o.Offset)
		}
		if l.Offset < o.Offset {
			held++
		}
	}
	if held == 0 {
		t.Fatalf("an open transaction holds no partition's LSO: LSO %v, HW %v", lso, hw)
	}
	// The admin view of the open transaction (kafka-transactions.sh list/describe/describe-producers).
	listed, err := adm.ListTransactions(ctx, nil, []string{"Ongoing"})
	if err != nil || len(listed) != 1 || listed["tx-ca"].State != "Ongoing" {
		t.Fatalf("ListTransactions(Ongoing) = %+v, %v", listed, err)
	}
	described, err := adm.DescribeTransactions(ctx, "tx-ca")
	if err != nil {
		t.Fatal(err)
	}
	if d := described["tx-ca"]; d.Err != nil || d.State != "Ongoing" || len(d.Topics["txn-ca"]) == 0 || d.StartTimestamp <= 0 {
		t.Fatalf("DescribeTransactions = %+v", d)
	}
	producers, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"txn-ca": {0: {}, 1: {}}})
	if err != nil {
		t.Fatal(err)
	}
	open := 0
	producers.EachProducer(func(p kadm.DescribedProducer) {
		if p.CurrentTxnStartOffset >= 0 {
			open++
		}
	})
	if open != held {
		t.Fatalf("DescribeProducers shows %d open transactions, the LSO is held on %d partitions", open, held)
	}
	if err := p.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	all := readTxnTopic(ctx, t, b.Addr, "txn-ca", 2, false)
	if countPrefix(all, "c1") != 10 || countPrefix(all, "a1") != 7 || countPrefix(all, "open") != 2 || len(all) != 24 {
		t.Fatalf("read_uncommitted saw %d records: %v", len(all), all)
	}
	committed := readTxnTopic(ctx, t, b.Addr, "txn-ca", 2, true)
	if countPrefix(committed, "c1") != 10 || countPrefix(committed, "c2") != 5 || len(committed) != 15 {
		t.Fatalf("read_committed saw %d records: %v", len(committed), committed)
	}
	// With every transaction ended, the LSO is the high watermark again.
	brokertest.WaitFor(t, 10*time.Second, "LSO back at the high watermark", func() bool {
		lso, err1 := adm.ListCommittedOffsets(ctx, "txn-ca")
		hw, err2 := adm.ListEndOffsets(ctx, "txn-ca")
		if err1 != nil || err2 != nil {
			return false
		}
		for part, o := range hw["txn-ca"] {
			if lso["txn-ca"][part].Offset != o.Offset {
				return false
			}
		}
		return true
	})
}

// TestTxnFranzZombieFenced: a second producer with the same transactional.id fences the
// first: the first one's open transaction is aborted, and nothing it writes or commits
// afterwards becomes visible.
func TestTxnFranzZombieFenced(t *testing.T) {
	parallel(t)
	b := startBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	if _, err := kadm.NewClient(admCl).CreateTopic(ctx, 1, 1, nil, "txn-z"); err != nil {
		t.Fatal(err)
	}
	zombie := txnProducer(t, b.Addr, "tx-z", "txn-z")
	if err := zombie.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := zombie.ProduceSync(ctx, &kgo.Record{Value: []byte("zombie-0")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fresh := txnProducer(t, b.Addr, "tx-z", "txn-z")
	txnRound(ctx, t, fresh, "fresh", 3, true)

	// The zombie is fenced: its next write or its commit fails, and nothing of it shows.
	perr := zombie.ProduceSync(ctx, &kgo.Record{Value: []byte("zombie-1")}).FirstErr()
	cerr := zombie.EndTransaction(ctx, kgo.TryCommit)
	if perr == nil && cerr == nil {
		t.Fatal("the fenced producer wrote and committed")
	}
	if cerr != nil && !errors.Is(cerr, kerr.ProducerFenced) && !errors.Is(cerr, kerr.InvalidProducerEpoch) && !errors.Is(cerr, kerr.InvalidTxnState) && perr == nil {
		t.Fatalf("the zombie's commit failed with %v, want a fencing error", cerr)
	}
	t.Logf("zombie: produce %v, commit %v", perr, cerr)
	vals := readTxnTopic(ctx, t, b.Addr, "txn-z", 1, true)
	if countPrefix(vals, "zombie") != 0 || countPrefix(vals, "fresh") != 3 {
		t.Fatalf("read_committed saw %v", vals)
	}
}

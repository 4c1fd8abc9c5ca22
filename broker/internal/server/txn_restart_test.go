package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/protocol-spec/loopport"
)

// TestTxnKillNineRestart: a single node is killed (SIGKILL) with one transaction committed and
// two open. After the restart on the same data, the committed one stays visible; of the open
// ones, one is aborted when a new instance of its producer initializes (InitProducerId fences
// and aborts), the other when its transaction.timeout.ms passes; none of their records ever
// reaches a read_committed consumer, and the last stable offset returns to the high watermark.
func TestTxnKillNineRestart(t *testing.T) {
	heavy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	addr, err := loopport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	props := map[string]string{"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200"}
	opts := brokertest.Options{DataDir: t.TempDir(), Addr: addr, Props: props}
	b := brokertest.StartProcess(t, opts)
	createTopicKadm(t, ctx, b.Addr, "txn-r", 2)

	committed := txnProducer(t, b.Addr, "tx-r1", "txn-r")
	txnRound(ctx, t, committed, "r1", 5, true)
	open := func(id, prefix string, timeout time.Duration) *kgo.Client {
		p := txnProducer(t, b.Addr, id, "txn-r", kgo.TransactionTimeout(timeout))
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte(prefix + "-" + string(rune('0'+i)))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	open("tx-r2", "r2old", time.Minute)
	open("tx-r3", "r3old", 3*time.Second)
	b.Kill(t)

	b = brokertest.StartProcess(t, opts)
	brokertest.WaitReachable(t, b.Addr, 30*time.Second)
	// The new instance of tx-r2 aborts the old one's transaction, then commits its own.
	fresh := txnProducer(t, b.Addr, "tx-r2", "txn-r")
	txnRound(ctx, t, fresh, "r2new", 2, true)

	admCl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	// tx-r3 is aborted by its timeout: the LSO returns to the high watermark.
	brokertest.WaitFor(t, 60*time.Second, "the timed-out transaction aborted (LSO at the high watermark)", func() bool {
		lso, err1 := adm.ListCommittedOffsets(ctx, "txn-r")
		hw, err2 := adm.ListEndOffsets(ctx, "txn-r")
		if err1 != nil || err2 != nil {
			return false
		}
		for p, o := range hw["txn-r"] {
			if lso["txn-r"][p].Offset != o.Offset {
				return false
			}
		}
		return true
	})
	vals := readTxnTopic(ctx, t, b.Addr, "txn-r", 2, true)
	if countPrefix(vals, "r1") != 5 || countPrefix(vals, "r2new") != 2 || countPrefix(vals, "r2old") != 0 || countPrefix(vals, "r3old") != 0 || len(vals) != 7 {
		t.Fatalf("read_committed after the restart saw %v", vals)
	}
	all := readTxnTopic(ctx, t, b.Addr, "txn-r", 2, false)
	if countPrefix(all, "r2old") != 3 || countPrefix(all, "r3old") != 3 || countPrefix(all, "r1") != 5 {
		t.Fatalf("read_uncommitted after the restart saw %v: the open transactions' records were lost", all)
	}
}

package spool_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	spool "github.com/spoolmq/spool/sdk-go"
)

// txnSessionRebalance copies an input topic with two TxnSession members of one group, the
// second joining while the first copies (a rebalance moves partitions from the first to the
// second mid-stream), and then the first leaving (a second rebalance). Every input record
// reaches the output exactly once for read_committed readers, and the group's committed
// offsets end at the input's end. Run by txnCases on Spool and Kafka, with an eager
// (range) and a cooperative (cooperative-sticky) assignor: the cooperative one keeps
// partitions through a rebalance, so an aborted transaction's records must be polled again
// from the committed offsets of the partitions still assigned.
func txnSessionRebalance(t *testing.T, addr, balancer string) {
	ctx := testCtx(t)
	admin := newClient(t, addr)
	in, out := createTopic(t, admin, 4), createTopic(t, admin, 2)
	group := "sess-" + in
	const n = 2000
	value := make([]byte, 512)
	var recs []*spool.Record
	for i := range n {
		v := append([]byte(strconv.Itoa(i)+":"), value...)
		recs = append(recs, &spool.Record{Topic: in, Key: []byte(strconv.Itoa(i)), Value: v})
	}
	// Small batches, so that members poll a few records at a time.
	writer := newClient(t, addr, spool.MaxBatchRecords(10))
	if err := writer.ProduceSync(ctx, recs[:n/2]...); err != nil {
		t.Fatal(err)
	}
	var (
		mu        sync.Mutex
		commits   = map[string]int{} // committed transactions per member
		aborted   int
		wg        sync.WaitGroup
		loopErr   = make(chan error, 2)
		stopCtx   context.Context
		stopAll   context.CancelFunc
		stopFirst context.CancelFunc
	)
	stopCtx, stopAll = context.WithCancel(ctx)
	defer stopAll()
	bAssigned := make(chan struct{})
	var bOnce sync.Once
	run := func(stop context.Context, name string, assigned func()) {
		defer wg.Done()
		s, err := spool.NewTxnSession(spool.SeedBrokers(addr), spool.TransactionalID(name),
			spool.OnAssigned(func(_ context.Context, ps map[string][]int32) {
				if len(ps[in]) > 0 && assigned != nil {
					assigned()
				}
			}),
			spool.ConsumerGroup(group), spool.ConsumeTopics(in), spool.FetchMaxBytes(64<<10, 8<<10),
			spool.SessionTimeout(6*time.Second), spool.RebalanceTimeout(20*time.Second), spool.Balancers(balancer),
			spool.RetryBackoff(20*time.Millisecond, 500*time.Millisecond))
		if err != nil {
			loopErr <- err
			return
		}
		cl := s.Client()
		defer cl.Close()
		if err := cl.InitTransactions(ctx); err != nil {
			loopErr <- err
			return
		}
		for stop.Err() == nil {
			pctx, cancel := context.WithTimeout(stop, 200*time.Millisecond)
			rs, err := cl.Poll(pctx)
			cancel()
			if err != nil && stop.Err() == nil && pctx.Err() == nil {
				loopErr <- fmt.Errorf("%s: poll: %w", name, err)
				return
			}
			if len(rs) == 0 {
				continue
			}
			if err := s.Begin(); err != nil {
				loopErr <- err
				return
			}
			for _, r := range rs {
				cl.Produce(ctx, &spool.Record{Topic: out, Key: r.Key, Value: r.Key}, nil)
			}
			ok, err := s.End(ctx, true)
			if err != nil {
				loopErr <- fmt.Errorf("%s: End: %w", name, err)
				return
			}
			mu.Lock()
			if ok {
				commits[name]++
			} else {
				aborted++
			}
			mu.Unlock()
		}
		if err := cl.LeaveGroup(ctx); err != nil {
			t.Logf("%s: leave: %v", name, err)
		}
	}
	committed := func() int64 {
		offs, err := admin.Admin().FetchOffsets(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		return committedSum(offs[in])
	}
	firstCtx, cancelFirst := context.WithCancel(stopCtx)
	stopFirst = cancelFirst
	wg.Add(1)
	go run(firstCtx, "sess-a-"+in, nil)
	brokertest.WaitFor(t, 30*time.Second, "the first member commits a transaction", func() bool { return committed() > 0 })
	wg.Add(1)
	go run(stopCtx, "sess-b-"+in, func() { bOnce.Do(func() { close(bAssigned) }) })
	// The second half arrives once the second member has partitions: both copy some.
	select {
	case <-bAssigned:
	case err := <-loopErr:
		t.Fatal(err)
	case <-ctx.Done():
		t.Fatal("the second member got no partitions")
	}
	if err := writer.ProduceSync(ctx, recs[n/2:]...); err != nil {
		t.Fatal(err)
	}
	brokertest.WaitForState(t, 30*time.Second, "the second member commits a transaction", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return commits["sess-b-"+in] > 0, fmt.Sprintf("committed %d, commits %v, aborted %d", committed(), commits, aborted)
	})
	mid := committed()
	stopFirst()
	brokertest.WaitFor(t, 45*time.Second, "the input is committed to its end", func() bool {
		select {
		case err := <-loopErr:
			t.Fatal(err)
		default:
		}
		return committed() == n
	})
	stopAll()
	wg.Wait()
	close(loopErr)
	for err := range loopErr {
		t.Fatal(err)
	}
	t.Logf("committed %d of %d when the first member left; commits %v, aborted %d", mid, n, commits, aborted)
	if mid == n {
		t.Logf("the first member copied everything before the second took partitions over")
	}
	reader := newClient(t, addr, spool.Isolation(spool.ReadCommitted))
	seen := map[string]int{}
	for _, r := range consumeN(t, reader, out, n) {
		seen[string(r.Value)]++
	}
	for i := range n {
		if c := seen[strconv.Itoa(i)]; c != 1 {
			t.Errorf("input record %d reached the output %d times, want once", i, c)
		}
	}
}

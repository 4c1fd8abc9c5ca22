package spool_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/protocol-spec/wire"
	spool "github.com/spoolmq/spool/sdk-go"
)

// TestProduceCreatesTopic: a producer asks for a topic it does not know to be created, as the
// Java client and librdkafka do, and a broker with auto.create.topics.enable (Kafka's default)
// creates it. Before, the SDK's metadata requests never asked, so the record failed with
// UNKNOWN_TOPIC_OR_PARTITION where kcat's was written.
func TestProduceCreatesTopic(t *testing.T) {
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	cl := newClient(t, addr)
	ctx := testCtx(t)
	topic := fmt.Sprintf("new-%d", time.Now().UnixNano())
	var wg sync.WaitGroup
	errs := make([]error, 2000)
	for i := range errs {
		wg.Add(1)
		cl.Produce(ctx, &spool.Record{Topic: topic, Value: fmt.Appendf(nil, "v%d", i)}, func(_ *spool.Record, err error) {
			errs[i] = err
			wg.Done()
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	ends, err := cl.Admin().ListOffsets(ctx, topic, spool.OffsetLatest)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range ends {
		n += e
	}
	if n != 2000 {
		t.Fatalf("the created topic holds %d records, want 2000", n)
	}

	// Not asked: the broker does not create it, and the record fails after the delivery
	// timeout.
	off := newClient(t, addr, spool.AllowAutoTopicCreation(false), spool.DeliveryTimeout(500*time.Millisecond))
	err = off.ProduceSync(ctx, spool.StringRecord(topic+"-not", "x"))
	if !errors.Is(err, wire.ErrUnknownTopicOrPartition) {
		t.Fatalf("AllowAutoTopicCreation(false): %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
	if tds, err := cl.Admin().DescribeTopics(ctx, topic+"-not"); err == nil && len(tds) == 1 && tds[0].Err == nil {
		t.Fatalf("AllowAutoTopicCreation(false) created the topic: %+v", tds)
	}
}

// TestProduceUnknownTopicWaitsForDeliveryTimeout: with auto.create.topics.enable=false at the
// broker, a record to a topic that does not exist fails with UNKNOWN_TOPIC_OR_PARTITION once
// DeliveryTimeout (message.timeout.ms) has passed, never before, and Produce does not block
// meanwhile; a topic created while records wait gets them, in order.
func TestProduceUnknownTopicWaitsForDeliveryTimeout(t *testing.T) {
	addr := brokertest.Start(t, brokertest.Options{Props: map[string]string{"auto.create.topics.enable": "false"}}).Addr
	const timeout = 1500 * time.Millisecond
	cl := newClient(t, addr, spool.DeliveryTimeout(timeout))
	ctx := testCtx(t)

	topic := fmt.Sprintf("never-%d", time.Now().UnixNano())
	start := time.Now()
	var failed atomic.Int64
	var failedAt atomic.Int64
	for i := range 100 {
		cl.Produce(ctx, &spool.Record{Topic: topic, Value: fmt.Appendf(nil, "v%d", i)}, func(_ *spool.Record, err error) {
			if !errors.Is(err, wire.ErrUnknownTopicOrPartition) {
				t.Errorf("record %d: %v, want UNKNOWN_TOPIC_OR_PARTITION", i, err)
			}
			failedAt.Store(int64(time.Since(start)))
			failed.Add(1)
		})
	}
	if n := cl.BufferedRecords(); n != 100 {
		t.Fatalf("%d records buffered after Produce, want 100 waiting for the topic", n)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if failed.Load() != 100 {
		t.Fatalf("Flush returned with %d of 100 records reported", failed.Load())
	}
	if at := time.Duration(failedAt.Load()); at < timeout {
		t.Fatalf("records failed after %v, before the delivery timeout %v", at, timeout)
	}

	// Created while its records wait: they are written, in produce order.
	late := fmt.Sprintf("late-%d", time.Now().UnixNano())
	long := newClient(t, addr)
	for i := range 50 {
		long.Produce(ctx, &spool.Record{Topic: late, Partition: 0, Value: fmt.Appendf(nil, "%d", i)}, func(_ *spool.Record, err error) {
			if err != nil {
				t.Errorf("record %d: %v", i, err)
			}
		})
	}
	if err := cl.Admin().CreateTopic(ctx, late, 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := long.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got := consumeN(t, newClient(t, addr), late, 50)
	for i, r := range got[:50] {
		if string(r.Value) != fmt.Sprint(i) {
			t.Fatalf("record at offset %d is %q, want %d", r.Offset, r.Value, i)
		}
	}
}

// TestProduceTopicDeletedWhileProducing: a topic deleted while records are produced to it
// loses none silently: every record gets exactly one outcome, and Flush returns.
func TestProduceTopicDeletedWhileProducing(t *testing.T) {
	addr := brokertest.Start(t, brokertest.Options{Props: map[string]string{"auto.create.topics.enable": "false"}}).Addr
	cl := newClient(t, addr, spool.DeliveryTimeout(2*time.Second))
	ctx := testCtx(t)
	topic := createTopic(t, cl, 2)
	const n = 3000
	var ok, failed atomic.Int64
	outcomes := make([]atomic.Int32, n)
	deleted := make(chan struct{})
	var once sync.Once
	for i := range n {
		if i == n/3 {
			go func() {
				defer close(deleted)
				if err := cl.Admin().DeleteTopics(context.Background(), topic); err != nil {
					t.Error(err)
				}
			}()
		}
		if i == 2*n/3 {
			<-deleted
		}
		cl.Produce(ctx, &spool.Record{Topic: topic, Value: []byte("x")}, func(_ *spool.Record, err error) {
			if outcomes[i].Add(1) != 1 {
				t.Errorf("record %d reported twice", i)
			}
			if err == nil {
				ok.Add(1)
				return
			}
			once.Do(func() { t.Logf("first failure: %v", err) })
			failed.Add(1)
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := ok.Load() + failed.Load(); got != n {
		t.Fatalf("%d outcomes for %d records (%d ok, %d failed)", got, n, ok.Load(), failed.Load())
	}
	if failed.Load() == 0 {
		t.Fatalf("all %d records acknowledged by a topic deleted a third of the way", n)
	}
	t.Logf("%d acknowledged, %d failed", ok.Load(), failed.Load())
}

// TestProduceWaitingRecordRefused: records that waited for their topic and then cannot join a
// batch (a partition the topic does not have) get their error, Flush returns, and a callback
// that produces again to the same topic does not deadlock.
func TestProduceWaitingRecordRefused(t *testing.T) {
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	cl := newClient(t, addr, spool.WithPartitioner(spool.ManualPartitioner()))
	ctx := testCtx(t)
	topic := fmt.Sprintf("refused-%d", time.Now().UnixNano())
	if err := cl.Admin().CreateTopic(ctx, topic, 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	fresh := newClient(t, addr, spool.WithPartitioner(spool.ManualPartitioner())) // knows no topic yet
	again := make(chan error, 1)
	var got error
	fresh.Produce(ctx, &spool.Record{Topic: topic, Partition: 9, Value: []byte("far")}, func(_ *spool.Record, err error) {
		got = err
		fresh.Produce(ctx, &spool.Record{Topic: topic, Partition: 0, Value: []byte("near")}, func(_ *spool.Record, err error) { again <- err })
	})
	if err := fresh.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(got, wire.ErrUnknownTopicOrPartition) {
		t.Fatalf("partition 9 of 1: %v, want UNKNOWN_TOPIC_OR_PARTITION", got)
	}
	if err := fresh.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-again; err != nil {
		t.Fatalf("produced from the callback: %v", err)
	}
}

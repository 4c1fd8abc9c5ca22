package spool_test

import (
	"encoding/binary"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/spoolmq/spool/protocol-spec/wire"
	"github.com/spoolmq/spool/protocol-spec/wire/batch"
	spool "github.com/spoolmq/spool/sdk-go"
)

// holdProxy forwards Kafka connections to a broker and holds the response to the first
// produce request until release is closed; it keeps the produce requests it forwarded.
type holdProxy struct {
	*relay
	held      chan struct{} // closed when the first produce response is being held
	release   chan struct{}
	once      sync.Once
	mu        sync.Mutex
	forwarded [][]byte
}

func startHoldProxy(t *testing.T, target string) *holdProxy {
	px := &holdProxy{held: make(chan struct{}), release: make(chan struct{})}
	px.relay = startRelay(t, target, px.serve)
	t.Cleanup(px.open)
	return px
}

func (px *holdProxy) open() { px.once.Do(func() { close(px.release) }) }

func (px *holdProxy) serve(c, u net.Conn) {
	defer c.Close()
	defer u.Close()
	keys := make(chan int16, 1024) // the keys of forwarded requests, in order
	go func() {
		defer c.Close()
		defer u.Close()
		first := true
		for key := range keys {
			f, err := readFrame(u)
			if err != nil {
				return
			}
			if key == wire.KeyProduce && first {
				first = false
				close(px.held)
				<-px.release
			}
			if _, err := c.Write(f); err != nil {
				return
			}
		}
	}()
	defer close(keys)
	for {
		f, err := readFrame(c)
		if err != nil || len(f) < 12 {
			return
		}
		key := int16(binary.BigEndian.Uint16(f[4:]))
		if key == wire.KeyProduce {
			px.mu.Lock()
			px.forwarded = append(px.forwarded, f[4:])
			px.mu.Unlock()
		}
		if _, err := u.Write(f); err != nil {
			return
		}
		keys <- key
	}
}

// sentBatch is one batch of a produce request as the broker received it.
type sentBatch struct {
	partition int32
	hdr       batch.Header
}

// sentBatches decodes the batches of produce request frames (without size prefix).
func sentBatches(t *testing.T, frames [][]byte) []sentBatch {
	t.Helper()
	var out []sentBatch
	for _, f := range frames {
		_, req, _, err := decodeProduce(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, td := range req.TopicData {
			for _, pd := range td.PartitionData {
				h, err := batch.ParseHeader(pd.Records)
				if err != nil {
					t.Fatalf("batch of partition %d: %v", pd.Index, err)
				}
				out = append(out, sentBatch{pd.Index, h})
			}
		}
	}
	return out
}

// TestProduceEncodesFullBatchesAndWaitsToSealOpenOne has the only produce request a client
// may have in flight (MaxInFlight(1)) wait for its response while 100 more records are
// produced to the partition. Every batch Produce fills is encoded as it is sealed, before any
// request slot frees up, and the open batch keeps taking records until it can be sent
// instead of being sealed small at each wake-up of the sender: the 100 records go out in full
// batches of 7 (1 KiB batches of 100-byte values) plus one of the remaining 2, in order.
func TestProduceEncodesFullBatchesAndWaitsToSealOpenOne(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		topic := createTopic(t, newClient(t, addr), 1)
		px := startHoldProxy(t, addr)
		cl := newClient(t, addr, spool.Dialer(px.dial), spool.Linger(0), spool.MaxInFlight(1), spool.MaxBatchBytes(1024))
		ctx := testCtx(t)
		var failed failures
		value := func(i int) string { return fmt.Sprintf("%-100d", i) }
		cl.Produce(ctx, spool.StringRecord(topic, value(0)), failed.callback)
		select {
		case <-px.held:
		case <-ctx.Done():
			t.Fatal("the first produce request was never answered by the broker")
		}
		const n, perBatch = 100, 7
		for i := 1; i <= n; i++ {
			cl.Produce(ctx, spool.StringRecord(topic, value(i)), failed.callback)
		}
		queued, encoded := spool.QueuedBatches(cl, topic, 0)
		if want := 1 + n/perBatch; queued != want || encoded != want {
			t.Errorf("while the first request waits: %d batches queued, %d of them encoded, want %d and %d", queued, encoded, want, want)
		}
		px.open()
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		failed.none(t)
		px.mu.Lock()
		sent := sentBatches(t, px.forwarded)
		px.mu.Unlock()
		var counts []string
		for _, b := range sent[1:] {
			counts = append(counts, strconv.Itoa(int(b.hdr.RecordsCount)))
		}
		want := strings.TrimSuffix(strings.Repeat("7 ", n/perBatch), " ") + " 2"
		if got := strings.Join(counts, " "); got != want {
			t.Errorf("records per batch after the first: %s, want %s", got, want)
		}
		for i, r := range consumeN(t, newClient(t, addr), topic, n+1) {
			if string(r.Value) != value(i) {
				t.Fatalf("offset %d holds %.5q, want %d (lost, duplicated or reordered)", r.Offset, r.Value, i)
			}
		}
	})
}

// TestIdempotentEarlyEncodedBatchesRenumbered has the first batch of a partition refused as
// out of order while batches behind it, filled and numbered by Produce under the same
// producer id, wait to be sent. The refused batch makes the producer take a new producer id,
// so those batches must go out renumbered under the new id, never under the old one with
// their early numbers; every record lands once, in produce order.
func TestIdempotentEarlyEncodedBatchesRenumbered(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		topic := createTopic(t, newClient(t, addr), 2)
		px := startRejectProxy(t, addr, wire.ErrOutOfOrderSequenceNumber.Code, true)
		cl := newClient(t, addr, spool.Dialer(px.dial), spool.Linger(0), spool.MaxBatchBytes(1024),
			spool.WithPartitioner(spool.ManualPartitioner()))
		ctx := testCtx(t)
		var failed failures
		produce := producerTo(ctx, cl, topic, failed.callback)
		value := func(i int) string { return fmt.Sprintf("%-100d", i) }
		produce(0, value(0))
		px.awaitRejection(t, ctx)
		const n = 50
		for i := 1; i < n; i++ {
			produce(0, value(i))
		}
		if _, encoded := spool.QueuedBatches(cl, topic, 0); encoded < 2 {
			t.Fatalf("%d batches of partition 0 encoded before the refusal, want the refused one and some numbered early", encoded)
		}
		// A first batch of another partition may go out at once, and lets the proxy answer.
		produce(1, "other")
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		failed.none(t)
		px.mu.Lock()
		sent := sentBatches(t, px.forwarded)
		px.mu.Unlock()
		var pid int64 = -1
		next := int32(0)
		for _, b := range sent {
			if b.partition != 0 {
				continue
			}
			if pid == -1 {
				pid = b.hdr.ProducerID
			}
			if b.hdr.ProducerID != pid || b.hdr.BaseSequence != next {
				t.Fatalf("after the refusal partition 0 got a batch of producer %d at sequence %d, want producer %d at %d", b.hdr.ProducerID, b.hdr.BaseSequence, pid, next)
			}
			next += b.hdr.RecordsCount
		}
		if next != n {
			t.Fatalf("the broker got %d records of partition 0, want %d", next, n)
		}
		want := 0
		for _, r := range consumeN(t, newClient(t, addr), topic, n+1) {
			if r.Partition != 0 {
				continue
			}
			if string(r.Value) != value(want) {
				t.Fatalf("partition 0 offset %d holds %.5q, want %d (lost, duplicated or reordered)", r.Offset, r.Value, want)
			}
			want++
		}
		if want != n {
			t.Fatalf("partition 0 holds %d records, want %d", want, n)
		}
	})
}

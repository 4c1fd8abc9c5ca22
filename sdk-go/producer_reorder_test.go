package spool_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/spoolmq/spool/protocol-spec/wire"
	spool "github.com/spoolmq/spool/sdk-go"
)

// rejectProxy forwards Kafka connections to a broker, except the first produce request: it
// answers that one itself with an error for every partition in it, so nothing of it is
// written. With hold, the answer waits until the client sends its next produce request
// (forwarded at once), so that whatever the client pipelines behind the rejected batch
// reaches the broker first.
type rejectProxy struct {
	*relay
	code      int16
	claimed   atomic.Bool
	rejected  chan struct{} // closed when the first produce request arrived
	release   chan struct{} // closed when the next produce request was forwarded
	once      sync.Once
	err       error // set before rejected is closed when the request could not be decoded
	mu        sync.Mutex
	forwarded [][]byte // the produce requests passed on to the broker, without size prefix
}

func startRejectProxy(t *testing.T, target string, code int16, hold bool) *rejectProxy {
	px := &rejectProxy{code: code, rejected: make(chan struct{}), release: make(chan struct{})}
	if !hold {
		close(px.release)
	}
	px.relay = startRelay(t, target, px.serve)
	return px
}

// heldReply is one response owed to the client, in request order: the broker's next response,
// or an answer of the proxy's own (held) sent once release is closed.
type heldReply struct{ held []byte }

func (px *rejectProxy) serve(c, u net.Conn) {
	defer c.Close()
	defer u.Close()
	replies := make(chan heldReply, 1024)
	go func() {
		defer c.Close()
		defer u.Close()
		for r := range replies {
			if r.held != nil {
				<-px.release
				if _, err := c.Write(r.held); err != nil {
					return
				}
				continue
			}
			f, err := readFrame(u)
			if err != nil {
				return
			}
			if _, err := c.Write(f); err != nil {
				return
			}
		}
	}()
	defer close(replies)
	for {
		f, err := readFrame(c)
		if err != nil {
			return
		}
		if len(f) < 12 {
			return
		}
		key := int16(binary.BigEndian.Uint16(f[4:]))
		if key == wire.KeyProduce && px.claimed.CompareAndSwap(false, true) {
			answer, err := rejectProduce(f[4:], px.code)
			px.err = err
			close(px.rejected)
			if err != nil {
				return
			}
			replies <- heldReply{answer}
			continue
		}
		if _, err := u.Write(f); err != nil {
			return
		}
		if key == wire.KeyProduce {
			px.mu.Lock()
			px.forwarded = append(px.forwarded, f[4:])
			px.mu.Unlock()
			px.once.Do(func() {
				select {
				case <-px.release:
				default:
					close(px.release)
				}
			})
		}
		replies <- heldReply{}
	}
}

// readFrame reads one size-prefixed Kafka frame, prefix included.
func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	f := make([]byte, 4+binary.BigEndian.Uint32(size[:]))
	copy(f, size[:])
	_, err := io.ReadFull(r, f[4:])
	return f, err
}

// decodeProduce decodes a produce request frame without its size prefix.
func decodeProduce(frame []byte) (wire.RequestHeader, *wire.ProduceRequest, int16, error) {
	v := int16(binary.BigEndian.Uint16(frame[2:]))
	r := wire.NewReader(frame)
	var h wire.RequestHeader
	h.ReadFrom(r, wire.LookupAPI(wire.KeyProduce).RequestHeaderVersion(v))
	req := &wire.ProduceRequest{}
	req.ReadFrom(r, v)
	if err := r.Err(); err != nil {
		return h, nil, v, fmt.Errorf("decoding produce v%d: %w", v, err)
	}
	return h, req, v, nil
}

// rejectProduce builds the framed response to a produce request that refuses every
// partition with the error code.
func rejectProduce(frame []byte, code int16) ([]byte, error) {
	h, req, v, err := decodeProduce(frame)
	if err != nil {
		return nil, err
	}
	api := wire.LookupAPI(wire.KeyProduce)
	var resp wire.ProduceResponse
	for _, td := range req.TopicData {
		tr := wire.ProduceResponseTopicProduceResponse{Name: td.Name}
		for _, pd := range td.PartitionData {
			tr.PartitionResponses = append(tr.PartitionResponses, wire.ProduceResponsePartitionProduceResponse{
				Index: pd.Index, ErrorCode: code, BaseOffset: -1, LogAppendTimeMs: -1, LogStartOffset: -1,
			})
		}
		resp.Responses = append(resp.Responses, tr)
	}
	rh := wire.ResponseHeader{CorrelationId: h.CorrelationId}
	out := rh.AppendTo(make([]byte, 4), api.ResponseHeaderVersion(v))
	out = resp.AppendTo(out, v)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	return out, nil
}

// TestIdempotentFirstBatchRejectedBeforeNextLands has the first batch of a partition refused
// retriably (not written) while the producer has more records for that partition. Brokers
// accept any first sequence from a producer they do not know yet (Kafka since KIP-360, and
// ours), so a second batch pipelined behind the refused one would be written first and the
// refused one could then never be written (OUT_OF_ORDER_SEQUENCE_NUMBER, records lost: what
// Kafka 3.9.2 did to a 1,000-partition topic still being created). Every record must be
// acknowledged and be in the log once, in produce order.
func TestIdempotentFirstBatchRejectedBeforeNextLands(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		topic := createTopic(t, newClient(t, addr), 2)
		px := startRejectProxy(t, addr, wire.ErrNotLeaderOrFollower.Code, true)
		cl := newClient(t, addr, spool.Dialer(px.dial), spool.Linger(0), spool.WithPartitioner(spool.ManualPartitioner()))
		ctx := testCtx(t)
		var failed failures
		produce := producerTo(ctx, cl, topic, failed.callback)
		produce(0, "0")
		px.awaitRejection(t, ctx)
		const n = 10
		for i := 1; i < n; i++ {
			produce(0, strconv.Itoa(i))
		}
		// A first batch of another partition may go out at once, and lets the proxy answer.
		produce(1, "other")
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		failed.none(t)
		want := 0
		for _, r := range consumeN(t, newClient(t, addr), topic, n+1) {
			if r.Partition != 0 {
				continue
			}
			if string(r.Value) != strconv.Itoa(want) {
				t.Fatalf("partition 0 offset %d holds %q, want %d (lost, duplicated or reordered)", r.Offset, r.Value, want)
			}
			want++
		}
		if want != n {
			t.Fatalf("partition 0 holds %d records, want %d", want, n)
		}
	})
}

// TestIdempotentRefusedOldestBatchRenumbered has the broker refuse a partition's oldest
// unsettled batch as out of order, with nothing before it to wait for (as Kafka does when it
// lost the producer's state). The batch was not written, so the producer sends it again under
// a new producer id instead of failing it: every record is acknowledged and in the log once,
// in produce order.
func TestIdempotentRefusedOldestBatchRenumbered(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		topic := createTopic(t, newClient(t, addr), 1)
		px := startRejectProxy(t, addr, wire.ErrOutOfOrderSequenceNumber.Code, false)
		cl := newClient(t, addr, spool.Dialer(px.dial), spool.Linger(0))
		ctx := testCtx(t)
		const n = 10
		var failed failures
		for i := range n {
			cl.Produce(ctx, spool.StringRecord(topic, strconv.Itoa(i)), failed.callback)
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case <-px.rejected:
		default:
			t.Fatal("no produce request was refused")
		}
		if px.err != nil {
			t.Fatal(px.err)
		}
		failed.none(t)
		for i, r := range consumeN(t, newClient(t, addr), topic, n) {
			if string(r.Value) != strconv.Itoa(i) {
				t.Fatalf("offset %d holds %q, want %d (lost, duplicated or reordered)", r.Offset, r.Value, i)
			}
		}
	})
}

// awaitRejection waits until the first produce request reached the proxy and was refused.
func (px *rejectProxy) awaitRejection(t *testing.T, ctx context.Context) {
	t.Helper()
	select {
	case <-px.rejected:
	case <-ctx.Done():
		t.Fatal("the first produce request never reached the proxy")
	}
	if px.err != nil {
		t.Fatal(px.err)
	}
}

// failures collects the records a test produced that failed, for it to require none.
type failures struct {
	mu   sync.Mutex
	errs []error
}

// callback is a produce callback that keeps a failure.
func (f *failures) callback(r *spool.Record, err error) {
	if err != nil {
		f.mu.Lock()
		f.errs = append(f.errs, fmt.Errorf("record %.5s: %w", r.Value, err))
		f.mu.Unlock()
	}
}

// none fails the test if a record failed.
func (f *failures) none(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.errs) > 0 {
		t.Fatalf("%d records failed, first: %v", len(f.errs), f.errs[0])
	}
}

// producerTo returns a func that produces a value to a partition of topic with cb.
func producerTo(ctx context.Context, cl *spool.Client, topic string, cb func(*spool.Record, error)) func(partition int32, v string) {
	return func(partition int32, v string) {
		r := spool.StringRecord(topic, v)
		r.Partition = partition
		cl.Produce(ctx, r, cb)
	}
}

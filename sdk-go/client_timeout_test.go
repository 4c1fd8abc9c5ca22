package spool_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
	spool "github.com/spoolmq/spool/sdk-go"
)

// stallProxy forwards Kafka connections to a broker; while stalled it swallows every
// response, as a broker that hangs would. It reports each connection the client closes.
type stallProxy struct {
	*relay
	stalled atomic.Bool
	// stallOn, when not -1, is an API key whose next request stalls the proxy as it passes
	// to the broker: its answer, and every one after it, is swallowed.
	stallOn   atomic.Int32
	swallowed atomic.Int64
	accepted  atomic.Int64
	closed    chan struct{} // a value per connection closed by the client, while there is room
}

func startStallProxy(t *testing.T, target string) *stallProxy {
	px := &stallProxy{closed: make(chan struct{}, 100)}
	px.stallOn.Store(-1)
	px.relay = startRelay(t, target, px.serve)
	return px
}

func (px *stallProxy) serve(c, u net.Conn) {
	px.accepted.Add(1)
	go func() {
		defer c.Close()
		for {
			f, err := readFrame(u)
			if err != nil {
				return
			}
			if px.stalled.Load() {
				px.swallowed.Add(1)
				continue
			}
			if _, err := c.Write(f); err != nil {
				return
			}
		}
	}()
	for {
		f, err := readFrame(c)
		if err != nil {
			// The client hung up (or the test cleaned up): either way the broker side goes.
			u.Close()
			if !errors.Is(err, net.ErrClosed) {
				select {
				case px.closed <- struct{}{}:
				default: // one waiting is enough
				}
			}
			return
		}
		if key := px.stallOn.Load(); key >= 0 && len(f) >= 6 && int32(binary.BigEndian.Uint16(f[4:])) == key {
			px.stallOn.Store(-1)
			px.stalled.Store(true)
		}
		if _, err := u.Write(f); err != nil {
			return
		}
	}
}

// stall makes the proxy swallow every response from now on (stallAt: from the next request
// of API key on). Either first forgets the connections the client closed before: a request
// that outlived RequestTimeout on a loaded machine (an admin call retries it) must not pass
// for the stall's close in waitClientClose.
func (px *stallProxy) stall() {
	px.forgetCloses()
	px.stalled.Store(true)
}

func (px *stallProxy) stallAt(key int16) {
	px.forgetCloses()
	px.stallOn.Store(int32(key))
}

func (px *stallProxy) forgetCloses() {
	for {
		select {
		case <-px.closed:
		default:
			return
		}
	}
}

// waitClientClose waits until the client closed one of the proxied connections.
func (px *stallProxy) waitClientClose(t *testing.T, ctx context.Context) {
	t.Helper()
	select {
	case <-px.closed:
	case <-ctx.Done():
		t.Fatalf("the client never closed its stalled connection (%d responses swallowed)", px.swallowed.Load())
	}
}

// errTestBound ends a test's context: a call that returns with it was not bounded by
// RequestTimeout.
var errTestBound = errors.New("test context ended")

func boundCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeoutCause(context.Background(), 60*time.Second, errTestBound)
	t.Cleanup(cancel)
	return ctx
}

// TestRequestTimeoutClosesStalledConn checks, on every path that is not the producer's (raw
// Request and RequestNode, admin calls, consumer fetches), that a broker which stops
// answering costs at most RequestTimeout per round trip even when the caller's context has no
// earlier deadline, that the stalled connection is closed rather than reused, and that the
// client works again through a new connection once the broker answers.
func TestRequestTimeoutClosesStalledConn(t *testing.T) {
	t.Parallel()
	meta := func() (*wire.MetadataRequest, *wire.MetadataResponse) {
		req := &wire.MetadataRequest{}
		req.Default()
		req.Topics = []wire.MetadataRequestTopic{}
		return req, &wire.MetadataResponse{}
	}
	cases := []struct {
		name string
		// run stalls the broker, checks the call it makes is bounded and its connection
		// closed, then ends the stall and checks the client recovers.
		run func(t *testing.T, ctx context.Context, cl *spool.Client, px *stallProxy, addr string)
	}{
		{"Request", func(t *testing.T, ctx context.Context, cl *spool.Client, px *stallProxy, _ string) {
			px.stall()
			req, resp := meta()
			if err := cl.Request(ctx, req, resp); !errors.Is(err, context.DeadlineExceeded) || context.Cause(ctx) != nil {
				t.Fatalf("stalled Request: %v (test context: %v), want its own deadline", err, context.Cause(ctx))
			}
			px.waitClientClose(t, ctx)
			px.stalled.Store(false)
			if err := cl.Request(ctx, req, resp); err != nil {
				t.Fatalf("Request after the stall: %v", err)
			}
		}},
		{"RequestNode", func(t *testing.T, ctx context.Context, cl *spool.Client, px *stallProxy, _ string) {
			// ListTopics reads metadata, which tells the client where the brokers are.
			if _, err := cl.Admin().ListTopics(ctx); err != nil {
				t.Fatal(err)
			}
			ci, err := cl.Admin().Cluster(ctx)
			if err != nil {
				t.Fatal(err)
			}
			id := ci.Brokers[0].NodeID
			px.stall()
			req, resp := meta()
			if err := cl.RequestNode(ctx, id, req, resp); !errors.Is(err, context.DeadlineExceeded) || context.Cause(ctx) != nil {
				t.Fatalf("stalled RequestNode: %v (test context: %v), want its own deadline", err, context.Cause(ctx))
			}
			px.waitClientClose(t, ctx)
			px.stalled.Store(false)
			if err := cl.RequestNode(ctx, id, req, resp); err != nil {
				t.Fatalf("RequestNode after the stall: %v", err)
			}
		}},
		{"admin", func(t *testing.T, ctx context.Context, cl *spool.Client, px *stallProxy, _ string) {
			topic := createTopic(t, cl, 2)
			px.stall()
			done := make(chan error, 1)
			// Admin calls retry a timed-out attempt until their context ends: this one
			// outlives the stall and must succeed on a new connection.
			go func() {
				_, err := cl.Admin().DescribeTopicConfigs(ctx, topic, "retention.ms")
				done <- err
			}()
			px.waitClientClose(t, ctx)
			px.stalled.Store(false)
			if err := <-done; err != nil {
				t.Fatalf("DescribeTopicConfigs across the stall: %v", err)
			}
		}},
		{"create and delete", func(t *testing.T, ctx context.Context, cl *spool.Client, px *stallProxy, _ string) {
			// The controller gets each request but its answer is lost: the retry finds the
			// topic created (deleted) by the first attempt, which is what was asked.
			topic := "lost-answer-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			for _, step := range []struct {
				key  int16
				call func() error
			}{
				{wire.KeyCreateTopics, func() error { return cl.Admin().CreateTopic(ctx, topic, 2, 1, nil) }},
				{wire.KeyDeleteTopics, func() error { return cl.Admin().DeleteTopics(ctx, topic) }},
			} {
				call := step.call
				px.stallAt(step.key)
				done := make(chan error, 1)
				go func() { done <- call() }()
				px.waitClientClose(t, ctx)
				px.stalled.Store(false)
				if err := <-done; err != nil {
					t.Fatalf("across a lost answer: %v", err)
				}
			}
			if _, err := cl.Admin().DescribeTopicConfigs(ctx, topic, "retention.ms"); !errors.Is(err, wire.ErrUnknownTopicOrPartition) {
				t.Fatalf("the topic is still there after DeleteTopics: %v", err)
			}
		}},
		{"fetch", func(t *testing.T, ctx context.Context, cl *spool.Client, px *stallProxy, addr string) {
			prod := newClient(t, addr)
			topic := createTopic(t, prod, 1)
			if err := prod.ProduceSync(ctx, spool.StringRecord(topic, "before")); err != nil {
				t.Fatal(err)
			}
			if got := consumeN(t, cl, topic, 1); string(got[0].Value) != "before" {
				t.Fatalf("got %q", got[0].Value)
			}
			px.stall()
			px.waitClientClose(t, ctx)
			px.stalled.Store(false)
			if err := prod.ProduceSync(ctx, spool.StringRecord(topic, "after")); err != nil {
				t.Fatal(err)
			}
			rs, err := cl.Poll(ctx)
			if err != nil || len(rs) != 1 || string(rs[0].Value) != "after" {
				t.Fatalf("poll after the stall: %v %v", rs, err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			eachTarget(t, func(t *testing.T, addr string) {
				px := startStallProxy(t, addr)
				// RequestTimeout short enough that each stall costs little, long enough that a
				// request before the stall meets it on a loaded machine (300 ms did not).
				cl := newClient(t, addr, spool.Dialer(px.dial), spool.RequestTimeout(time.Second),
					spool.FetchMaxWait(100*time.Millisecond))
				ctx := boundCtx(t)
				req, resp := meta()
				if err := cl.Request(ctx, req, resp); err != nil {
					t.Fatal(err)
				}
				tc.run(t, ctx, cl, px, addr)
				if px.swallowed.Load() == 0 || px.accepted.Load() < 2 {
					t.Fatalf("%d responses swallowed, %d connections: the stall was not exercised", px.swallowed.Load(), px.accepted.Load())
				}
			})
		})
	}
}

// TestBrokerWaitExtendsRequestTimeout checks that a Fetch whose MaxWaitMs is longer than
// RequestTimeout is not cut short: the broker may hold it that long by design.
func TestBrokerWaitExtendsRequestTimeout(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		cl := newClient(t, addr, spool.RequestTimeout(100*time.Millisecond))
		topic := createTopic(t, cl, 1) // also tells the client where the brokers are
		ci, err := cl.Admin().Cluster(boundCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		req := &wire.FetchRequest{}
		req.Default()
		req.ReplicaId = -1
		req.MaxWaitMs = 400 // nothing arrives: the broker answers after 400ms, empty
		req.MinBytes, req.MaxBytes = 1, 1<<20
		req.SessionEpoch = -1
		req.Topics = []wire.FetchRequestTopic{{Topic: topic, Partitions: []wire.FetchRequestPartition{{
			CurrentLeaderEpoch: -1, LastFetchedEpoch: -1, LogStartOffset: -1, PartitionMaxBytes: 1 << 20}}}}
		resp := &wire.FetchResponse{}
		if err := cl.RequestNode(boundCtx(t), ci.Brokers[0].NodeID, req, resp); err != nil {
			t.Fatalf("long-poll fetch: %v", err)
		}
		if len(resp.Responses) != 1 || resp.Responses[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("fetch response %+v", resp)
		}
	})
}

// TestProduceSyncEndsWithItsContext: ProduceSync against a broker that stops answering
// returns its context's error when that context ends, instead of waiting out the delivery
// timeout (2 minutes by default) with the records' callbacks.
func TestProduceSyncEndsWithItsContext(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		px := startStallProxy(t, addr)
		// RequestTimeout far above the call's 300 ms, yet short: Close (at cleanup) waits up
		// to it for the stalled record, 30 s by default.
		cl := newClient(t, addr, spool.Dialer(px.dial), spool.Linger(0), spool.RequestTimeout(3*time.Second))
		topic := createTopic(t, newClient(t, addr), 1)
		bound := boundCtx(t)
		if err := cl.ProduceSync(bound, spool.StringRecord(topic, "before")); err != nil {
			t.Fatal(err)
		}
		px.stalled.Store(true)
		ctx, cancel := context.WithTimeout(bound, 300*time.Millisecond)
		defer cancel()
		endsByDeadline(t, bound, "ProduceSync", func() error { return cl.ProduceSync(ctx, spool.StringRecord(topic, "stalled")) })
		px.stalled.Store(false)
	})
}

// TestAPITimeoutBoundsRetries: an admin call whose context has no deadline gives up after
// APITimeout against a broker that stopped answering, instead of retrying it for ever (each
// attempt ends after RequestTimeout and counts as retriable).
func TestAPITimeoutBoundsRetries(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		px := startStallProxy(t, addr)
		cl := newClient(t, addr, spool.Dialer(px.dial), spool.RequestTimeout(100*time.Millisecond), spool.APITimeout(600*time.Millisecond))
		bound := boundCtx(t)
		if _, err := cl.Admin().ListTopics(bound); err != nil {
			t.Fatal(err)
		}
		px.stalled.Store(true)
		endsByDeadline(t, bound, "ListTopics without a deadline", func() error {
			_, err := cl.Admin().ListTopics(context.Background())
			return err
		})
		if px.swallowed.Load() < 2 {
			t.Fatalf("%d requests swallowed: the call did not retry within APITimeout", px.swallowed.Load())
		}
		px.stalled.Store(false)
	})
}

// endsByDeadline runs call, which must fail with a deadline error before the test's bound
// ends: against a stalled broker, only a deadline of the call's own can end it.
func endsByDeadline(t *testing.T, bound context.Context, what string, call func() error) {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- call() }()
	select {
	case err := <-errc:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s against a stalled broker: %v, want a deadline error", what, err)
		}
	case <-bound.Done():
		t.Fatalf("%s did not end by a deadline of its own against a stalled broker", what)
	}
}

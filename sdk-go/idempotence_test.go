package spool_test

import (
	"context"
	"errors"
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

// relay accepts connections on a loopback port, dials target for each and hands both ends to
// serve. It keeps them so they can be cut at once, and closes everything at cleanup.
type relay struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func startRelay(t *testing.T, target string, serve func(c, u net.Conn)) *relay {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{ln: ln}
	t.Cleanup(func() { ln.Close(); r.closeAll() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			r.mu.Lock()
			r.conns = append(r.conns, c, u)
			r.mu.Unlock()
			go serve(c, u)
		}
	}()
	return r
}

// dial is a spool.Dialer that connects through the relay whatever address it is given.
func (r *relay) dial(ctx context.Context, network, _ string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, r.ln.Addr().String())
}

// closeAll closes every relayed connection in both directions, mid-request or not.
func (r *relay) closeAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		c.Close()
	}
	r.conns = nil
}

// proxy forwards TCP connections to a target and can cut all of them at once.
type proxy struct {
	*relay
	drops atomic.Int64
}

func startProxy(t *testing.T, target string) *proxy {
	return &proxy{relay: startRelay(t, target, func(c, u net.Conn) {
		go func() { io.Copy(u, c); u.Close(); c.Close() }()
		io.Copy(c, u)
		u.Close()
		c.Close()
	})}
}

// drop closes every proxied connection in both directions, mid-request or not.
func (p *proxy) drop() {
	p.closeAll()
	p.drops.Add(1)
}

// dropCase is one workload for the connection-drop test.
type dropCase struct {
	name       string
	partitions int32
	keys       int
	opts       []spool.Opt
	// minPeak is the fewest batches of one partition that must have been in flight at once.
	minPeak int
}

// TestIdempotentProduceSurvivesConnectionDrops cuts the producer's connections repeatedly
// while it produces; every record must then be in the log exactly once, in produce order per
// partition (MaxInFlight is the default 5, so several batches are in flight when cut).
func TestIdempotentProduceSurvivesConnectionDrops(t *testing.T) {
	t.Parallel()
	cases := []dropCase{
		{name: "3-partitions", partitions: 3, keys: 12, opts: []spool.Opt{spool.MaxBatchBytes(4096)}, minPeak: 1},
		// Many partitions and tiny batches: many batches per partition are in flight.
		{name: "24-partitions-tiny-batches", partitions: 24, keys: 96, opts: []spool.Opt{spool.MaxBatchBytes(1024)}, minPeak: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			eachTarget(t, func(t *testing.T, addr string) { testDrops(t, addr, tc) })
		})
	}
}

func testDrops(t *testing.T, addr string, tc dropCase) {
	px := startProxy(t, addr)
	via := px.dial
	admin := newClient(t, addr)
	topic := createTopic(t, admin, tc.partitions)
	opts := append([]spool.Opt{spool.Dialer(via), spool.Linger(0), spool.MaxBufferedRecords(500)}, tc.opts...)
	cl := newClient(t, addr, opts...)
	ctx := testCtx(t)
	const n = 20000
	var acked atomic.Int64
	dropAt := make(chan struct{}, 100)
	stop := make(chan struct{})
	dropper := make(chan struct{})
	go func() {
		defer close(dropper)
		for {
			select {
			case <-dropAt:
				px.drop()
			case <-stop:
				return
			}
		}
	}()
	var firstErr atomic.Value
	for i := range n {
		r := spool.KeyStringRecord(topic, strconv.Itoa(i%tc.keys), strconv.Itoa(i))
		cl.Produce(ctx, r, func(r *spool.Record, err error) {
			if err != nil {
				firstErr.CompareAndSwap(nil, err)
			}
			if a := acked.Add(1); a%1000 == 0 {
				dropAt <- struct{}{}
			}
		})
	}
	err := cl.Flush(ctx)
	close(stop)
	<-dropper
	if err != nil {
		t.Fatal(err)
	}
	if e := firstErr.Load(); e != nil {
		t.Fatalf("produce error: %v", e)
	}
	if px.drops.Load() < 3 {
		t.Fatalf("only %d connection drops happened", px.drops.Load())
	}
	if peak := spool.PeakPartitionInFlight(cl); peak < tc.minPeak || peak > 5 {
		t.Fatalf("at most %d batches of one partition were in flight, want %d..5", peak, tc.minPeak)
	}
	got := consumeN(t, newClient(t, addr), topic, n)
	seen := make(map[int]bool, n)
	last := map[string]int{}
	for _, r := range got {
		v, _ := strconv.Atoi(string(r.Value))
		if seen[v] {
			t.Fatalf("duplicate record %d at %s[%d]@%d", v, r.Topic, r.Partition, r.Offset)
		}
		seen[v] = true
		k := string(r.Key)
		if prev, ok := last[k]; ok && v <= prev {
			t.Fatalf("key %s: %d after %d (reordered)", k, v, prev)
		}
		last[k] = v
	}
	if len(seen) != n {
		t.Fatalf("%d distinct records, want %d", len(seen), n)
	}
	t.Logf("%d records, %d connection drops, peak %d batches of a partition in flight", n, px.drops.Load(), spool.PeakPartitionInFlight(cl))
}

// TestIdempotentBatchRejectedMidPipeline has the broker reject one batch for good
// (INVALID_RECORD: a record without key on a compacted topic) while batches behind it are in
// flight: their sequence numbers can no longer be accepted, so the producer takes a new
// producer id and sends them again renumbered. Only the rejected batch's records fail, Flush
// returns, and exactly the acknowledged records are in the log, once each, in order.
func TestIdempotentBatchRejectedMidPipeline(t *testing.T) {
	t.Parallel()
	addr := targets[0].start(t) // kfake accepts keyless records on compacted topics
	admin := newClient(t, addr)
	ctx := testCtx(t)
	topic := fmt.Sprintf("gap-%d", topicSeq.Add(1))
	if err := admin.Admin().CreateTopic(ctx, topic, 1, 1, map[string]string{"cleanup.policy": "compact"}); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, addr, spool.Linger(0), spool.MaxBatchBytes(1024))
	const n = 20000
	var (
		mu      sync.Mutex
		acked   = map[int]bool{}
		failed  int
		invalid bool
		other   error
	)
	for i := range n {
		r := spool.KeyStringRecord(topic, strconv.Itoa(i), strconv.Itoa(i))
		if i == n/2 {
			r.Key = nil
		}
		cl.Produce(ctx, r, func(r *spool.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed++
				if errors.Is(err, wire.ErrInvalidRecord) {
					invalid = true
				} else if other == nil {
					other = err
				}
				return
			}
			i, _ := strconv.Atoi(string(r.Value))
			acked[i] = true
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !invalid || acked[n/2] || len(acked)+failed != n || len(acked) < n/2 {
		t.Fatalf("invalid-record error seen %v, keyless record acked %v, %d acked + %d failed of %d", invalid, acked[n/2], len(acked), failed, n)
	}
	if other != nil {
		t.Fatalf("a record outside the rejected batch failed: %v", other)
	}
	got := consumeN(t, newClient(t, addr), topic, len(acked))
	prev := -1
	for _, r := range got {
		i, err := strconv.Atoi(string(r.Value))
		if err != nil || !acked[i] || i <= prev {
			t.Fatalf("record %q at offset %d after %d: not acknowledged, duplicated or reordered", r.Value, r.Offset, prev)
		}
		prev = i
	}
	t.Logf("%d acked, %d failed, peak %d batches in flight", len(acked), failed, spool.PeakPartitionInFlight(cl))
}

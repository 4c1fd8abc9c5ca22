package server_test

// Flood limits (limits.go): connections over max.connections, max.connections.per.ip and its
// overrides are closed on accept and counted; a flood of half-sent large requests holds no
// more memory than queued.max.request.bytes while an established client keeps producing and
// consuming.

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"runtime"
	"runtime/metrics"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// served says whether the connection answers an ApiVersions request.
func served(c *rawClient) bool {
	c.t.Helper()
	c.send(&wire.ApiVersionsRequest{}, 0)
	_, err := c.frame()
	return err == nil
}

func TestConnectionLimits(t *testing.T) {
	parallel(t)
	for _, tc := range []struct {
		name  string
		props map[string]string
		limit string // the refused counter's spool_limit label
		n     int    // connections the limit lets in from 127.0.0.1
	}{
		{"max.connections", map[string]string{"max.connections": "3"}, "max.connections", 3},
		{"max.connections.per.ip", map[string]string{"max.connections.per.ip": "2"}, "max.connections.per.ip", 2},
		{"override", map[string]string{"max.connections.per.ip": "2", "max.connections.per.ip.overrides": "localhost:9,127.0.0.1:4"}, "max.connections.per.ip", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.props["spool.metrics.listener"] = "127.0.0.1:0"
			b := startBroker(t, tc.props)
			var conns []*rawClient
			for range tc.n {
				c := dial(t, b.Addr)
				if !served(c) {
					t.Fatalf("connection %d of %d refused", len(conns)+1, tc.n)
				}
				conns = append(conns, c)
			}
			over := dial(t, b.Addr)
			over.expectClosed()
			if got := value(scrape(t, b.MetricsAddr), "spool_connections_refused_total", map[string]string{"spool_limit": tc.limit}); got < 1 {
				t.Errorf("spool_connections_refused_total{spool_limit=%q} = %v, want ≥ 1", tc.limit, got)
			}
			// A closed connection frees its place (once the broker has seen it close).
			conns[0].conn.Close()
			brokertest.WaitFor(t, 10*time.Second, "a new connection to be served after one closed", func() bool {
				c := dial(t, b.Addr)
				defer c.conn.Close()
				return served(c)
			})
		})
	}
}

// TestListenerConnectionLimit: listener.name.<listener>.max.connections (KIP-402) caps one
// listener and leaves the others alone, and the broker-wide max.connections still caps them all.
func TestListenerConnectionLimit(t *testing.T) {
	parallel(t)
	b := startBroker(t, map[string]string{
		"listeners":                            "CLIENT://127.0.0.1:0,OTHER://127.0.0.1:0",
		"listener.security.protocol.map":       "CLIENT:PLAINTEXT,OTHER:PLAINTEXT",
		"listener.name.client.max.connections": "2",
		"max.connections":                      "3",
		"spool.metrics.listener":               "127.0.0.1:0",
	})
	client, other := b.Listener(t, "CLIENT"), b.Listener(t, "OTHER")
	refused := func(limit string) float64 {
		return value(scrape(t, b.MetricsAddr), "spool_connections_refused_total", map[string]string{"spool_limit": limit})
	}
	const own = "listener.name.client.max.connections"
	var conns []*rawClient
	for i := range 2 {
		c := dial(t, client)
		if !served(c) {
			t.Fatalf("CLIENT connection %d of 2 refused", i+1)
		}
		conns = append(conns, c)
	}
	dial(t, client).expectClosed()
	if got := refused(own); got != 1 {
		t.Errorf("spool_connections_refused_total{spool_limit=%q} = %v, want 1", own, got)
	}
	// The other listener has no limit of its own: it takes the broker-wide third place...
	if c := dial(t, other); !served(c) {
		t.Fatal("OTHER refused while CLIENT was at its own limit")
	}
	// ...and then max.connections refuses it, counted under its own label, not the listener's.
	dial(t, other).expectClosed()
	if got := refused("max.connections"); got != 1 {
		t.Errorf("spool_connections_refused_total{spool_limit=\"max.connections\"} = %v, want 1", got)
	}
	if got := refused(own); got != 1 {
		t.Errorf("spool_connections_refused_total{spool_limit=%q} = %v after a max.connections refusal, want still 1", own, got)
	}
	// A CLIENT connection that closes frees a CLIENT place.
	conns[0].conn.Close()
	brokertest.WaitFor(t, 10*time.Second, "a new CLIENT connection to be served after one closed", func() bool {
		c := dial(t, client)
		defer c.conn.Close()
		return served(c)
	})
}

// liveHeap is the heap the last garbage collection found live, after a fresh collection.
func liveHeap() uint64 {
	runtime.GC() // twice: the frame pools' caches survive one collection
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestRequestMemoryBound reproduces the flood of issue 16 at a scale a test machine takes:
// hundreds of connections that each send only the 4-byte size of a 16 MiB request and stall,
// and a few that send most of such a request and stall. The broker (in this process) may hold
// queued.max.request.bytes for them, plus the connections' bookkeeping, and no more; an
// established client keeps producing and consuming meanwhile.
//
// It runs alone (not parallel): it measures the process's live heap, which the brokers of
// parallel tests would grow.
func TestRequestMemoryBound(t *testing.T) {
	const (
		frameSize = 16 << 20
		budget    = 16 << 20
		stalled   = 300
		senders   = 4
		sent      = 12 << 20 // of each sender's frame
		slack     = 8 << 20  // the connections' structures, the broker's own churn
	)
	before := liveHeap()
	b := startBroker(t, map[string]string{
		"socket.request.max.bytes": strconv.Itoa(frameSize),
		"queued.max.request.bytes": strconv.Itoa(budget),
		"spool.metrics.listener":   "127.0.0.1:0",
	})
	t.Logf("live heap after start %d MiB", (int64(liveHeap())-int64(before))>>20)
	var header [4]byte
	binary.BigEndian.PutUint32(header[:], frameSize)
	dialRaw := func() net.Conn {
		c, err := net.DialTimeout("tcp", b.Addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	var flood []net.Conn
	for range stalled {
		c := dialRaw()
		if _, err := c.Write(header[:]); err != nil {
			t.Fatal(err)
		}
		flood = append(flood, c)
	}
	chunk := make([]byte, 1<<20)
	for range senders {
		c := dialRaw()
		flood = append(flood, c)
		go func() { // blocks (TCP backpressure) once the broker stops reading it
			c.Write(header[:])
			for range sent / len(chunk) {
				if _, err := c.Write(chunk); err != nil {
					return
				}
			}
		}()
	}
	brokertest.WaitFor(t, 30*time.Second, "the senders to exhaust the request memory", func() bool {
		fams := scrape(t, b.MetricsAddr)
		return value(fams, "spool_request_memory_waits_total", nil) >= 1 &&
			value(fams, "spool_request_memory_used_bytes", nil) == budget
	})
	if got := value(scrape(t, b.MetricsAddr), "spool_request_memory_limit_bytes", nil); got != budget {
		t.Errorf("spool_request_memory_limit_bytes = %v, want %d", got, budget)
	}

	// An established client is served through the flood: its requests fit the read buffer.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConsumeTopics("through-the-flood"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const records = 100
	for i := range records {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "through-the-flood", Value: fmt.Appendf(nil, "r%d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce during the flood: %v", err)
		}
	}
	for got := 0; got < records; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume during the flood: %v", err)
		}
		got += fs.NumRecords()
	}

	held := int64(liveHeap()) - int64(before)
	t.Logf("live heap grew %d MiB with %d stalled connections and %d senders of %d MiB each (budget %d MiB)",
		held>>20, stalled, senders, sent>>20, budget>>20)
	if held > budget+slack {
		t.Errorf("live heap grew %d MiB, want at most queued.max.request.bytes (%d MiB) + %d MiB", held>>20, budget>>20, slack>>20)
	}

	// The flood ends: its memory is given back.
	for _, c := range flood {
		c.Close()
	}
	brokertest.WaitForState(t, 30*time.Second, "the request memory to be released", func() (bool, string) {
		used := value(scrape(t, b.MetricsAddr), "spool_request_memory_used_bytes", nil)
		return used == 0, fmt.Sprintf("%v bytes held", used)
	})
}

// A request whose body stops arriving, small or large, is an idle connection: it is closed
// after connections.max.idle.ms, and its request memory comes back.
func TestStalledRequestBodyCloses(t *testing.T) {
	parallel(t)
	b := startBroker(t, map[string]string{"connections.max.idle.ms": "300", "spool.metrics.listener": "127.0.0.1:0"})
	for _, size := range []int{1000, 1 << 20} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			c := dial(t, b.Addr)
			msg := make([]byte, 4+size/2)
			binary.BigEndian.PutUint32(msg, uint32(size))
			c.writeRaw(msg)
			c.expectClosed()
			brokertest.WaitFor(t, 10*time.Second, "the request memory to be released", func() bool {
				return value(scrape(t, b.MetricsAddr), "spool_request_memory_used_bytes", nil) == 0
			})
		})
	}
}

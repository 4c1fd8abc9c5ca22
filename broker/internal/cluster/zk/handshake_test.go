package zk

import (
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// Rule: until the connect response arrives, no deadline is further than the limit; after it,
// the library's deadlines pass unchanged.
func TestHandshakeDeadlineIsBoundedUntilTheConnectResponse(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := &handshakeConn{Conn: a, limit: 2 * time.Second}
	far := time.Now().Add(2 * time.Minute)
	if got := c.clamp(far); !got.Before(time.Now().Add(3 * time.Second)) {
		t.Fatalf("before the response: deadline %v, want at most the 2 s limit from now", time.Until(got))
	}
	if got := c.clamp(time.Time{}); !got.IsZero() {
		t.Fatalf("a cleared deadline became %v", got)
	}
	go b.Write([]byte{0, 0, 0, 1})
	if _, err := c.Read(make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
	if got := c.clamp(far); !got.Equal(far) {
		t.Fatalf("after the response: deadline %v, want the library's %v unchanged", got, far)
	}
}

// A server that accepts the session's connection and never answers (as a ZooKeeper that is
// still starting did) is given up on after the bounded wait, and the client connects again,
// instead of waiting ten receive timeouts on the first connection.
func TestSilentServerIsRetried(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			defer c.Close() // held open, never answered
		}
	}()
	// A 3 s session: the library alone would wait 10 × 2 s on the first connection.
	conn, _, err := zk.Connect([]string{ln.Addr().String()}, 3*time.Second, zk.WithLogInfo(false),
		zk.WithLogger(nopLogger{}), zk.WithDialer(handshakeDialer(2*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	deadline := time.Now().Add(15 * time.Second)
	for accepted.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the client stayed on its first, unanswered connection (%d accepted)", accepted.Load())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

package zk

import (
	"net"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// The ZooKeeper client library waits up to ten times its receive timeout (2/3 of the session
// timeout: 120 s for Kafka's default 18 s) for the answer to a session's connect request, and
// tries no other connection meanwhile. A ZooKeeper that accepted the connection as it started
// and never answered it (seen under load: the port opens seconds before the server serves)
// then holds the broker without a session long past zookeeper.connection.timeout.ms, or after
// an outage long past the session timeout. ZooKeeper's own Java client gives the connect
// request its read timeout, 2/3 of the session timeout; handshakeDialer does the same, and
// the library then tries a new connection.

// handshakeDialer dials as the library does, and bounds the wait for the connect response
// to limit.
func handshakeDialer(limit time.Duration) zk.Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout(network, address, timeout)
		if err != nil {
			return nil, err
		}
		return &handshakeConn{Conn: c, limit: limit}, nil
	}
}

// handshakeConn is a connection whose deadlines are at most limit away until its first byte
// arrives (the connect response); after that the library's own deadlines apply unchanged.
type handshakeConn struct {
	net.Conn
	limit    time.Duration
	answered atomic.Bool
}

func (c *handshakeConn) clamp(t time.Time) time.Time {
	if c.answered.Load() || t.IsZero() || c.limit <= 0 {
		return t
	}
	if max := time.Now().Add(c.limit); t.After(max) {
		return max
	}
	return t
}

func (c *handshakeConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.answered.Store(true)
	}
	return n, err
}

func (c *handshakeConn) SetReadDeadline(t time.Time) error { return c.Conn.SetReadDeadline(c.clamp(t)) }
func (c *handshakeConn) SetWriteDeadline(t time.Time) error {
	return c.Conn.SetWriteDeadline(c.clamp(t))
}
func (c *handshakeConn) SetDeadline(t time.Time) error { return c.Conn.SetDeadline(c.clamp(t)) }

package zk

import (
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/spoolmq/spool/broker/internal/metrics"
)

// timedConn is the ZooKeeper connection with the time of each request reported to the
// metrics (Kafka's ZooKeeperRequestLatencyMs); it changes nothing else. Watches are timed up
// to the answer that arms them.
type timedConn struct{ *zk.Conn }

func since(began time.Time) { metrics.ZooKeeperRequest(time.Since(began)) }

func (c timedConn) Get(path string) ([]byte, *zk.Stat, error) {
	defer since(time.Now())
	return c.Conn.Get(path)
}

func (c timedConn) GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	defer since(time.Now())
	return c.Conn.GetW(path)
}

func (c timedConn) Set(path string, data []byte, version int32) (*zk.Stat, error) {
	defer since(time.Now())
	return c.Conn.Set(path, data, version)
}

func (c timedConn) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	defer since(time.Now())
	return c.Conn.Create(path, data, flags, acl)
}

func (c timedConn) Delete(path string, version int32) error {
	defer since(time.Now())
	return c.Conn.Delete(path, version)
}

func (c timedConn) Exists(path string) (bool, *zk.Stat, error) {
	defer since(time.Now())
	return c.Conn.Exists(path)
}

func (c timedConn) ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	defer since(time.Now())
	return c.Conn.ExistsW(path)
}

func (c timedConn) Children(path string) ([]string, *zk.Stat, error) {
	defer since(time.Now())
	return c.Conn.Children(path)
}

func (c timedConn) ChildrenW(path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	defer since(time.Now())
	return c.Conn.ChildrenW(path)
}

func (c timedConn) Multi(ops ...any) ([]zk.MultiResponse, error) {
	defer since(time.Now())
	return c.Conn.Multi(ops...)
}

// SessionState is the ZooKeeper session's state as the metrics name it: connected (a
// session is up), connecting, disconnected, expired or auth_failed.
func (s *Store) SessionState() string {
	switch st := s.conn.State(); st {
	case zk.StateHasSession:
		return "connected"
	case zk.StateConnecting, zk.StateConnected:
		return "connecting"
	case zk.StateDisconnected:
		return "disconnected"
	case zk.StateExpired:
		return "expired"
	case zk.StateAuthFailed:
		return "auth_failed"
	default:
		return st.String()
	}
}

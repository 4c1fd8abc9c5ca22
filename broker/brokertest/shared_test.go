package brokertest_test

import (
	"strings"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/spoolmq/spool/broker/brokertest"
)

// The shared ZooKeeper is one server for every test of the binary, and each test gets a
// chroot of its own that exists and is empty.
func TestSharedZooKeeperChroots(t *testing.T) {
	zk := brokertest.SharedZooKeeper(t)
	if again := brokertest.SharedZooKeeper(t); again != zk {
		t.Fatalf("second SharedZooKeeper is %s, the first %s: want the same server", again.Addr, zk.Addr)
	}
	a, b := zk.Chroot(t), zk.Chroot(t)
	if a == b || !strings.HasPrefix(a, "/TestSharedZooKeeperChroots-") {
		t.Fatalf("chroots %q and %q: want two different ones named after the test", a, b)
	}
	conn, _, err := gozk.Connect([]string{zk.Addr}, 10*time.Second, gozk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, p := range []string{a, b} {
		kids, _, err := conn.Children(p)
		if err != nil || len(kids) != 0 {
			t.Errorf("chroot %s: children %v, %v; want an existing, empty znode", p, kids, err)
		}
	}
}

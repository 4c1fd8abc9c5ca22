package brokertest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// zkJars are the jars of Debian's zookeeper package that a standalone server needs.
var zkJars = []string{"zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-nop.jar", "netty-handler.jar", "netty-common.jar",
	"netty-transport.jar", "netty-buffer.jar", "netty-codec.jar", "netty-resolver.jar", "netty-transport-native-epoll.jar",
	"netty-transport-native-unix-common.jar", "metrics-core.jar", "snappy-java.jar"}

// ZooKeeper is a real ZooKeeper server (Debian's zookeeper package) on a free loopback port.
type ZooKeeper struct {
	Addr string // HOST:PORT
	dir  string
	cmd  *exec.Cmd
	done chan error
}

// Connect is the connect string for a chroot ("" for none), e.g. "127.0.0.1:41234/spool".
func (z *ZooKeeper) Connect(chroot string) string { return z.Addr + chroot }

// StartZooKeeper starts a standalone ZooKeeper for the test; it stops at cleanup.
func StartZooKeeper(t testing.TB) *ZooKeeper {
	t.Helper()
	NeedTool(t, "/usr/share/java/zookeeper.jar", "zookeeper")
	java := NeedTool(t, "/usr/bin/java", "openjdk-17-jre-headless")
	dir := t.TempDir()
	port := freePort(t)
	z := &ZooKeeper{Addr: fmt.Sprintf("127.0.0.1:%d", port), dir: dir}
	cfg := fmt.Sprintf("tickTime=500\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\nmaxSessionTimeout=60000\n4lw.commands.whitelist=ruok\n",
		filepath.Join(dir, "data"), port)
	if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	z.start(t, java)
	t.Cleanup(func() { z.Stop(t) })
	return z
}

func (z *ZooKeeper) start(t testing.TB, java string) {
	t.Helper()
	var cp []string
	for _, j := range zkJars {
		cp = append(cp, "/usr/share/java/"+j)
	}
	z.cmd = exec.Command(java, "-Xmx256m", "-cp", strings.Join(cp, ":"), "org.apache.zookeeper.server.ZooKeeperServerMain", filepath.Join(z.dir, "zoo.cfg"))
	z.cmd.Stdout, z.cmd.Stderr = nil, nil
	if err := z.cmd.Start(); err != nil {
		t.Fatalf("brokertest: starting zookeeper: %v", err)
	}
	z.done = make(chan error, 1)
	go func(cmd *exec.Cmd, done chan error) { done <- cmd.Wait() }(z.cmd, z.done)
	deadline := time.Now().Add(60 * time.Second)
	for !z.ruok() {
		if time.Now().After(deadline) {
			z.cmd.Process.Kill()
			t.Fatalf("brokertest: zookeeper did not answer on %s within 60s", z.Addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ruok asks ZooKeeper's four-letter "ruok".
func (z *ZooKeeper) ruok() bool {
	c, err := net.DialTimeout("tcp", z.Addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	c.Write([]byte("ruok"))
	b := make([]byte, 4)
	n, _ := c.Read(b)
	return string(b[:n]) == "imok"
}

// Stop stops ZooKeeper (SIGTERM, then SIGKILL).
func (z *ZooKeeper) Stop(t testing.TB) {
	if z.cmd == nil || z.cmd.Process == nil {
		return
	}
	select {
	case <-z.done:
		return
	default:
	}
	z.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-z.done:
	case <-time.After(10 * time.Second):
		z.cmd.Process.Kill()
		<-z.done
	}
}

// Restart stops ZooKeeper and starts it again on the same port and data.
func (z *ZooKeeper) Restart(t testing.TB) {
	t.Helper()
	z.Stop(t)
	z.start(t, "/usr/bin/java")
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

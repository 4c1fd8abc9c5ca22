package brokertest

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// zkJars are the jars of Debian's zookeeper package that a server needs.
var zkJars = []string{"zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-nop.jar", "netty-handler.jar", "netty-common.jar",
	"netty-transport.jar", "netty-buffer.jar", "netty-codec.jar", "netty-resolver.jar", "netty-transport-native-epoll.jar",
	"netty-transport-native-unix-common.jar", "metrics-core.jar", "snappy-java.jar"}

// ZooKeeper is a real ZooKeeper server (Debian's zookeeper package) on a free loopback port:
// standalone, or one member of an Ensemble.
type ZooKeeper struct {
	Addr string // HOST:PORT
	dir  string
	main string // the server's main class
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // its exit status, once done
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
	z := &ZooKeeper{Addr: fmt.Sprintf("127.0.0.1:%d", port), dir: dir, main: "org.apache.zookeeper.server.ZooKeeperServerMain"}
	if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(ZooKeeperConfig(filepath.Join(dir, "data"), port)), 0o644); err != nil {
		t.Fatal(err)
	}
	z.start(t, java)
	t.Cleanup(func() { z.Stop(t) })
	return z
}

// ZooKeeperArgs are the java arguments that run Debian's zookeeper package as a server class
// (ZooKeeperServerMain standalone, QuorumPeerMain in an ensemble) on the config file cfg, or an
// error naming the first jar that is missing. Tests and conformance's targets start it the same way.
func ZooKeeperArgs(main, cfg string) ([]string, error) {
	var cp []string
	for _, j := range zkJars {
		p := "/usr/share/java/" + j
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("ZooKeeper: %s missing (apt-get install zookeeper)", p)
		}
		cp = append(cp, p)
	}
	return []string{"-Xmx256m", "-XX:+UseSerialGC", "-cp", strings.Join(cp, ":"), main, cfg}, nil
}

// ZooKeeperConfig is the zoo.cfg of a server on 127.0.0.1:port keeping its data in dataDir, with
// the short ticks and the four-letter words (ruok, srvr, dump) the tests and targets rely on.
func ZooKeeperConfig(dataDir string, port int) string {
	return fmt.Sprintf("tickTime=500\ninitLimit=20\nsyncLimit=10\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\nmaxSessionTimeout=60000\n4lw.commands.whitelist=ruok,srvr,dump\n",
		dataDir, port)
}

// Ensemble is a ZooKeeper ensemble (QuorumPeerMain) on loopback.
type Ensemble struct {
	Members []*ZooKeeper
}

// Connect is the ensemble's connect string.
func (e *Ensemble) Connect() string {
	var addrs []string
	for _, m := range e.Members {
		addrs = append(addrs, m.Addr)
	}
	return strings.Join(addrs, ",")
}

// StartZooKeeperEnsemble starts n ZooKeeper servers as one ensemble and waits until each
// serves (a quorum formed).
func StartZooKeeperEnsemble(t testing.TB, n int) *Ensemble {
	t.Helper()
	NeedTool(t, "/usr/share/java/zookeeper.jar", "zookeeper")
	java := NeedTool(t, "/usr/bin/java", "openjdk-17-jre-headless")
	e := &Ensemble{}
	var servers strings.Builder
	ports := make([]int, n)
	for i := range n {
		ports[i] = freePort(t)
		fmt.Fprintf(&servers, "server.%d=127.0.0.1:%d:%d\n", i+1, freePort(t), freePort(t))
	}
	for i := range n {
		dir := t.TempDir()
		data := filepath.Join(dir, "data")
		if err := os.MkdirAll(data, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(data, "myid"), []byte(fmt.Sprintf("%d\n", i+1)), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg := ZooKeeperConfig(data, ports[i]) + servers.String()
		if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		z := &ZooKeeper{Addr: fmt.Sprintf("127.0.0.1:%d", ports[i]), dir: dir, main: "org.apache.zookeeper.server.quorum.QuorumPeerMain"}
		z.launch(t, java)
		t.Cleanup(func() { z.Stop(t) })
		e.Members = append(e.Members, z)
	}
	for _, z := range e.Members {
		z.waitServing(t)
	}
	return e
}

// Kill stops a ZooKeeper server with SIGKILL.
func (z *ZooKeeper) Kill(t testing.TB) {
	t.Helper()
	z.cmd.Process.Kill()
	<-z.done
}

func (z *ZooKeeper) start(t testing.TB, java string) {
	t.Helper()
	z.launch(t, java)
	z.waitServing(t)
}

func (z *ZooKeeper) launch(t testing.TB, java string) {
	t.Helper()
	args, err := ZooKeeperArgs(z.main, filepath.Join(z.dir, "zoo.cfg"))
	if err != nil {
		t.Fatalf("brokertest: %v", err)
	}
	z.cmd = exec.Command(java, args...)
	if err := z.cmd.Start(); err != nil {
		t.Fatalf("brokertest: starting zookeeper: %v", err)
	}
	done := make(chan struct{})
	z.done = done
	go func(cmd *exec.Cmd) {
		z.err = cmd.Wait()
		close(done)
	}(z.cmd)
}

// waitServing waits until the server serves requests (a standalone server at once, an
// ensemble member once a quorum formed).
func (z *ZooKeeper) waitServing(t testing.TB) {
	t.Helper()
	if err := z.serving(60 * time.Second); err != nil {
		t.Fatalf("brokertest: %v", err)
	}
}

// serving waits up to timeout until the server serves requests; at the timeout it kills it.
func (z *ZooKeeper) serving(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for !strings.Contains(z.fourLetter("srvr"), "Mode:") {
		select {
		case <-z.done:
			return fmt.Errorf("zookeeper on %s exited at start: %v", z.Addr, z.err)
		default:
		}
		if time.Now().After(deadline) {
			z.cmd.Process.Kill()
			return fmt.Errorf("zookeeper did not serve on %s within %v", z.Addr, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// HasEphemeral reports whether the ephemeral znode path exists, by ZooKeeper's "dump" (a
// standalone server, or an ensemble's leader): a paused broker's registration stays until its
// session expires.
func (z *ZooKeeper) HasEphemeral(path string) bool {
	for _, line := range strings.Split(z.fourLetter("dump"), "\n") {
		if strings.TrimSpace(line) == path {
			return true
		}
	}
	return false
}

// fourLetter sends one of ZooKeeper's four-letter commands and returns the answer.
func (z *ZooKeeper) fourLetter(cmd string) string {
	c, err := net.DialTimeout("tcp", z.Addr, time.Second)
	if err != nil {
		return ""
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	c.Write([]byte(cmd))
	b, _ := io.ReadAll(c)
	return string(b)
}

// Stop stops ZooKeeper (SIGTERM, then SIGKILL).
func (z *ZooKeeper) Stop(t testing.TB) { z.stop() }

func (z *ZooKeeper) stop() {
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

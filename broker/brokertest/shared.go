package brokertest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
)

// shared is the test binary's one ZooKeeper (SharedZooKeeper).
var shared struct {
	mu  sync.Mutex
	zk  *ZooKeeper
	err error
}

// chroots numbers the chroots handed out in this process, so two never share a path.
var chroots atomic.Int64

// SharedZooKeeper is one standalone ZooKeeper for the whole test binary, started by the first
// test that asks for it: a JVM start is seconds of CPU, and most tests only need somewhere to
// keep their cluster's state. Each test works under a chroot of its own (Chroot, or the one
// StartCluster derives). Tests that stop, kill or restart ZooKeeper, or need an ensemble,
// start their own (StartZooKeeper, StartZooKeeperEnsemble).
//
// It stops when the test process ends: StopSharedZooKeeper, from TestMain, stops it cleanly
// and removes its data; without it the kernel kills it when the process exits (the JVM is
// started with a parent-death signal from a thread that lives as long as the process).
func SharedZooKeeper(t testing.TB) *ZooKeeper {
	t.Helper()
	NeedTool(t, "/usr/share/java/zookeeper.jar", "zookeeper")
	java := NeedTool(t, "/usr/bin/java", "openjdk-17-jre-headless")
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.zk == nil && shared.err == nil {
		shared.zk, shared.err = startShared(java)
	}
	if shared.err != nil {
		t.Fatalf("brokertest: shared ZooKeeper: %v", shared.err)
	}
	return shared.zk
}

// StopSharedZooKeeper stops the shared ZooKeeper, if one was started, and removes its data.
// Call it from TestMain after m.Run.
func StopSharedZooKeeper() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	z := shared.zk
	if z == nil {
		return
	}
	shared.zk, shared.err = nil, fmt.Errorf("stopped")
	z.stop()
	os.RemoveAll(z.dir)
}

// startShared starts the shared ZooKeeper: no client connection limit (every broker and
// test of the binary connects from 127.0.0.1), and a parent-death signal so it ends with the
// test process.
func startShared(java string) (*ZooKeeper, error) {
	dir, err := os.MkdirTemp("", "spool-shared-zk")
	if err != nil {
		return nil, err
	}
	port, err := pickPort()
	if err != nil {
		return nil, err
	}
	z := &ZooKeeper{Addr: fmt.Sprintf("127.0.0.1:%d", port), dir: dir, main: "org.apache.zookeeper.server.ZooKeeperServerMain"}
	cfg := ZooKeeperConfig(filepath.Join(dir, "data"), port) + "maxClientCnxns=0\n"
	if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	args, err := ZooKeeperArgs(z.main, filepath.Join(dir, "zoo.cfg"))
	if err != nil {
		return nil, err
	}
	// Pdeathsig fires when the thread that started the child ends, not the process: start it
	// from a thread locked to a goroutine that never returns.
	started := make(chan error)
	go func() {
		runtime.LockOSThread()
		z.cmd = exec.Command(java, args...)
		z.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := z.cmd.Start(); err != nil {
			started <- err
			return // the thread ends with the goroutine; nothing was started
		}
		done := make(chan struct{})
		z.done = done
		go func() {
			z.err = z.cmd.Wait()
			close(done)
		}()
		started <- nil
		select {} // keep the thread
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("starting zookeeper: %w", err)
	}
	if err := z.serving(60 * time.Second); err != nil {
		z.stop()
		return nil, err
	}
	return z, nil
}

// Chroot creates a new, empty znode on z for one test and returns its path (as in
// z.Connect(z.Chroot(t))), named after the test and unique in the process.
func (z *ZooKeeper) Chroot(t testing.TB) string {
	t.Helper()
	path := chrootFor(t, "/")
	conn, _, err := gozk.Connect([]string{z.Addr}, 10*time.Second, gozk.WithLogInfo(false))
	if err != nil {
		t.Fatalf("brokertest: connecting to ZooKeeper %s: %v", z.Addr, err)
	}
	defer conn.Close()
	if _, err := conn.Create(path, nil, 0, gozk.WorldACL(gozk.PermAll)); err != nil {
		t.Fatalf("brokertest: creating chroot %s: %v", path, err)
	}
	return path
}

// chrootFor is a znode path for t under prefix: the test's name, made a single znode name, and
// a number unique in the process.
func chrootFor(t testing.TB, prefix string) string {
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, t.Name())
	return fmt.Sprintf("%s%s-%d", prefix, name, chroots.Add(1))
}

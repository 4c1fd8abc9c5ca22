// Package brokertest starts real Spool brokers for tests: in the test process (Start) or as a
// separate spoold process that a test can kill (StartProcess). Each gets a free loopback port
// and its own temporary data directory, and is stopped by t.Cleanup.
package brokertest

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/internal/config"
	"github.com/spoolmq/spool/broker/internal/server"
)

// Options configure a test broker.
type Options struct {
	// DataDir reuses a data directory (to restart a broker on the same data); default t.TempDir().
	DataDir string
	// Props are broker properties (Kafka names), e.g. "num.partitions": "3".
	Props map[string]string
	// Addr is the listen address; default 127.0.0.1:0. Props["listeners"], when set, replaces it.
	Addr string
	// LogLevel defaults to warn, so test output stays readable; LogLevelName ("info", ...)
	// overrides it (LevelInfo is slog's zero value, so it cannot be asked for otherwise).
	LogLevel     slog.Level
	LogLevelName string
	// NodeID is the broker's node.id (default 0).
	NodeID int32
	// ZooKeeper is zookeeper.connect: set, the broker runs in cluster mode.
	ZooKeeper string
	// Args are more spoold flags, after the ones above (e.g. --config FILE).
	Args []string
}

// Broker is a running test broker.
type Broker struct {
	Addr    string // HOST:PORT clients connect to (the first listener)
	DataDir string
	// MetricsAddr is the HOST:PORT of /metrics, /healthz and /readyz when the broker was
	// started with spool.metrics.listener (or --metrics-listen), else "".
	MetricsAddr string
	// StopTimeout is how long Stop waits after SIGTERM before it fails the test (30 s when
	// zero); set it before the broker is stopped.
	StopTimeout time.Duration
	srv         *server.Server
	cmd         *exec.Cmd
	done        chan error
	stopped     bool
	mu          sync.Mutex
}

func (o Options) args(t testing.TB) (dataDir string, args []string) {
	dataDir = o.DataDir
	if dataDir == "" {
		dataDir = t.TempDir()
	}
	addr := o.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	level := levelName(o.LogLevel)
	if o.LogLevelName != "" {
		level = o.LogLevelName
	}
	args = []string{"--data-dir", dataDir, "--log-level", level, "--node-id", fmt.Sprint(o.NodeID)}
	if _, ok := o.Props["listeners"]; !ok {
		args = append(args, "--listen", addr)
	}
	if o.ZooKeeper != "" {
		args = append(args, "--zookeeper", o.ZooKeeper)
	}
	for k, v := range o.Props {
		args = append(args, "--set", k+"="+v)
	}
	return dataDir, append(args, o.Args...)
}

func levelName(l slog.Level) string {
	if l == 0 {
		l = slog.LevelWarn
	}
	return strings.ToLower(l.String())
}

// Start runs a broker inside the test process.
func Start(t testing.TB, o Options) *Broker {
	t.Helper()
	dataDir, args := o.args(t)
	conf, err := config.Load(args, io.Discard)
	if err != nil {
		t.Fatalf("brokertest: config: %v", err)
	}
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: conf.LogLevel}))
	srv, err := server.New(conf, log)
	if err != nil {
		t.Fatalf("brokertest: starting broker: %v", err)
	}
	if err := srv.Listen(); err != nil {
		srv.Close()
		t.Fatalf("brokertest: %v", err)
	}
	b := &Broker{Addr: srv.Addr().String(), DataDir: dataDir, srv: srv, done: make(chan error, 1)}
	if a := srv.MetricsAddr(); a != nil {
		b.MetricsAddr = a.String()
	}
	go func() { b.done <- srv.Serve() }()
	t.Cleanup(func() { b.Stop(t) })
	return b
}

// Listener is the bound HOST:PORT of the listener named name (upper case, as PLAINTEXT or
// SSL) of a broker started in the test process.
func (b *Broker) Listener(t testing.TB, name string) string {
	t.Helper()
	a := b.srv.ListenerAddr(name)
	if a == nil {
		t.Fatalf("brokertest: no listener %s", name)
	}
	return a.String()
}

// Stop shuts the broker down cleanly (as SIGTERM does) and waits for it.
func (b *Broker) Stop(t testing.TB) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return
	}
	b.stopped = true
	if b.srv != nil {
		if err := b.srv.Close(); err != nil {
			t.Errorf("brokertest: stopping broker: %v", err)
		}
		if err := <-b.done; err != nil {
			t.Errorf("brokertest: serve: %v", err)
		}
		return
	}
	grace := b.StopTimeout
	if grace == 0 {
		grace = 30 * time.Second
	}
	b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-b.done:
		if err != nil {
			t.Errorf("brokertest: spoold exited with %v", err)
		}
	case <-time.After(grace):
		// SIGQUIT makes the Go runtime write every goroutine's stack to stderr (the test's
		// log) and exit: what the broker was waiting on is then in the failure.
		b.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-b.done:
		case <-time.After(10 * time.Second):
			b.cmd.Process.Kill()
			<-b.done
		}
		t.Errorf("brokertest: spoold did not stop within %v of SIGTERM (its goroutines are above)", grace)
	}
}

// Signal sends sig to a process broker (SIGSTOP and SIGCONT pause and resume it).
func (b *Broker) Signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if b.cmd == nil {
		t.Fatalf("brokertest: Signal needs a process broker (StartProcess)")
	}
	if err := b.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("brokertest: signal %v: %v", sig, err)
	}
}

// Kill stops a process broker with SIGKILL: no flush, no checkpoint, as a crash.
func (b *Broker) Kill(t testing.TB) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cmd == nil {
		t.Fatalf("brokertest: Kill needs a process broker (StartProcess)")
	}
	if b.stopped {
		return
	}
	b.stopped = true
	b.cmd.Process.Kill()
	<-b.done
}

// Binary builds spoold once per test binary and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	SkipShort(t)
	return spooldBuild.path(t)
}

// CLI builds the spool CLI (sdk-go's cmd/spool) once per test binary and returns its path.
func CLI(t testing.TB) string {
	t.Helper()
	SkipShort(t)
	return cliBuild.path(t)
}

var (
	spooldBuild = &build{name: "spoold", module: ".", pkg: "./cmd/spoold"}
	cliBuild    = &build{name: "spool", module: "../sdk-go", pkg: "./cmd/spool"}
)

// build is a program built once per test binary, from module (relative to the broker
// module) into a directory of its own.
type build struct {
	name, module, pkg string
	once              sync.Once
	bin               string
	err               error
}

func (b *build) path(t testing.TB) string {
	t.Helper()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", b.name+"-bin")
		if err != nil {
			b.err = err
			return
		}
		b.bin = filepath.Join(dir, b.name)
		_, file, _, _ := runtime.Caller(0)
		cmd := exec.Command("go", "build", "-o", b.bin, b.pkg)
		cmd.Dir = filepath.Join(filepath.Dir(filepath.Dir(file)), b.module)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", b.name, err, out)
		}
	})
	if b.err != nil {
		t.Fatalf("brokertest: %v", b.err)
	}
	return b.bin
}

// StartProcess runs spoold as a child process, which Kill can crash.
func StartProcess(t testing.TB, o Options) *Broker {
	t.Helper()
	dataDir, args := o.args(t)
	cmd := exec.Command(Binary(t), args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = testWriter{t}
	if err := cmd.Start(); err != nil {
		t.Fatalf("brokertest: starting spoold: %v", err)
	}
	b := &Broker{DataDir: dataDir, cmd: cmd, done: make(chan error, 1)}
	addrs := make(chan string, 1)
	metricsAddr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			// The metrics line, when there is one, comes first.
			if rest, ok := strings.CutPrefix(sc.Text(), "spoold metrics on "); ok {
				metricsAddr <- rest
			}
			if rest, ok := strings.CutPrefix(sc.Text(), "spoold listening on "); ok {
				addrs <- rest
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	go func() { b.done <- cmd.Wait() }()
	select {
	case b.Addr = <-addrs:
		select {
		case b.MetricsAddr = <-metricsAddr:
		default:
		}
	case err := <-b.done:
		t.Fatalf("brokertest: spoold exited at start: %v", err)
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("brokertest: spoold did not start within 60s")
	}
	t.Cleanup(func() { b.Stop(t) })
	return b
}

// WaitReachable waits until addr accepts TCP connections.
func WaitReachable(t testing.TB, addr string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("brokertest: %s not reachable after %v: %v", addr, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// testWriter sends broker logs to the test log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// CPUTime is the CPU time (utime+stime) a process broker has used so far, at the kernel's
// clock-tick resolution (10 ms).
func (b *Broker) CPUTime(t testing.TB) time.Duration {
	t.Helper()
	if b.cmd == nil {
		t.Fatalf("brokertest: CPUTime needs a process broker (StartProcess)")
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", b.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("brokertest: reading process stat: %v", err)
	}
	// The fields after the command name (which may hold spaces) start with the state;
	// utime and stime are the 12th and 13th of them, in clock ticks (USER_HZ, 100).
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	var ut, st int64
	if len(f) < 13 {
		t.Fatalf("brokertest: short /proc/%d/stat: %q", b.cmd.Process.Pid, s)
	}
	if _, err := fmt.Sscan(f[11], &ut); err != nil {
		t.Fatalf("brokertest: utime in /proc/%d/stat: %v", b.cmd.Process.Pid, err)
	}
	if _, err := fmt.Sscan(f[12], &st); err != nil {
		t.Fatalf("brokertest: stime in /proc/%d/stat: %v", b.cmd.Process.Pid, err)
	}
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// PeakRSS is the peak resident memory of a process broker (VmHWM), in bytes.
func (b *Broker) PeakRSS(t testing.TB) int64 {
	t.Helper()
	if b.cmd == nil {
		t.Fatalf("brokertest: PeakRSS needs a process broker (StartProcess)")
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", b.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("brokertest: reading process status: %v", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(rest), "%d", &kb)
			return kb << 10
		}
	}
	t.Fatalf("brokertest: no VmHWM in /proc/%d/status", b.cmd.Process.Pid)
	return 0
}

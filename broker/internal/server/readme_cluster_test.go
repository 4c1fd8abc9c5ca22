package server_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/protocol-spec/loopport"
)

// TestReadmeClusterQuickStart runs the README's cluster quick start as a user pastes it (start
// ZooKeeper, three brokers, create a replicated topic, kill a broker, restart it), on ports
// and directories of its own instead of the README's fixed ones, and checks what it prints.
func TestReadmeClusterQuickStart(t *testing.T) {
	heavy(t)
	brokertest.NeedTool(t, "/usr/bin/kcat", "kcat")
	brokertest.NeedTool(t, "/usr/share/java/zookeeper.jar", "zookeeper")
	block := readmeBlock(t, "### Cluster mode") + readmeBlock(t, "#### Growing and shrinking a cluster")
	dir := readmeDir(t)
	if err := os.Symlink(brokertest.CLI(t), filepath.Join(dir, "bin", "spool")); err != nil {
		t.Fatal(err)
	}
	base := freeRun(t, 4)
	zkPort := freePortT(t)
	script := strings.NewReplacer(
		"make build\n", "",
		"2181", fmt.Sprint(zkPort),
		"127.0.0.1:910", fmt.Sprintf("127.0.0.1:%d", base/10),
		"/tmp/spool-zk", filepath.Join(dir, "zk"),
		"/tmp/spool-d", filepath.Join(dir, "d"),
	).Replace(block)
	// After the block: wait until the restarted broker is back in every ISR.
	script += `until [ "$(kcat -b $SPOOL_BROKERS -L -t orders 2>/dev/null | grep -c 'isrs: 1,2,3$')" = 6 ]; do sleep 0.2; done
echo RECOVERED
`
	text, err := runReadmeScript(t, dir, script)
	if err != nil {
		t.Fatalf("quick start failed: %v\n--- script\n%s\n--- output\n%s", err, script, text)
	}
	// spool topic describe on the cluster: each of the 6 partitions with a leader among its
	// 3 replicas, and an ISR.
	if rows := regexp.MustCompile(`(?m)^\s+[0-5]\s+[1-4]\s+[1-4],[1-4],[1-4]\s+[1-4](,[1-4])*\s+\d+\s+\d+`).FindAllString(text, -1); len(rows) < 6 {
		t.Errorf("topic describe shows %d partitions with leader, 3 replicas and ISR:\n%s", len(rows), text)
	}
	for _, want := range []string{`topic "orders" with 6 partitions`, " 2 brokers:", "replicas to copy", "throttled to 50.0 MB/s", "partitions moved in", "RECOVERED"} {
		if !strings.Contains(text, want) {
			t.Errorf("quick start output lacks %q:\n%s", want, text)
		}
	}
}

// readmeBlock is the first sh block of the README section that starts with heading.
func readmeBlock(t *testing.T, heading string) string {
	t.Helper()
	return brokertest.ReadmeBlocks(t, "../../../README.md", heading)[0]
}

// readmeDir is a directory to run a README block in, with bin/spoold.
func readmeDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(brokertest.Binary(t), filepath.Join(dir, "bin", "spoold")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runReadmeScript runs a script with bash -e -o pipefail in dir, in a process group of its own
// that the test's cleanup kills (README blocks leave brokers running in the background), and
// returns its output. The output goes to a file, not a pipe: a background broker keeps its
// output open, and Wait would wait for a pipe until the broker ends.
func runReadmeScript(t *testing.T, dir, script string) (string, error) {
	t.Helper()
	return runReadmeScriptAs(t, dir, "readme", nil, script)
}

// runReadmeScriptAs is runReadmeScript with the script and its output in files named after
// name (name.sh, name.out), so that scripts run one after the other in one directory keep
// their own files while the earlier ones' background processes still write theirs, and with
// env added to the environment.
func runReadmeScriptAs(t *testing.T, dir, name string, env []string, script string) (string, error) {
	t.Helper()
	out, err := os.Create(filepath.Join(dir, name+".out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// From a file, not bash -c: the script's own command line would then hold the script,
	// and the quick start's pgrep -f would find (and kill) the shell running it.
	path := filepath.Join(dir, name+".sh")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", path)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// At the timeout the whole process group goes (the block's background brokers too), so a
	// stuck block fails with its output instead of hanging the test binary.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	err = cmd.Wait()
	text, rerr := os.ReadFile(out.Name())
	if rerr != nil {
		t.Fatal(rerr)
	}
	return string(text), err
}

// freeRun returns a multiple of ten, p, such that the loopback ports p+1..p+n are free, so
// that the README's "127.0.0.1:909$n" can become "127.0.0.1:<p/10>$n". It searches below the
// ephemeral range, where no other test's port comes from, and never returns a run twice in a
// process: parallel README tests probe ports that their scripts bind only later. It starts at a
// place of its own per process, so that test binaries running at once seldom probe the same.
func freeRun(t *testing.T, n int) int {
	t.Helper()
	runs.mu.Lock()
	defer runs.mu.Unlock()
	if runs.taken == nil {
		runs.taken = map[int]bool{}
	}
	start := os.Getpid() % 1200
	for i := range 1200 {
		p := 20000 + 10*((start+i)%1200)
		if runs.taken[p] {
			continue
		}
		ok := true
		var ls []net.Listener
		for i := 1; i <= n; i++ {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p+i))
			if err != nil {
				ok = false
				break
			}
			ls = append(ls, l)
		}
		for _, l := range ls {
			l.Close()
		}
		if ok {
			runs.taken[p] = true
			return p
		}
	}
	t.Fatal("no free run of loopback ports")
	return 0
}

// runs are the port runs freeRun handed out.
var runs struct {
	mu    sync.Mutex
	taken map[int]bool
}

func freePortT(t *testing.T) int {
	t.Helper()
	p, err := loopport.Pick()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

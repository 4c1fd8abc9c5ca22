package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spoolmq/spool/broker/brokertest"
)

// syncBuffer is a bytes.Buffer safe for the process's writer and the test's reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLogFormatJSON runs spoold with --log-format json through a start, a consumer group's
// join and leave, and a stop: every stderr line is one JSON object, and the documented info
// lines are there with their fields (the startup summary, the listening line, the rebalance
// with its generation and duration, the member leaving, the stop).
func TestLogFormatJSON(t *testing.T) {
	parallel(t)
	cmd := exec.Command(brokertest.Binary(t), "--log-format", "json", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(),
		"--set", "group.initial.rebalance.delay.ms=0")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// exited is closed once the process has been waited for; waitErr is then its status.
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
		}
	})
	sc := bufio.NewScanner(stdout)
	addr := ""
	for addr == "" && sc.Scan() {
		addr, _ = strings.CutPrefix(sc.Text(), "spoold listening on ")
	}
	if addr == "" {
		t.Fatalf("no listening line; stderr:\n%s", stderr.String())
	}
	go func() {
		for sc.Scan() {
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("logged-group"), kgo.ConsumeTopics("logged"),
		kgo.ClientID("logged-app"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "logged"); err != nil {
		t.Fatal(err)
	}
	// The client joins the group in the background as soon as it exists.
	brokertest.WaitFor(t, 30*time.Second, "the group rebalance logged", func() bool {
		return strings.Contains(stderr.String(), `"msg":"group rebalance completed"`)
	})
	cl.Close() // leaves the group
	brokertest.WaitFor(t, 30*time.Second, "the member's leave logged", func() bool {
		return strings.Contains(stderr.String(), `"msg":"member left"`)
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-exited
	if waitErr != nil {
		t.Fatalf("spoold exited with %v\n%s", waitErr, stderr.String())
	}

	seen := map[string]map[string]any{}
	for i, line := range strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("stderr line %d is not JSON: %v\n%s", i+1, err, line)
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := rec[k]; !ok {
				t.Errorf("line %d has no %q: %s", i+1, k, line)
			}
		}
		seen[rec["msg"].(string)] = rec
	}
	want := map[string][]string{
		"storage loaded":            {"mode", "topics", "partitions", "segments", "bytes", "took"},
		"spoold listening":          {"addr", "version"},
		"group rebalance completed": {"group", "generation", "members"},
		"member left":               {"group", "member"},
		"broker stopped":            nil,
	}
	for msg, fields := range want {
		rec, ok := seen[msg]
		if !ok {
			t.Errorf("no %q line; messages: %v", msg, keys(seen))
			continue
		}
		for _, f := range fields {
			if _, ok := rec[f]; !ok {
				t.Errorf("%q line lacks %q: %v", msg, f, rec)
			}
		}
	}
	if rec := seen["group rebalance completed"]; rec != nil && (rec["group"] != "logged-group" || rec["generation"] != float64(1)) {
		t.Errorf("rebalance line %v, want group logged-group at generation 1", rec)
	}
	if seen["no clean shutdown marker"] != nil {
		t.Error("a new data directory warned about an unclean shutdown")
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

//go:build linux

package server_test

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// TestAcceptOutOfDescriptorsKeepsServing runs spoold as a child process, lowers its
// RLIMIT_NOFILE (prlimit) to a few descriptors above what it holds, and opens more connections
// than that allows: accept fails with EMFILE, which the broker retries after a pause (a log
// line, spool.accept.retries) instead of returning from Serve and exiting (issue 28). Once the
// connections close, a new client is served.
func TestAcceptOutOfDescriptorsKeepsServing(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Fatalf("prlimit (util-linux) is needed: %v", err)
	}
	cmd := exec.Command(brokertest.Binary(t), "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--log-level", "warn",
		"--node-id", "0", "--set", "spool.metrics.listener=127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{}) // closed when spoold has exited; waitErr is then its status
	var waitErr error
	addrs, metricsAddrs := make(chan string, 1), make(chan string, 1)
	retrying := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "spoold metrics on "); ok {
				metricsAddrs <- rest
			}
			if rest, ok := strings.CutPrefix(sc.Text(), "spoold listening on "); ok {
				addrs <- rest
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			t.Log(sc.Text())
			if strings.Contains(sc.Text(), "accepting connections failed") {
				select {
				case retrying <- sc.Text():
				default:
				}
			}
		}
		io.Copy(io.Discard, stderr)
		waitErr = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	var addr, metricsAddr string
	select {
	case metricsAddr = <-metricsAddrs:
		addr = <-addrs
	case <-done:
		t.Fatalf("spoold exited at start: %v", waitErr)
	case <-time.After(60 * time.Second):
		t.Fatal("spoold did not start within 60s")
	}
	if err := apiVersions(addr); err != nil {
		t.Fatalf("before the limit: %v", err)
	}

	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	limit := len(fds) + 4
	if out, err := exec.Command(prlimit, "--pid", strconv.Itoa(cmd.Process.Pid), fmt.Sprintf("--nofile=%d:%d", limit, limit)).CombinedOutput(); err != nil {
		t.Fatalf("prlimit: %v: %s", err, out)
	}
	// The kernel completes the handshakes (the listen backlog); the broker runs out of
	// descriptors accepting them.
	var conns []net.Conn
	for range 3 * (limit - len(fds)) {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	select {
	case line := <-retrying:
		if !strings.Contains(line, "out_of_descriptors=true") {
			t.Errorf("retry log line does not say the broker is out of descriptors: %s", line)
		}
	case <-done:
		t.Fatalf("spoold exited when it ran out of descriptors: %v", waitErr)
	case <-time.After(30 * time.Second):
		t.Fatal("no accept retry was logged within 30s")
	}
	for _, c := range conns {
		c.Close()
	}
	// Descriptors free again: a new client is served (the broker may still be pausing, or
	// draining the backlog of closed connections).
	brokertest.WaitFor(t, 30*time.Second, "a client served after descriptors freed", func() bool {
		return apiVersions(addr) == nil
	})
	select {
	case <-done:
		t.Fatalf("spoold exited: %v", waitErr)
	default:
	}
	var retries int64
	brokertest.WaitFor(t, 30*time.Second, "spool_accept_retries_total > 0", func() bool {
		retries = scrapeMetric(metricsAddr, "spool_accept_retries_total")
		return retries > 0
	})
	t.Logf("accept retries: %d", retries)
}

// apiVersions sends an ApiVersions v0 request on a new connection and reads its answer.
func apiVersions(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	id := "accept-test"
	req := &wire.ApiVersionsRequest{}
	h := wire.RequestHeader{RequestApiKey: req.APIKey(), RequestApiVersion: 0, CorrelationId: 7, ClientId: &id}
	b := h.AppendTo(make([]byte, 4, 64), wire.LookupAPI(req.APIKey()).RequestHeaderVersion(0))
	b = req.AppendTo(b, 0)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	if _, err := c.Write(b); err != nil {
		return err
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, body); err != nil {
		return err
	}
	if len(body) < 6 || binary.BigEndian.Uint32(body) != 7 || binary.BigEndian.Uint16(body[4:]) != 0 {
		return fmt.Errorf("unexpected ApiVersions answer % x", body[:min(len(body), 8)])
	}
	return nil
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
)

// benchJSON runs `spool bench ... --json` and decodes its one line, checking the fields every
// run must get right: the mode, the value size, a positive rate and ordered percentiles.
func benchJSON(t *testing.T, addr, mode string, args ...string) benchResult {
	t.Helper()
	r := ok(t, runCLI(t, addr, "", append([]string{"bench", mode, "--json"}, args...)...))
	if r.stderr != "" {
		t.Fatalf("stderr not empty with --json: %q", r.stderr)
	}
	if strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("want one JSON line, got %q", r.stdout)
	}
	var res benchResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("bench %s output %q: %v", mode, r.stdout, err)
	}
	if res.Mode != mode || res.Records <= 0 || res.RecordsSec <= 0 || res.Seconds <= 0 {
		t.Fatalf("bench %s: %+v", mode, res)
	}
	if res.Bytes != int64(res.Records)*int64(res.Size) {
		t.Fatalf("bench %s: %d bytes for %d records of %d", mode, res.Bytes, res.Records, res.Size)
	}
	ps := []float64{res.P50ms, res.P90ms, res.P99ms, res.P999ms, res.Maxms}
	for i := 1; i < len(ps); i++ {
		if ps[i] < ps[i-1] {
			t.Fatalf("bench %s: percentiles out of order: %v", mode, ps)
		}
	}
	if mode != "consume" && ps[0] <= 0 {
		t.Fatalf("bench %s: p50 %v", mode, ps[0])
	}
	return res
}

// TestBenchModes runs each bench mode against a broker: produce creates the missing topic
// with --partitions, consume reads back exactly what was produced, e2e receives every record
// it sent, --rate and --duration bound the records sent.
func TestBenchModes(t *testing.T) {
	t.Parallel()
	addr := brokertest.Start(t, brokertest.Options{}).Addr

	res := benchJSON(t, addr, "produce", "--topic", "bp", "--partitions", "3", "--records", "20000", "--size", "200",
		"--linger", "1ms", "--batch-bytes", "65536", "--max-in-flight", "3", "--compression", "lz4")
	if res.Records != 20000 || res.Size != 200 || res.TargetRate != 0 {
		t.Fatalf("produce: %+v", res)
	}
	r := ok(t, runCLI(t, addr, "", "topic", "describe", "bp"))
	if !strings.Contains(r.stdout, "partitions 3") {
		t.Fatalf("bench did not create the topic with 3 partitions: %q", r.stdout)
	}
	res = benchJSON(t, addr, "consume", "--topic", "bp", "--records", "20000", "--size", "200")
	if res.Records != 20000 {
		t.Fatalf("consume: %+v", res)
	}

	// --rate with --records: exactly the records asked for.
	res = benchJSON(t, addr, "produce", "--topic", "bp", "--records", "300", "--rate", "3000", "--acks", "1")
	if res.Records != 300 || res.TargetRate != 3000 {
		t.Fatalf("produce --rate: %+v", res)
	}
	// --duration with --rate: record i goes out no earlier than i/rate - 1ms after the start
	// and none after the duration, so at most rate·(duration+1ms) records.
	res = benchJSON(t, addr, "produce", "--topic", "bp", "--duration", "300ms", "--rate", "1000")
	if res.Records < 1 || res.Records > 301 {
		t.Fatalf("produce --duration 300ms --rate 1000 sent %d records", res.Records)
	}

	// --idempotence reaches the producer: idempotence allows at most 5 requests in flight.
	if r := runCLI(t, addr, "", "bench", "produce", "--topic", "bp", "--records", "10", "--max-in-flight", "10", "--idempotence=true"); r.code != 2 || !strings.Contains(r.stderr, "at most MaxInFlight(5)") {
		t.Fatalf("--idempotence=true --max-in-flight 10: exit %d stderr %q", r.code, r.stderr)
	}
	res = benchJSON(t, addr, "produce", "--topic", "bp", "--records", "1000", "--max-in-flight", "10", "--idempotence=false")
	if res.Records != 1000 {
		t.Fatalf("produce --idempotence=false: %+v", res)
	}

	res = benchJSON(t, addr, "e2e", "--topic", "be", "--partitions", "2", "--records", "500", "--rate", "5000", "--size", "64")
	if res.Records != 500 || res.TargetRate != 5000 {
		t.Fatalf("e2e: %+v", res)
	}
	// e2e defaults to 1000 records/s.
	res = benchJSON(t, addr, "e2e", "--topic", "be", "--duration", "200ms")
	if res.TargetRate != 1000 || res.Records < 1 || res.Records > 201 {
		t.Fatalf("e2e --duration 200ms: %+v", res)
	}

	// The table, and nothing on stderr when it is not a terminal.
	r = ok(t, runCLI(t, addr, "", "bench", "produce", "--topic", "bp", "--records", "100"))
	if !strings.HasPrefix(r.stdout, "mode ") || !strings.Contains(r.stdout, "p99.9 ms") || !strings.Contains(r.stdout, "\nproduce ") || r.stderr != "" {
		t.Fatalf("table: stdout %q stderr %q", r.stdout, r.stderr)
	}
}

// TestBenchBadInput checks that bad flags exit 2 with the usage before any broker is
// contacted (the address given is closed).
func TestBenchBadInput(t *testing.T) {
	t.Parallel()
	const addr = "127.0.0.1:1"
	cases := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"bench", "produce"}, 2, "--topic is required"},
		{[]string{"bench", "soak", "--topic", "x"}, 2, "unknown subcommand"},
		{[]string{"bench", "produce", "--topic", "x", "--records", "0"}, 2, "--records must be > 0"},
		{[]string{"bench", "produce", "--topic", "x", "--records", "5", "--duration", "1s"}, 2, "not both"},
		{[]string{"bench", "produce", "--topic", "x", "--duration", "0s"}, 2, "--duration must be > 0"},
		{[]string{"bench", "produce", "--topic", "x", "--duration", "soon"}, 2, "duration"},
		{[]string{"bench", "produce", "--topic", "x", "--size", "-1"}, 2, "--size"},
		{[]string{"bench", "produce", "--topic", "x", "--rate", "-5"}, 2, "--rate must be >= 0"},
		{[]string{"bench", "produce", "--topic", "x", "--rate", "fast"}, 2, "rate"},
		{[]string{"bench", "consume", "--topic", "x", "--rate", "5"}, 2, "flag provided but not defined: -rate"},
		{[]string{"bench", "consume", "--topic", "x", "--timeout", "0s"}, 2, "--timeout must be > 0"},
		{[]string{"bench", "e2e", "--topic", "x", "--size", "4"}, 2, "--size must be >= 8"},
		{[]string{"bench", "produce", "--topic", "x", "--acks", "2"}, 2, "--acks"},
		{[]string{"bench", "produce", "--topic", "x", "--compression", "brotli"}, 2, "--compression"},
		{[]string{"bench", "produce", "--topic", "x", "--partitions", "-2"}, 2, "--partitions"},
		{[]string{"bench", "produce", "--topic", "x", "--linger", "-1ms"}, 2, "--linger"},
		{[]string{"bench", "produce", "--topic", "x", "--batch-bytes", "10"}, 2, "MaxBatchBytes"},
		{[]string{"bench", "produce", "--topic", "x", "--max-in-flight", "5000"}, 2, "MaxInFlight"},
		{[]string{"bench", "produce", "--topic", "x", "--bogus"}, 2, "bogus"},
	}
	for _, c := range cases {
		r := runCLI(t, addr, "", c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.stderr) || (c.code == 2 && !strings.Contains(r.stderr, "usage: spool") && !strings.Contains(r.stderr, "--help' lists the flags")) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, r.code, r.stderr, c.code, c.stderr)
		}
		if r.stdout != "" {
			t.Errorf("%v: stdout %q", c.args, r.stdout)
		}
	}
}

// TestBenchProgressOnTerminal: with stderr on a terminal (a pseudo-terminal from script(1)),
// bench redraws a progress line in place about 10 times a second while it runs, then the
// table follows.
func TestBenchProgressOnTerminal(t *testing.T) {
	t.Parallel()
	script := brokertest.NeedTool(t, "/usr/bin/script", "bsdutils")
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// 3000 records at 5000/s take 0.6 s: several redraws.
	cmdline := fmt.Sprintf("%s --brokers %s bench produce --topic prog --records 3000 --rate 5000 --size 100", bin, addr)
	out, err := exec.CommandContext(ctx, script, "-qfec", cmdline, "/dev/null").CombinedOutput()
	if err != nil {
		t.Fatalf("script: %v\n%s", err, out)
	}
	s := string(out)
	if n := strings.Count(s, "\r\x1b[K["); n < 2 || !strings.Contains(s, "records") || !strings.Contains(s, "rec/s") {
		t.Fatalf("%d progress redraws, want at least 2:\n%q", n, s)
	}
	if !strings.Contains(s, "#") {
		t.Fatalf("the bar never filled:\n%q", s)
	}
	if !strings.Contains(s, "p99.9 ms") {
		t.Fatalf("no table after the progress line:\n%q", s)
	}
}

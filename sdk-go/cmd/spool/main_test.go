package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
)

var bin string

// parallelTests is how many of this package's tests run at once unless -test.parallel says
// otherwise: they wait on the CLI processes they run and on the brokers those talk to.
const parallelTests = 6

func TestMain(m *testing.M) {
	flag.Parse()
	brokertest.DefaultParallel(parallelTests)
	dir, err := os.MkdirTemp("", "spoolcli")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "spool")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building spool: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

// runCLI runs the built CLI with SPOOL_BROKERS=addr and an empty profile.
func runCLI(t *testing.T, addr, stdin string, args ...string) result {
	t.Helper()
	return runCLIEnv(t, []string{"SPOOL_BROKERS=" + addr, "SPOOL_CONFIG=" + os.DevNull}, stdin, args...)
}

// runCLIEnv runs the built CLI with env added to the test's environment.
func runCLIEnv(t *testing.T, env []string, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, out.String(), errb.String()}
}

func ok(t *testing.T, r result) result {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	return r
}

func TestCLIEndToEnd(t *testing.T) {
	t.Parallel()
	addr := brokertest.Start(t, brokertest.Options{}).Addr

	r := ok(t, runCLI(t, addr, "", "topic", "create", "orders", "--partitions", "3", "--replication-factor", "1", "--config", "retention.ms=86400000"))
	if !strings.Contains(r.stdout, "created orders") {
		t.Fatalf("create: %q", r.stdout)
	}
	r = ok(t, runCLI(t, addr, "", "topic", "list"))
	if !regexp.MustCompile(`(?m)^orders\s+3\s+1$`).MatchString(r.stdout) {
		t.Fatalf("list: %q", r.stdout)
	}
	r = ok(t, runCLI(t, addr, "", "topic", "describe", "orders"))
	if !strings.Contains(r.stdout, "partitions 3") || !strings.Contains(r.stdout, "retention.ms=86400000") {
		t.Fatalf("describe: %q", r.stdout)
	}
	r = ok(t, runCLI(t, addr, "", "cluster", "info"))
	if !strings.Contains(r.stdout, "brokers:") || !strings.Contains(r.stdout, "cluster id:") {
		t.Fatalf("cluster info: %q", r.stdout)
	}

	// Keyed produce: key1 → 2, key2 → 2, key3 → 1 of 3 partitions (Kafka murmur2).
	in := "key1:a\nkey2:b\nkey3:c\nkey1:d\n"
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		ok(t, runCLI(t, addr, in, "produce", "--topic", "orders", "--key-separator", ":", "--compression", codec))
	}
	r = ok(t, runCLI(t, addr, "", "consume", "--topic", "orders", "--from-beginning", "--count", "20", "--format", `%t %p %k=%v %h\n`))
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 20 {
		t.Fatalf("consumed %d lines: %q", len(lines), r.stdout)
	}
	want := map[string]string{"key1": "2", "key2": "2", "key3": "1"}
	for _, l := range lines {
		f := strings.Fields(l)
		k, _, _ := strings.Cut(f[2], "=")
		if f[0] != "orders" || want[k] != f[1] {
			t.Fatalf("line %q: key %s on partition %s, want %s", l, k, f[1], want[k])
		}
	}
	// Round-robin, acks=0 and 1, sticky.
	ok(t, runCLI(t, addr, "x\ny\nz\n", "produce", "--topic", "orders", "--partitioner", "roundrobin", "--acks", "1"))
	ok(t, runCLI(t, addr, "x\ny\nz\n", "produce", "--topic", "orders", "--partitioner", "sticky", "--acks", "0"))
	r = ok(t, runCLI(t, addr, "", "consume", "--topic", "orders", "--from-beginning", "--count", "26", "--format", `%o %T\n`))
	if n := strings.Count(r.stdout, "\n"); n != 26 {
		t.Fatalf("consumed %d", n)
	}

	// Bench.
	ok(t, runCLI(t, addr, "", "topic", "create", "bench", "--partitions", "2"))
	r = ok(t, runCLI(t, addr, "", "bench", "produce", "--topic", "bench", "--records", "5000", "--size", "100", "--json"))
	var br map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &br); err != nil || br["records"].(float64) != 5000 {
		t.Fatalf("bench produce json %q: %v", r.stdout, err)
	}
	r = ok(t, runCLI(t, addr, "", "bench", "consume", "--topic", "bench", "--records", "5000"))
	if !strings.Contains(r.stdout, "p99.9 ms") {
		t.Fatalf("bench consume table %q", r.stdout)
	}

	ok(t, runCLI(t, addr, "", "topic", "delete", "orders"))
	r = ok(t, runCLI(t, addr, "", "topic", "list"))
	if strings.Contains(r.stdout, "orders") {
		t.Fatalf("orders still listed: %q", r.stdout)
	}
}

func TestCLIBadInput(t *testing.T) {
	t.Parallel()
	// Without automatic topic creation, so that a produce to an unknown topic fails.
	addr := brokertest.Start(t, brokertest.Options{Props: map[string]string{"auto.create.topics.enable": "false"}}).Addr
	cases := []struct {
		name   string
		addr   string
		args   []string
		code   int
		stderr string
	}{
		{"no command", addr, nil, 2, "no command"},
		{"unknown command", addr, []string{"frobnicate"}, 2, "unknown command"},
		{"unknown flag", addr, []string{"produce", "--topic", "x", "--bogus"}, 2, "bogus"},
		{"missing topic", addr, []string{"produce"}, 2, "--topic is required"},
		{"bad acks", addr, []string{"produce", "--topic", "x", "--acks", "2"}, 2, "--acks"},
		{"bad compression", addr, []string{"produce", "--topic", "x", "--compression", "brotli"}, 2, "--compression"},
		{"bad partitioner", addr, []string{"produce", "--topic", "x", "--partitioner", "random"}, 2, "--partitioner"},
		{"bad partitions", addr, []string{"topic", "create", "x", "--partitions", "many"}, 2, "partitions"},
		{"topic no sub", addr, []string{"topic"}, 2, "missing subcommand"},
		{"bench bad sub", addr, []string{"bench", "e3", "--topic", "x"}, 2, "unknown subcommand"},
		{"unknown topic produce", addr, []string{"produce", "--topic", "nope"}, 1, "UNKNOWN_TOPIC_OR_PARTITION"},
		{"unknown topic consume", addr, []string{"consume", "--topic", "nope"}, 1, "UNKNOWN_TOPIC_OR_PARTITION"},
		{"unknown topic describe", addr, []string{"topic", "describe", "nope"}, 1, "UNKNOWN_TOPIC_OR_PARTITION"},
		{"unknown topic delete", addr, []string{"topic", "delete", "nope"}, 1, "UNKNOWN_TOPIC_OR_PARTITION"},
		{"broker down", "127.0.0.1:1", []string{"topic", "list"}, 1, "127.0.0.1:1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runCLI(t, c.addr, "line\n", c.args...)
			if r.code != c.code || !strings.Contains(r.stderr, c.stderr) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", r.code, r.stderr, c.code, c.stderr)
			}
			checkOnePrefix(t, r.stderr)
		})
	}
	// --brokers overrides SPOOL_BROKERS.
	r := runCLI(t, "127.0.0.1:1", "", "--brokers", addr, "topic", "list")
	if r.code != 0 {
		t.Fatalf("--brokers: exit %d %s", r.code, r.stderr)
	}
}

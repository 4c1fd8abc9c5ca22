package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/conformance/drivers"
)

// cliEnv makes the test binary the spool-conformance command (see TestMain), so a test can
// run it as a process with an environment of its own instead of changing the test's.
const cliEnv = "SPOOL_CONFORMANCE_TEST_CLI"

func TestMain(m *testing.M) {
	drivers.MaybeServe()
	if os.Getenv(cliEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// runCLIProcess runs the command as a process (this test binary, see cliEnv) with env added
// to the test's environment.
func runCLIProcess(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Env = append(append(os.Environ(), cliEnv+"=1"), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestBadUsageExits2(t *testing.T) {
	for _, args := range [][]string{
		{"--bogus"},
		{}, // no --bootstrap
		{"--bootstrap", "127.0.0.1:1", "--driver", "cobol"},
		{"--bootstrap", "127.0.0.1:1", "--cases", "nothing/*"},
		{"--bootstrap", "127.0.0.1:1", "--parallel", "0"},
		{"--bootstrap", "127.0.0.1:1", "extra"},
		{"--bootstrap", "127.0.0.1:1", "--driver", "java"}, // no --java-classpath
		{"--target", "spool,mainframe"},
		{"--bootstrap", "127.0.0.1:1", "--target", "spool"},
		{"--target", "spool", "--driver", "go,cobol"},
		{"--bootstrap", "127.0.0.1:1", "--sasl-username", "u"}, // no --sasl-mechanism
		{"--bootstrap", "127.0.0.1:1", "--sasl-mechanism", "GSSAPI", "--sasl-username", "u"},
		{"--bootstrap", "127.0.0.1:1", "--tls-ca", "/nonexistent/ca.pem"},
		{"--target", "spool", "--tls"}, // targets start plaintext brokers
		{"reference-kafka", "--bogus"},
		{"reference-kafka", "extra"},
	} {
		code, _, stderr := runCLI(args...)
		if code != 2 || !strings.HasPrefix(stderr, "spool-conformance: ") || strings.Count(stderr, "\n") != 2 {
			t.Errorf("%q: exit %d, stderr %q; want 2 and a two-line message", args, code, stderr)
		}
	}
}

func TestList(t *testing.T) {
	code, out, _ := runCLI("--list", "--cases", "groups")
	if code != 0 || !strings.Contains(out, "groups/lifecycle") || strings.Contains(out, "produce/") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// A run against a real broker: the table with its summary, JSON lines and JUnit XML.
func TestRunAgainstSpool(t *testing.T) {
	t.Parallel()
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	code, out, stderr := runCLI("--bootstrap", addr, "--cases", "produce/codec-*,client/produce-consume")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	if !strings.Contains(out, "client/produce-consume") || !strings.HasSuffix(out, "6 passed, 0 failed\n") {
		t.Errorf("table:\n%s", out)
	}

	junit := filepath.Join(t.TempDir(), "out.xml")
	code, out, _ = runCLI("--bootstrap", addr, "--cases", "fetch/mid-batch,client/null-and-empty", "--driver", "franz-go", "--json", "--junit", junit)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d JSON lines, want 2 cases and a summary:\n%s", len(lines), out)
	}
	var summary struct {
		Passed, Failed int
		Driver         string
	}
	if err := json.Unmarshal([]byte(lines[2]), &summary); err != nil || summary.Passed != 2 || summary.Driver != "franz-go" {
		t.Errorf("summary %s: %+v %v", lines[2], summary, err)
	}
	data, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var suites struct {
		Tests  int `xml:"tests,attr"`
		Suites []struct {
			Name string `xml:"name,attr"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &suites); err != nil || suites.Tests != 2 || len(suites.Suites) != 2 {
		t.Errorf("JUnit: %+v %v\n%s", suites, err, data)
	}
}

// A failing case makes the exit status 1 and says why in the table.
func TestFailureExits1(t *testing.T) {
	t.Parallel()
	addr := brokertest.Start(t, brokertest.Options{Props: map[string]string{"auto.create.topics.enable": "false"}}).Addr
	code, out, _ := runCLI("--bootstrap", addr, "--cases", "metadata/auto-create,metadata/cluster", "--case-timeout", "5s")
	if code != 1 || !strings.Contains(out, "FAIL") || !strings.HasSuffix(out, "1 passed, 1 failed\n") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

// An external driver that cannot be built says what is missing, before any case runs.
func TestExternalDriverMissingLibrary(t *testing.T) {
	brokertest.NeedTool(t, "/usr/bin/pkg-config", "pkg-config")
	t.Setenv("PKG_CONFIG_PATH", t.TempDir())
	t.Setenv("PKG_CONFIG_LIBDIR", t.TempDir()) // not the system's directories either
	code, out, stderr := runCLI("--bootstrap", "127.0.0.1:1", "--driver", "c", "--cases", "client/acks-1")
	if code != 1 || out != "" || !strings.Contains(stderr, "libspool not found") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1 and libspool not found", code, out, stderr)
	}
}

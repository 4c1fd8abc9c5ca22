package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	spool "github.com/spoolmq/spool/sdk-go"
)

// TestPython runs the Python binding's pytest suite against a real broker and the library
// as installed, then reads what its cross-language test produced with the Go SDK and with
// kcat: the same bytes, and keyed records in murmur2's partitions. tests/test_security.py runs
// against startSecureBroker's SASL_SSL listener.
func TestPython(t *testing.T) {
	t.Parallel()
	prefix := install(t, "")
	python := brokertest.NeedPython(t, "pytest", "python3-pytest")
	kcat := brokertest.NeedTool(t, "/usr/bin/kcat", "kcat")
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	cl, err := spool.NewClient(spool.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const cross, partitions, n = "py-cross", 4, 60
	if err := cl.Admin().CreateTopic(ctx, cross, partitions, 1, nil); err != nil {
		t.Fatal(err)
	}

	cmd := exec.CommandContext(ctx, python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", "-W", "error", "tests")
	cmd.Dir = filepath.Join("bindings", "python")
	cmd.Env = append(os.Environ(), "SPOOL_BROKERS="+addr, "SPOOL_LIBRARY="+filepath.Join(prefix, "lib", "libspool.so.0"),
		"SPOOL_CROSS_TOPIC="+cross, "PYTHONPATH=.", "PYTHONDONTWRITEBYTECODE=1")
	cmd.Env = append(cmd.Env, startSecureBroker(t).env()...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pytest: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`(?m)^\d+ passed in `).Match(out) || bytes.Contains(out, []byte("skipped")) {
		t.Fatalf("pytest did not pass every test:\n%s", out)
	}

	// What Python wrote, as the Go SDK reads it.
	want := map[string][]byte{} // key → value, the last per key
	for i := range n {
		want[fmt.Sprintf("schlüssel-%d", i%12)] = append([]byte(fmt.Sprintf("wert-%d-é", i)), byte(0x80+i))
	}
	if err := cl.AssignTopic(ctx, cross, spool.OffsetStart()); err != nil {
		t.Fatal(err)
	}
	got := 0
	last := map[string][]byte{}
	for got < n {
		recs, err := cl.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			got++
			if p := spool.KafkaPartition(r.Key, partitions); int(r.Partition) != p {
				t.Errorf("key %q in partition %d, murmur2 says %d", r.Key, r.Partition, p)
			}
			last[string(r.Key)] = r.Value
		}
	}
	for k, v := range want {
		if !bytes.Equal(last[k], v) {
			t.Errorf("Go SDK: key %q value %q, want %q", k, last[k], v)
		}
	}

	// The same through kcat (librdkafka): partition, key and value bytes.
	kout, err := exec.CommandContext(ctx, kcat, "-C", "-b", addr, "-t", cross, "-o", "beginning", "-e", "-q",
		"-f", "%p\t%k\t%s\n").Output()
	if err != nil {
		t.Fatalf("kcat: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(kout), "\n"), "\n")
	if len(lines) != n {
		t.Fatalf("kcat read %d records, want %d", len(lines), n)
	}
	klast := map[string]string{}
	for _, l := range lines {
		f := strings.SplitN(l, "\t", 3)
		if len(f) != 3 {
			t.Fatalf("kcat line %q", l)
		}
		if want := fmt.Sprint(spool.KafkaPartition([]byte(f[1]), partitions)); f[0] != want {
			t.Errorf("kcat: key %q in partition %s, want %s", f[1], f[0], want)
		}
		klast[f[1]] = f[2]
	}
	for k, v := range want {
		if klast[k] != string(v) {
			t.Errorf("kcat: key %q value %q, want %q", k, klast[k], v)
		}
	}
}

// TestExamplePython runs examples/python/quickstart.py twice against a broker, with the
// binding from this tree and the library as installed.
func TestExamplePython(t *testing.T) {
	t.Parallel()
	prefix := install(t, "")
	python := brokertest.NeedTool(t, "/usr/bin/python3", "python3")
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	env := append(os.Environ(), "PYTHONPATH=bindings/python", "PYTHONDONTWRITEBYTECODE=1",
		"SPOOL_LIBRARY="+filepath.Join(prefix, "lib", "libspool.so.0"))
	checkQuickstart(t, "py-quickstart", func() []byte {
		return run(t, time.Minute, ".", env, python, "../examples/python/quickstart.py", addr)
	})
}

package main

import (
	"context"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
)

// conformanceBlocks are the sh blocks of the root README's "## Conformance" section.
func conformanceBlocks(t *testing.T) []string {
	blocks := brokertest.ReadmeBlocks(t, filepath.Join("..", "..", "..", "README.md"), "## Conformance")
	if len(blocks) < 3 {
		t.Fatalf("README.md Conformance: %d sh blocks, want at least 3", len(blocks))
	}
	return blocks
}

// TestReadmeConformance runs the README's Conformance commands as pasted, from a directory
// holding bin/spool-conformance and bin/spoold (built here: `make build` is what puts them
// there), against a fresh broker standing in for 127.0.0.1:9092, each block with bash -e -o
// pipefail: your broker, your SDK through --driver-cmd, and a --target matrix of spool and
// spool-cluster (ZooKeeper from Debian's package), whose Markdown and JUnit files are checked.
// The block that starts the reference Kafka brokers (a minute of JVM starts) runs with
// CONFORMANCE_README_KAFKA=1, as make conformance-matrix sets it, from the repository root.
func TestReadmeConformance(t *testing.T) {
	t.Parallel()
	brokertest.NeedTool(t, "/usr/share/java/zookeeper.jar", "zookeeper")
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	for pkg, out := range map[string]string{".": "spool-conformance", "../../../broker/cmd/spoold": "spoold"} {
		build := exec.Command("go", "build", "-o", filepath.Join(bin, out), pkg)
		if b, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, b)
		}
	}
	addr := brokertest.Start(t, brokertest.Options{Props: map[string]string{"group.initial.rebalance.delay.ms": "0"}}).Addr
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, block := range conformanceBlocks(t) {
		runDir := dir
		if strings.Contains(block, "make reference-kafka") {
			if os.Getenv("CONFORMANCE_README_KAFKA") == "" {
				t.Logf("not run (set CONFORMANCE_README_KAFKA=1; make conformance-matrix does):\n%s", block)
				continue
			}
			runDir = root
			t.Cleanup(func() { os.Remove(filepath.Join(root, "matrix.md")) }) // the block's output, not the repository's
		}
		block = strings.ReplaceAll(strings.ReplaceAll(block, "make build\n", ""), "127.0.0.1:9092", addr)
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", block)
		cmd.Dir = runDir
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("block failed: %v\n--- block\n%s--- output\n%s", err, block, out)
		}
		ran++
		if strings.Contains(block, "--target spool,spool-cluster") {
			md, err := os.ReadFile(filepath.Join(dir, "matrix.md"))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"| spool | go |", "| spool-cluster | franz-go |", "`client/acks-all`"} {
				if !strings.Contains(string(md), want) {
					t.Errorf("matrix.md lacks %q:\n%s", want, md)
				}
			}
			var suites struct {
				Tests  int `xml:"tests,attr"`
				Suites []struct {
					Name string `xml:"name,attr"`
				} `xml:"testsuite"`
			}
			data, err := os.ReadFile(filepath.Join(dir, "matrix.xml"))
			if err != nil {
				t.Fatal(err)
			}
			// spool: the wire case (skipped on one node) and the client case with go, the
			// client case with franz-go; the same on spool-cluster.
			if err := xml.Unmarshal(data, &suites); err != nil || suites.Tests != 6 || len(suites.Suites) != 6 {
				t.Errorf("matrix.xml: %+v %v\n%s", suites, err, data)
			}
		}
	}
	if ran < 3 {
		t.Errorf("%d blocks ran, want at least 3", ran)
	}
}

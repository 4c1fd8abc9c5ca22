package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
)

// TestReadmeCommandsRunAsPasted runs every shell block of the READMEs' CLI sections, in order,
// as a user pastes them: from a directory holding bin/spool and README.md, against a fresh broker, each
// block with bash -e -o pipefail, so that any command failing (a typo, an alternation such as
// `a | b`, a placeholder) fails the test.
func TestReadmeCommandsRunAsPasted(t *testing.T) {
	t.Parallel()
	for _, doc := range []struct {
		file, heading string
		// kafkaClient: the block talks to 127.0.0.1:9092 after `make run &`; the test's broker
		// stands in for it, and kcat must be installed.
		kafkaClient bool
	}{
		{"README.md", "## The `spool` CLI", false},
		{"sdk-go/README.md", "## CLI", false},
		{"sdk-go/README.md", "## Exactly-once (transactions)", false},
		{"README.md", "### Using it with any Kafka client", true},
	} {
		t.Run(doc.file+" "+doc.heading, func(t *testing.T) {
			if doc.kafkaClient {
				brokertest.NeedTool(t, "/usr/bin/kcat", "kcat")
			}
			addr := brokertest.Start(t, brokertest.Options{}).Addr
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(bin, filepath.Join(dir, "bin", "spool")); err != nil {
				t.Fatal(err)
			}
			// The blocks run from the repository root; README.md is the file one of them sends.
			readme, err := filepath.Abs(filepath.Join("..", "..", "..", "README.md"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(readme, filepath.Join(dir, "README.md")); err != nil {
				t.Fatal(err)
			}
			for _, block := range brokertest.ReadmeBlocks(t, filepath.Join("..", "..", "..", doc.file), doc.heading) {
				if doc.kafkaClient {
					block = strings.ReplaceAll(strings.ReplaceAll(block, "make run &\n", ""), "127.0.0.1:9092", addr)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", block)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "SPOOL_BROKERS="+addr)
				out, err := cmd.CombinedOutput()
				cancel()
				if err != nil {
					t.Fatalf("block failed: %v\n--- block\n%s--- output\n%s", err, block, out)
				}
			}
		})
	}
}

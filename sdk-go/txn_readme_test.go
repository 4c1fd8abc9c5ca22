package spool_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	spool "github.com/spoolmq/spool/sdk-go"
)

// TestReadmeTransactionsProgram builds the Go program of README.md's "Exactly-once
// (transactions)" section as it is written there (through a build overlay, so nothing is
// written into the module), runs it against a broker, and reads what it wrote: the committed
// transaction's five records, and not the aborted one's.
func TestReadmeTransactionsProgram(t *testing.T) {
	t.Parallel()
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	src := readmeGoBlock(t, "README.md", "## Exactly-once (transactions)")
	if !strings.Contains(src, `"127.0.0.1:9092"`) {
		t.Fatal("the README program does not dial 127.0.0.1:9092")
	}
	src = strings.ReplaceAll(src, "127.0.0.1:9092", addr)
	dir := t.TempDir()
	mainGo := filepath.Join(dir, "main.go")
	if err := os.WriteFile(mainGo, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(here, "internal", "readmetxn", "main.go"): mainGo}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "overlay.json"), overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "readmetxn")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-overlay", filepath.Join(dir, "overlay.json"), "-o", bin, "./internal/readmetxn")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the README program: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(ctx, bin).CombinedOutput()
	if err != nil {
		t.Fatalf("running the README program: %v\n%s", err, out)
	}
	if want := "committed transaction 0\naborted transaction 1\n"; string(out) != want {
		t.Errorf("the README program printed %q, want %q", out, want)
	}
	got := readAll(t, addr, "payments", spool.ReadCommitted, 5)
	if want := []string{"paid 0", "paid 1", "paid 2", "paid 3", "paid 4"}; !slices.Equal(got, want) {
		t.Errorf("read_committed: %q, want %q", got, want)
	}
}

// readmeGoBlock returns the first ```go block of the section under heading in path.
func readmeGoBlock(t *testing.T, path, heading string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	i := strings.Index(s, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("%s has no %q", path, heading)
	}
	s = s[i+len(heading)+2:]
	if end := strings.Index(s, "\n## "); end >= 0 {
		s = s[:end]
	}
	start := strings.Index(s, "```go\n")
	if start < 0 {
		t.Fatalf("%s: no go block under %q", path, heading)
	}
	s = s[start+len("```go\n"):]
	end := strings.Index(s, "```\n")
	if end < 0 {
		t.Fatalf("%s: the go block under %q does not end", path, heading)
	}
	return s[:end]
}

package server_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
)

// TestReadmeSecurity runs the README's security example as a user pastes it (a CA and a broker
// certificate with openssl, a broker with PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL listeners,
// kcat over SSL, SASL_PLAINTEXT and SASL_SSL), on ports and directories of its own.
func TestReadmeSecurity(t *testing.T) {
	brokertest.NeedTool(t, "/usr/bin/kcat", "kcat")
	brokertest.NeedTool(t, "/usr/bin/openssl", "openssl")
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)
	i := strings.Index(section, "### Security")
	if i < 0 {
		t.Fatal("README has no ### Security section")
	}
	section = section[i:]
	start := strings.Index(section, "```sh\n")
	end := strings.Index(section[start+6:], "```")
	if start < 0 || end < 0 {
		t.Fatal("no sh block in ### Security")
	}
	block := section[start+6 : start+6+end]
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(brokertest.Binary(t), filepath.Join(dir, "bin", "spoold")); err != nil {
		t.Fatal(err)
	}
	base := freeRun(t, 4)
	script := strings.NewReplacer(
		"127.0.0.1:909", fmt.Sprintf("127.0.0.1:%d", base/10),
		"/tmp/spool-tls", filepath.Join(dir, "tls"),
		"/tmp/spool-sec", filepath.Join(dir, "data"),
	).Replace(block)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A file, not a pipe: the broker left in the background keeps its output open, and Wait
	// would wait for a pipe until the broker ends.
	out, err := os.Create(filepath.Join(dir, "output"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The block leaves the broker running in the background: end it.
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	err = cmd.Wait()
	text, rerr := os.ReadFile(out.Name())
	if rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil {
		t.Fatalf("security example failed: %v\n--- script\n%s\n--- output\n%s", err, script, text)
	}
	if !strings.Contains(string(text), "hello-ssl\nhello-sasl\n") {
		t.Errorf("the SASL_SSL consumer did not read both records:\n%s", text)
	}
}

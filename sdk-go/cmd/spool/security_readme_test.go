package main

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
	"github.com/spoolmq/spool/protocol-spec/loopport"
)

// TestReadmeClientSecurity runs the README's "Client settings" block as a user pastes it: a CA
// and a broker certificate with openssl, a SASL_SSL broker with the ACL authorizer, and the
// spool CLI as the admin (from a profile) and as alice (flags and $SPOOL_SASL_PASSWORD), on a
// port and in a directory of its own.
func TestReadmeClientSecurity(t *testing.T) {
	t.Parallel()
	brokertest.NeedTool(t, "/usr/bin/openssl", "openssl")
	block := brokertest.ReadmeBlocks(t, filepath.Join("..", "..", "..", "README.md"), "#### Client settings (`spool`, the Go SDK, the C ABI)")[0]
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"spool": bin, "spoold": brokertest.Binary(t)} {
		if err := os.Symlink(target, filepath.Join(dir, "bin", name)); err != nil {
			t.Fatal(err)
		}
	}
	port, err := loopport.Pick()
	if err != nil {
		t.Fatal(err)
	}
	script := strings.NewReplacer("127.0.0.1:9141", fmt.Sprintf("127.0.0.1:%d", port), "/tmp/spool-cli-sec", filepath.Join(dir, "sec")).Replace(block)
	path := filepath.Join(dir, "readme.sh")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", path)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SPOOL_BROKERS=", "SPOOL_SASL_PASSWORD=")
	// The block's background broker is in the script's process group: it goes with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// Output to a file, not a pipe: the background broker holds it open after the script.
	out, err := os.Create(filepath.Join(dir, "output"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the broker the block left running
	b, _ := os.ReadFile(out.Name())
	text := string(b)
	if err != nil {
		t.Fatalf("client settings block failed: %v\n--- script\n%s\n--- output\n%s", err, script, text)
	}
	for _, want := range []string{"set SCRAM-SHA-512 credential of alice (8192 iterations)", "alice  SCRAM-SHA-512  8192",
		"TOPIC_AUTHORIZATION_FAILED", "alice refused: no ACL yet", "User:alice  *     Read", "\npaid\n",
		"SASL_AUTHENTICATION_FAILED", "wrong password refused"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}

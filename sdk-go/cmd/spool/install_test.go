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

// `make install PREFIX=DIR`, as the README says, puts both binaries in DIR/bin (and libspool
// under DIR), and the installed spool and spoold run. It builds as make build does (bin/ of the
// repository, gitignored); libspool's build goes to a temporary BUILD. A second install
// reuses that build.
func TestMakeInstallPutsBothBinaries(t *testing.T) {
	t.Parallel()
	makeBin := brokertest.NeedTool(t, "/usr/bin/make", "make")
	dir := t.TempDir()
	prefix := filepath.Join(dir, "prefix")
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, makeBin, "-s", "-C", root, "install", "PREFIX="+prefix, "BUILD="+filepath.Join(dir, "cgo-build"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	for name, args := range map[string][]string{"spool": {"--version"}, "spoold": {"--help"}} {
		path := filepath.Join(prefix, "bin", name)
		st, err := os.Stat(path)
		if err != nil || st.Mode()&0o111 == 0 {
			t.Errorf("%s not installed as an executable: %v", path, err)
			continue
		}
		out, err := exec.CommandContext(ctx, path, args...).Output()
		if err != nil || !strings.Contains(string(out), name) {
			t.Errorf("installed %s %v: %v\n%s", name, args, err, out)
		}
	}
	for _, f := range []string{"include/spool.h", "lib/pkgconfig/spool.pc"} {
		if _, err := os.Stat(filepath.Join(prefix, f)); err != nil {
			t.Errorf("libspool not installed: %v", err)
		}
	}
	// Installing again after a build reuses it: make's dry run of a second install lists no
	// compilation (it took 89 s when install re-ran the whole build), only the copies.
	out, err := exec.CommandContext(ctx, makeBin, "-n", "-C", root, "install", "PREFIX="+prefix, "BUILD="+filepath.Join(dir, "cgo-build")).CombinedOutput()
	if err != nil {
		t.Fatalf("make -n install: %v\n%s", err, out)
	}
	if strings.Contains(string(out), " build ") || !strings.Contains(string(out), "install -m 0755 bin/spoold bin/spool") {
		t.Errorf("a second make install builds again instead of reusing the build:\n%s", out)
	}
}

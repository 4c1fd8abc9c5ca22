package brokertest

import (
	"flag"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// NeedTool returns path when it exists. A missing tool fails the test under CI=true, where
// make test has installed it, and skips it elsewhere, saying which Debian package to install.
func NeedTool(t testing.TB, path, pkg string) string {
	t.Helper()
	SkipShort(t)
	if _, err := os.Stat(path); err != nil {
		missing(t, path+" (Debian "+pkg+") is not installed; make test installs it when run as root")
	}
	return path
}

// NeedPython checks that /usr/bin/python3 imports a Debian-packaged module, with NeedTool's
// rule for what a missing one means.
func NeedPython(t testing.TB, module, pkg string) string {
	t.Helper()
	python := NeedTool(t, "/usr/bin/python3", "python3")
	if out, err := exec.Command(python, "-c", "import "+module).CombinedOutput(); err != nil {
		missing(t, "python module "+module+" (Debian "+pkg+") is missing: "+string(out))
	}
	return python
}

func missing(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// SkipShort skips a test under go test -short (make test-short, a developer's inner loop) when
// it starts processes: a spoold, the CLI, ZooKeeper, a JVM or another client. NeedTool, Binary
// and CLI call it, so every test that needs one of those is skipped there; make test never
// runs with -short.
func SkipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: this test starts processes")
	}
}

// DefaultParallel sets how many parallel tests a test binary runs at once (go test -parallel)
// to n unless the command line set it: a TestMain calls it before m.Run, after flag.Parse.
// Tests that wait on brokers and processes want more than go test's default of GOMAXPROCS.
func DefaultParallel(n int) {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", strconv.Itoa(n))
	}
}

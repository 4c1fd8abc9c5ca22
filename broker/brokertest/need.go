package brokertest

import (
	"os"
	"os/exec"
	"testing"
)

// NeedTool returns path when it exists. A missing tool fails the test under CI=true, where
// make test has installed it, and skips it elsewhere, saying which Debian package to install.
func NeedTool(t testing.TB, path, pkg string) string {
	t.Helper()
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

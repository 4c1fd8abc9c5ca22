package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
)

// pyBundleScript produces a record and reads it back through the installed package, and
// prints where the library was loaded from.
const pyBundleScript = `
import sys
import spool
from spool import _lib
brokers, topic = sys.argv[1], sys.argv[2]
p = spool.Producer({"bootstrap.servers": brokers})
p.produce(topic, b"bundled")
if p.flush(30) != 0:
    raise SystemExit("flush left records unsent")
c = spool.Consumer({"bootstrap.servers": brokers, "group.id": "bundle", "auto.offset.reset": "earliest"})
c.subscribe([topic])
for _ in range(60):
    m = c.poll(1.0)
    if m is not None and m.error() is None:
        print("read", m.value().decode())
        break
c.close()
print("library", _lib._find_library())
`

// TestPythonPackageBundlesLibspool: pip install of the Python binding copies libspool into the
// package, as confluent-kafka's wheels carry librdkafka, so the installed package produces and
// consumes from any directory in a shell with neither SPOOL_LIBRARY, PKG_CONFIG_PATH,
// PYTHONPATH nor LD_LIBRARY_PATH. (Before, import failed there: "libspool not found".)
func TestPythonPackageBundlesLibspool(t *testing.T) {
	t.Parallel()
	prefix := install(t, "")
	python := brokertest.NeedTool(t, "/usr/bin/python3", "python3")
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	dir := t.TempDir()
	// A copy of the package's source, so the in-tree build leaves the repository alone.
	src := filepath.Join(dir, "src")
	for _, f := range []string{"pyproject.toml", "setup.py", "spool/__init__.py", "spool/_lib.py"} {
		data, err := os.ReadFile(filepath.Join("bindings", "python", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(src, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A shell without the library's whereabouts.
	var env []string
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "SPOOL_LIBRARY", "PKG_CONFIG_PATH", "PYTHONPATH", "LD_LIBRARY_PATH":
		default:
			env = append(env, kv)
		}
	}
	venv := filepath.Join(dir, "venv")
	run(t, time.Minute, dir, env, python, "-m", "venv", "--system-site-packages", venv)
	// Offline: setuptools from the system (no build isolation), nothing from an index. The
	// library to bundle is named at build time only.
	run(t, 3*time.Minute, dir, append(env, "SPOOL_LIBRARY="+filepath.Join(prefix, "lib", "libspool.so.0")),
		filepath.Join(venv, "bin", "pip"), "install", "-q", "--no-build-isolation", "--no-index", "--no-deps", "--no-cache-dir", src)
	bundled, _ := filepath.Glob(filepath.Join(venv, "lib", "python3*", "site-packages", "spool", "libspool.so.0"))
	if len(bundled) != 1 {
		t.Fatalf("pip install put no libspool.so.0 in the package (found %v)", bundled)
	}
	out := string(run(t, 2*time.Minute, t.TempDir(), env, filepath.Join(venv, "bin", "python"), "-c", pyBundleScript, addr, "bundled-topic"))
	if !strings.Contains(out, "read bundled\n") {
		t.Errorf("the installed package did not read back its record:\n%s", out)
	}
	if !strings.Contains(out, "library "+bundled[0]+"\n") {
		t.Errorf("the library was not loaded from the package (%s):\n%s", bundled[0], out)
	}
}

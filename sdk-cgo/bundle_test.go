package main

import (
	"encoding/json"
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
	src := copyFiles(t, filepath.Join("bindings", "python"), filepath.Join(dir, "src"),
		"pyproject.toml", "setup.py", "spool/__init__.py", "spool/_lib.py")
	env := envWithoutLibrary()
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

// envWithoutLibrary is this process's environment without anything that says where libspool
// is: a user's fresh shell.
func envWithoutLibrary() []string {
	var env []string
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "SPOOL_LIBRARY", "PKG_CONFIG_PATH", "PYTHONPATH", "LD_LIBRARY_PATH", "NODE_PATH":
		default:
			env = append(env, kv)
		}
	}
	return env
}

// copyFiles copies files (paths relative to from) to the directory to, and returns to.
func copyFiles(t *testing.T, from, to string, files ...string) string {
	t.Helper()
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(from, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(to, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

// nodeBundleScript produces a record and reads it back through the installed package, and
// prints the file libspool was mapped from.
const nodeBundleScript = `
const fs = require('node:fs');
const { Kafka } = require('spool');
const [broker, topic] = process.argv.slice(1);
(async () => {
  const kafka = new Kafka({ clientId: 'bundle', brokers: [broker] });
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({ topic, messages: [{ value: 'bundled' }] });
  await producer.disconnect();
  const consumer = kafka.consumer({ groupId: 'bundle' });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  let done;
  const got = new Promise((resolve) => (done = resolve));
  await consumer.run({ eachMessage: async ({ message }) => done(String(message.value)) });
  console.log('read ' + (await got));
  await consumer.disconnect();
  const mapped = fs.readFileSync('/proc/self/maps', 'utf8').split('\n').find((l) => l.includes('libspool'));
  console.log('library ' + (mapped ? mapped.slice(mapped.indexOf('/')) : 'none'));
})().catch((e) => { console.error(e); process.exit(1); });
`

// TestNodePackageBundlesLibspool: npm pack of the Node binding bundles libspool into the
// package (prepack), so that, installed into a project, it produces and consumes in a shell
// with neither SPOOL_LIBRARY, PKG_CONFIG_PATH nor LD_LIBRARY_PATH. koffi comes from npm's
// cache (make test's npm ci fills it), at the version of the binding's lock: nothing is fetched.
func TestNodePackageBundlesLibspool(t *testing.T) {
	t.Parallel()
	prefix := install(t, "")
	node := needCommand(t, "node", "nodejs")
	npm := needCommand(t, "npm", "npm")
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	dir := t.TempDir()
	src := copyFiles(t, filepath.Join("bindings", "node"), filepath.Join(dir, "src"),
		"package.json", "package-lock.json", "index.js", "native.js", "scripts/bundle-libspool.js")
	env := envWithoutLibrary()
	run(t, 2*time.Minute, src, append(env, "SPOOL_LIBRARY="+filepath.Join(prefix, "lib", "libspool.so.0")),
		npm, "pack", "--silent", "--pack-destination", dir)
	tgz := filepath.Join(dir, "spool-0.1.0.tgz")
	if out := string(run(t, time.Minute, dir, env, "tar", "tzf", tgz)); !strings.Contains(out, "package/lib/libspool.so.0\n") {
		t.Fatalf("the packed package holds no lib/libspool.so.0:\n%s", out)
	}
	// A project that installs the packed file. Offline, npm resolves koffi only through a lock
	// (the cache holds its tarball, not its registry metadata): the app pins the binding's.
	app := filepath.Join(dir, "app")
	if err := os.MkdirAll(app, 0o755); err != nil {
		t.Fatal(err)
	}
	var lock struct {
		Packages map[string]json.RawMessage `json:"packages"`
	}
	data, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &lock); err != nil {
		t.Fatal(err)
	}
	var koffi struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(lock.Packages["node_modules/koffi"], &koffi); err != nil || koffi.Version == "" {
		t.Fatalf("the binding's package-lock.json pins no koffi: %v", err)
	}
	deps := map[string]string{"koffi": koffi.Version}
	for name, v := range map[string]any{
		"package.json": map[string]any{"name": "app", "version": "1.0.0", "private": true, "dependencies": deps},
		"package-lock.json": map[string]any{"name": "app", "version": "1.0.0", "lockfileVersion": 3, "requires": true,
			"packages": map[string]any{"": map[string]any{"name": "app", "version": "1.0.0", "dependencies": deps},
				"node_modules/koffi": lock.Packages["node_modules/koffi"]}},
	} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(app, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(t, 2*time.Minute, app, env, npm, "ci", "--offline", "--no-audit", "--no-fund")
	run(t, 2*time.Minute, app, env, npm, "install", "--offline", "--no-audit", "--no-fund", tgz)
	bundled := filepath.Join(app, "node_modules", "spool", "lib", "libspool.so.0")
	out := string(run(t, 2*time.Minute, app, env, node, "-e", nodeBundleScript, addr, "bundled-node"))
	if !strings.Contains(out, "read bundled\n") {
		t.Errorf("the installed package did not read back its record:\n%s", out)
	}
	if !strings.Contains(out, "library "+bundled+"\n") {
		t.Errorf("the library was not loaded from the package (%s):\n%s", bundled, out)
	}
}

// TestRustStaticLinksLibspool: the Rust binding's `static` feature links libspool.a into the
// program (the crate's counterpart of bundling the library into a package), so the quickstart
// built with it depends on no libspool.so and runs in a shell with neither LD_LIBRARY_PATH nor
// PKG_CONFIG_PATH.
func TestRustStaticLinksLibspool(t *testing.T) {
	t.Parallel()
	prefix := install(t, "")
	cargo := cargo(t)
	ldd := brokertest.NeedTool(t, "/usr/bin/ldd", "libc-bin")
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	target := t.TempDir()
	env := envWithoutLibrary()
	run(t, 10*time.Minute, filepath.Join("..", "examples", "rust"), append(env, "SPOOL_LIB_DIR="+filepath.Join(prefix, "lib")),
		cargo, "build", "--offline", "-q", "--features", "spool/static", "--target-dir", target)
	bin := filepath.Join(target, "debug", "spool-quickstart")
	if out := string(run(t, time.Minute, target, env, ldd, bin)); strings.Contains(out, "libspool") {
		t.Fatalf("the statically linked quickstart still needs libspool.so:\n%s", out)
	}
	checkQuickstart(t, "rust-quickstart", // the example's topic
		func() []byte {
			return run(t, 2*time.Minute, target, env, bin, addr)
		})
}

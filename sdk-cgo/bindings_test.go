package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	spool "github.com/spoolmq/spool/sdk-go"
)

// The Rust, Node and Java bindings are tested by their own language's test runner, started
// here against a broker of brokertest and the library as installed by install.

// needCommand finds a toolchain command on PATH, else at the other places it is installed
// (rustup puts cargo under ~/.cargo/bin); if it is nowhere, it is missing by NeedTool's rule,
// named by its Debian package.
func needCommand(t testing.TB, name, pkg string, also ...string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, p := range also {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return brokertest.NeedTool(t, "/usr/bin/"+name, pkg)
}

// libEnv is the environment a binding's build and tests find the installed libspool with.
func libEnv(prefix, addr string) []string {
	return append(os.Environ(),
		"PKG_CONFIG_PATH="+filepath.Join(prefix, "lib", "pkgconfig"),
		"LD_LIBRARY_PATH="+filepath.Join(prefix, "lib"),
		"SPOOL_LIBRARY="+filepath.Join(prefix, "lib", "libspool.so.0"),
		"SPOOL_BROKERS="+addr)
}

// run runs a binding's command in dir with env, failing the test with its output.
func run(t testing.TB, timeout time.Duration, dir string, env []string, name string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v in %s: %v\n%s", name, args, dir, err, out)
	}
	return out
}

// cargoTarget is the one target directory of the Rust builds of this test binary, so the
// crate compiled for its tests is reused by the example.
func cargoTarget(t testing.TB) string {
	install(t, "")
	return filepath.Join(installTmp, "cargo-target")
}

func cargo(t testing.TB) string {
	home, _ := os.UserHomeDir()
	return needCommand(t, "cargo", "cargo", filepath.Join(home, ".cargo", "bin", "cargo"))
}

// TestRust runs the Rust crate's tests (cargo test: unit, doc and tests/broker.rs) against a
// real broker: round trips with keys, null keys and headers, a group of two consumers, error
// mapping, a broker that is down, no libspool handle left after the drops, and
// (tests/security.rs) SASL_SSL with SCRAM-SHA-512 against startSecureBroker.
func TestRust(t *testing.T) {
	t.Parallel()
	prefix := install(t, "")
	cargo := cargo(t)
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	env := append(libEnv(prefix, addr), "CARGO_TARGET_DIR="+cargoTarget(t))
	env = append(env, startSecureBroker(t).env()...) // tests/security.rs
	// The timeouts of the builds guard against a hang, not a slow machine: the tests of this
	// package run side by side, and a build shares two cores with others.
	out := run(t, 10*time.Minute, filepath.Join("bindings", "rust"), env, cargo, "test", "--offline", "-q")
	// The broker tests ran and none was ignored.
	if !regexp.MustCompile(`test result: ok\. [1-9]\d* passed; 0 failed; 0 ignored`).Match(out) ||
		regexp.MustCompile(`[1-9]\d* ignored`).Match(out) {
		t.Fatalf("cargo test did not run every test:\n%s", out)
	}
}

// TestExampleRust runs examples/rust twice against a broker, with the crate of this tree.
func TestExampleRust(t *testing.T) {
	t.Parallel()
	prefix := install(t, "")
	cargo := cargo(t)
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	env := append(libEnv(prefix, addr), "CARGO_TARGET_DIR="+cargoTarget(t))
	checkQuickstart(t, "rust-quickstart", func() []byte {
		return run(t, 10*time.Minute, filepath.Join("..", "examples", "rust"), env, cargo, "run", "--offline", "-q", "--", addr)
	})
}

// checkQuickstart runs a binding's quickstart example twice (the second run finds the topic
// there) and checks what every quickstart prints: three delivery lines, keys on murmur2's
// partitions of the 3-partition topic, then the three records consumed.
func checkQuickstart(t *testing.T, topic string, runOnce func() []byte) {
	t.Helper()
	q := regexp.QuoteMeta(topic)
	want := regexp.MustCompile(`^(delivered (alice|bob|carol) to ` + q + `\[[0-2]\]\n){3}` +
		`(consumed (alice|bob|carol)=hello (alice|bob|carol)\n){3}$`)
	for round := 1; round <= 2; round++ {
		out := runOnce()
		if !want.Match(out) {
			t.Fatalf("run %d printed:\n%s", round, out)
		}
		for _, who := range []string{"alice", "bob", "carol"} {
			p := spool.KafkaPartition([]byte(who), 3)
			if !bytes.Contains(out, fmt.Appendf(nil, "delivered %s to %s[%d]\n", who, topic, p)) ||
				!bytes.Contains(out, fmt.Appendf(nil, "consumed %s=hello %s\n", who, who)) {
				t.Errorf("run %d: %s not delivered to partition %d and consumed:\n%s", round, who, p, out)
			}
		}
	}
}

// nodeModules checks that `npm ci` (make test's deps step) installed dir's packages.
func nodeModules(t testing.TB, dir, pkg string) {
	t.Helper()
	brokertest.NeedTool(t, filepath.Join(dir, "node_modules", pkg, "package.json"),
		"npm package "+pkg+", from `npm ci --prefix "+dir+"`")
}

// TestNode runs the Node binding's tests (node --test) against a real broker: round trips
// with keys, null keys, headers and partitions, a group of two consumers, error codes, a
// broker that is down, no libspool handle left after disconnect, and (test/security.test.js)
// SASL_SSL with SCRAM-SHA-512 against startSecureBroker.
func TestNode(t *testing.T) {
	t.Parallel()
	prefix := install(t, "")
	node := needCommand(t, "node", "nodejs")
	dir := filepath.Join("bindings", "node")
	nodeModules(t, dir, "koffi")
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	env := append(libEnv(prefix, addr), startSecureBroker(t).env()...) // test/security.test.js
	out := run(t, 3*time.Minute, dir, env, node, "--test", "test/")
	if !regexp.MustCompile(`(?m)^# pass [1-9]\d*$`).Match(out) ||
		!regexp.MustCompile(`(?m)^# fail 0$`).Match(out) || !regexp.MustCompile(`(?m)^# skipped 0$`).Match(out) {
		t.Fatalf("node --test did not pass every test:\n%s", out)
	}
}

// TestExampleNode runs examples/node/quickstart.js twice against a broker, with the binding
// of this tree (a file: dependency of the example's package).
func TestExampleNode(t *testing.T) {
	t.Parallel()
	prefix := install(t, "")
	node := needCommand(t, "node", "nodejs")
	dir := filepath.Join("..", "examples", "node")
	nodeModules(t, dir, "spool")
	nodeModules(t, filepath.Join("bindings", "node"), "koffi")
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	checkQuickstart(t, "node-quickstart", func() []byte {
		return run(t, time.Minute, dir, libEnv(prefix, addr), node, "quickstart.js", addr)
	})
}

// javaBuilt is set once mavenBuild has compiled the binding and written its class path;
// javaMu serializes the Maven runs on the one build directory (not installMu: a run of the
// JUnit tests takes minutes, and other tests install meanwhile).
var (
	javaMu    sync.Mutex
	javaBuilt bool
)

// mavenBuild runs the Java binding's Maven build with goals (plus writing its runtime
// classpath) into one build directory of this test binary, and returns that directory:
// classes/, surefire-reports/ and cp.txt. Maven runs offline, on the artifacts make test's
// deps step fetched; with no goals it only makes sure the classes are built.
func mavenBuild(t testing.TB, env []string, goals ...string) string {
	t.Helper()
	install(t, "")
	mvn := brokertest.NeedTool(t, "/usr/bin/mvn", "maven")
	brokertest.NeedTool(t, "/usr/bin/javac", "openjdk-17-jdk-headless")
	home, _ := os.UserHomeDir()
	brokertest.NeedTool(t, filepath.Join(home, ".m2", "repository", "net", "java", "dev", "jna", "jna", "5.14.0", "jna-5.14.0.jar"),
		"Maven artifacts of sdk-cgo/bindings/java, fetched by scripts/install-deps.sh")
	build := filepath.Join(installTmp, "java-build")
	javaMu.Lock()
	defer javaMu.Unlock()
	if len(goals) == 0 {
		if javaBuilt {
			return build
		}
		goals = []string{"compile"}
	}
	args := append([]string{"-o", "-q", "-B", "-Dstyle.color=never", "-Dspool.buildDir=" + build}, goals...)
	args = append(args, "dependency:build-classpath", "-DincludeScope=runtime", "-Dmdep.outputFile="+filepath.Join(build, "cp.txt"))
	run(t, 10*time.Minute, filepath.Join("bindings", "java"), env, mvn, args...)
	javaBuilt = true
	return build
}

// TestJava runs the Java binding's JUnit tests (mvn test) against a real broker: round
// trips with keys, null keys, headers and callbacks, a group of two consumers, error codes,
// a broker that is down, no libspool handle left after close, and (SecurityTest) SASL_SSL
// with SCRAM-SHA-512 against startSecureBroker.
func TestJava(t *testing.T) {
	t.Parallel()
	prefix := install(t, "")
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	env := append(libEnv(prefix, addr), startSecureBroker(t).env()...) // SecurityTest
	build := mavenBuild(t, env, "test")
	reports, err := filepath.Glob(filepath.Join(build, "surefire-reports", "TEST-*.xml"))
	if err != nil || len(reports) == 0 {
		t.Fatalf("no surefire reports in %s (%v)", build, err)
	}
	suite := regexp.MustCompile(`<testsuite [^>]*tests="([1-9]\d*)" errors="0" skipped="0" failures="0"`)
	for _, r := range reports {
		b, err := os.ReadFile(r)
		if err != nil {
			t.Fatal(err)
		}
		if !suite.Match(b) {
			t.Fatalf("%s: not every test passed:\n%s", r, b)
		}
	}
}

// TestExampleJava runs examples/java/Quickstart.java (a single-file program) twice against
// a broker, with the binding's classes of this tree and JNA on the class path.
func TestExampleJava(t *testing.T) {
	t.Parallel()
	prefix := install(t, "")
	java := brokertest.NeedTool(t, "/usr/bin/java", "openjdk-17-jdk-headless")
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	env := libEnv(prefix, addr)
	build := mavenBuild(t, env)
	cp, err := os.ReadFile(filepath.Join(build, "cp.txt"))
	if err != nil {
		t.Fatal(err)
	}
	classpath := filepath.Join(build, "classes") + string(os.PathListSeparator) + string(bytes.TrimSpace(cp))
	checkQuickstart(t, "java-quickstart", func() []byte {
		return run(t, 3*time.Minute, filepath.Join("..", "examples", "java"), env, java, "-cp", classpath, "Quickstart.java", addr) // a JVM that compiles the file
	})
}

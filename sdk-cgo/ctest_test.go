package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	spool "github.com/spoolmq/spool/sdk-go"
)

// The tests build libspool with the Makefile, install it into a temporary prefix and compile
// tests/spool_test.c against the installed header and library through pkg-config, as a
// user would. The C program then runs each scenario against a real broker: plainly, built
// with AddressSanitizer, and under valgrind.

// variantFlags are the GOFLAGS of each libspool build the tests make, by variant: ""
// is the ordinary build, "valgrind" the one whose Go runtime reports to valgrind.
var variantFlags = map[string]string{"": "", "valgrind": "-tags=valgrind"}

// installs are the libspool builds made by this test binary, by variant.
var (
	installMu  sync.Mutex
	installs   = map[string]string{}
	installTmp string
)

// install builds and installs libspool (once per variant) and returns its prefix.
func install(t testing.TB, variant string) string {
	t.Helper()
	brokertest.NeedTool(t, "/usr/bin/gcc", "gcc")
	brokertest.NeedTool(t, "/usr/bin/pkg-config", "pkg-config")
	brokertest.NeedTool(t, "/usr/bin/make", "make")
	installMu.Lock()
	defer installMu.Unlock()
	if prefix, ok := installs[variant]; ok {
		return prefix
	}
	if installTmp == "" {
		dir, err := os.MkdirTemp("", "libspool-test-")
		if err != nil {
			t.Fatal(err)
		}
		installTmp = dir
	}
	dir := filepath.Join(installTmp, "v-"+variant)
	cmd := exec.Command("make", "-s", "install", "BUILD="+filepath.Join(dir, "build"), "PREFIX="+filepath.Join(dir, "prefix"))
	cmd.Env = append(os.Environ(), "GOFLAGS="+variantFlags[variant])
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make install (%q): %v\n%s", variant, err, out)
	}
	installs[variant] = filepath.Join(dir, "prefix")
	return installs[variant]
}

// parallelTests is how many of this package's tests run at once unless -test.parallel says
// otherwise: they mostly wait on the programs they start (C programs, valgrind, pytest, cargo,
// node, Maven) and on the brokers those talk to, so more than GOMAXPROCS (go test's default)
// overlap their waits; few enough that two cores are not buried under compilers and JVMs
// (cargo, Maven, valgrind).
const parallelTests = 3

func TestMain(m *testing.M) {
	flag.Parse()
	brokertest.DefaultParallel(parallelTests)
	code := m.Run()
	if installTmp != "" {
		os.RemoveAll(installTmp)
	}
	os.Exit(code)
}

// compile builds a C program against the installed library with pkg-config, warnings as
// errors, plus extra flags.
func compile(t testing.TB, variant, src, out string, extra ...string) string {
	t.Helper()
	prefix := install(t, variant)
	pc := exec.Command("pkg-config", "--cflags", "--libs", "spool")
	pc.Env = append(os.Environ(), "PKG_CONFIG_PATH="+filepath.Join(prefix, "lib", "pkgconfig"))
	flags, err := pc.Output()
	if err != nil {
		t.Fatalf("pkg-config --cflags --libs spool: %v", err)
	}
	bin := filepath.Join(t.TempDir(), out)
	args := append([]string{"-std=c11", "-Wall", "-Wextra", "-Werror", "-g", "-pthread", "-o", bin, src}, strings.Fields(string(flags))...)
	args = append(args, "-Wl,-rpath,"+filepath.Join(prefix, "lib"))
	args = append(args, extra...)
	if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return bin
}

// runner runs a built C program, perhaps under a tool.
type runner struct {
	name string
	run  func(t *testing.T, args ...string) (string, error)
}

func runners(t *testing.T) []runner { return runnersOf(t, "tests/spool_test.c", "spool_test") }

// runnersOf builds the C program src (named name) for each runner. -short leaves valgrind out
// (neither built nor run), never under CI.
func runnersOf(t *testing.T, src, name string) []runner {
	plain := compile(t, "", src, name)
	asan := compile(t, "", src, name+"_asan", "-fsanitize=address", "-fno-omit-frame-pointer")
	exe := func(bin string, env []string, pre ...string) func(t *testing.T, args ...string) (string, error) {
		return func(t *testing.T, args ...string) (string, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			all := append(append(pre, bin), args...)
			cmd := exec.CommandContext(ctx, all[0], all[1:]...)
			cmd.Env = append(os.Environ(), env...)
			out, err := cmd.CombinedOutput()
			return string(out), err
		}
	}
	rs := []runner{
		{"plain", exe(plain, nil)},
		// detect_leaks: LeakSanitizer checks every malloc of the C side and of the library's
		// C shim at exit.
		{"asan", exe(asan, []string{"ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=23"})},
	}
	if testing.Short() && os.Getenv("CI") != "true" {
		return rs
	}
	valgrind := brokertest.NeedTool(t, "/usr/bin/valgrind", "valgrind")
	vg := compile(t, "valgrind", src, name+"_vg")
	return append(rs,
		// Against the valgrind build of the library (see tests/go-runtime.supp). Possibly
		// lost blocks are the TLS of threads the Go runtime never ends. Asynchronous
		// preemption writes below a goroutine's stack pointer from a signal handler, which
		// valgrind cannot follow, so it is off. So is the garbage collector: after a sweep the
		// runtime can announce a new block at an address valgrind still holds as allocated,
		// and valgrind's leak check then aborts ("Block ... overlaps", "the 'impossible'
		// happened"). Without collection no memory is reused; these programs are short.
		runner{"valgrind", oneAtATime(valgrindRuns, exe(vg, []string{"GODEBUG=asyncpreemptoff=1", "GOGC=off"}, valgrind, "--quiet", "--leak-check=full", "--errors-for-leak-kinds=definite,indirect",
			"--suppressions=tests/go-runtime.supp", "--error-exitcode=1"))})
}

// valgrindRuns lets one valgrind run at a time in this package: it computes (a program under
// it runs tens of times slower, on one core), and the tests that start them run side by side.
var valgrindRuns = make(chan struct{}, 1)

// oneAtATime is run holding sem.
func oneAtATime(sem chan struct{}, run func(t *testing.T, args ...string) (string, error)) func(t *testing.T, args ...string) (string, error) {
	return func(t *testing.T, args ...string) (string, error) {
		sem <- struct{}{}
		defer func() { <-sem }()
		return run(t, args...)
	}
}

func TestSymbols(t *testing.T) {
	t.Parallel()
	prefix := install(t, "")
	lib := filepath.Join(prefix, "lib", "libspool.so.0")
	out, err := exec.Command("readelf", "-d", lib).Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "Library soname: [libspool.so.0]") {
		t.Errorf("soname of %s is not libspool.so.0:\n%s", lib, out)
	}
	out, err = exec.Command("nm", "-D", "--defined-only", lib).Output()
	if err != nil {
		t.Fatal(err)
	}
	var exported []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		exported = append(exported, f[len(f)-1])
	}
	header, err := os.ReadFile("include/spool.h")
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, m := range regexp.MustCompile(`(?m)\b(spool_[a-z0-9_]+)\(`).FindAllSubmatch(header, -1) {
		declared = append(declared, string(m[1]))
	}
	slices.Sort(exported)
	slices.Sort(declared)
	declared = slices.Compact(declared)
	// The C tests (tests/*.c and the check.h they share) call every public function, so
	// linking them links every one.
	sources, err := filepath.Glob("tests/*.[ch]")
	if err != nil || len(sources) == 0 {
		t.Fatalf("no C test sources: %v", err)
	}
	var ctests []byte
	for _, src := range sources {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		ctests = append(ctests, b...)
	}
	for _, name := range declared {
		if !regexp.MustCompile(`\b` + name + `\(`).Match(ctests) {
			t.Errorf("no C test (%s) calls %s", strings.Join(sources, ", "), name)
		}
	}
	if !slices.Equal(exported, declared) {
		t.Errorf("libspool.so exports\n%v\nspool.h declares\n%v", exported, declared)
	}
	for _, name := range []string{"libspool.a", "pkgconfig/spool.pc"} {
		if _, err := os.Stat(filepath.Join(prefix, "lib", name)); err != nil {
			t.Error(err)
		}
	}
	for _, name := range []string{"spool.h", "spool_errors.h"} {
		if _, err := os.Stat(filepath.Join(prefix, "include", name)); err != nil {
			t.Error(err)
		}
	}
}

// TestStaticArchive links the C tests with libspool.a (and pkg-config's private libraries)
// and runs the scenario that needs no broker.
func TestStaticArchive(t *testing.T) {
	t.Parallel()
	prefix := install(t, "")
	pc := exec.Command("pkg-config", "--static", "--libs-only-l", "spool")
	pc.Env = append(os.Environ(), "PKG_CONFIG_PATH="+filepath.Join(prefix, "lib", "pkgconfig"))
	libs, err := pc.Output()
	if err != nil {
		t.Fatalf("pkg-config --static: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "spool_test_static")
	args := []string{"-std=c11", "-Wall", "-Wextra", "-Werror", "-pthread", "-o", bin, "tests/spool_test.c", "-I" + filepath.Join(prefix, "include"),
		filepath.Join(prefix, "lib", "libspool.a")}
	for _, l := range strings.Fields(string(libs)) {
		if l != "-lspool" {
			args = append(args, l)
		}
	}
	if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if out, err := exec.Command("ldd", bin).Output(); err != nil || strings.Contains(string(out), "libspool") {
		t.Errorf("static binary links libspool dynamically (%v):\n%s", err, out)
	}
	if out, err := exec.Command(bin, "api", "127.0.0.1:1").CombinedOutput(); err != nil {
		t.Fatalf("static api: %v\n%s", err, out)
	}
}

// TestC runs the C scenarios against a real broker, under each runner.
func TestC(t *testing.T) {
	t.Parallel()
	rs := runners(t)
	b := brokertest.Start(t, brokertest.Options{})
	admin, err := spool.NewClient(spool.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close) // after the parallel subtests
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	for _, r := range rs {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel() // every runner has topics and groups of its own
			run := func(args ...string) string {
				t.Helper()
				out, err := r.run(t, args...)
				if err != nil {
					t.Fatalf("%s %s: %v\n%s", r.name, strings.Join(args, " "), err, out)
				}
				return out
			}
			run("api", b.Addr)

			const n = 300
			topic := "c-" + r.name
			if err := admin.Admin().CreateTopic(ctx, topic, 3, 1, nil); err != nil {
				t.Fatal(err)
			}
			run("produce", b.Addr, topic, fmt.Sprint(n))
			checkProduced(t, ctx, b.Addr, topic, n)
			run("consume", b.Addr, topic, fmt.Sprint(n), "3")

			gtopic := "c-group-" + r.name
			if err := admin.Admin().CreateTopic(ctx, gtopic, 4, 1, nil); err != nil {
				t.Fatal(err)
			}
			run("produce", b.Addr, gtopic, fmt.Sprint(n))
			out := run("group", b.Addr, gtopic, fmt.Sprint(n), "g-"+r.name)
			t.Log(strings.TrimSpace(out))
			lag, err := admin.Admin().GroupLag(ctx, "g-"+r.name)
			if err != nil {
				t.Fatal(err)
			}
			var committed int64
			for _, l := range lag {
				committed += l.Committed
			}
			if committed != n+1 {
				t.Errorf("group committed offsets sum to %d, want %d (every record)", committed, n+1)
			}

			// topic has three partitions of about n/3 records each, read by no group yet.
			t.Log(strings.TrimSpace(run("offsets", b.Addr, topic, "g-offsets-"+r.name)))
			offs, err := admin.Admin().GroupLag(ctx, "g-offsets-"+r.name)
			if err != nil {
				t.Fatal(err)
			}
			chosen := map[int32]int64{}
			for _, l := range offs {
				chosen[l.Partition] = l.Committed
			}
			if want := map[int32]int64{0: 5, 1: 7, 2: 3}; !maps.Equal(chosen, want) {
				t.Errorf("offsets committed by spool_consumer_commit_offsets: %v, want %v", chosen, want)
			}

			ttopic := "c-threads-" + r.name
			if err := admin.Admin().CreateTopic(ctx, ttopic, 1, 1, nil); err != nil {
				t.Fatal(err)
			}
			run("threads", b.Addr, ttopic, "400")

			run("down", "127.0.0.1:1")

			// The checkers must see a leak: a message not destroyed.
			if out, err := r.run(t, "leak", b.Addr); (err == nil) != (r.name == "plain") {
				t.Errorf("%s leak: %v\n%s", r.name, err, out)
			}
		})
	}
}

// checkProduced reads topic with the Go SDK and checks what the C producer wrote: values,
// keys, headers, and each keyed record in the partition the Java client would choose.
func checkProduced(t *testing.T, ctx context.Context, addr, topic string, n int) {
	t.Helper()
	cl, err := spool.NewClient(spool.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.AssignTopic(ctx, topic, spool.OffsetStart()); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for len(seen) < n+1 {
		recs, err := cl.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			v := string(r.Value)
			if seen[v] {
				t.Fatalf("record %q twice", v)
			}
			seen[v] = true
			if string(r.Key) == "explicit" {
				if r.Timestamp.UnixMilli() != 1700000000123 { // spool_produce_timestamp's
					t.Errorf("explicit record: timestamp %d, want 1700000000123", r.Timestamp.UnixMilli())
				}
				if r.Partition != 0 || r.Value == nil || len(r.Value) != 0 {
					t.Errorf("explicit record: partition %d, value %q", r.Partition, r.Value)
				}
				continue
			}
			var i int
			if _, err := fmt.Sscanf(v, "value-%d", &i); err != nil {
				t.Fatalf("value %q", v)
			}
			if i%3 == 2 {
				if r.Key != nil {
					t.Errorf("%s: key %q, want null", v, r.Key)
				}
			} else {
				want := fmt.Sprintf("key-%d", i%10)
				if string(r.Key) != want {
					t.Errorf("%s: key %q, want %q", v, r.Key, want)
				}
				if p := spool.KafkaPartition(r.Key, 3); int(r.Partition) != p {
					t.Errorf("%s: partition %d, murmur2 says %d", v, r.Partition, p)
				}
			}
			if len(r.Headers) != 2 || string(r.Headers[0].Key) != "idx" || !bytes.Equal(r.Headers[0].Value, r.Value) ||
				string(r.Headers[1].Key) != "null" || r.Headers[1].Value != nil {
				t.Errorf("%s: headers %+v", v, r.Headers)
			}
		}
	}
}

// TestExampleC builds examples/c/quickstart.c as its comment says and runs it twice against
// a broker: the second run must read only its own records.
func TestExampleC(t *testing.T) {
	t.Parallel()
	bin := compile(t, "", "../examples/c/quickstart.c", "quickstart")
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	want := regexp.MustCompile(`^libspool 0\.1\.0\n` +
		`(delivered (alice|bob|carol) to c-quickstart\[[0-2]\]\n){3}` +
		`(consumed (alice|bob|carol)=hello (alice|bob|carol)\n){3}$`)
	for run := 1; run <= 2; run++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := exec.CommandContext(ctx, bin, addr).CombinedOutput()
		cancel()
		if err != nil || !want.Match(out) {
			t.Fatalf("run %d: %v\n%s", run, err, out)
		}
		for _, who := range []string{"alice", "bob", "carol"} {
			if !strings.Contains(string(out), "consumed "+who+"=hello "+who+"\n") {
				t.Errorf("run %d did not consume %s:\n%s", run, who, out)
			}
			// keyed records land where the Java client puts them
			if p := spool.KafkaPartition([]byte(who), 3); !strings.Contains(string(out), fmt.Sprintf("delivered %s to c-quickstart[%d]\n", who, p)) {
				t.Errorf("run %d: %s not delivered to partition %d:\n%s", run, who, p, out)
			}
		}
	}
}

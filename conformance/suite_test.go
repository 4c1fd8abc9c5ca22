package conformance_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/conformance"
	"github.com/spoolmq/spool/conformance/drivers"
)

// TestMain lets the test binary act as a built-in driver when the suite starts it as one.
func TestMain(m *testing.M) {
	drivers.MaybeServe()
	serveDropping()
	os.Exit(m.Run())
}

// target is a broker the suite runs against.
type target struct {
	name  string
	start func(t *testing.T) string
}

// No initial rebalance delay on either broker, so group cases do not wait 3 s per new group.
var (
	spoolTarget = target{"spool", func(t *testing.T) string {
		return brokertest.Start(t, brokertest.Options{Props: map[string]string{"group.initial.rebalance.delay.ms": "0"}}).Addr
	}}
	kafkaTarget = target{"kafka", func(t *testing.T) string {
		return brokertest.StartKafka(t, map[string]string{"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "1"}).Addr
	}}
)

// TestSuite runs every case against our broker and against Apache Kafka 3.9, the reference:
// every case must pass on both (a case failing on Kafka is a wrong case). Wire cases run
// once per target; client cases once per driver: go (sdk-go), franz-go and java (the
// references), c (libspool) and python (its binding). A case a driver cannot run must be in
// unsupported with the reason its driver gives, and is checked to be skipped: no more, no less.
func TestSuite(t *testing.T) {
	t.Parallel()
	all := builtinDrivers(t)
	all = append(all, externalDrivers(t)...)
	for _, tg := range []target{spoolTarget, kafkaTarget} {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			addr := tg.start(t)
			for i, d := range all {
				name := d.Name()
				cases := conformance.Cases()
				if i > 0 {
					cases = clientCases(cases)
				}
				start := time.Now()
				results := conformance.Run(context.Background(), conformance.Config{Bootstrap: addr, Driver: d, Parallel: 6}, cases)
				passed, known, skipped := 0, 0, 0
				for _, r := range results {
					// Cluster cases need more brokers than a single node has: TestSuiteCluster runs them.
					if r.Case.Brokers > 1 {
						if r.Outcome != conformance.Skip || !strings.HasPrefix(r.Message, conformance.NeedsCluster) {
							t.Errorf("%s on a single node: %s (%s), want skipped as a cluster case", r.Case.ID, r.Outcome, r.Message)
						}
						continue
					}
					if why, ok := unsupported[name][r.Case.ID]; ok {
						if r.Outcome != conformance.Skip || !strings.Contains(r.Message, why) {
							t.Errorf("%s with driver %s: %s (%s), want skipped as unsupported: %s", r.Case.ID, name, r.Outcome, r.Message, why)
						}
						skipped++
						continue
					}
					// A known issue is a Spool deviation: expected to fail on Spool, and like
					// every case it must pass on Kafka.
					if r.Case.KnownIssue != "" && tg.name == "spool" {
						if r.Outcome == conformance.Pass {
							t.Errorf("%s passes on Spool now: remove its known-issue note", r.Case.ID)
						}
						known++
						continue
					}
					switch r.Outcome {
					case conformance.Pass:
						passed++
					case conformance.Fail:
						t.Errorf("%s with driver %s: %s", r.Case.ID, name, r.Message)
					case conformance.Skip:
						t.Errorf("%s with driver %s skipped: %s", r.Case.ID, name, r.Message)
					}
				}
				t.Logf("%s, driver %s: %d of %d cases passed, %d known issues, %d unsupported by the SDK (%s)", tg.name, name, passed, len(results), known, skipped, time.Since(start).Round(time.Millisecond))
			}
		})
	}
}

// unsupported lists, per driver, the client cases its SDK cannot run, with the reason the
// driver answers: libspool's C API (and so the Python binding over it) takes no producer
// timestamp and reports no group assignment.
var unsupported = map[string]map[string]string{
	"c":      libspoolGaps,
	"python": libspoolGaps,
}

var libspoolGaps = map[string]string{
	"client/timestamps":               "no producer timestamp",
	"client/group-unicast-and-leave":  "no rebalance callback",
	"client/group-rebalance-on-crash": "no rebalance callback",
	"client/group-cooperative":        "no rebalance callback",
}

func builtinDrivers(t *testing.T) []conformance.Driver {
	var out []conformance.Driver
	for _, name := range drivers.Names {
		d, err := drivers.Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// externalDrivers builds the c, python and java drivers: libspool installed from sdk-cgo into
// a temporary prefix (as a user would, make install), the binding from the source tree, and
// Apache Kafka's Java client from the jars brokertest fetches from Maven Central.
func externalDrivers(t *testing.T) []conformance.Driver {
	gcc := brokertest.NeedTool(t, "/usr/bin/gcc", "gcc")
	brokertest.NeedTool(t, "/usr/bin/make", "make")
	brokertest.NeedTool(t, "/usr/bin/pkg-config", "pkg-config")
	python := brokertest.NeedTool(t, "/usr/bin/python3", "python3")
	brokertest.NeedTool(t, "/usr/bin/javac", "openjdk-17-jdk-headless")
	classpath := brokertest.KafkaJars(t)
	dir := t.TempDir()
	prefix := filepath.Join(dir, "prefix")
	install := exec.Command("make", "-s", "-C", filepath.Join("..", "sdk-cgo"), "install", "BUILD="+filepath.Join(dir, "build"), "PREFIX="+prefix)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("installing libspool: %v\n%s", err, out)
	}
	binding, err := filepath.Abs(filepath.Join("..", "sdk-cgo", "bindings", "python"))
	if err != nil {
		t.Fatal(err)
	}
	opts := drivers.BuildOptions{Dir: dir, CC: gcc, Python: python, JavaClasspath: classpath, Env: []string{
		"PKG_CONFIG_PATH=" + filepath.Join(prefix, "lib", "pkgconfig"),
		"PYTHONPATH=" + binding, "PYTHONDONTWRITEBYTECODE=1",
		"SPOOL_LIBRARY=" + filepath.Join(prefix, "lib", "libspool.so.0"),
	}}
	var out []conformance.Driver
	for _, name := range drivers.ExternalNames {
		d, err := drivers.Build(name, opts)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

func clientCases(all []*conformance.Case) []*conformance.Case {
	var out []*conformance.Case
	for _, c := range all {
		if c.Level == conformance.Client {
			out = append(out, c)
		}
	}
	return out
}

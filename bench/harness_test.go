package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeBrokerEnv makes the test binary a stand-in for spoold (see TestMain): it listens on
// --listen like spoold and exits with status 3 when a client sends "crash".
const fakeBrokerEnv = "BENCH_FAKE_BROKER"

func TestMain(m *testing.M) {
	if os.Getenv(fakeBrokerEnv) == "1" {
		fakeBroker(os.Args[1:])
		return
	}
	os.Exit(m.Run())
}

func fakeBroker(args []string) {
	i := slices.Index(args, "--listen")
	if i < 0 || i+1 >= len(args) {
		fmt.Fprintln(os.Stderr, "fake broker: no --listen")
		os.Exit(2)
	}
	l, err := net.Listen("tcp", args[i+1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake broker:", err)
		os.Exit(2)
	}
	for {
		c, err := l.Accept()
		if err != nil {
			os.Exit(2)
		}
		go func() {
			line, _ := bufio.NewReader(c).ReadString('\n')
			if line == "crash\n" {
				fmt.Fprintln(os.Stderr, "fake broker: crashing as asked")
				os.Exit(3)
			}
			c.Close()
		}()
	}
}

// fakeLoadgen fails W1 as Kafka's producer did with OUT_OF_ORDER_SEQUENCE_NUMBER, crashes the
// broker during W2, fails the first run of W3, and measures the rest after checking that its
// broker answers.
type fakeLoadgen struct {
	stubLoadgen
	w3Runs *atomic.Int32
}

// stubLoadgen is the part of a stand-in load generator that its tests do not use: it can run
// anything, creates topics by doing nothing, and fails consume and end-to-end runs.
type stubLoadgen struct{ name, short string }

func (s stubLoadgen) Name() string                                         { return s.name }
func (s stubLoadgen) Short() string                                        { return s.short }
func (stubLoadgen) Can(string) bool                                        { return true }
func (stubLoadgen) CreateTopic(context.Context, string, string, int) error { return nil }

func (s stubLoadgen) Consume(context.Context, string, string, int64) (result, error) {
	return result{}, errors.New(s.name + ": not used")
}

func (s stubLoadgen) EndToEnd(context.Context, string, string, int64, int, string, int) (result, error) {
	return result{}, errors.New(s.name + ": not used")
}

func (f fakeLoadgen) Produce(ctx context.Context, addr string, p produceSpec) (result, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return result{}, fmt.Errorf("fake: broker at %s does not answer: %w", addr, err)
	}
	defer c.Close()
	switch p.Topic {
	case "w1":
		return result{}, errors.New("ProducerPerformance reported errors:\n[2026-11-30 10:00:00,000] ERROR Error when sending message to topic w1: " +
			"org.apache.kafka.common.errors.OutOfOrderSequenceException: The broker received an out of order sequence number. (org.apache.kafka.clients.producer.internals.ErrorLoggingCallback)")
	case "w2":
		io.WriteString(c, "crash\n")
		io.Copy(io.Discard, c) // until the broker's exit closes the connection
		return result{}, errors.New("fake: connection closed by the broker")
	case "w3":
		if f.w3Runs.Add(1) == 1 {
			return result{}, errors.New("fake: first W3 run fails")
		}
	}
	return result{Records: p.Records, RecPerSec: 1000, MBPerSec: 0.1, HasLatency: true, P50: 1, P99: 2, P999: 3}, nil
}

// TestFailedRunsAreRecorded runs W1–W3 twice against a stand-in broker with a load generator
// that fails W1 and crashes the broker in W2: both become failed rows with their logs kept
// and named; W3 still runs on a fresh broker, and its row, one run of two failed, shows the
// other's figures; the run ends in an error (a non-zero exit).
func TestFailedRunsAreRecorded(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(fakeBrokerEnv, "1")
	benchDir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{benchDir: benchDir, spoold: exe, workDir: t.TempDir()}
	ws := slices.DeleteFunc(workloads(quickSizes), func(w workload) bool { return !slices.Contains([]string{"W1", "W2", "W3"}, w.ID) })
	lg := fakeLoadgen{stubLoadgen: stubLoadgen{"fake", "FK"}, w3Runs: new(atomic.Int32)}
	spool := systems[slices.IndexFunc(systems, func(s system) bool { return s.Name == "spool" })]
	r := &report{h: h, systems: []system{spool}, lgs: []loadgen{lg}, res: map[string]map[string]map[string][]result{},
		reps: 2, mode: "quick", outDir: t.TempDir()}

	if err := h.runAll(context.Background(), ws, r); err != nil {
		t.Fatalf("runAll stopped: %v", err)
	}
	if len(r.failures) != 5 {
		t.Fatalf("failures %+v, want W1 and W2 twice, W3 once", r.failures)
	}
	oos := "ProducerPerformance reported errors: OutOfOrderSequenceException: The broker received an out of order sequence number."
	crash := "spool exited unexpectedly (exit status 3)"
	for i, want := range []struct {
		w           int
		rep         int
		reason, log string
	}{
		{0, 1, oos, "ErrorLoggingCallback"}, {0, 2, oos, "ErrorLoggingCallback"},
		{1, 1, crash, "fake broker: crashing as asked"}, {1, 2, crash, "fake broker: crashing as asked"},
		{2, 1, "fake: first W3 run fails", "fake: first W3 run fails"},
	} {
		f := r.failures[i]
		if f.Workload != ws[want.w].ID || f.Rep != want.rep || f.System != "spool" || f.Loadgen != "fake" || f.Reason != want.reason {
			t.Errorf("failure %d: %+v, want %s rep %d with reason %q", i, f, ws[want.w].ID, want.rep, want.reason)
		}
		if filepath.Dir(f.Log) != h.runDir(ws[want.w], spool, lg, want.rep) {
			t.Errorf("failure %d: log %s is not in its run's directory", i, f.Log)
		}
		data, err := os.ReadFile(f.Log)
		if err != nil || !strings.Contains(string(data), want.log) {
			t.Errorf("failure %d: log %s: %v\n%s", i, f.Log, err, data)
		}
	}
	w3 := r.res["W3"]["fake"]["spool"]
	if len(w3) != 1 || w3[0].Records != quickSizes.w3 || w3[0].PeakRSS <= 0 {
		t.Fatalf("W3 after the crash: %+v", w3)
	}
	if _, err := os.Stat(h.runDir(ws[2], spool, lg, 2)); !os.IsNotExist(err) {
		t.Errorf("the successful run's directory is still there: %v", err)
	}

	md, err := os.ReadFile(filepath.Join(r.outDir, "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"| W1 produce 100 B, 6 partitions, acks=1 | fake | spool | failed: ProducerPerformance reported errors: OutOfOrderSequenceException",
		"| W2 produce 100 B, 6 partitions, acks=all | fake | spool | failed: spool exited unexpectedly (exit status 3) |",
		"| W3 produce 1 KiB, 6 partitions, acks=all | fake | spool (1 of 2 runs failed) | 1.0 k |",
		"5 run(s) failed", r.failures[0].Log, r.failures[4].Log,
	} {
		if !strings.Contains(string(md), s) {
			t.Errorf("report lacks %q:\n%s", s, md)
		}
	}
	err = r.failed()
	if err == nil || !strings.Contains(err.Error(), "5 run(s) failed") || !strings.Contains(err.Error(), r.failures[3].Log) {
		t.Fatalf("failed() = %v, want an error naming the failed runs and their logs", err)
	}
}

// TestEstimateCalibrated pins the estimate to the durations measured on 2026-11-30: the full
// run (3 repetitions, 3 brokers, 2 load generators) took 17m43s with W5 at 250 MB and 20m34s
// with W5 at 1 GB filled by spool bench (estimated 21m16s), QUICK=1 runs 2–3.5 minutes.
func TestEstimateCalibrated(t *testing.T) {
	lgs := []loadgen{kafkaTools{}, spoolBench{extended: true}}
	full, runs := estimate(workloads(fullSizes), systems, lgs, 3)
	if runs != 126 || full < 17*time.Minute || full > 25*time.Minute {
		t.Errorf("full run: %d runs, %v; took 126 runs in 20m34s", runs, full)
	}
	quick, runs := estimate(workloads(quickSizes), systems, lgs, 1)
	if runs != 42 || quick < 2*time.Minute || quick > 3*time.Minute+30*time.Second {
		t.Errorf("quick run: %d runs, %v; took 42 runs in 2m3s to 3m24s", runs, quick)
	}
	// A run of Kafka's tools against Kafka pays the JVM starts: W1 measured 18.3 s a run.
	w1 := workloads(fullSizes)[0]
	if d := runEstimate(w1, "KT", "kafka"); d < 15*time.Second || d > 22*time.Second {
		t.Errorf("W1 KT kafka: %v a run, measured 18.3s", d)
	}
}

// TestSpliceSection: a cluster-only run replaces its own section and keeps the rest of the
// report, or inserts the section before the workload list the first time.
func TestSpliceSection(t *testing.T) {
	doc := "# B\n\n## Results\n\nW1 row\n\n## Workloads\n\n- W1\n"
	first := spliceSection(doc, clusterHeading, clusterHeading+": x\n\nold\n\n")
	want := "# B\n\n## Results\n\nW1 row\n\n" + clusterHeading + ": x\n\nold\n\n## Workloads\n\n- W1\n"
	if first != want {
		t.Fatalf("insert:\n%s\nwant:\n%s", first, want)
	}
	second := spliceSection(first, clusterHeading, clusterHeading+": y\n\nnew\n\n")
	if want := strings.Replace(want, ": x\n\nold", ": y\n\nnew", 1); second != want {
		t.Fatalf("replace:\n%s\nwant:\n%s", second, want)
	}
	// C2's section goes right after C1's the first time, then is replaced in place, C1's kept.
	third := spliceSection(second, e2eClusterHeading, e2eClusterHeading+": a\n\n")
	want = "# B\n\n## Results\n\nW1 row\n\n" + clusterHeading + ": y\n\nnew\n\n" + e2eClusterHeading + ": a\n\n## Workloads\n\n- W1\n"
	if third != want {
		t.Fatalf("insert C2:\n%s\nwant:\n%s", third, want)
	}
	if fourth := spliceSection(third, e2eClusterHeading, e2eClusterHeading+": b\n\n"); fourth != strings.Replace(want, ": a", ": b", 1) {
		t.Fatalf("replace C2:\n%s", fourth)
	}
}

// sharingLoadgen records the broker address and topic of every produce, and crashes the broker
// of its first W1 run.
type sharingLoadgen struct {
	stubLoadgen
	mu      *sync.Mutex
	seen    map[string][]string // broker address → topics produced there, in order
	crashed *atomic.Bool
}

func (s sharingLoadgen) Produce(ctx context.Context, addr string, p produceSpec) (result, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return result{}, fmt.Errorf("sharing: broker at %s does not answer: %w", addr, err)
	}
	defer c.Close()
	if p.Topic == "w1-sh" && s.crashed.CompareAndSwap(false, true) {
		io.WriteString(c, "crash\n")
		io.Copy(io.Discard, c)
		return result{}, errors.New("sharing: connection closed by the broker")
	}
	s.mu.Lock()
	s.seen[addr] = append(s.seen[addr], p.Topic)
	s.mu.Unlock()
	return result{Records: p.Records, RecPerSec: 1000, MBPerSec: 0.1}, nil
}

// TestSharedBrokers runs W1–W3 as the quick smoke run does (harness.shareBrokers) against two
// systems of stand-in brokers: each system's runs go to one broker in topics of their own
// (the load generator's tag appended), the systems to different ones; a broker that crashes
// fails its run, and the next run of that system starts a new one.
func TestSharedBrokers(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(fakeBrokerEnv, "1")
	benchDir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{benchDir: benchDir, spoold: exe, workDir: t.TempDir(), shareBrokers: true}
	ws := slices.DeleteFunc(workloads(quickSizes), func(w workload) bool { return !slices.Contains([]string{"W1", "W2", "W3"}, w.ID) })
	lg := sharingLoadgen{stubLoadgen: stubLoadgen{"sharing", "SH"}, mu: new(sync.Mutex), seen: map[string][]string{}, crashed: new(atomic.Bool)}
	var chosen []system
	for _, name := range []string{"spool", "spool-nofsync"} {
		chosen = append(chosen, systems[slices.IndexFunc(systems, func(s system) bool { return s.Name == name })])
	}
	r := &report{h: h, systems: chosen, lgs: []loadgen{lg}, res: map[string]map[string]map[string][]result{},
		reps: 1, mode: "quick", outDir: t.TempDir()}
	if err := h.runAll(context.Background(), ws, r); err != nil {
		t.Fatalf("runAll stopped: %v", err)
	}
	if err := h.stopShared(); err != nil {
		t.Fatal(err)
	}
	// One W1 run crashed its broker: that system's W2 and W3 went to a second broker.
	if len(r.failures) != 1 || r.failures[0].Workload != "W1" || !strings.Contains(r.failures[0].Reason, "exited unexpectedly") {
		t.Fatalf("failures %+v, want the crashed W1 run", r.failures)
	}
	crashed := r.failures[0].System
	starts, err := filepath.Glob(filepath.Join(h.workDir, "shared-*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(starts) != 3 {
		t.Errorf("broker starts %v, want one per system and one after the crash", starts)
	}
	// The crashed broker recorded nothing: its one run crashed it.
	if len(lg.seen) != 2 {
		t.Fatalf("produces recorded on %d brokers, want 2: %v", len(lg.seen), lg.seen)
	}
	var topics []string
	for addr, ts := range lg.seen {
		if !slices.Equal(ts, []string{"w1-sh", "w2-sh", "w3-sh"}) && !slices.Equal(ts, []string{"w2-sh", "w3-sh"}) {
			t.Errorf("broker %s got %v: every run of its system, from the start or after the crash", addr, ts)
		}
		topics = append(topics, ts...)
	}
	slices.Sort(topics)
	if want := []string{"w1-sh", "w2-sh", "w2-sh", "w3-sh", "w3-sh"}; !slices.Equal(topics, want) {
		t.Errorf("topics %v, want %v", topics, want)
	}
	for _, w := range []string{"W2", "W3"} {
		for _, sys := range chosen {
			if got := r.res[w]["sharing"][sys.Name]; len(got) != 1 {
				t.Errorf("%s on %s (crashed in W1: %s): %+v", w, sys.Name, crashed, got)
			}
		}
	}
}

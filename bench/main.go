// Command bench-compare runs the same workloads against Apache Kafka (from Maven Central) and
// Spool (bin/spoold) on this machine, interleaved, and reports medians and Spool/Kafka ratios.
//
//	cd bench && GOWORK=off go run . [-quick] [-reps N] [-only W1,W4] [-docs ../docs]
//
// A run that fails (a broker that does not start or crashes, a tool that errors) is recorded
// as failed in the report, with its log kept in the work dir, and the other runs go on; the
// exit status is then 1. See docs/benchmarks.md for what each workload does.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

type harness struct {
	benchDir  string
	spoold    string
	spool     string
	classpath string
	toolLog4j string
	workDir   string
	verbose   bool
	keep      bool
	// shareBrokers (the quick smoke run): every single-node run of a system uses one broker,
	// started once (sharedBroker), instead of a fresh broker per run.
	shareBrokers bool
	shared       sharedBrokers
	// quick: the smoke run, whose JVMs start on less CPU (quickJVM), whose Kafka clusters
	// detect a dead broker sooner (quickKafkaClusterProps), and whose kafka-tools create most
	// topics with franz-go's admin client (firstTopicCommand).
	quick         bool
	topicCommands topicCommands
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[bench %s] %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "bench-compare: FAILED: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	quick := flag.Bool("quick", os.Getenv("QUICK") != "" && os.Getenv("QUICK") != "0", "smoke mode: tiny workloads, 1 repetition, one broker per system for all single-node runs, the clusters started beside them; results go to the work dir, not docs/ (also QUICK=1)")
	reps := flag.Int("reps", 3, "repetitions per workload and broker (full mode)")
	scale := flag.Float64("scale", 1, "multiply every workload's record count by this (e.g. 0.1 for a short run of the full shapes)")
	only := flag.String("only", "", "comma-separated workload ids to run, W1..W6, TLS (PLAINTEXT against SSL listeners), C1 (3-broker clusters: throughput and failover) and C2 (3-broker clusters: end-to-end latency) (default: all; TLS not in -quick)")
	lgFlag := flag.String("loadgens", "kafka-tools,spool-bench", "load generators: kafka-tools (Kafka's perf tools), spool-bench (bin/spool bench)")
	sysFlag := flag.String("systems", "kafka,spool,spool-nofsync", "brokers to compare, in interleaving order")
	docs := flag.String("docs", "", "directory for benchmarks.md and the PNG charts (default ../docs; in -quick mode the work dir)")
	spoold := flag.String("spoold", "../bin/spoold", "the Spool broker binary")
	spool := flag.String("spool", "../bin/spool", "the spool CLI, whose `spool bench` is the second load generator")
	workRoot := flag.String("work", "", "work directory for both brokers' data, on the filesystem being measured (default .cache/work-<pid>; removed afterwards unless -keep)")
	keep := flag.Bool("keep", false, "keep broker data and logs")
	dryRun := flag.Bool("n", false, "print the plan and the run-time estimate, run nothing")
	verbose := flag.Bool("v", false, "print every tool command")
	flag.Parse()

	ci := os.Getenv("CI") == "true"
	benchDir, err := os.Getwd()
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(benchDir, "pom.xml")); err != nil {
		return fmt.Errorf("run from the bench/ directory (no pom.xml in %s)", benchDir)
	}
	h := &harness{benchDir: benchDir, verbose: *verbose, keep: *keep, shareBrokers: *quick, quick: *quick}
	if h.spoold, err = filepath.Abs(*spoold); err != nil {
		return err
	}
	if st, err := os.Stat(h.spoold); err != nil || st.IsDir() {
		return fmt.Errorf("spoold binary %s not found: run `make build` first", h.spoold)
	}
	h.spool, _ = filepath.Abs(*spool)
	if _, err := exec.LookPath("java"); err != nil {
		return fmt.Errorf("java not found: Java 17+ is needed for Apache Kafka")
	}
	if h.classpath, err = fetchKafka(benchDir); err != nil {
		return err
	}

	var chosen []system
	for _, name := range strings.Split(*sysFlag, ",") {
		i := slices.IndexFunc(systems, func(s system) bool { return s.Name == name })
		if i < 0 {
			return fmt.Errorf("unknown system %q", name)
		}
		chosen = append(chosen, systems[i])
	}
	sz, n := fullSizes, *reps
	if *quick {
		sz, n = quickSizes, 1
	}
	if *scale <= 0 {
		return fmt.Errorf("-scale must be > 0, not %g", *scale)
	}
	sz = sz.scaled(*scale)
	csz := fullClusterSizes
	if *quick {
		csz = quickClusterSizes
	}
	csz = csz.scaled(*scale)
	tsz := fullTLSSizes
	if *quick {
		tsz = quickTLSSizes
	}
	tsz = tsz.scaled(*scale)
	ws := workloads(sz)
	withCluster := true
	withTLSWorkload := !*quick // the smoke run leaves it out: make test's bench-smoke stays short
	if *only != "" {
		ids := strings.Split(*only, ",")
		ws = slices.DeleteFunc(ws, func(w workload) bool { return !slices.Contains(ids, w.ID) })
		csz.c1, csz.c2 = slices.Contains(ids, clusterID), slices.Contains(ids, e2eClusterID)
		withCluster = csz.c1 || csz.c2
		withTLSWorkload = slices.Contains(ids, tlsID)
		if len(ws) == 0 && !withCluster && !withTLSWorkload {
			return fmt.Errorf("-only %q matches no workload", *only)
		}
	}

	if *workRoot == "" {
		*workRoot = filepath.Join(benchDir, ".cache", fmt.Sprintf("work-%d", os.Getpid()))
	}
	h.workDir, _ = filepath.Abs(*workRoot)
	if err := os.MkdirAll(h.workDir, 0o755); err != nil {
		return err
	}
	keepWork := *keep
	defer func() {
		if !keepWork {
			removeAll(h.workDir)
		}
	}()
	h.toolLog4j = filepath.Join(h.workDir, "tools-log4j.properties")
	// ERROR only: a failed send is printed by the tools themselves and fails the run.
	if err := os.WriteFile(h.toolLog4j, []byte("log4j.rootLogger=ERROR, e\nlog4j.appender.e=org.apache.log4j.ConsoleAppender\nlog4j.appender.e.Target=System.err\nlog4j.appender.e.layout=org.apache.log4j.PatternLayout\nlog4j.appender.e.layout.ConversionPattern=[%d] %p %m (%c)%n\n"), 0o644); err != nil {
		return err
	}

	lgs, spoolNote, err := h.loadgens(*lgFlag)
	if err != nil {
		return err
	}
	logf("load generators: %s", spoolNote)
	if ci {
		logf("CI=true: every workload below runs against every broker; any failure exits non-zero")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	mode := "full"
	if *quick {
		mode = "quick"
	}
	outDir := *docs
	if outDir == "" {
		outDir = filepath.Join(benchDir, "..", "docs")
		if *quick {
			outDir = filepath.Join(benchDir, ".cache", "quick-report")
		}
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	logf("mode %s, %d repetition(s), brokers %s, work dir %s", mode, n, *sysFlag, h.workDir)
	est, runs := estimate(ws, chosen, lgs, n)
	var cest, test time.Duration
	if withTLSWorkload {
		test = tlsEstimate(tsz, chosen, lgs, n)
		est += test
		runs += n * len(chosen) * len(lgs)
	}
	if withCluster {
		cest = clusterEstimate(csz, chosen, lgs, n)
		est += cest
		runs += n * len(chosen)
	}
	if h.shareBrokers {
		logf("estimated run time: %s for %d runs one after another, each a fresh broker (calibrated on the full run of 2026-11-30; a guess, not a limit); "+
			"this quick run shares a broker per system and overlaps the systems and C1, so it takes less:", est.Round(time.Second), runs)
	} else {
		logf("estimated run time: %s for %d runs, each a fresh broker (calibrated on the full run of 2026-11-30; a guess, not a limit):", est.Round(time.Second), runs)
	}
	for _, w := range ws {
		d, k := workloadEstimate(w, chosen, lgs, n)
		logf("  %-4s %s (%d runs)  %s", w.ID, d.Round(time.Second), k, w.Title)
	}
	if withTLSWorkload {
		logf("  %-4s %s (%d runs)  produce and fetch, 100 B and 1 KiB, over PLAINTEXT and SSL listeners", tlsID, test.Round(time.Second), n*len(chosen)*len(lgs))
	}
	if withCluster {
		var what []string
		if csz.c2 {
			what = append(what, fmt.Sprintf("%s end-to-end latency at %d records/s", e2eClusterID, csz.e2eRate))
		}
		if csz.c1 {
			what = append(what, clusterID+" acks=all throughput, failover under kill -9 of a leader")
		}
		logf("  %-4s %s (%d cluster starts)  3-broker clusters: %s", csz.ids(), cest.Round(time.Second), n*len(chosen), strings.Join(what, "; "))
	}
	if *dryRun {
		for _, w := range ws {
			logf("  %s %s: kafka-tools: %s; spool bench: %s", w.ID, w.Title, w.Setting, w.SpoolSetting)
		}
		return nil
	}
	r := &report{h: h, systems: chosen, lgs: lgs, res: map[string]map[string]map[string][]result{}, reps: n, mode: mode, spoolNote: spoolNote, loadStart: loadAverage(), args: os.Args[1:], outDir: outDir}
	if *quick && withCluster {
		// The smoke run starts the clusters beside the single-node runs: its numbers mean
		// nothing, and the clusters mostly wait (JVM starts, ZooKeeper sessions, failover).
		err = h.runConcurrentCluster(ctx, r, csz, func() error {
			err := h.runAll(ctx, ws, r)
			if err == nil && withTLSWorkload {
				err = h.runTLSReport(ctx, r, tsz, test)
			}
			return errors.Join(err, h.stopShared())
		})
	} else {
		err = h.runAll(ctx, ws, r)
		if err == nil && withTLSWorkload {
			err = h.runTLSReport(ctx, r, tsz, test)
		}
		err = errors.Join(err, h.stopShared())
		if err == nil && withCluster {
			err = h.runClusterReport(ctx, r, csz, cest)
		}
	}
	if len(r.failures) > 0 && !*keep {
		keepWork = true
		logf("kept the work dir %s: it holds the failed runs' logs (broker data removed)", h.workDir)
	}
	if err != nil {
		return err
	}
	if len(r.ws) > 0 {
		fmt.Println(r.table())
	}
	fmt.Println(r.tlsMarkdown())
	fmt.Println(r.clusterMarkdown())
	fmt.Println(r.e2eClusterMarkdown())
	logf("wrote %s/benchmarks.md and charts; %s run took %s (estimated %s)", outDir, mode, r.elapsed.Round(time.Second), est.Round(time.Second))
	return r.failed()
}

// runAll runs every workload into r, writing the report after each. A run that fails (a tool
// error, a broker that crashes or does not start) is recorded in r.failures and the rest go
// on, each with a fresh broker; only a signal stops the run early.
func (h *harness) runAll(ctx context.Context, ws []workload, r *report) error {
	began := time.Now()
	for k, w := range ws {
		wbegan := time.Now()
		err := h.runWorkload(ctx, w, r)
		r.elapsed = time.Since(began)
		if err != nil {
			err = fmt.Errorf("interrupted by a signal during %s: %w", w.ID, err)
			r.ws, r.partial = ws[:k], fmt.Sprintf("the run stopped during %s (%d of %d workloads done): %s", w.ID, k, len(ws), firstLine(err.Error()))
			if werr := r.write(); werr != nil {
				logf("writing the partial report: %v", werr)
			}
			return err
		}
		est, _ := workloadEstimate(w, r.systems, r.lgs, r.reps)
		logf("%s took %s (estimated %s)", w.ID, time.Since(wbegan).Round(time.Second), est.Round(time.Second))
		r.ws = ws[:k+1]
		r.partial = ""
		if k+1 < len(ws) {
			// Written after every workload, so a run that is killed still leaves what it measured.
			r.partial = fmt.Sprintf("the run is still going or was killed: %d of %d workloads done (%s last)", k+1, len(ws), w.ID)
		}
		if err := r.write(); err != nil {
			return err
		}
	}
	return nil
}

// runClusterReport runs the cluster workload after the single-node ones and writes the report,
// saying it is partial while the workload runs or when a signal stops it.
func (h *harness) runClusterReport(ctx context.Context, r *report, csz clusterSizes, est time.Duration) error {
	began, before := time.Now(), r.elapsed
	r.cluster = newClusterResults(csz) // before the first write, which then keeps the single-node results of a -only C1 run
	r.partial = fmt.Sprintf("the run is still going or was killed: the cluster workload %s was not finished", csz.ids())
	if err := r.write(); err != nil {
		return err
	}
	err := h.runCluster(ctx, r, csz)
	r.elapsed = before + time.Since(began)
	if err != nil {
		r.partial = fmt.Sprintf("the run stopped during %s: %s", csz.ids(), firstLine(err.Error()))
		if werr := r.write(); werr != nil {
			logf("writing the partial report: %v", werr)
		}
		return fmt.Errorf("interrupted by a signal during %s: %w", csz.ids(), err)
	}
	logf("%s took %s (estimated %s)", csz.ids(), time.Since(began).Round(time.Second), est.Round(time.Second))
	r.partial = ""
	return r.write()
}

// runWorkload runs w r.reps times against every system with every load generator that can
// drive it, into r.res[w.ID][generator][system], and failed runs into r.failures. It returns
// an error only when ctx ends.
// With h.shareBrokers (the quick smoke run) the systems' runs go side by side, each system's
// load generators one after the other on its shared broker.
func (h *harness) runWorkload(ctx context.Context, w workload, r *report) error {
	r.res[w.ID] = map[string]map[string][]result{}
	n0 := len(r.failures)
	var mu sync.Mutex // r.res and r.failures, when systems run side by side
	runSystem := func(sys system, rep int) {
		for _, lg := range r.lgs {
			if ok, _ := drives(lg, w); !ok {
				continue
			}
			res, err := h.runOne(ctx, w, sys, lg, rep)
			if ctx.Err() != nil {
				return
			}
			mu.Lock()
			if err != nil {
				r.failures = append(r.failures, h.recordFailure(w, sys, lg, rep, err))
			} else {
				if r.res[w.ID][lg.Name()] == nil {
					r.res[w.ID][lg.Name()] = map[string][]result{}
				}
				r.res[w.ID][lg.Name()][sys.Name] = append(r.res[w.ID][lg.Name()][sys.Name], res)
			}
			mu.Unlock()
		}
	}
	for rep := 1; rep <= r.reps; rep++ {
		order := slices.Clone(r.systems)
		if rep%2 == 0 { // A B C, C B A, ...: no broker always goes first
			slices.Reverse(order)
		}
		var wg sync.WaitGroup
		for _, sys := range order {
			if h.shareBrokers {
				wg.Go(func() { runSystem(sys, rep) })
			} else {
				runSystem(sys, rep)
			}
			if ctx.Err() != nil {
				break
			}
		}
		wg.Wait()
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if h.shareBrokers {
		// This workload's failures in the order of the systems, as a sequential run has them.
		idx := func(f failure) int {
			return slices.IndexFunc(r.systems, func(s system) bool { return s.Name == f.System })
		}
		slices.SortStableFunc(r.failures[n0:], func(a, b failure) int { return cmp.Or(a.Rep-b.Rep, idx(a)-idx(b)) })
	}
	return nil
}

// loadgens picks the load generators named in list (kafka-tools, spool-bench) and says in a
// sentence for the report what `spool bench` drives.
func (h *harness) loadgens(list string) ([]loadgen, string, error) {
	var lgs []loadgen
	note := "`spool bench` was not used (-loadgens): every row uses Kafka's perf tools."
	for _, name := range strings.Split(list, ",") {
		switch name {
		case "kafka-tools":
			if found, _ := detectSpoolBench(h.spool); !found {
				return nil, "", fmt.Errorf("%s has no bench command, which fills W5 for every load generator: run `make build`", h.spool)
			}
			lgs = append(lgs, kafkaTools{h: h})
		case "spool-bench":
			found, ext := detectSpoolBench(h.spool)
			if !found {
				return nil, "", fmt.Errorf("%s has no bench command: run `make build`, or pass -loadgens kafka-tools", h.spool)
			}
			lgs = append(lgs, spoolBench{h: h, extended: ext})
			note = "`spool bench` (Go SDK) drives every workload too."
			if !ext {
				note = "this bin/spool has no `bench e2e` and no `bench produce --rate`, so `spool bench` drives W1, W2, W3 and W5 only; W4, W4b and W6 use Kafka's perf tools alone."
			}
		default:
			return nil, "", fmt.Errorf("unknown load generator %q (want kafka-tools, spool-bench)", name)
		}
	}
	if len(lgs) == 0 {
		return nil, "", errors.New("-loadgens names no load generator")
	}
	return lgs, note, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func removeAll(dir string) {
	if err := os.RemoveAll(dir); err != nil {
		logf("warning: removing %s: %v", dir, err)
	}
}

// Command spool-conformance runs Spool's conformance suite against a Kafka-compatible broker
// and, for client-level cases, an SDK through a driver (conformance/README.md).
//
//	spool-conformance --bootstrap 127.0.0.1:9092 [--driver go|franz-go|c|python|java]
//	                  [--driver-cmd CMD] [--java-classpath CP] [--cases PATTERN] [--junit FILE]
//	                  [--json] [--list] [--tls-ca FILE] [--tls-cert FILE --tls-key FILE]
//	                  [--sasl-mechanism M --sasl-username U [--sasl-password P]]
//	spool-conformance --target spool,spool-cluster,kafka,kafka-cluster --driver go,java
//	                  [--markdown FILE] [--junit FILE] [--cases PATTERN]
//	spool-conformance reference-kafka [--stop]
//
// Exit status: 0 when every case passed (or was skipped), 1 when any failed, 2 for bad usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spoolmq/spool/conformance"
	"github.com/spoolmq/spool/conformance/drivers"
	"github.com/spoolmq/spool/conformance/targets"
	"github.com/spoolmq/spool/sdk-go/clientflags"
)

func main() {
	drivers.MaybeServe()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// usageError is a bad command line: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func run(args []string, stdout, stderr io.Writer) int {
	err := runErr(args, stdout, stderr)
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "spool-conformance: %v\nRun spool-conformance --help for usage.\n", err)
		return 2
	case errors.Is(err, errFailed):
		return 1
	default:
		fmt.Fprintf(stderr, "spool-conformance: %v\n", err)
		return 1
	}
}

var errFailed = errors.New("cases failed")

// flags are the command line of a run.
type flags struct {
	bootstrap, driver, javaCP, driverCmd, pattern, junit, markdown string
	target, targetsDir, spoold, kafkaLibs                          string
	asJSON, list                                                   bool
	parallel                                                       int
	timeout                                                        time.Duration
	// security holds librdkafka's keys of the security flags (nil: plaintext), for the
	// suite's connections and every driver's client.
	security map[string]string
}

func runErr(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "reference-kafka" {
		return referenceKafka(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("spool-conformance", flag.ContinueOnError)
	var f flags
	fs.StringVar(&f.bootstrap, "bootstrap", "", "HOST:PORT of the broker under test (this or --target is required unless --list)")
	fs.StringVar(&f.target, "target", "", "run against named targets, comma-separated: "+strings.Join(targets.Names, ", ")+
		" (spool ones started from spoold, kafka ones from make reference-kafka or started for the run)")
	fs.StringVar(&f.driver, "driver", "go", "driver(s) for client-level cases, comma-separated: "+strings.Join(append(slices.Clone(drivers.Names), drivers.ExternalNames...), ", ")+
		" (c: libspool found by pkg-config; python: the binding on PYTHONPATH; java: --java-classpath)")
	fs.StringVar(&f.javaCP, "java-classpath", "", "class path of kafka-clients and its dependencies, for --driver java (e.g. 'kafka_2.13-3.9.2/libs/*'; with --target, default --kafka-libs)")
	fs.StringVar(&f.driverCmd, "driver-cmd", "", "run client-level cases with this driver program instead (a command line; see DRIVERS.md)")
	fs.StringVar(&f.pattern, "cases", "", "cases to run: comma-separated globs over case ids (produce/*,fetch/long-poll*), an area name (groups), or ~REGEXP; default all")
	fs.StringVar(&f.junit, "junit", "", "also write the results as JUnit XML to `FILE`")
	fs.StringVar(&f.markdown, "markdown", "", "also write the results as a Markdown matrix (target × driver) to `FILE`")
	fs.BoolVar(&f.asJSON, "json", false, "print one JSON object per case (and a summary object) instead of the table")
	fs.BoolVar(&f.list, "list", false, "list the cases (id, level, spec section, description) and exit")
	fs.IntVar(&f.parallel, "parallel", 4, "cases run at once")
	fs.DurationVar(&f.timeout, "case-timeout", 60*time.Second, "time limit of each case")
	fs.StringVar(&f.targetsDir, "targets-dir", filepath.Join("bench", ".cache", "conformance-targets"), "`DIR` of the targets' data and logs, and of make reference-kafka's state")
	fs.StringVar(&f.spoold, "spoold", "", "the spoold binary for the spool targets (default: spoold beside this program, else on PATH)")
	sec := clientflags.Add(fs, nil) // the spool CLI's --tls*/--sasl-* flags
	fs.StringVar(&f.kafkaLibs, "kafka-libs", filepath.Join("bench", ".cache", "kafka-"+targets.KafkaVersion, "libs"), "`DIR` of Apache Kafka's jars for the kafka targets (make reference-kafka fetches them)")
	usage := func() {
		fs.SetOutput(stderr)
		fmt.Fprintf(stderr, "Usage: spool-conformance --bootstrap HOST:PORT [flags]\n       spool-conformance --target spool,kafka,... [flags]\n       spool-conformance reference-kafka [--stop]\n\n"+
			"Runs Spool's conformance cases against a Kafka-compatible broker and prints a table\n(case, result, time, message) and a summary line. Exits 1 if any case failed, 2 on bad usage.\n\n"+
			"A secured broker of your own (--bootstrap): "+clientflags.Help+"The suite's own connections and every driver's client use them (librdkafka's keys; the java\ndriver maps them to the Java client's).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	// Parse quietly: a bad flag gets one line from run, not the whole usage.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage()
			return err
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	cases, err := conformance.Select(f.pattern)
	if err != nil {
		return usageError{err.Error()}
	}
	if f.list {
		return conformance.WriteList(stdout, cases)
	}
	if f.bootstrap == "" && f.target == "" {
		return usageError{"--bootstrap HOST:PORT or --target NAMES is required"}
	}
	if f.bootstrap != "" && f.target != "" {
		return usageError{"--bootstrap and --target exclude each other"}
	}
	if f.parallel < 1 {
		return usageError{"--parallel must be at least 1"}
	}
	if f.security, err = sec.Keys(); err != nil {
		return usageError{err.Error()}
	}
	if f.security != nil && f.target != "" {
		return usageError{"--tls*/--sasl-* flags are for --bootstrap (a secured broker of your own): --target starts plaintext brokers"}
	}
	var names []string
	if f.target != "" {
		for _, n := range strings.Split(f.target, ",") {
			if !slices.Contains(targets.Names, n) {
				return usageError{fmt.Sprintf("--target: unknown target %q (known: %s)", n, strings.Join(targets.Names, ", "))}
			}
			names = append(names, n)
		}
		if f.javaCP == "" {
			f.javaCP = filepath.Join(f.kafkaLibs, "*")
		}
	}
	ds, cleanup, err := buildDrivers(f)
	defer cleanup()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var runs []conformance.MatrixRun
	if f.bootstrap != "" {
		runs = runDrivers(ctx, f, "", f.bootstrap, ds, cases, stdout, len(ds) > 1)
	} else {
		for _, name := range names {
			tg, release, err := target(ctx, f, name, stderr)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "== target %s (bootstrap %s)\n", name, tg.Bootstrap)
			sel := cases
			if len(tg.Brokers) > 1 {
				sel = clusterCases(cases)
				if left := len(cases) - len(sel); left > 0 {
					fmt.Fprintf(stdout, "(%d single-node wire cases left out: they speak to the bootstrap broker as if it led every partition)\n", left)
				}
			}
			runs = append(runs, runDrivers(ctx, f, name, tg.Bootstrap, ds, sel, stdout, true)...)
			if err := release(); err != nil {
				fmt.Fprintf(stderr, "spool-conformance: stopping %s: %v\n", name, err)
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	if len(runs) > 1 {
		fmt.Fprintln(stdout, "== summary")
		failed := 0
		for _, r := range runs {
			s := conformance.Summarize(r.Results)
			failed += s.Failed
			fmt.Fprintf(stdout, "%-14s %-9s %d passed, %d failed, %d skipped\n", r.Target, r.Driver, s.Passed, s.Failed, s.Skipped)
		}
	}
	label := f.bootstrap
	if label == "" {
		label = f.target
	}
	if f.junit != "" {
		if err := writeFile(f.junit, func(w io.Writer) error {
			if len(runs) == 1 && f.target == "" {
				return conformance.WriteJUnit(w, label+" driver "+runs[0].Driver, runs[0].Results)
			}
			return conformance.WriteJUnitMatrix(w, label, runs)
		}); err != nil {
			return fmt.Errorf("--junit: %w", err)
		}
	}
	if f.markdown != "" {
		header := fmt.Sprintf("Written by `spool-conformance` on %s against %s.", time.Now().UTC().Format("2006-01-02 15:04 MST"), label)
		if err := writeFile(f.markdown, func(w io.Writer) error { return conformance.WriteMatrix(w, header, runs) }); err != nil {
			return fmt.Errorf("--markdown: %w", err)
		}
	}
	for _, r := range runs {
		if conformance.Summarize(r.Results).Failed > 0 {
			return errFailed
		}
	}
	return nil
}

// clusterCases are the cases a multi-broker target runs: the cluster cases and the
// client-level ones (an SDK finds each partition's leader itself).
func clusterCases(cases []*conformance.Case) []*conformance.Case {
	var out []*conformance.Case
	for _, c := range cases {
		if c.Brokers > 1 || c.Level == conformance.Client {
			out = append(out, c)
		}
	}
	return out
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// buildDrivers makes the drivers --driver and --driver-cmd name; cleanup removes what was
// built.
func buildDrivers(f flags) ([]conformance.Driver, func(), error) {
	cleanup := func() {}
	if f.driverCmd != "" {
		fields := strings.Fields(f.driverCmd)
		return []conformance.Driver{&conformance.ProcessDriver{DriverName: fields[0], Path: fields[0], Args: fields[1:]}}, cleanup, nil
	}
	var ds []conformance.Driver
	var dir string
	for _, name := range strings.Split(f.driver, ",") {
		if !slices.Contains(drivers.ExternalNames, name) {
			bd, err := drivers.Builtin(name)
			if err != nil {
				return nil, cleanup, usageError{"--driver: " + err.Error()}
			}
			ds = append(ds, bd)
			continue
		}
		if name == "java" && f.javaCP == "" {
			return nil, cleanup, usageError{"--driver java needs --java-classpath (kafka-clients and its dependencies)"}
		}
		if dir == "" {
			var err error
			if dir, err = os.MkdirTemp("", "spool-conformance-driver-"); err != nil {
				return nil, cleanup, err
			}
			cleanup = func() { os.RemoveAll(dir) }
		}
		d, err := drivers.Build(name, drivers.BuildOptions{Dir: dir, JavaClasspath: f.javaCP})
		if err != nil {
			return nil, cleanup, err
		}
		ds = append(ds, d)
	}
	return ds, cleanup, nil
}

// runDrivers runs the cases against one broker: all of them with the first driver, the
// client-level ones again with each further driver (wire cases do not use a driver).
func runDrivers(ctx context.Context, f flags, targetName, bootstrap string, ds []conformance.Driver, cases []*conformance.Case, stdout io.Writer, headings bool) []conformance.MatrixRun {
	var runs []conformance.MatrixRun
	for i, d := range ds {
		sel := cases
		if i > 0 {
			sel = nil
			for _, c := range cases {
				if c.Level == conformance.Client {
					sel = append(sel, c)
				}
			}
			if len(sel) == 0 {
				continue
			}
		}
		cfg := conformance.Config{Bootstrap: bootstrap, Driver: d, Parallel: f.parallel, CaseTimeout: f.timeout, Security: f.security}
		if d.Name() == "java" {
			// A JVM per client: fewer at once, and time for their starts.
			cfg.Parallel, cfg.CaseTimeout = min(f.parallel, 3), max(f.timeout, 3*time.Minute)
		}
		if headings {
			fmt.Fprintf(stdout, "-- driver %s\n", d.Name())
		}
		results := conformance.Run(ctx, cfg, sel)
		if f.asJSON {
			conformance.WriteJSON(stdout, bootstrap, d.Name(), results)
		} else {
			conformance.WriteTable(stdout, results)
		}
		runs = append(runs, conformance.MatrixRun{Target: targetName, Driver: d.Name(), Results: results})
		if ctx.Err() != nil {
			break
		}
	}
	return runs
}

// target finds a running target (a kafka one make reference-kafka left running) or starts it
// for the run; release stops what was started here.
func target(ctx context.Context, f flags, name string, stderr io.Writer) (*targets.Target, func() error, error) {
	if strings.HasPrefix(name, "kafka") {
		state, err := targets.LoadState(f.targetsDir)
		if err != nil {
			return nil, nil, err
		}
		for _, t := range state {
			if t.Name == name && t.Alive() {
				return t, func() error { return nil }, nil
			}
		}
	}
	spoold := f.spoold
	if spoold == "" {
		spoold = "spoold"
		if exe, err := os.Executable(); err == nil {
			if p := filepath.Join(filepath.Dir(exe), "spoold"); fileExists(p) {
				spoold = p
			}
		}
		if !strings.Contains(spoold, "/") {
			if p, err := exec.LookPath(spoold); err == nil {
				spoold = p
			}
		}
	}
	if err := os.MkdirAll(f.targetsDir, 0o755); err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp(f.targetsDir, "run-")
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(stderr, "spool-conformance: starting %s under %s\n", name, dir)
	t, err := targets.Start(ctx, name, targets.Options{Dir: dir, Spoold: spoold, KafkaLibs: f.kafkaLibs})
	if err != nil {
		return nil, nil, err
	}
	return t, func() error {
		err := t.Stop()
		if err == nil {
			os.RemoveAll(dir)
		}
		return err
	}, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// referenceKafka starts (or, with --stop, stops) the reference brokers: Apache Kafka as one
// KRaft node and as a 3-broker ZooKeeper-mode cluster, left running for later runs of
// spool-conformance --target kafka,kafka-cluster (make reference-kafka).
func referenceKafka(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("spool-conformance reference-kafka", flag.ContinueOnError)
	dir := fs.String("targets-dir", filepath.Join("bench", ".cache", "conformance-targets"), "`DIR` of the brokers' data, logs and state file")
	libs := fs.String("kafka-libs", filepath.Join("bench", ".cache", "kafka-"+targets.KafkaVersion, "libs"), "`DIR` of Apache Kafka's jars")
	stopIt := fs.Bool("stop", false, "stop the reference brokers started earlier")
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "Usage: spool-conformance reference-kafka [--stop] [--targets-dir DIR] [--kafka-libs DIR]\n\n"+
				"Starts Apache Kafka %s on loopback as a single KRaft node (target kafka) and as a 3-broker\nZooKeeper-mode cluster on Debian's zookeeper (target kafka-cluster), and leaves them running.\n\nFlags:\n", targets.KafkaVersion)
			fs.SetOutput(stderr)
			fs.PrintDefaults()
			return err
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	state, err := targets.LoadState(*dir)
	if err != nil {
		return err
	}
	if *stopIt {
		var errs []error
		for _, t := range state {
			errs = append(errs, t.Stop())
			fmt.Fprintf(stdout, "%s stopped\n", t.Name)
		}
		if len(state) == 0 {
			fmt.Fprintln(stdout, "no reference brokers recorded in "+targets.StateFile(*dir))
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
		os.Remove(targets.StateFile(*dir))
		return nil
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	var running []*targets.Target
	for _, name := range []string{"kafka", "kafka-cluster"} {
		var found *targets.Target
		for _, t := range state {
			if t.Name == name && t.Alive() {
				found = t
			}
		}
		if found == nil {
			for _, t := range state {
				if t.Name == name {
					t.Stop() // what is left of a broken one
				}
			}
			fmt.Fprintf(stderr, "starting %s under %s\n", name, filepath.Join(*dir, name))
			t, err := targets.Start(context.Background(), name, targets.Options{Dir: *dir, KafkaLibs: *libs, Detach: true})
			if err != nil {
				for _, r := range running {
					r.Stop()
				}
				return err
			}
			found = t
		}
		running = append(running, found)
	}
	if err := targets.SaveState(*dir, running); err != nil {
		return err
	}
	for _, t := range running {
		fmt.Fprintf(stdout, "%-14s bootstrap %s", t.Name, t.Bootstrap)
		if t.ZooKeeper != "" {
			fmt.Fprintf(stdout, "  (brokers %s, %s, %s; ZooKeeper %s)", t.Brokers[1], t.Brokers[2], t.Brokers[3], t.ZooKeeper)
		}
		fmt.Fprintln(stdout)
	}
	return nil
}

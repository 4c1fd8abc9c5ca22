// Command spool-conformance runs Spool's conformance suite against a Kafka-compatible broker
// and, for client-level cases, an SDK through a driver (conformance/README.md).
//
//	spool-conformance --bootstrap 127.0.0.1:9092 [--driver go|franz-go|c|python|java]
//	                  [--driver-cmd CMD] [--java-classpath CP] [--cases PATTERN] [--junit FILE]
//	                  [--json] [--list]
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
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/spoolmq/spool/conformance"
	"github.com/spoolmq/spool/conformance/drivers"
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

func runErr(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("spool-conformance", flag.ContinueOnError)
	bootstrap := fs.String("bootstrap", "", "HOST:PORT of the broker under test (required unless --list)")
	driver := fs.String("driver", "go", "driver for client-level cases: "+strings.Join(append(slices.Clone(drivers.Names), drivers.ExternalNames...), ", ")+
		" (c: libspool found by pkg-config; python: the binding on PYTHONPATH; java: --java-classpath)")
	javaCP := fs.String("java-classpath", "", "class path of kafka-clients and its dependencies, for --driver java (e.g. 'kafka_2.13-3.9.2/libs/*')")
	driverCmd := fs.String("driver-cmd", "", "run client-level cases with this driver program instead (a command line; see DRIVERS.md)")
	pattern := fs.String("cases", "", "cases to run: comma-separated globs over case ids (produce/*,fetch/long-poll*), an area name (groups), or ~REGEXP; default all")
	junit := fs.String("junit", "", "also write the results as JUnit XML to `FILE`")
	asJSON := fs.Bool("json", false, "print one JSON object per case (and a summary object) instead of the table")
	list := fs.Bool("list", false, "list the cases (id, level, spec section, description) and exit")
	parallel := fs.Int("parallel", 4, "cases run at once")
	timeout := fs.Duration("case-timeout", 60*time.Second, "time limit of each case")
	usage := func() {
		fs.SetOutput(stderr)
		fmt.Fprintf(stderr, "Usage: spool-conformance --bootstrap HOST:PORT [flags]\n\nRuns Spool's conformance cases against a Kafka-compatible broker and prints a table\n(case, result, time, message) and a summary line. Exits 1 if any case failed, 2 on bad usage.\n\nFlags:\n")
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
	cases, err := conformance.Select(*pattern)
	if err != nil {
		return usageError{err.Error()}
	}
	if *list {
		return conformance.WriteList(stdout, cases)
	}
	if *bootstrap == "" {
		return usageError{"--bootstrap HOST:PORT is required"}
	}
	if *parallel < 1 {
		return usageError{"--parallel must be at least 1"}
	}
	var d conformance.Driver
	driverName := *driver
	if *driverCmd != "" {
		fields := strings.Fields(*driverCmd)
		driverName = fields[0]
		d = &conformance.ProcessDriver{DriverName: fields[0], Path: fields[0], Args: fields[1:]}
	} else if slices.Contains(drivers.ExternalNames, *driver) {
		if *driver == "java" && *javaCP == "" {
			return usageError{"--driver java needs --java-classpath (kafka-clients and its dependencies)"}
		}
		dir, err := os.MkdirTemp("", "spool-conformance-driver-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if d, err = drivers.Build(*driver, drivers.BuildOptions{Dir: dir, JavaClasspath: *javaCP}); err != nil {
			return err
		}
	} else {
		bd, err := drivers.Builtin(*driver)
		if err != nil {
			return usageError{"--driver: " + err.Error()}
		}
		d = bd
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	results := conformance.Run(ctx, conformance.Config{Bootstrap: *bootstrap, Driver: d, Parallel: *parallel, CaseTimeout: *timeout}, cases)
	if *asJSON {
		err = conformance.WriteJSON(stdout, *bootstrap, driverName, results)
	} else {
		err = conformance.WriteTable(stdout, results)
	}
	if err != nil {
		return fmt.Errorf("writing results: %w", err)
	}
	if *junit != "" {
		f, err := os.Create(*junit)
		if err != nil {
			return fmt.Errorf("--junit: %w", err)
		}
		if err := conformance.WriteJUnit(f, *bootstrap+" driver "+driverName, results); err != nil {
			f.Close()
			return fmt.Errorf("writing %s: %w", *junit, err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("writing %s: %w", *junit, err)
		}
	}
	if conformance.Summarize(results).Failed > 0 {
		return errFailed
	}
	return nil
}

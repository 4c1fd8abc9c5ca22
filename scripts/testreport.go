// testreport reads `go test -json` on stdin and writes what a person needs on stdout: one line
// per package as it finishes, the whole output of every failing test (and of a package that
// failed to build or failed outside a test), and at the end the slowest tests, each package's
// time and a closing "N passed, N failed, N skipped" line. It exits 1 when anything failed, so
// a pipeline needs no second look at go test's status.
//
// Usage: go test -json ... | go run scripts/testreport.go [-slowest N] [-raw FILE]
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"
)

// event is one line of test2json's output.
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
	// ImportPath is set on build-output and build-fail events (Go 1.24+).
	ImportPath string
}

type key struct{ pkg, test string }

type timing struct {
	name    string
	elapsed float64
	waited  float64 // of elapsed, the time a parallel test waited for its place
}

// waitLine is what a test that waits for a place among the parallel tests of its package logs
// when it ends (broker/internal/server's main_test.go): go test's elapsed time includes the
// wait, so the report takes the test's time from this line where there is one.
var waitLine = regexp.MustCompile(`ran (\S+) after waiting (\S+) for its place`)

// ranFor is the time a test took itself, and how long it waited before, from its output.
func ranFor(out *strings.Builder, elapsed float64) (ran, waited float64) {
	if out == nil {
		return elapsed, 0
	}
	m := waitLine.FindStringSubmatch(out.String())
	if m == nil {
		return elapsed, 0
	}
	r, err1 := time.ParseDuration(m[1])
	w, err2 := time.ParseDuration(m[2])
	if err1 != nil || err2 != nil {
		return elapsed, 0
	}
	return r.Seconds(), w.Seconds()
}

type report struct {
	out     io.Writer
	output  map[key]*strings.Builder // buffered output per test (and per package, test "")
	tests   []timing                 // finished top-level tests
	pkgs    []timing                 // finished packages
	failed  []string                 // failed tests and packages, in order
	passed  int
	nfailed int
	skipped int
}

func newReport(out io.Writer) *report {
	return &report{out: out, output: map[key]*strings.Builder{}}
}

func (r *report) buf(k key) *strings.Builder {
	b := r.output[k]
	if b == nil {
		b = &strings.Builder{}
		r.output[k] = b
	}
	return b
}

// line takes one line of input: a test2json event, or anything else (build errors printed
// by go itself), which is passed through at once.
func (r *report) line(s string) {
	var e event
	if !strings.HasPrefix(s, "{") || json.Unmarshal([]byte(s), &e) != nil {
		fmt.Fprintln(r.out, s)
		return
	}
	switch e.Action {
	case "build-output":
		r.buf(key{"build:" + e.ImportPath, ""}).WriteString(e.Output)
	case "build-fail":
		fmt.Fprintf(r.out, "BUILD FAILED %s\n%s", e.ImportPath, r.output[key{"build:" + e.ImportPath, ""}])
		r.failed = append(r.failed, e.ImportPath+" (build)")
		r.nfailed++
	case "output":
		r.buf(key{e.Package, e.Test}).WriteString(e.Output)
	case "pass", "fail", "skip":
		r.finish(e)
	}
}

func (r *report) finish(e event) {
	k := key{e.Package, e.Test}
	out := r.output[k]
	delete(r.output, k)
	if e.Test == "" { // the package
		switch e.Action {
		case "fail":
			fmt.Fprintf(r.out, "FAIL  %-60s %7.1fs\n", e.Package, e.Elapsed)
			if out != nil {
				fmt.Fprint(r.out, out.String())
			}
			// Tests still running when the package failed (a timeout's panic, a crash): what
			// they printed is all there is to read.
			for k, b := range r.output {
				if k.pkg == e.Package {
					fmt.Fprintf(r.out, "--- unfinished: %s %s\n%s", k.pkg, k.test, b)
					delete(r.output, k)
				}
			}
			if !r.anyFailedIn(e.Package) {
				r.failed = append(r.failed, e.Package)
				r.nfailed++
			}
		case "pass":
			fmt.Fprintf(r.out, "ok    %-60s %7.1fs\n", e.Package, e.Elapsed)
		}
		if e.Action != "skip" { // "skip" is a package without test files
			r.pkgs = append(r.pkgs, timing{name: e.Package, elapsed: e.Elapsed})
		}
		return
	}
	top := !strings.Contains(e.Test, "/")
	switch e.Action {
	case "pass":
		if top {
			r.passed++
		}
	case "skip":
		if top {
			r.skipped++
		}
	case "fail":
		if top {
			r.nfailed++
		}
		r.failed = append(r.failed, e.Package+" "+e.Test)
		fmt.Fprintf(r.out, "--- FAIL: %s %s (%.1fs)\n", e.Package, e.Test, e.Elapsed)
		if out != nil {
			fmt.Fprint(r.out, out.String())
		}
	}
	if top {
		ran, waited := ranFor(out, e.Elapsed)
		r.tests = append(r.tests, timing{e.Package + " " + e.Test, ran, waited})
	}
}

func (r *report) anyFailedIn(pkg string) bool {
	for _, f := range r.failed {
		if strings.HasPrefix(f, pkg+" ") {
			return true
		}
	}
	return false
}

func (r *report) close(slowest int) {
	byTime := func(ts []timing) {
		sort.SliceStable(ts, func(i, j int) bool { return ts[i].elapsed > ts[j].elapsed })
	}
	byTime(r.tests)
	byTime(r.pkgs)
	fmt.Fprintf(r.out, "\nslowest tests:\n")
	for i, t := range r.tests {
		if i == slowest {
			break
		}
		wait := ""
		if t.waited >= 0.1 {
			wait = fmt.Sprintf(" (after %.1fs waiting for its place)", t.waited)
		}
		fmt.Fprintf(r.out, "  %7.1fs  %s%s\n", t.elapsed, t.name, wait)
	}
	fmt.Fprintf(r.out, "packages by time:\n")
	for _, p := range r.pkgs {
		if p.elapsed >= 1 {
			fmt.Fprintf(r.out, "  %7.1fs  %s\n", p.elapsed, p.name)
		}
	}
	if len(r.failed) > 0 {
		fmt.Fprintf(r.out, "failed:\n")
		for _, f := range r.failed {
			fmt.Fprintf(r.out, "  %s\n", f)
		}
	}
	fmt.Fprintf(r.out, "\n%d passed, %d failed, %d skipped\n", r.passed, r.nfailed, r.skipped)
}

func main() {
	slowest := flag.Int("slowest", 10, "how many of the slowest tests to list")
	raw := flag.String("raw", "", "also write the raw go test -json stream to this file")
	flag.Parse()
	in := io.Reader(os.Stdin)
	if *raw != "" {
		f, err := os.Create(*raw)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(2)
		}
		defer f.Close()
		in = io.TeeReader(os.Stdin, f)
	}
	r := newReport(os.Stdout)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		r.line(sc.Text())
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "testreport: reading input:", err)
		os.Exit(2)
	}
	r.close(*slowest)
	if r.nfailed > 0 || r.passed == 0 {
		os.Exit(1)
	}
}

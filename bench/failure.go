package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// failure is a run that gave no result: its broker did not start or crashed, or its tool
// failed. The report shows it in place of the figures, and the run goes on.
type failure struct {
	Workload string // workload ID
	Loadgen  string // loadgen Name
	System   string // system Name
	Rep      int
	Reason   string // short, for the table
	Log      string // the whole error, with the tool's and the broker's output tails
}

// recordFailure writes err into the failed run's directory, where the broker's own logs stay,
// and drops the broker data (it can take gigabytes; the logs are what explains a failure).
func (h *harness) recordFailure(w workload, sys system, lg loadgen, rep int, err error) failure {
	dir := h.runDir(w, sys, lg, rep)
	f := failure{Workload: w.ID, Loadgen: lg.Name(), System: sys.Name, Rep: rep, Reason: shortReason(err),
		Log: filepath.Join(dir, "failure.log")}
	werr := os.MkdirAll(dir, 0o755)
	if werr == nil {
		werr = os.WriteFile(f.Log, []byte(err.Error()+"\n"), 0o644)
	}
	if werr != nil {
		logf("  writing %s: %v; the failure was:\n%s", f.Log, werr, err)
		f.Log = ""
	}
	if !h.keep {
		removeAll(filepath.Join(dir, "data"))
	}
	logf("  %-4s %-14s %-2s rep %d: FAILED: %s (log: %s)", w.ID, sys.Name, lg.Short(), rep, f.Reason, f.Log)
	return f
}

// maxReason bounds a reason in the table.
const maxReason = 160

// javaException is a fully qualified exception class and its message, up to the logger's
// "(class)" suffix.
var javaException = regexp.MustCompile(`(?:[a-z_$][\w$]*\.)+([A-Z][\w$]*(?:Exception|Error))(: [^(\n]*)?`)

// shortReason is the first line of err (without a trailing colon), followed by the first Java
// exception or Go panic in the output below it, if any; the broker's log tail that runOne
// appends after "broker output:" is not searched (brokers log handled exceptions).
func shortReason(err error) string {
	lines := strings.Split(err.Error(), "\n")
	s := strings.TrimSuffix(strings.TrimSpace(lines[0]), ":")
	for _, l := range lines[1:] {
		if l == brokerOutputHeader {
			break
		}
		if m := javaException.FindStringSubmatch(l); m != nil {
			s += ": " + strings.TrimSpace(m[1]+m[2])
			break
		}
		if i := strings.Index(l, "panic: "); i >= 0 {
			s += ": " + strings.TrimSpace(l[i:])
			break
		}
	}
	if r := []rune(s); len(r) > maxReason {
		s = string(r[:maxReason-1]) + "…"
	}
	return s
}

// failed is nil when every run gave a result; otherwise an error naming the failed runs and
// their logs.
func (r *report) failed() error {
	if len(r.failures) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d run(s) failed (see %s):", len(r.failures), filepath.Join(r.outDir, "benchmarks.md"))
	for _, f := range r.failures {
		fmt.Fprintf(&b, "\n  %s %s %s rep %d: %s (log: %s)", f.Workload, f.System, f.Loadgen, f.Rep, f.Reason, f.Log)
	}
	return errors.New(b.String())
}

// fails are the failed runs of w with lg against s.
func (r *report) fails(w workload, lg loadgen, s system) []failure {
	var fs []failure
	for _, f := range r.failures {
		if f.Workload == w.ID && f.Loadgen == lg.Name() && f.System == s.Name {
			fs = append(fs, f)
		}
	}
	return fs
}

// failuresMarkdown is the report's list of failed runs, or "" when there are none.
func (r *report) failuresMarkdown() string {
	if len(r.failures) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("## Failed runs\n\nEach failed run's log (the error with the tool's and the broker's output tails) stays in the work dir, with the broker's own logs beside it.\n\n")
	b.WriteString("| workload | load generator | broker | rep | reason | log |\n|---|---|---|---:|---|---|\n")
	for _, f := range r.failures {
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %s | `%s` |\n", f.Workload, f.Loadgen, f.System, f.Rep, cellText(f.Reason), f.Log)
	}
	return b.String() + "\n"
}

// cellText keeps s inside one markdown table cell.
func cellText(s string) string {
	return strings.ReplaceAll(s, "|", `\|`)
}

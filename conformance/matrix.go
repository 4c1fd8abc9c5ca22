package conformance

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// MatrixRun is one run of the suite in a matrix: a target (a broker or cluster) and a driver.
type MatrixRun struct {
	Target, Driver string
	Results        []Result
}

// WriteMatrix writes runs as Markdown: a summary per target and driver, every client-level
// case by target and driver, the wire-level cases by area and target, and every result that
// was not a pass, with its message. It is how docs/conformance.md is generated.
func WriteMatrix(w io.Writer, header string, runs []MatrixRun) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Conformance matrix\n\n%s\n\n## Summary\n\n", header)
	b.WriteString("| target | driver | cases | passed | failed | skipped | of which known Spool issues |\n|---|---|---:|---:|---:|---:|---:|\n")
	for _, r := range runs {
		s := Summarize(r.Results)
		known := 0
		for _, res := range r.Results {
			if res.Outcome == Fail && res.Case.KnownIssue != "" {
				known++
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d | %d |\n", r.Target, r.Driver, len(r.Results), s.Passed, s.Failed, s.Skipped, known)
	}

	// Client-level cases: one column per target and driver that ran them.
	var cols []MatrixRun
	var clientIDs []string
	for _, r := range runs {
		has := false
		for _, res := range r.Results {
			if res.Case.Level == Client {
				has = true
				if !slices.Contains(clientIDs, res.Case.ID) {
					clientIDs = append(clientIDs, res.Case.ID)
				}
			}
		}
		if has {
			cols = append(cols, r)
		}
	}
	if len(cols) > 0 {
		b.WriteString("\n## Client-level cases (an SDK through its driver)\n\n| case |")
		for _, c := range cols {
			fmt.Fprintf(&b, " %s<br>%s |", c.Target, c.Driver)
		}
		b.WriteString("\n|---|" + strings.Repeat("---|", len(cols)) + "\n")
		for _, id := range clientIDs {
			fmt.Fprintf(&b, "| `%s` |", id)
			for _, c := range cols {
				fmt.Fprintf(&b, " %s |", mark(c.Results, id))
			}
			b.WriteString("\n")
		}
	}

	// Wire-level cases by area: passed of run, per target (the first run of each target).
	var targets []MatrixRun
	for _, r := range runs {
		if !slices.ContainsFunc(targets, func(t MatrixRun) bool { return t.Target == r.Target }) {
			targets = append(targets, r)
		}
	}
	b.WriteString("\n## Wire-level cases by area (passed of run)\n\n| area |")
	for _, t := range targets {
		fmt.Fprintf(&b, " %s |", t.Target)
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(targets)) + "\n")
	for _, area := range Areas {
		if area == "client" {
			continue
		}
		fmt.Fprintf(&b, "| %s |", area)
		for _, t := range targets {
			run, passed := 0, 0
			for _, res := range t.Results {
				if res.Case.Area == area && res.Case.Level == Wire {
					run++
					if res.Outcome == Pass {
						passed++
					}
				}
			}
			if run == 0 {
				b.WriteString(" – |")
			} else {
				fmt.Fprintf(&b, " %d of %d |", passed, run)
			}
		}
		b.WriteString("\n")
	}

	b.WriteString("\n## Not passed\n\n")
	none := true
	for _, r := range runs {
		for _, res := range r.Results {
			if res.Outcome == Pass {
				continue
			}
			none = false
			msg := strings.ReplaceAll(res.Message, "\n", " ")
			if len(msg) > 300 {
				msg = msg[:300] + "..."
			}
			fmt.Fprintf(&b, "- %s, %s, `%s`: %s: %s\n", r.Target, r.Driver, res.Case.ID, res.Outcome, strings.ReplaceAll(msg, "|", "\\|"))
		}
	}
	if none {
		b.WriteString("Nothing: every case passed everywhere.\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mark is a matrix cell: pass, FAIL, skip or known issue.
func mark(results []Result, id string) string {
	for _, r := range results {
		if r.Case.ID != id {
			continue
		}
		switch {
		case r.Outcome == Pass:
			return "pass"
		case r.Outcome == Fail && r.Case.KnownIssue != "":
			return "known issue"
		case r.Outcome == Fail:
			return "**FAIL**"
		default:
			return "skip"
		}
	}
	return "–"
}

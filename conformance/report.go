package conformance

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Summary counts a run's outcomes.
type Summary struct {
	Passed, Failed, Skipped int
	// SkipReasons counts skipped cases by reason.
	SkipReasons map[string]int
}

// Summarize counts results.
func Summarize(results []Result) Summary {
	s := Summary{SkipReasons: map[string]int{}}
	for _, r := range results {
		switch r.Outcome {
		case Pass:
			s.Passed++
		case Fail:
			s.Failed++
		case Skip:
			s.Skipped++
			s.SkipReasons[r.Message]++
		}
	}
	return s
}

// String is the summary line: "N passed, N failed" and, if any, the skipped cases with why.
func (s Summary) String() string {
	line := fmt.Sprintf("%d passed, %d failed", s.Passed, s.Failed)
	if s.Skipped > 0 {
		var why []string
		for reason, n := range s.SkipReasons {
			why = append(why, fmt.Sprintf("%d: %s", n, reason))
		}
		line += fmt.Sprintf(", %d skipped (%s)", s.Skipped, strings.Join(why, "; "))
	}
	return line
}

// WriteTable writes one row per case (case, result, time, message) and the summary line.
func WriteTable(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tRESULT\tTIME\tMESSAGE")
	for _, r := range results {
		msg := strings.ReplaceAll(r.Message, "\n", " ")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Case.ID, r.Outcome, r.Elapsed.Round(time.Millisecond), msg)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, Summarize(results))
	return err
}

// jsonResult is one case in the --json output.
type jsonResult struct {
	ID         string  `json:"id"`
	Area       string  `json:"area"`
	Level      Level   `json:"level"`
	Spec       string  `json:"spec"`
	Desc       string  `json:"description"`
	Result     Outcome `json:"result"`
	Seconds    float64 `json:"seconds"`
	Message    string  `json:"message,omitempty"`
	KnownIssue string  `json:"known_issue,omitempty"`
}

// WriteJSON writes one JSON object per line per case, then a summary object.
func WriteJSON(w io.Writer, target, driver string, results []Result) error {
	enc := json.NewEncoder(w)
	for _, r := range results {
		if err := enc.Encode(jsonResult{ID: r.Case.ID, Area: r.Case.Area, Level: r.Case.Level, Spec: r.Case.Spec, Desc: r.Case.Desc,
			Result: r.Outcome, Seconds: r.Elapsed.Seconds(), Message: r.Message, KnownIssue: r.Case.KnownIssue}); err != nil {
			return err
		}
	}
	s := Summarize(results)
	return enc.Encode(map[string]any{"summary": true, "bootstrap": target, "driver": driver, "passed": s.Passed, "failed": s.Failed, "skipped": s.Skipped})
}

// JUnit XML, as CI systems read it: one testsuite per area.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Name    string       `xml:"name,attr"`
	Tests   int          `xml:"tests,attr"`
	Fails   int          `xml:"failures,attr"`
	Skips   int          `xml:"skipped,attr"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name  string      `xml:"name,attr"`
	Tests int         `xml:"tests,attr"`
	Fails int         `xml:"failures,attr"`
	Skips int         `xml:"skipped,attr"`
	Time  float64     `xml:"time,attr"`
	Cases []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      float64       `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	Desc      string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the results as JUnit XML; name labels the run (target and driver).
func WriteJUnit(w io.Writer, name string, results []Result) error {
	return writeJUnit(w, name, []MatrixRun{{Results: results}})
}

// WriteJUnitMatrix writes several runs as one JUnit XML document: a testsuite per target,
// driver and area, named "target driver area".
func WriteJUnitMatrix(w io.Writer, name string, runs []MatrixRun) error {
	return writeJUnit(w, name, runs)
}

func writeJUnit(w io.Writer, name string, runs []MatrixRun) error {
	out := junitSuites{Name: name}
	index := map[string]int{}
	for _, run := range runs {
		prefix := ""
		if run.Target != "" {
			prefix = run.Target + " " + run.Driver + " "
		}
		for _, r := range run.Results {
			suite := prefix + r.Case.Area
			i, ok := index[suite]
			if !ok {
				i = len(out.Suites)
				index[suite] = i
				out.Suites = append(out.Suites, junitSuite{Name: suite})
			}
			s := &out.Suites[i]
			jc := junitCase{Name: r.Case.ID, Classname: "conformance." + r.Case.Area, Time: r.Elapsed.Seconds(),
				Desc: r.Case.Desc + " (SPEC.md " + r.Case.Spec + ")"}
			s.Tests++
			out.Tests++
			s.Time += r.Elapsed.Seconds()
			switch r.Outcome {
			case Fail:
				jc.Failure = &junitMessage{Message: firstLine(r.Message), Text: r.Message}
				s.Fails++
				out.Fails++
			case Skip:
				jc.Skipped = &junitMessage{Message: r.Message}
				s.Skips++
				out.Skips++
			}
			s.Cases = append(s.Cases, jc)
		}
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// WriteList writes the cases, one per line: id, level, spec section, description.
func WriteList(w io.Writer, cases []*Case) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tLEVEL\tSPEC\tDESCRIPTION")
	for _, c := range cases {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.ID, c.Level, c.Spec, c.Desc)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d cases\n", len(cases))
	return err
}

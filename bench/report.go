package main

import (
	"fmt"
	"image/color"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

type report struct {
	h         *harness
	ws        []workload // the workloads done so far
	systems   []system
	lgs       []loadgen
	res       map[string]map[string]map[string][]result // workload -> generator -> system -> runs
	reps      int
	mode      string
	elapsed   time.Duration
	spoolNote string
	loadStart string // /proc/loadavg when the run began
	args      []string
	outDir    string
	// partial, when set, says why the report covers only some workloads.
	partial string
	// failures are the runs that gave no result, in the order they ran.
	failures []failure
	// cluster holds the cluster workload's runs; nil when it did not run.
	cluster *clusterResults
	// tls holds the TLS workload's runs; nil when it did not run.
	tls *tlsResults
}

// write puts benchmarks.md and the charts into outDir.
func (r *report) write() error {
	if err := r.charts(r.outDir); err != nil {
		return fmt.Errorf("charts: %w", err)
	}
	path := filepath.Join(r.outDir, "benchmarks.md")
	doc := r.markdown()
	if len(r.ws) == 0 {
		// A run of only the cluster or TLS workload (-only C1, -only TLS) keeps the other
		// results already in the file and replaces its own section.
		if old, err := os.ReadFile(path); err == nil {
			doc = string(old)
			if i := strings.Index(doc, clusterHeading); r.tls != nil && i >= 0 && !strings.Contains(doc, tlsHeading) {
				doc = doc[:i] + r.tlsMarkdown() + doc[i:] // where a full run puts it: before the cluster
			} else if r.tls != nil {
				doc = spliceSection(doc, tlsHeading, r.tlsMarkdown())
			}
			if r.cluster != nil && r.cluster.sizes.c1 {
				doc = spliceSection(doc, clusterHeading, r.clusterMarkdown())
			}
			if r.cluster != nil && r.cluster.sizes.c2 {
				doc = spliceSection(doc, e2eClusterHeading, r.e2eClusterMarkdown())
			}
		}
	}
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	return nil
}

// spliceSection replaces the section of doc whose heading starts with heading (up to the next
// "## " heading) with section, or inserts section where a full run puts it: C2's after C1's,
// others (and C2's without C1's) before "## Workloads" (else at the end).
func spliceSection(doc, heading, section string) string {
	if i := strings.Index(doc, clusterHeading); heading == e2eClusterHeading && !strings.Contains(doc, heading) && i >= 0 {
		end := len(doc)
		if j := strings.Index(doc[i+len(clusterHeading):], "\n## "); j >= 0 {
			end = i + len(clusterHeading) + j + 1
		}
		return doc[:end] + section + doc[end:]
	}
	if i := strings.Index(doc, heading); i >= 0 {
		end := len(doc)
		if j := strings.Index(doc[i+len(heading):], "\n## "); j >= 0 {
			end = i + len(heading) + j + 1
		}
		return doc[:i] + section + doc[end:]
	}
	if i := strings.Index(doc, "## Workloads"); i >= 0 {
		return doc[:i] + section + doc[i:]
	}
	return doc + "\n" + section
}

// med is the median of the runs of w with lg against s; ok is false when there are none (the
// generator cannot drive the workload).
func (r *report) med(w workload, lg loadgen, s system) (result, bool) {
	rs := r.res[w.ID][lg.Name()][s.Name]
	if len(rs) == 0 {
		return result{}, false
	}
	return medianResult(rs), true
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func medianResult(rs []result) result {
	f := func(g func(result) float64) float64 {
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = g(r)
		}
		return median(xs)
	}
	return result{
		Records:    rs[0].Records,
		RecPerSec:  f(func(r result) float64 { return r.RecPerSec }),
		MBPerSec:   f(func(r result) float64 { return r.MBPerSec }),
		HasLatency: rs[0].HasLatency,
		P50:        f(func(r result) float64 { return r.P50 }),
		P99:        f(func(r result) float64 { return r.P99 }),
		P999:       f(func(r result) float64 { return r.P999 }),
		PeakRSS:    int64(f(func(r result) float64 { return float64(r.PeakRSS) })),
		CPU:        f(func(r result) float64 { return r.CPU }),
		ClientCPU:  f(func(r result) float64 { return r.ClientCPU }),
	}
}

func fmtRate(x float64) string {
	switch {
	case x >= 1e6:
		return fmt.Sprintf("%.2f M", x/1e6)
	case x >= 1e3:
		return fmt.Sprintf("%.1f k", x/1e3)
	}
	return fmt.Sprintf("%.0f", x)
}

func ratio(a, b float64) string {
	if b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func (r *report) hasKafka() bool {
	return slices.ContainsFunc(r.systems, func(s system) bool { return s.Name == "kafka" })
}

// table is the markdown results table (also printed on stdout): one line per workload, load
// generator and broker with medians, then the ratios against Kafka under the same generator.
func (r *report) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "| workload | load generator | broker | records/s | MB/s | p50 ms | p99 ms | p99.9 ms | peak RSS MiB | CPU s | client CPU s |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var undriven []string
	for _, w := range r.ws {
		for _, lg := range r.lgs {
			if ok, need := drives(lg, w); !ok {
				undriven = append(undriven, fmt.Sprintf("%s with %s (it lacks %s)", w.ID, lg.Name(), need))
				continue
			}
			for _, s := range r.systems {
				m, ok := r.med(w, lg, s)
				fs := r.fails(w, lg, s)
				if !ok && len(fs) > 0 {
					fmt.Fprintf(&b, "| %s %s | %s | %s | failed: %s | – | – | – | – | – | – | – |\n", w.ID, w.Title, lg.Name(), s.Name, cellText(fs[0].Reason))
					continue
				}
				broker := s.Name
				if len(fs) > 0 {
					broker += fmt.Sprintf(" (%d of %d runs failed)", len(fs), len(fs)+len(r.res[w.ID][lg.Name()][s.Name]))
				}
				lat := "| – | – | –"
				if m.HasLatency {
					lat = fmt.Sprintf("| %.1f | %.1f | %.1f", m.P50, m.P99, m.P999)
				}
				fmt.Fprintf(&b, "| %s %s | %s | %s | %s | %.1f %s | %.1f | %.1f | %.1f |\n", w.ID, w.Title, lg.Name(), broker, fmtRate(m.RecPerSec), m.MBPerSec, lat, float64(m.PeakRSS)/(1<<20), m.CPU, m.ClientCPU)
			}
		}
	}
	if len(undriven) > 0 {
		fmt.Fprintf(&b, "\nNot run: %s.\n", strings.Join(undriven, "; "))
	}
	if !r.hasKafka() {
		return b.String()
	}
	b.WriteString("\nRatios, Spool / Kafka under the same load generator (medians; throughput > 1 is better, latency, RSS and CPU < 1 are better):\n\n")
	b.WriteString("| workload | load generator | Spool | records/s | p99 | peak RSS | CPU s / record |\n|---|---|---|---:|---:|---:|---:|\n")
	for _, w := range r.ws {
		for _, lg := range r.lgs {
			k, ok := r.med(w, lg, system{Name: "kafka"})
			kafkaFailed := !ok && len(r.fails(w, lg, system{Name: "kafka"})) > 0
			if !ok && !kafkaFailed {
				continue // not driven by lg
			}
			for _, s := range r.systems {
				if s.Name == "kafka" {
					continue
				}
				m, ok := r.med(w, lg, s)
				if kafkaFailed || !ok {
					who := s.Name
					if kafkaFailed {
						who = "kafka"
					}
					fmt.Fprintf(&b, "| %s | %s | %s | %s failed | – | – | – |\n", w.ID, lg.Name(), s.Name, who)
					continue
				}
				p99 := "–"
				if m.HasLatency {
					p99 = ratio(m.P99, k.P99)
				}
				cpuPer := "–"
				if m.Records > 0 && k.Records > 0 && k.CPU > 0 {
					cpuPer = ratio(m.CPU/float64(m.Records), k.CPU/float64(k.Records))
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", w.ID, lg.Name(), s.Name, ratio(m.RecPerSec, k.RecPerSec), p99, ratio(float64(m.PeakRSS), float64(k.PeakRSS)), cpuPer)
			}
		}
	}
	return b.String()
}

func cmdOut(name string, args ...string) string {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

func machine() (cpu string, mem string) {
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		mem = strings.TrimSpace(strings.TrimPrefix(strings.Split(string(data), "\n")[0], "MemTotal:"))
	}
	return
}

func (r *report) markdown() string {
	var b strings.Builder
	cpu, mem := machine()
	javaVer := strings.Split(cmdOut("java", "-version"), "\n")
	rev := cmdOut("git", "-C", r.h.benchDir, "rev-parse", "--short", "HEAD")
	if st := cmdOut("git", "-C", r.h.benchDir, "status", "--porcelain", "--", "../broker"); st != "" && st != "unknown" {
		rev += " (broker/ modified)"
	}
	fs := cmdOut("stat", "-f", "-c", "%T", r.h.workDir)
	b.WriteString("# Benchmarks: Spool and Apache Kafka side by side\n\n")
	b.WriteString("Generated by `make bench-compare` (bench/); do not edit by hand: rerun it.\n")
	if r.mode == "quick" {
		b.WriteString("\n**QUICK smoke run: tiny workloads, one repetition. These numbers mean nothing.**\n")
	}
	if r.partial != "" {
		fmt.Fprintf(&b, "\n**Partial report: %s. Only the workloads below were measured.**\n", r.partial)
	}
	if len(r.failures) > 0 {
		fmt.Fprintf(&b, "\n**%d run(s) failed: see Failed runs below; the results table marks them.**\n", len(r.failures))
	}
	how := "interleaved (each repetition starts a fresh broker per workload; brokers take turns A B C, then C B A, ...)"
	if r.h.shareBrokers {
		how = "one broker per system for every single-node run, the systems side by side, the cluster workload beside them"
	}
	fmt.Fprintf(&b, "\nRun %s UTC, %s mode, %d repetition(s) per workload and broker, %s; the figures are medians. Whole run: %s.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04"), r.mode, r.reps, how, r.elapsed.Round(time.Second))
	b.WriteString("## Machine and versions\n\n")
	fmt.Fprintf(&b, "- CPU: %s, %d cores; memory %s; kernel %s; filesystem of both brokers' data: %s (%s)\n", cpu, runtime.NumCPU(), mem, cmdOut("uname", "-r"), fs, r.h.workDir)
	fmt.Fprintf(&b, "- Apache Kafka %s (org.apache.kafka:kafka_2.13 and kafka-tools from Maven Central), single node, KRaft combined broker+controller, %s, JVM `%s`\n", kafkaVersion, javaVer[0], strings.Join(r.h.brokerJVM(), " "))
	fmt.Fprintf(&b, "- Spool spoold at %s, %s\n", rev, runtime.Version())
	fmt.Fprintf(&b, "- Load generators: %s (ProducerPerformance, ConsumerPerformance, EndToEndLatency), JVM `%s`; `spool bench` (sdk-go/cmd/spool, built with the broker). Each row names its generator; ratios compare brokers under the same one. %s\n", kafkaTools{}.Name(), r.h.toolJVMLabel(), r.spoolNote)
	fmt.Fprintf(&b, "- Load average (1, 5, 15 min) when the run began: %s; when this report was written: %s. Above the core count means other work competed with the brokers and load generators; differences under ±20%% are noise on this VM.\n\n", r.loadStart, loadAverage())
	b.WriteString("## Durability per column\n\n")
	for _, s := range r.systems {
		fmt.Fprintf(&b, "- **%s** (%s): %s\n", s.Name, s.Label, s.Durability)
	}
	b.WriteString("\n## Results\n\n")
	if len(r.ws) > 0 {
		b.WriteString(r.table())
	}
	b.WriteString("\n" + r.tlsMarkdown())
	b.WriteString(r.clusterMarkdown())
	b.WriteString(r.e2eClusterMarkdown())
	b.WriteString(r.failuresMarkdown())
	b.WriteString("MB/s is 10^6 bytes of record values per second. Peak RSS is the broker's VmHWM (sampled from /proc every 100 ms) over its life in that run, including startup and, for W5, the fill. CPU is the broker's utime+stime during the measured phase only; client CPU is the load generator's over the same phase (a JVM's start included). Where client CPU nears the core count times the phase's wall time, the client, not the broker, sets the pace, and the ratio then shows how much CPU each broker leaves it.\n\n")
	b.WriteString("![throughput](bench-throughput.png)\n\n![latency](bench-latency.png)\n\n")
	b.WriteString("## Workloads\n\n")
	for _, w := range r.ws {
		fmt.Fprintf(&b, "- **%s %s**: kafka-tools: %s. spool bench: %s.", w.ID, w.Title, w.Setting, w.SpoolSetting)
		if w.Latency != "" {
			fmt.Fprintf(&b, " Latency columns: %s.", w.Latency)
		}
		b.WriteString("\n")
	}
	b.WriteString("\nEvery topic is created by the load generator's own tool (TopicCommand, `spool topic create`; replication factor 1) before its workload; no compression; the tools' client defaults otherwise. Each run starts a fresh broker.\n\n")
	b.WriteString("## Commands\n\n```sh\nmake bench-compare            # full run, writes docs/benchmarks.md and docs/bench-*.png\nmake bench-compare QUICK=1    # smoke run (part of make test), report under bench/.cache/quick-report/\n")
	b.WriteString("cd bench && GOWORK=off go run . -help   # -reps, -only W1,W4, -systems, -loadgens, -scale, -n, -keep, -v\n")
	b.WriteString("cd bench && GOWORK=off go run . -only C1 -systems kafka,spool   # the cluster workload alone: rewrites only its section\n")
	b.WriteString("cd bench && GOWORK=off go run . -only C2 -systems kafka,spool   # cluster end-to-end latency alone: rewrites only its section\n")
	b.WriteString("cd bench && GOWORK=off go run . -only TLS -systems kafka,spool  # PLAINTEXT against SSL listeners alone: rewrites only its section\n```\n\n")
	fmt.Fprintf(&b, "This run: `cd bench && GOWORK=off go run . %s`\n", strings.Join(r.args, " "))
	return b.String()
}

var palette = []color.Color{color.RGBA{R: 0xd9, G: 0x5f, B: 0x02, A: 0xff}, color.RGBA{R: 0x1b, G: 0x9e, B: 0x77, A: 0xff}, color.RGBA{R: 0x75, G: 0x70, B: 0xb3, A: 0xff}, color.RGBA{R: 0x66, G: 0x66, B: 0x66, A: 0xff}}

// cell is one workload run by one load generator: a group of bars in the charts.
type cell struct {
	w  workload
	lg loadgen
}

// cells lists the (workload, generator) pairs of ws that were run, labelled for a chart axis.
func (r *report) cells(ws []workload) ([]cell, []string) {
	var cs []cell
	var labels []string
	for _, w := range ws {
		for _, lg := range r.lgs {
			if ok, _ := drives(lg, w); !ok {
				continue
			}
			cs = append(cs, cell{w, lg})
			label := w.ID
			if len(r.lgs) > 1 {
				label += " " + lg.Short()
			}
			labels = append(labels, label)
		}
	}
	return cs, labels
}

// charts draws bench-throughput.png (MB/s per throughput workload and load generator, one bar
// per broker) and bench-latency.png (p50/p99/p99.9 per broker for each latency workload).
// Labels: KT kafka-tools, SB spool bench.
func (r *report) charts(dir string) error {
	var tw, lw []workload
	for _, w := range r.ws {
		if w.ID == "W4" || w.ID == "W4b" {
			lw = append(lw, w)
		} else {
			tw = append(tw, w)
		}
	}
	if tcs, names := r.cells(tw); len(tcs) > 0 {
		err := r.barChart("Throughput (median MB/s, higher is better; KT kafka-tools, SB spool bench)", "MB/s", names, vg.Points(12), 9*vg.Inch,
			filepath.Join(dir, "bench-throughput.png"), func(s system) plotter.Values {
				vals := make(plotter.Values, len(tcs))
				for j, c := range tcs {
					m, _ := r.med(c.w, c.lg, s)
					vals[j] = m.MBPerSec
				}
				return vals
			})
		if err != nil {
			return err
		}
	}
	if lcs, labels := r.cells(lw); len(lcs) > 0 {
		var names []string
		for _, l := range labels {
			names = append(names, l+" p50", l+" p99", l+" p99.9")
		}
		err := r.barChart("Latency percentiles (median of runs, ms, lower is better)", "ms", names, vg.Points(10), 11*vg.Inch,
			filepath.Join(dir, "bench-latency.png"), func(s system) plotter.Values {
				var vals plotter.Values
				for _, c := range lcs {
					m, _ := r.med(c.w, c.lg, s)
					vals = append(vals, m.P50, m.P99, m.P999)
				}
				return vals
			})
		if err != nil {
			return err
		}
	}
	return nil
}

// barChart draws one group of bars per name, one bar per broker (values gives a broker's bars
// in name order), and saves it as a PNG of the given width.
func (r *report) barChart(title, unit string, names []string, barWidth, imgWidth vg.Length, path string, values func(system) plotter.Values) error {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = unit
	for i, s := range r.systems {
		bars, err := plotter.NewBarChart(values(s), barWidth)
		if err != nil {
			return err
		}
		bars.Color = palette[i%len(palette)]
		bars.LineStyle.Width = 0
		bars.Offset = barWidth * vg.Length(float64(i)-float64(len(r.systems)-1)/2)
		p.Add(bars)
		p.Legend.Add(s.Name, bars)
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs = vg.Points(8)
	p.Y.Min, p.Y.Max = 0, p.Y.Max*1.3 // headroom for the legend
	p.NominalX(names...)
	return p.Save(imgWidth, 4*vg.Inch, path)
}

// loadAverage is the first three fields of /proc/loadavg, or "unknown".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

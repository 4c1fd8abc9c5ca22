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
	ws        []workload
	systems   []system
	med       map[string]map[string]result // workload -> system -> medians
	reps      int
	mode      string
	elapsed   time.Duration
	spoolNote string
	args      []string
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
	}
}

func buildReport(h *harness, ws []workload, sys []system, res map[string]map[string][]result, reps int, mode string, elapsed time.Duration, note string, args []string) *report {
	r := &report{h: h, ws: ws, systems: sys, med: map[string]map[string]result{}, reps: reps, mode: mode, elapsed: elapsed, spoolNote: note, args: args}
	for _, w := range ws {
		r.med[w.ID] = map[string]result{}
		for _, s := range sys {
			r.med[w.ID][s.Name] = medianResult(res[w.ID][s.Name])
		}
	}
	return r
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

// table is the markdown results table (also printed on stdout): one line per workload and
// broker with medians, then the ratio table against Kafka.
func (r *report) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "| workload | broker | records/s | MB/s | p50 ms | p99 ms | p99.9 ms | peak RSS MiB | CPU s |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, w := range r.ws {
		for _, s := range r.systems {
			m := r.med[w.ID][s.Name]
			lat := "| – | – | –"
			if m.HasLatency {
				lat = fmt.Sprintf("| %.1f | %.1f | %.1f", m.P50, m.P99, m.P999)
			}
			fmt.Fprintf(&b, "| %s %s | %s | %s | %.1f %s | %.1f | %.1f |\n", w.ID, w.Title, s.Name, fmtRate(m.RecPerSec), m.MBPerSec, lat, float64(m.PeakRSS)/(1<<20), m.CPU)
		}
	}
	if !r.hasKafka() {
		return b.String()
	}
	b.WriteString("\nRatios, Spool / Kafka (medians; throughput > 1 is better, latency, RSS and CPU < 1 are better):\n\n")
	b.WriteString("| workload | Spool | records/s | p99 | peak RSS | CPU s / record |\n|---|---|---:|---:|---:|---:|\n")
	for _, w := range r.ws {
		k := r.med[w.ID]["kafka"]
		for _, s := range r.systems {
			if s.Name == "kafka" {
				continue
			}
			m := r.med[w.ID][s.Name]
			p99 := "–"
			if m.HasLatency {
				p99 = ratio(m.P99, k.P99)
			}
			cpuPer := "–"
			if m.Records > 0 && k.Records > 0 && k.CPU > 0 {
				cpuPer = ratio(m.CPU/float64(m.Records), k.CPU/float64(k.Records))
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", w.ID, s.Name, ratio(m.RecPerSec, k.RecPerSec), p99, ratio(float64(m.PeakRSS), float64(k.PeakRSS)), cpuPer)
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
	fmt.Fprintf(&b, "\nRun %s UTC, %s mode, %d repetition(s) per workload and broker, interleaved (each repetition starts a fresh broker per workload; brokers take turns A B C, then C B A, ...); the figures are medians. Whole run: %s.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04"), r.mode, r.reps, r.elapsed.Round(time.Second))
	b.WriteString("## Machine and versions\n\n")
	fmt.Fprintf(&b, "- CPU: %s, %d cores; memory %s; kernel %s; filesystem of both brokers' data: %s (%s)\n", cpu, runtime.NumCPU(), mem, cmdOut("uname", "-r"), fs, r.h.workDir)
	fmt.Fprintf(&b, "- Apache Kafka %s (org.apache.kafka:kafka_2.13 and kafka-tools from Maven Central), single node, KRaft combined broker+controller, %s, JVM `%s`\n", kafkaVersion, javaVer[0], strings.Join(kafkaBrokerJVM, " "))
	fmt.Fprintf(&b, "- Spool spoold at %s, %s\n", rev, runtime.Version())
	fmt.Fprintf(&b, "- Load generator: %s (ProducerPerformance, ConsumerPerformance, EndToEndLatency), JVM `-Xmx1G -XX:+UseG1GC`. %s\n", kafkaTools{}.Name(), r.spoolNote)
	b.WriteString("- Other work was running on the machine during this run unless stated otherwise; treat differences under ±20% as noise.\n\n")
	b.WriteString("## Durability per column\n\n")
	for _, s := range r.systems {
		fmt.Fprintf(&b, "- **%s** (%s): %s\n", s.Name, s.Label, s.Durability)
	}
	b.WriteString("\n## Results\n\n")
	b.WriteString(r.table())
	b.WriteString("\nMB/s is 10^6 bytes of record values per second. Peak RSS is the broker's VmHWM (sampled from /proc every 100 ms) over its life in that run, including startup and, for W5, the fill. CPU is the broker's utime+stime during the measured phase only.\n\n")
	b.WriteString("![throughput](bench-throughput.png)\n\n![latency](bench-latency.png)\n\n")
	b.WriteString("## Workloads\n\n")
	for _, w := range r.ws {
		fmt.Fprintf(&b, "- **%s %s**: %s.", w.ID, w.Title, w.Setting)
		if w.Latency != "" {
			fmt.Fprintf(&b, " Latency columns: %s.", w.Latency)
		}
		b.WriteString("\n")
	}
	b.WriteString("\nEvery topic is created with Kafka's TopicCommand (replication factor 1) before its workload; no compression; the tools' client defaults otherwise.\n\n")
	b.WriteString("## Commands\n\n```sh\nmake bench-compare            # full run, writes docs/benchmarks.md and docs/bench-*.png\nmake bench-compare QUICK=1    # smoke run (part of make test), report under bench/.cache/quick-report/\n")
	b.WriteString("cd bench && GOWORK=off go run . -help   # -reps, -only W1,W4, -systems, -keep, -v\n```\n\n")
	fmt.Fprintf(&b, "This run: `cd bench && GOWORK=off go run . %s`\n", strings.Join(r.args, " "))
	return b.String()
}

var palette = []color.Color{color.RGBA{R: 0xd9, G: 0x5f, B: 0x02, A: 0xff}, color.RGBA{R: 0x1b, G: 0x9e, B: 0x77, A: 0xff}, color.RGBA{R: 0x75, G: 0x70, B: 0xb3, A: 0xff}, color.RGBA{R: 0x66, G: 0x66, B: 0x66, A: 0xff}}

// charts draws bench-throughput.png (MB/s per throughput workload, one bar per broker) and
// bench-latency.png (p50/p99/p99.9 per broker for each latency workload).
func (r *report) charts(dir string) error {
	var tw, lw []workload
	for _, w := range r.ws {
		if w.ID == "W4" || w.ID == "W4b" {
			lw = append(lw, w)
		} else {
			tw = append(tw, w)
		}
	}
	if len(tw) > 0 {
		names := make([]string, len(tw))
		for i, w := range tw {
			names[i] = w.ID
		}
		err := r.barChart("Throughput (median MB/s, higher is better)", "MB/s", names, vg.Points(14), 7*vg.Inch,
			filepath.Join(dir, "bench-throughput.png"), func(s system) plotter.Values {
				vals := make(plotter.Values, len(tw))
				for j, w := range tw {
					vals[j] = r.med[w.ID][s.Name].MBPerSec
				}
				return vals
			})
		if err != nil {
			return err
		}
	}
	if len(lw) > 0 {
		var names []string
		for _, w := range lw {
			names = append(names, w.ID+" p50", w.ID+" p99", w.ID+" p99.9")
		}
		err := r.barChart("Latency percentiles (median of runs, ms, lower is better)", "ms", names, vg.Points(12), 8*vg.Inch,
			filepath.Join(dir, "bench-latency.png"), func(s system) plotter.Values {
				var vals plotter.Values
				for _, w := range lw {
					m := r.med[w.ID][s.Name]
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

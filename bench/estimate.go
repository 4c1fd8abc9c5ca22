package main

import (
	"math"
	"time"
)

// phase is one load-generator process of a workload's run, as the run-time estimate sees it.
type phase struct {
	op      string // "produce", "consume" or "e2e"
	records int64
	size    int    // value bytes
	rate    int    // records/s asked for; 0: as fast as it goes
	by      string // the load generator (Short) that runs it whatever the row's; "": the row's
}

// calibration is the rate of unthrottled phases by load generator, broker kind and phase
// kind, and the fixed costs of a run. The numbers come from the wall time of each run in the
// full-mode run log of 2026-11-30 08:19 (W1–W5, 3 repetitions) after taking
// off the fixed costs (fitted on W4b, whose measured phase is fixed at 5 s); with them the
// model gives 18.2 minutes for the full run of docs/benchmarks.md (fc9dc30), which took
// 17m43s, and about 2.5 minutes for QUICK=1 runs, which took 2m3s–3m24s. The previous
// model, from assumed rates, said 35 and 5.5 minutes.
var (
	// startCost is a broker start (Kafka: JVM, KRaft election) and stop.
	startCost = map[string]time.Duration{"kafka": 5 * time.Second, "spool": 300 * time.Millisecond}
	// toolCost is one tool process, startup included (the JVM for Kafka's tools); a run
	// starts one per phase plus one that creates the topic.
	toolCost = map[string]time.Duration{"KT": 1100 * time.Millisecond, "SB": 100 * time.Millisecond}
	// throughput is records/s; a phase with a rate goes at the lower of the two. "produce1k"
	// is 1 KiB values, "e2e" Kafka's closed-loop EndToEndLatency (spool bench e2e runs at its
	// rate).
	throughput = map[calKey]float64{
		{"KT", "kafka", "produce"}: 200_000, {"KT", "spool", "produce"}: 360_000,
		{"SB", "kafka", "produce"}: 900_000, {"SB", "spool", "produce"}: 1_500_000,
		{"KT", "kafka", "produce1k"}: 35_000, {"KT", "spool", "produce1k"}: 63_000,
		{"SB", "kafka", "produce1k"}: 270_000, {"SB", "spool", "produce1k"}: 600_000,
		{"KT", "kafka", "consume"}: 550_000, {"KT", "spool", "consume"}: 600_000,
		{"SB", "kafka", "consume"}: 1_800_000, {"SB", "spool", "consume"}: 3_000_000,
		{"KT", "kafka", "e2e"}: 220, {"KT", "spool", "e2e"}: 640,
	}
)

type calKey struct{ loadgen, broker, op string }

// duration is how long p takes with the load generator lgShort against a broker of kind.
func (p phase) duration(lgShort, kind string) time.Duration {
	op := p.op
	if op == "produce" && p.size >= 1000 {
		op = "produce1k"
	}
	rate := throughput[calKey{lgShort, kind, op}]
	if p.rate > 0 && (rate == 0 || float64(p.rate) < rate) {
		rate = float64(p.rate)
	}
	if rate == 0 {
		return 0
	}
	return time.Duration(math.Round(float64(p.records) / rate * float64(time.Second)))
}

// runEstimate is one run of w: broker start, tool processes and phases.
func runEstimate(w workload, lgShort, kind string) time.Duration {
	d := startCost[kind] + toolCost[lgShort] // the tool that creates the topic
	for _, p := range w.Phases {
		g := lgShort
		if p.by != "" {
			g = p.by
		}
		d += toolCost[g] + p.duration(g, kind)
	}
	return d
}

// workloadEstimate is the time and number of runs of w: reps runs per broker and load
// generator that drives it.
func workloadEstimate(w workload, chosen []system, lgs []loadgen, reps int) (time.Duration, int) {
	var d time.Duration
	n := 0
	for _, lg := range lgs {
		if ok, _ := drives(lg, w); !ok {
			continue
		}
		for _, s := range chosen {
			d += time.Duration(reps) * runEstimate(w, lg.Short(), s.Kind)
			n += reps
		}
	}
	return d, n
}

// estimate is the whole run's time and number of runs (each a broker start).
func estimate(ws []workload, chosen []system, lgs []loadgen, reps int) (time.Duration, int) {
	var total time.Duration
	runs := 0
	for _, w := range ws {
		d, n := workloadEstimate(w, chosen, lgs, reps)
		total += d
		runs += n
	}
	return total, runs
}

// clusterEstimate is the cluster workloads' time: per repetition and system a ZooKeeper and
// three brokers started and stopped, C2's end-to-end phase per load generator, C1's produce phases (at a third of the single-node rates
// of the calibration: three copies of every record), and one failover (Kafka waits for its
// 18 s ZooKeeper session; Spool's goal is about a second). Fitted loosely on the run of
// 2026-12-02 00:31 under a load average near 30 (Kafka's cluster, kill and stop about 90 s).
func clusterEstimate(sz clusterSizes, chosen []system, lgs []loadgen, reps int) time.Duration {
	clusterCost := map[string]time.Duration{"kafka": 90 * time.Second, "spool": 10 * time.Second}
	var d time.Duration
	for _, s := range chosen {
		d += clusterCost[s.Kind]
		for _, lg := range lgs {
			if sz.c2 && lg.Can(needE2E) {
				// C2: spool bench e2e goes at its rate; EndToEndLatency's closed loop at
				// the single-node rate of the calibration (a guess: replication adds a
				// round trip per record).
				p := phase{op: "e2e", records: sz.e2eRecords, size: 100, rate: sz.e2eRate}
				d += 2*toolCost[lg.Short()] + p.duration(lg.Short(), s.Kind)
			}
			if !sz.c1 {
				continue
			}
			for _, p := range []phase{{op: "produce", records: sz.records100, size: 100}, {op: "produce", records: sz.records1k, size: 1024}} {
				d += toolCost[lg.Short()] + 3*p.duration(lg.Short(), s.Kind)
			}
		}
	}
	return time.Duration(reps) * d
}

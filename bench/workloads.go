package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// result is one measured run of one workload against one broker.
type result struct {
	Records    int64
	RecPerSec  float64
	MBPerSec   float64 // 10^6 bytes/s of record values
	HasLatency bool
	P50        float64 // ms
	P99        float64
	P999       float64
	PeakRSS    int64   // bytes, broker VmHWM over its life in this run
	CPU        float64 // broker utime+stime during the measured phase, seconds
	// ClientCPU is the load generator's utime+stime over the measured phase (a JVM's start
	// included), seconds: near cores × wall time, the client and not the broker is the limit.
	ClientCPU float64
}

// Capabilities a workload may need from its load generator (see loadgen.Can).
const (
	needRate = "a fixed produce rate (--rate)"
	needE2E  = "an end-to-end latency mode (bench e2e)"
)

type workload struct {
	ID      string
	Title   string
	Setting string // what Kafka's tools do, stated in the report
	// SpoolSetting is what `spool bench` does for this workload.
	SpoolSetting string
	Latency      string   // what the latency columns mean for this row
	Needs        []string // capabilities the load generator must have to drive it
	// Phases are its load-generator processes, for the run-time estimate (estimate.go).
	Phases []phase
	// run prepares the broker (topics, fill) and returns the measured phase's result;
	// measure wraps the measured phase so CPU is counted for it alone.
	run func(ctx context.Context, lg loadgen, addr string, measure func(func() (result, error)) (result, error)) (result, error)
}

type sizes struct {
	w1, w2, w3, w4, w4b, w5, w6 int64
	w4bRate, w6Rate, e2eRate    int
	w6Partitions                int
}

// fullSizes keep a full run (3 repetitions, 3 brokers, 2 load generators: 126 broker starts)
// near 21 minutes on a 2-core machine (20m34s on 2026-11-30): each measured phase of Kafka's tools lasts roughly 3 to
// 13 seconds, long enough that JVM warm-up is a small part of it.
//
// W5 reads 1 GB because Kafka's consumer ends a run with one 500 ms stall on either broker:
// once a partition is drained while the others still hold buffered records, its next fetch
// lists only drained partitions, the broker holds it for fetch.max.wait.ms, and no other
// fetch goes to that broker meanwhile (ConsumerPerformance --print-metrics:
// fetch-latency-max 502-517 ms in 12 of 13 runs against both). Over 250 MB that stall was
// a quarter of the measured time and decided the ratio by luck.
var fullSizes = sizes{w1: 2_500_000, w2: 2_000_000, w3: 400_000, w4: 3_000, w4b: 50_000, w5: 10_000_000, w6: 30_000, w4bRate: 10_000, w6Rate: 5_000, e2eRate: 1_000, w6Partitions: 1000}

// quickSizes are the smoke run's: each phase as short as still goes through its code (a few
// batches per partition, a rate that paces, a topic of many partitions), since its numbers
// mean nothing and the JVM starts of Kafka and its tools are most of its time.
var quickSizes = sizes{w1: 6_000, w2: 6_000, w3: 2_000, w4: 100, w4b: 500, w5: 6_000, w6: 500, w4bRate: 2_000, w6Rate: 2_000, e2eRate: 1_000, w6Partitions: 100}

// scaled multiplies every record count by f (rates stay), for short runs of the full shapes.
func (s sizes) scaled(f float64) sizes {
	m := func(n int64) int64 { return max(1, int64(float64(n)*f)) }
	s.w1, s.w2, s.w3, s.w4, s.w4b, s.w5, s.w6 = m(s.w1), m(s.w2), m(s.w3), m(s.w4), m(s.w4b), m(s.w5), m(s.w6)
	return s
}

func workloads(s sizes) []workload {
	produce := func(topic string, parts int, spec produceSpec) func(context.Context, loadgen, string, func(func() (result, error)) (result, error)) (result, error) {
		return func(ctx context.Context, lg loadgen, addr string, measure func(func() (result, error)) (result, error)) (result, error) {
			if err := lg.CreateTopic(ctx, addr, topic, parts); err != nil {
				return result{}, err
			}
			spec := spec // a copy per run: the quick run's systems run side by side
			spec.Topic = topic
			return measure(func() (result, error) { return lg.Produce(ctx, addr, spec) })
		}
	}
	sb := func(n int64, size int, acks string, rate int) string {
		cmd := fmt.Sprintf("spool bench produce --records %d --size %d --acks %s", n, size, acks)
		if rate > 0 {
			cmd += fmt.Sprintf(" --rate %d", rate)
		}
		return cmd + " (Go SDK, its defaults otherwise)"
	}
	return []workload{
		{ID: "W1", Title: "produce 100 B, 6 partitions, acks=1",
			Setting:      fmt.Sprintf("ProducerPerformance --num-records %d --record-size 100 --throughput -1, acks=1, client defaults otherwise (batch.size 16384, linger.ms 0, no compression)", s.w1),
			SpoolSetting: sb(s.w1, 100, "1", 0),
			Latency:      "produce latency (send to ack) under saturation: queueing, not service time",
			Phases:       []phase{{op: "produce", records: s.w1, size: 100}},
			run:          produce("w1", 6, produceSpec{Records: s.w1, Size: 100, Acks: "1", Throughput: -1})},
		{ID: "W2", Title: "produce 100 B, 6 partitions, acks=all",
			Setting:      fmt.Sprintf("as W1 with acks=all, --num-records %d", s.w2),
			SpoolSetting: sb(s.w2, 100, "all", 0),
			Latency:      "produce latency under saturation",
			Phases:       []phase{{op: "produce", records: s.w2, size: 100}},
			run:          produce("w2", 6, produceSpec{Records: s.w2, Size: 100, Acks: "all", Throughput: -1})},
		{ID: "W3", Title: "produce 1 KiB, 6 partitions, acks=all",
			Setting:      fmt.Sprintf("ProducerPerformance --num-records %d --record-size 1024 --throughput -1, acks=all", s.w3),
			SpoolSetting: sb(s.w3, 1024, "all", 0),
			Latency:      "produce latency under saturation",
			Phases:       []phase{{op: "produce", records: s.w3, size: 1024}},
			run:          produce("w3", 6, produceSpec{Records: s.w3, Size: 1024, Acks: "all", Throughput: -1})},
		{ID: "W4", Title: "end-to-end latency, 100 B, 1 partition, acks=all",
			Setting:      fmt.Sprintf("EndToEndLatency, %d records one at a time (closed loop: the next is sent when the previous is consumed, so the rate is 1/latency, far below saturation)", s.w4),
			SpoolSetting: fmt.Sprintf("spool bench e2e --records %d --size 100 --acks all --rate %d (open loop at a fixed rate far below saturation; records/s is the rate achieved)", s.w4, s.e2eRate),
			Latency:      "end-to-end, send until the consumer has it; EndToEndLatency reports whole milliseconds truncated (so 0 means under 1 ms) and its records/s is 1 / mean latency",
			Needs:        []string{needE2E},
			Phases:       []phase{{op: "e2e", records: s.w4, size: 100, rate: s.e2eRate}},
			run: func(ctx context.Context, lg loadgen, addr string, measure func(func() (result, error)) (result, error)) (result, error) {
				if err := lg.CreateTopic(ctx, addr, "w4", 1); err != nil {
					return result{}, err
				}
				return measure(func() (result, error) { return lg.EndToEnd(ctx, addr, "w4", s.w4, 100, "all", s.e2eRate) })
			}},
		{ID: "W4b", Title: fmt.Sprintf("produce latency at %d records/s, 100 B, 6 partitions, acks=all", s.w4bRate),
			Setting:      fmt.Sprintf("ProducerPerformance --num-records %d --record-size 100 --throughput %d, acks=all", s.w4b, s.w4bRate),
			SpoolSetting: sb(s.w4b, 100, "all", s.w4bRate),
			Latency:      "produce latency (send to ack) at a fixed rate below saturation",
			Needs:        []string{needRate},
			Phases:       []phase{{op: "produce", records: s.w4b, size: 100, rate: s.w4bRate}},
			run:          produce("w4b", 6, produceSpec{Records: s.w4b, Size: 100, Acks: "all", Throughput: s.w4bRate})},
		{ID: "W5", Title: "consume 100 B from the start, 6 partitions",
			Setting:      fmt.Sprintf("fill with spool bench produce --records %d --size 100 --acks 1 (the same data shape for both brokers and both load generators), then ConsumerPerformance --messages %d from the earliest offset; fetch.* figures (group join excluded)", s.w5, s.w5),
			SpoolSetting: fmt.Sprintf("fill with spool bench produce --records %d --size 100 --acks 1, then spool bench consume --records %d (partitions assigned, no group)", s.w5, s.w5),
			Phases:       []phase{{op: "produce", records: s.w5, size: 100, by: "SB"}, {op: "consume", records: s.w5, size: 100}},
			run: func(ctx context.Context, lg loadgen, addr string, measure func(func() (result, error)) (result, error)) (result, error) {
				if err := lg.CreateTopic(ctx, addr, "w5", 6); err != nil {
					return result{}, err
				}
				if _, err := lg.Produce(ctx, addr, produceSpec{Topic: "w5", Records: s.w5, Size: 100, Acks: "1", Throughput: -1, Fill: true}); err != nil {
					return result{}, fmt.Errorf("fill: %w", err)
				}
				return measure(func() (result, error) { return lg.Consume(ctx, addr, "w5", s.w5) })
			}},
		{ID: "W6", Title: fmt.Sprintf("%s partitions at %d records/s, 100 B, acks=all", thousands(s.w6Partitions), s.w6Rate),
			Setting: fmt.Sprintf("TopicCommand --partitions %d, then ProducerPerformance --num-records %d --record-size 100 --throughput %d, acks=all, "+
				"enable.idempotence=false against both brokers (with idempotence, Kafka 3.9.2 answered OutOfOrderSequenceException to Kafka's producer "+
				"at 1,000 partitions on this VM while it was still creating the partitions, and the producer failed)", s.w6Partitions, s.w6, s.w6Rate),
			SpoolSetting: fmt.Sprintf("spool topic create --partitions %d, then ", s.w6Partitions) + sb(s.w6, 100, "all", s.w6Rate) + " (idempotent, the default)",
			Latency:      "produce latency at a fixed rate",
			Needs:        []string{needRate},
			Phases:       []phase{{op: "produce", records: s.w6, size: 100, rate: s.w6Rate}},
			run: produce("w6", s.w6Partitions, produceSpec{Records: s.w6, Size: 100, Acks: "all", Throughput: s.w6Rate,
				NoIdempotence: true})},
	}
}

// thousands is n with a comma between groups of three digits (1000: "1,000").
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// runDir is where the run of w on sys with lg, repetition rep, keeps its broker's data and logs.
func (h *harness) runDir(w workload, sys system, lg loadgen, rep int) string {
	return filepath.Join(h.workDir, fmt.Sprintf("%s-%s-%s-r%d", w.ID, sys.Name, lg.Short(), rep))
}

// brokerOutputHeader separates a failed tool's error from its broker's log tail.
const brokerOutputHeader = "broker output:"

// crashGrace is how long a failed tool's broker gets to be seen exiting: a tool often fails
// because its broker died, and then the crash, not the tool's complaint, is the reason.
const crashGrace = 2 * time.Second

// runOne starts a fresh broker for sys, runs w with lg, stops the broker and returns the result.
// With h.shareBrokers (the quick smoke run) it runs w on sys's shared broker instead, in
// topics of its own (sharedTopics), and leaves the broker running for the next run.
func (h *harness) runOne(ctx context.Context, w workload, sys system, lg loadgen, rep int) (result, error) {
	dir := h.runDir(w, sys, lg, rep)
	var b *broker
	var err error
	if h.shareBrokers {
		b, err = h.sharedBroker(ctx, sys)
		lg = sharedTopics{loadgen: lg, suffix: "-" + strings.ToLower(lg.Short())}
	} else {
		b, err = h.startBroker(ctx, sys, dir)
	}
	if err != nil {
		return result{}, err
	}
	if !h.shareBrokers {
		defer b.Stop()
	}
	var cpu, clientCPU float64
	measure := func(f func() (result, error)) (result, error) {
		c0, err := b.CPUSeconds()
		if err != nil {
			return result{}, err
		}
		l0 := childrenCPUSeconds()
		r, err := f()
		if err != nil {
			return r, err
		}
		c1, err := b.CPUSeconds()
		if err != nil {
			return r, fmt.Errorf("broker CPU: %w (%v)", err, b.Alive())
		}
		cpu, clientCPU = c1-c0, childrenCPUSeconds()-l0
		return r, nil
	}
	start := time.Now()
	r, err := w.run(ctx, lg, b.addr, measure)
	if err != nil && ctx.Err() == nil {
		select {
		case <-b.exited:
		case <-time.After(crashGrace):
		}
	}
	if aerr := b.Alive(); aerr != nil {
		return result{}, aerr
	}
	if err != nil {
		return result{}, fmt.Errorf("%w\n%s\n%s", err, brokerOutputHeader, b.logTail())
	}
	r.CPU, r.ClientCPU = cpu, clientCPU
	r.PeakRSS = b.PeakRSS()
	if !h.shareBrokers {
		if err := b.Stop(); err != nil {
			return result{}, err
		}
	}
	lat := ""
	if r.HasLatency {
		lat = fmt.Sprintf("  p50 %6.1f p99 %6.1f p99.9 %6.1f ms", r.P50, r.P99, r.P999)
	}
	logf("  %-4s %-14s %-2s rep %d: %10.0f rec/s %8.1f MB/s%s  RSS %6.1f MiB  CPU %5.1f s  client CPU %5.1f s  (%.1fs)",
		w.ID, sys.Name, lg.Short(), rep, r.RecPerSec, r.MBPerSec, lat, float64(r.PeakRSS)/(1<<20), r.CPU, r.ClientCPU, time.Since(start).Seconds())
	if !h.keep {
		removeAll(dir)
	}
	return r, nil
}

// sharedBrokers are the brokers of a run with harness.shareBrokers, one per system, started
// by the first run that needs one and again by the next run after one has died.
type sharedBrokers struct {
	mu      sync.Mutex
	brokers map[string]*broker
	starts  int
}

// sharedBroker is sys's running shared broker, started (under the work dir's
// shared-<system>-<n>) when there is none or the last one has exited.
func (h *harness) sharedBroker(ctx context.Context, sys system) (*broker, error) {
	h.shared.mu.Lock()
	defer h.shared.mu.Unlock()
	if b := h.shared.brokers[sys.Name]; b != nil && b.Alive() == nil {
		return b, nil
	}
	h.shared.starts++
	b, err := h.startBroker(ctx, sys, filepath.Join(h.workDir, fmt.Sprintf("shared-%s-%d", sys.Name, h.shared.starts)))
	if err != nil {
		return nil, err
	}
	if h.shared.brokers == nil {
		h.shared.brokers = map[string]*broker{}
	}
	h.shared.brokers[sys.Name] = b
	return b, nil
}

// stopShared stops the shared brokers.
func (h *harness) stopShared() error {
	h.shared.mu.Lock()
	defer h.shared.mu.Unlock()
	var errs []error
	for name, b := range h.shared.brokers {
		if err := b.Stop(); err != nil {
			errs = append(errs, err)
		}
		delete(h.shared.brokers, name)
	}
	return errors.Join(errs...)
}

// sharedTopics is a load generator whose topics carry suffix, so the runs of one workload by
// several load generators on one shared broker each have topics of their own.
type sharedTopics struct {
	loadgen
	suffix string
}

func (s sharedTopics) CreateTopic(ctx context.Context, addr, topic string, partitions int) error {
	return s.loadgen.CreateTopic(ctx, addr, topic+s.suffix, partitions)
}

func (s sharedTopics) Produce(ctx context.Context, addr string, p produceSpec) (result, error) {
	p.Topic += s.suffix
	return s.loadgen.Produce(ctx, addr, p)
}

func (s sharedTopics) Consume(ctx context.Context, addr, topic string, records int64) (result, error) {
	return s.loadgen.Consume(ctx, addr, topic+s.suffix, records)
}

func (s sharedTopics) EndToEnd(ctx context.Context, addr, topic string, records int64, size int, acks string, rate int) (result, error) {
	return s.loadgen.EndToEnd(ctx, addr, topic+s.suffix, records, size, acks, rate)
}

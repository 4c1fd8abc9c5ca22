package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const kafkaVersion = "3.9.2"

// fetchKafka puts the Kafka broker, kafka-tools and their dependencies into
// bench/.cache/kafka-<version>/libs with Maven (once) and returns the class path.
func fetchKafka(benchDir string) (string, error) {
	libs := filepath.Join(benchDir, ".cache", "kafka-"+kafkaVersion, "libs")
	done := filepath.Join(libs, ".complete")
	if _, err := os.Stat(done); err != nil {
		if _, err := exec.LookPath("mvn"); err != nil {
			return "", fmt.Errorf("mvn not found: Maven is needed to fetch Apache Kafka %s from Maven Central", kafkaVersion)
		}
		logf("fetching Apache Kafka %s jars with Maven into %s", kafkaVersion, libs)
		os.RemoveAll(libs)
		cmd := exec.Command("mvn", "-q", "-B", "-f", filepath.Join(benchDir, "pom.xml"),
			"dependency:copy-dependencies", "-DincludeScope=runtime", "-Dkafka.version="+kafkaVersion,
			"-DoutputDirectory="+libs)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("mvn dependency:copy-dependencies: %v\n%s", err, tail(string(out), 3000))
		}
		if err := os.WriteFile(done, nil, 0o644); err != nil {
			return "", err
		}
	}
	for _, jar := range []string{"kafka_2.13-" + kafkaVersion + ".jar", "kafka-tools-" + kafkaVersion + ".jar", "kafka-clients-" + kafkaVersion + ".jar"} {
		if _, err := os.Stat(filepath.Join(libs, jar)); err != nil {
			return "", fmt.Errorf("%s missing from %s (delete the directory to refetch)", jar, libs)
		}
	}
	return filepath.Join(libs, "*"), nil
}

// toolJVM is the JVM setting for Kafka's command-line tools (kafka-run-class.sh uses
// -Xmx256M; the perf tools get more so the producer's buffer never limits them).
func (h *harness) toolJVM() []string {
	if h.quick {
		return append(slices.Clone(quickJVM), "-Xmx256m", "-Djava.awt.headless=true", "-Dlog4j.configuration=file:"+h.toolLog4j)
	}
	return []string{"-Xmx1G", "-XX:+UseG1GC", "-Djava.awt.headless=true", "-Dlog4j.configuration=file:" + h.toolLog4j}
}

// toolJVMLabel is the tools' JVM setting as the report states it.
func (h *harness) toolJVMLabel() string {
	if h.quick {
		return strings.Join(append(slices.Clone(quickJVM), "-Xmx256m"), " ")
	}
	return "-Xmx1G -XX:+UseG1GC"
}

// java runs a Java main class with the Kafka class path and returns its combined output.
func (h *harness) java(ctx context.Context, timeout time.Duration, jvm []string, class string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	all := append(append(append([]string{}, jvm...), "-cp", h.classpath, class), args...)
	cmd := exec.CommandContext(ctx, "java", all...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if h.verbose {
		logf("  $ java %s %s", class, strings.Join(args, " "))
	}
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("timed out after %s", timeout)
	}
	return buf.String(), err
}

// loadgen drives a workload's client side: kafkaTools (Apache Kafka's perf tools) and
// spoolBench (`spool bench` of sdk-go/cmd/spool). Every workload runs with each generator
// that can drive it, against every broker; ratios compare brokers under the same generator.
type loadgen interface {
	Name() string
	Short() string // a tag for log lines, chart labels and work directories
	// Can reports whether the generator has a capability a workload needs (need* constants).
	Can(need string) bool
	CreateTopic(ctx context.Context, addr, topic string, partitions int) error
	Produce(ctx context.Context, addr string, p produceSpec) (result, error)
	Consume(ctx context.Context, addr, topic string, records int64) (result, error)
	// EndToEnd measures send-to-consume latency; rate is for open-loop generators (kafkaTools
	// runs closed loop, one record at a time, and ignores it).
	EndToEnd(ctx context.Context, addr, topic string, records int64, size int, acks string, rate int) (result, error)
}

// drives reports whether lg can run w, and if not, what it lacks.
func drives(lg loadgen, w workload) (bool, string) {
	for _, n := range w.Needs {
		if !lg.Can(n) {
			return false, n
		}
	}
	return true, ""
}

type produceSpec struct {
	Topic      string
	Records    int64
	Size       int
	Acks       string
	Throughput int // records/s, -1 unthrottled
	// NoIdempotence turns idempotence off in Kafka's ProducerPerformance (it is on by default),
	// against every broker alike. spool bench keeps it on: its producer renumbers a batch a
	// broker refused as out of order, which the Java producer 3.9 fails instead.
	NoIdempotence bool
	// Fill marks a produce that only loads data for a later phase. Every fill runs `spool
	// bench produce`, whatever the load generator of the measured phase, so both brokers and
	// both generators read back the same data shape, and a 1 GB fill takes seconds (Kafka's
	// ProducerPerformance generates about 200-400 k records/s on this VM).
	Fill bool
}

type kafkaTools struct {
	h *harness
	// clientConfig, when set, is a client.properties file (security.protocol=SSL and its
	// truststore) given to the producer and consumer tools: the TLS workload's client side.
	clientConfig string
}

func (k kafkaTools) Name() string         { return "kafka-tools " + kafkaVersion }
func (k kafkaTools) Short() string        { return "KT" }
func (k kafkaTools) Can(need string) bool { return true }

func (k kafkaTools) CreateTopic(ctx context.Context, addr, topic string, partitions int) error {
	if k.h.quick && k.clientConfig == "" && !k.h.firstTopicCommand(addr) {
		return createTopicKadm(ctx, addr, topic, partitions)
	}
	out, err := k.h.java(ctx, 3*time.Minute, k.h.toolJVM(), "org.apache.kafka.tools.TopicCommand",
		"--bootstrap-server", addr, "--create", "--topic", topic, "--partitions", strconv.Itoa(partitions), "--replication-factor", "1")
	if err != nil {
		return fmt.Errorf("TopicCommand --create %s: %v\n%s", topic, err, tail(out, 2000))
	}
	return nil
}

// e.g. "50000 records sent, 41220.115416 records/sec (3.93 MB/sec), 354.29 ms avg latency,
// 706.00 ms max latency, 357 ms 50th, 650 ms 95th, 692 ms 99th, 705 ms 99.9th."
var perfFinal = regexp.MustCompile(`(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, ([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th`)

func (k kafkaTools) Produce(ctx context.Context, addr string, p produceSpec) (result, error) {
	if p.Fill {
		return spoolBench{h: k.h}.Produce(ctx, addr, p)
	}
	args := append([]string{"--topic", p.Topic, "--num-records", strconv.FormatInt(p.Records, 10), "--record-size", strconv.Itoa(p.Size),
		"--throughput", strconv.Itoa(p.Throughput),
		"--producer-props", "bootstrap.servers=" + addr, "acks=" + p.Acks}, kafkaProducerProps(p)...)
	if k.clientConfig != "" {
		args = append(args, "--producer.config", k.clientConfig)
	}
	out, err := k.h.java(ctx, 30*time.Minute, k.h.toolJVM(), "org.apache.kafka.tools.ProducerPerformance", args...)
	if err != nil {
		return result{}, fmt.Errorf("ProducerPerformance: %v\n%s", err, tail(out, 3000))
	}
	m := perfFinal.FindStringSubmatch(out)
	if m == nil {
		return result{}, fmt.Errorf("ProducerPerformance: no summary line in its output:\n%s", tail(out, 3000))
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	if n != p.Records {
		return result{}, fmt.Errorf("ProducerPerformance sent %d records, want %d", n, p.Records)
	}
	if strings.Contains(out, "Exception") || strings.Contains(out, "ERROR") {
		return result{}, fmt.Errorf("ProducerPerformance reported errors:\n%s", tail(out, 3000))
	}
	r := result{Records: n, RecPerSec: atof(m[2]), MBPerSec: atof(m[3]) * 1024 * 1024 / 1e6,
		P50: atof(m[6]), P99: atof(m[8]), P999: atof(m[9]), HasLatency: true}
	return r, nil
}

func (k kafkaTools) Consume(ctx context.Context, addr, topic string, records int64) (result, error) {
	args := []string{"--bootstrap-server", addr, "--topic", topic, "--messages", strconv.FormatInt(records, 10), "--timeout", "60000"}
	if k.clientConfig != "" {
		args = append(args, "--consumer.config", k.clientConfig)
	}
	out, err := k.h.java(ctx, 30*time.Minute, k.h.toolJVM(), "org.apache.kafka.tools.ConsumerPerformance", args...)
	if err != nil {
		return result{}, fmt.Errorf("ConsumerPerformance: %v\n%s", err, tail(out, 3000))
	}
	// header: start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
	// rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
	var fields []string
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "start.time") && i+1 < len(lines) {
			fields = strings.Split(lines[i+1], ",")
		}
	}
	if k.h.verbose {
		logf("  ConsumerPerformance: %s", strings.Join(fields, ","))
	}
	if len(fields) < 10 {
		return result{}, fmt.Errorf("ConsumerPerformance: no result line in its output:\n%s", tail(out, 3000))
	}
	for i := range fields {
		fields[i] = strings.TrimSpace(fields[i])
	}
	n, _ := strconv.ParseInt(fields[4], 10, 64)
	if n < records {
		return result{}, fmt.Errorf("ConsumerPerformance read %d records, want %d:\n%s", n, records, tail(out, 3000))
	}
	// fetch.* excludes the group join (rebalance) time, which both brokers pay once.
	return result{Records: n, RecPerSec: atof(fields[9]), MBPerSec: atof(fields[8]) * 1024 * 1024 / 1e6}, nil
}

var e2eAvg = regexp.MustCompile(`Avg latency: ([\d.]+) ms`)
var e2ePct = regexp.MustCompile(`Percentiles: 50th = ([\d.]+), 99th = ([\d.]+), 99.9th = ([\d.]+)`)

func (k kafkaTools) EndToEnd(ctx context.Context, addr, topic string, records int64, size int, acks string, _ int) (result, error) {
	out, err := k.h.java(ctx, 30*time.Minute, k.h.toolJVM(), "org.apache.kafka.tools.EndToEndLatency",
		addr, topic, strconv.FormatInt(records, 10), acks, strconv.Itoa(size))
	if err != nil {
		return result{}, fmt.Errorf("EndToEndLatency: %v\n%s", err, tail(out, 3000))
	}
	m, avg := e2ePct.FindStringSubmatch(out), e2eAvg.FindStringSubmatch(out)
	if m == nil || avg == nil || atof(avg[1]) <= 0 {
		return result{}, fmt.Errorf("EndToEndLatency: no percentiles in its output:\n%s", tail(out, 3000))
	}
	// closed loop, one record in flight: the rate is 1 / mean latency (JVM start excluded)
	rate := 1000 / atof(avg[1])
	return result{Records: records, RecPerSec: rate, MBPerSec: rate * float64(size) / 1e6,
		P50: atof(m[1]), P99: atof(m[2]), P999: atof(m[3]), HasLatency: true}, nil
}

func atof(s string) float64 { f, _ := strconv.ParseFloat(s, 64); return f }

// spoolBench drives workloads with `spool bench` (sdk-go/cmd/spool, the Go SDK): one process
// per phase, whose --json summary line is the result.
type spoolBench struct {
	h *harness
	// extended: this bin/spool has `bench e2e` and `bench produce --rate` (detected by
	// detectSpoolBench); without them it drives only the unthrottled produce and consume rows.
	extended bool
	// tlsCA, when set, makes every command connect over TLS trusting this CA (--tls-ca): the
	// TLS workload's client side.
	tlsCA string
}

// detectSpoolBench finds out what the spool CLI at path can do: found is false when it has no
// bench command at all; extended when `spool bench e2e --help` succeeds (exit 0; older builds
// reject the subcommand with usage, exit 2).
func detectSpoolBench(path string) (found, extended bool) {
	if st, err := os.Stat(path); err != nil || st.IsDir() {
		return false, false
	}
	out, _ := exec.Command(path, "--help").CombinedOutput()
	if !bytes.Contains(out, []byte("bench produce")) {
		return false, false
	}
	return true, exec.Command(path, "bench", "e2e", "--help").Run() == nil
}

func (s spoolBench) Name() string  { return "spool bench" }
func (s spoolBench) Short() string { return "SB" }

func (s spoolBench) Can(need string) bool {
	switch need {
	case needRate, needE2E:
		return s.extended
	}
	return false
}

// spool runs the CLI against addr and returns its standard output; the standard error goes
// into the error.
func (s spoolBench) spool(ctx context.Context, timeout time.Duration, addr string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if s.tlsCA != "" {
		args = append([]string{"--tls-ca", s.tlsCA}, args...)
	}
	args = append([]string{"--brokers", addr}, args...)
	if s.h.verbose {
		logf("  $ spool %s", strings.Join(args, " "))
	}
	cmd := exec.CommandContext(ctx, s.h.spool, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("timed out after %s", timeout)
	}
	if err != nil {
		return "", fmt.Errorf("spool %s: %w\n%s%s", strings.Join(args[2:], " "), err, tail(stderr.String(), 2000), tail(stdout.String(), 1000))
	}
	return stdout.String(), nil
}

func (s spoolBench) CreateTopic(ctx context.Context, addr, topic string, partitions int) error {
	_, err := s.spool(ctx, 2*time.Minute, addr, "topic", "create", topic, "--partitions", strconv.Itoa(partitions), "--replication-factor", "1")
	return err
}

// benchJSON is the summary `spool bench ... --json` prints (benchResult in sdk-go/cmd/spool).
type benchJSON struct {
	Mode       string  `json:"mode"`
	Records    int64   `json:"records"`
	Bytes      int64   `json:"bytes"`
	Seconds    float64 `json:"seconds"`
	RecordsSec float64 `json:"records_per_sec"`
	MBSec      float64 `json:"mb_per_sec"`
	P50ms      float64 `json:"p50_ms"`
	P90ms      float64 `json:"p90_ms"`
	P99ms      float64 `json:"p99_ms"`
	P999ms     float64 `json:"p99_9_ms"`
	Maxms      float64 `json:"max_ms"`
}

// bench runs one `spool bench` phase and checks its summary.
func (s spoolBench) bench(ctx context.Context, addr, mode string, want int64, args ...string) (benchJSON, error) {
	out, err := s.spool(ctx, 30*time.Minute, addr, append([]string{"bench", mode}, append(args, "--json")...)...)
	if err != nil {
		return benchJSON{}, err
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var j benchJSON
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &j); err != nil {
		return j, fmt.Errorf("spool bench %s: no JSON summary on its last line (%w):\n%s", mode, err, tail(out, 2000))
	}
	if j.Records < want || j.RecordsSec <= 0 {
		return j, fmt.Errorf("spool bench %s: %d records at %.0f records/s, want %d records:\n%s", mode, j.Records, j.RecordsSec, want, tail(out, 2000))
	}
	return j, nil
}

func (j benchJSON) result(latency bool) result {
	return result{Records: j.Records, RecPerSec: j.RecordsSec, MBPerSec: j.MBSec,
		HasLatency: latency, P50: j.P50ms, P99: j.P99ms, P999: j.P999ms}
}

func (s spoolBench) Produce(ctx context.Context, addr string, p produceSpec) (result, error) {
	args := []string{"--topic", p.Topic, "--records", strconv.FormatInt(p.Records, 10), "--size", strconv.Itoa(p.Size), "--acks", p.Acks}
	if p.Throughput > 0 {
		if !s.extended {
			return result{}, fmt.Errorf("spool bench produce: %s has no --rate", s.h.spool)
		}
		args = append(args, "--rate", strconv.Itoa(p.Throughput))
	}
	j, err := s.bench(ctx, addr, "produce", p.Records, args...)
	return j.result(true), err
}

func (s spoolBench) Consume(ctx context.Context, addr, topic string, records int64) (result, error) {
	j, err := s.bench(ctx, addr, "consume", records, "--topic", topic, "--records", strconv.FormatInt(records, 10))
	// Its latencies are record ages, meaningless when reading old data from the start.
	return j.result(false), err
}

func (s spoolBench) EndToEnd(ctx context.Context, addr, topic string, records int64, size int, acks string, rate int) (result, error) {
	j, err := s.bench(ctx, addr, "e2e", records, "--topic", topic, "--records", strconv.FormatInt(records, 10),
		"--size", strconv.Itoa(size), "--acks", acks, "--rate", strconv.Itoa(rate))
	return j.result(true), err
}

func kafkaProducerProps(p produceSpec) []string {
	var props []string
	if p.NoIdempotence {
		props = append(props, "enable.idempotence=false")
	}
	return props
}

// quickJVM starts a JVM of the quick smoke run on less CPU (the client compiler alone, the
// serial collector): its Kafka brokers and tools measure nothing, and JVM starts were most of
// its time.
var quickJVM = []string{"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"}

// topicCommands are the brokers (by address) Kafka's TopicCommand has created a topic on.
type topicCommands struct {
	mu    sync.Mutex
	addrs map[string]bool
}

// firstTopicCommand reports whether no TopicCommand has run against addr yet, and notes that
// one now does. In the quick smoke run TopicCommand creates the first topic of each broker,
// so its path runs against every system, and franz-go's admin client the others: each
// TopicCommand is a JVM start.
func (h *harness) firstTopicCommand(addr string) bool {
	h.topicCommands.mu.Lock()
	defer h.topicCommands.mu.Unlock()
	if h.topicCommands.addrs[addr] {
		return false
	}
	if h.topicCommands.addrs == nil {
		h.topicCommands.addrs = map[string]bool{}
	}
	h.topicCommands.addrs[addr] = true
	return true
}

// createTopicKadm creates topic with replication factor 1 through franz-go's admin client.
func createTopicKadm(ctx context.Context, addr, topic string, partitions int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	res, err := kadm.NewClient(cl).CreateTopic(ctx, int32(partitions), 1, nil, topic)
	if err == nil {
		err = res.Err
	}
	if err != nil {
		return fmt.Errorf("creating %s with franz-go's admin client: %w", topic, err)
	}
	return nil
}

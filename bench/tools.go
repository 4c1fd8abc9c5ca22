package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
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
	return []string{"-Xmx1G", "-XX:+UseG1GC", "-Djava.awt.headless=true", "-Dlog4j.configuration=file:" + h.toolLog4j}
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

// loadgen drives a workload's client side. kafkaTools uses Apache Kafka's own perf tools
// against both brokers. Hook: `spool bench` (sdk-go/cmd/spool, in progress elsewhere) plugs in
// as a second loadgen implementing the same methods; see spoolBench below.
type loadgen interface {
	Name() string
	CreateTopic(ctx context.Context, addr, topic string, partitions int) error
	Produce(ctx context.Context, addr string, p produceSpec) (result, error)
	Consume(ctx context.Context, addr, topic string, records int64) (result, error)
	EndToEnd(ctx context.Context, addr, topic string, records int64, size int, acks string) (result, error)
}

type produceSpec struct {
	Topic      string
	Records    int64
	Size       int
	Acks       string
	Throughput int // records/s, -1 unthrottled
}

type kafkaTools struct{ h *harness }

func (k kafkaTools) Name() string { return "kafka-tools " + kafkaVersion }

func (k kafkaTools) CreateTopic(ctx context.Context, addr, topic string, partitions int) error {
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
	out, err := k.h.java(ctx, 30*time.Minute, k.h.toolJVM(), "org.apache.kafka.tools.ProducerPerformance",
		"--topic", p.Topic, "--num-records", strconv.FormatInt(p.Records, 10), "--record-size", strconv.Itoa(p.Size),
		"--throughput", strconv.Itoa(p.Throughput),
		"--producer-props", "bootstrap.servers="+addr, "acks="+p.Acks)
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
	out, err := k.h.java(ctx, 30*time.Minute, k.h.toolJVM(), "org.apache.kafka.tools.ConsumerPerformance",
		"--bootstrap-server", addr, "--topic", topic, "--messages", strconv.FormatInt(records, 10), "--timeout", "60000")
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

func (k kafkaTools) EndToEnd(ctx context.Context, addr, topic string, records int64, size int, acks string) (result, error) {
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

// spoolBench is the hook for the `spool bench` load generator (bin/spool bench, being written
// in sdk-go). When it lands, implement loadgen with it (same specs; it prints its own
// summary) and add it to harness.loadgens so every workload runs with both generators.
func spoolBenchAvailable(spool string) bool {
	if _, err := os.Stat(spool); err != nil {
		return false
	}
	out, _ := exec.Command(spool, "bench", "--help").CombinedOutput()
	return bytes.Contains(out, []byte("bench")) && !bytes.Contains(out, []byte("unknown command"))
}

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	spool "github.com/spoolmq/spool/sdk-go"
)

// BenchmarkVsLibrdkafka runs bench/spool_bench.c (libspool) and bench/rdkafka_bench.c
// (librdkafka, Debian librdkafka-dev) on the same workload against one broker: N records of
// 100 B and of 1 KiB without keys to 6 partitions, acks=all, linger.ms=5, batch.size=1 MiB,
// then consumed back. The log and the metrics give libspool's records/s and peak RSS against
// librdkafka's ("ours vs theirs"). `make bench` runs it; the table is in README.md.
func BenchmarkVsLibrdkafka(b *testing.B) {
	brokertest.NeedTool(b, "/usr/include/librdkafka/rdkafka.h", "librdkafka-dev")
	ours, theirs := compile(b, "", "bench/spool_bench.c", "spool_bench", "-O2"),
		compile(b, "", "bench/rdkafka_bench.c", "rdkafka_bench", "-O2", "-lrdkafka")
	compare(b, []int{500000, 200000}, func(args ...string) *exec.Cmd { return exec.Command(ours, args...) },
		func(args ...string) *exec.Cmd { return exec.Command(theirs, args...) })
}

// BenchmarkBatchVsLibrdkafka is BenchmarkVsLibrdkafka with libspool producing through
// spool_produce_batch, 1024 records a call (delivery reports served after each call).
func BenchmarkBatchVsLibrdkafka(b *testing.B) {
	brokertest.NeedTool(b, "/usr/include/librdkafka/rdkafka.h", "librdkafka-dev")
	ours, theirs := compile(b, "", "bench/spool_bench.c", "spool_bench", "-O2"),
		compile(b, "", "bench/rdkafka_bench.c", "rdkafka_bench", "-O2", "-lrdkafka")
	compare(b, []int{500000, 200000}, func(args ...string) *exec.Cmd {
		cmd := exec.Command(ours, args...)
		cmd.Env = append(os.Environ(), "SPOOL_BENCH_BATCH=1024")
		return cmd
	}, func(args ...string) *exec.Cmd { return exec.Command(theirs, args...) })
}

// BenchmarkPythonVsConfluentKafka runs bench/py_bench.py with this binding and with Debian's
// confluent-kafka-python (librdkafka underneath), on the workload of BenchmarkVsLibrdkafka
// with fewer records.
func BenchmarkPythonVsConfluentKafka(b *testing.B) {
	python := brokertest.NeedPython(b, "confluent_kafka", "python3-confluent-kafka")
	lib := filepath.Join(install(b, ""), "lib", "libspool.so.0")
	run := func(module string) func(args ...string) *exec.Cmd {
		return func(args ...string) *exec.Cmd {
			cmd := exec.Command(python, append([]string{"bench/py_bench.py", module}, args...)...)
			cmd.Env = append(os.Environ(), "PYTHONPATH=bindings/python", "PYTHONDONTWRITEBYTECODE=1", "SPOOL_LIBRARY="+lib)
			return cmd
		}
	}
	compare(b, []int{200000, 100000}, run("spool"), run("confluent_kafka"))
}

// BenchmarkPythonBatchVsConfluentKafka is BenchmarkPythonVsConfluentKafka with this binding
// producing through Producer.produce_batch, 1024 records a call (confluent-kafka-python 1.7 has
// no batch call: it produces per record, its fastest way).
func BenchmarkPythonBatchVsConfluentKafka(b *testing.B) {
	b.Setenv("SPOOL_BENCH_BATCH", "1024")
	BenchmarkPythonVsConfluentKafka(b)
}

// BenchmarkPythonPollVsConfluentKafka is BenchmarkPythonVsConfluentKafka with both consumers
// reading with poll(timeout), one message a call (this binding's consumer without a group
// takes up to 1024 per crossing into libspool and returns them one by one).
func BenchmarkPythonPollVsConfluentKafka(b *testing.B) {
	b.Setenv("SPOOL_BENCH_POLL", "1")
	BenchmarkPythonVsConfluentKafka(b)
}

// BenchmarkNodeVsKafkaJS runs bench/node/bench.js with this repository's Node binding and
// with KafkaJS 2.2.4 (both from bench/node's npm ci), the same script: sends of 1,000 records,
// 8 in flight, then a group consumer's eachMessage loop; 100 B and 1 KiB records, acks=all.
func BenchmarkNodeVsKafkaJS(b *testing.B) {
	node := needCommand(b, "node", "nodejs")
	nodeModules(b, filepath.Join("bench", "node"), "kafkajs")
	nodeModules(b, filepath.Join("bindings", "node"), "koffi")
	lib := filepath.Join(install(b, ""), "lib", "libspool.so.0")
	run := func(module string) func(args ...string) *exec.Cmd {
		return func(args ...string) *exec.Cmd {
			cmd := exec.Command(node, append([]string{"bench/node/bench.js", module}, args...)...)
			cmd.Env = append(os.Environ(), "SPOOL_LIBRARY="+lib)
			return cmd
		}
	}
	compare(b, []int{200000, 100000}, run("spool"), run("kafkajs"))
}

// BenchmarkJavaVsKafkaClient runs bench/java/Bench.java, written for Apache Kafka's Java client
// (kafka-clients 3.9, the jars brokertest fetches), compiled as it is and, with its imports
// turned from org.apache.kafka to io.spoolmq, against this repository's Java binding: send()
// with a callback per record, flush(), then poll() by assignment. Same JVM and flags for both.
func BenchmarkJavaVsKafkaClient(b *testing.B) {
	java := brokertest.NeedTool(b, "/usr/bin/java", "openjdk-17-jdk-headless")
	javac := brokertest.NeedTool(b, "/usr/bin/javac", "openjdk-17-jdk-headless")
	prefix := install(b, "")
	build := mavenBuild(b, libEnv(prefix, ""))
	deps, err := os.ReadFile(filepath.Join(build, "cp.txt"))
	if err != nil {
		b.Fatal(err)
	}
	src, err := os.ReadFile("bench/java/Bench.java")
	if err != nil {
		b.Fatal(err)
	}
	sep := string(os.PathListSeparator)
	classpaths := map[string]string{
		"ours":   filepath.Join(build, "classes") + sep + strings.TrimSpace(string(deps)),
		"theirs": brokertest.KafkaJars(b),
	}
	sources := map[string]string{"ours": strings.ReplaceAll(string(src), "org.apache.kafka.", "io.spoolmq."), "theirs": string(src)}
	run := func(impl string) func(args ...string) *exec.Cmd {
		dir := filepath.Join(b.TempDir(), impl)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "Bench.java"), []byte(sources[impl]), 0o644); err != nil {
			b.Fatal(err)
		}
		if out, err := exec.Command(javac, "-d", dir, "-cp", classpaths[impl], filepath.Join(dir, "Bench.java")).CombinedOutput(); err != nil {
			b.Fatalf("javac %s: %v\n%s", impl, err, out)
		}
		return func(args ...string) *exec.Cmd {
			cmd := exec.Command(java, append([]string{"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", dir + sep + classpaths[impl], "Bench"}, args...)...)
			cmd.Env = libEnv(prefix, "")
			return cmd
		}
	}
	compare(b, []int{500000, 200000}, run("ours"), run("theirs"))
}

// compare runs ours and theirs (each given BROKER TOPIC PARTITIONS N SIZE, printing
// "produce_rps consume_rps peak_rss_kib") five times each (SPOOL_BENCH_RUNS), alternating,
// for 100 B and 1 KiB records (counts[0] and counts[1] of them), and reports the medians and
// their ratios. Five, because the broker's fsyncs on this VM move a run's rate by ±30%.
func compare(b *testing.B, counts []int, ours, theirs func(args ...string) *exec.Cmd) {
	impls := map[string]func(args ...string) *exec.Cmd{"ours": ours, "theirs": theirs}
	addr := brokertest.StartProcess(b, brokertest.Options{}).Addr // spoold, as users run it
	cl, err := spool.NewClient(spool.SeedBrokers(addr))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	const partitions = 6
	runs := 5
	if v := os.Getenv("SPOOL_BENCH_RUNS"); v != "" {
		if runs, err = strconv.Atoi(v); err != nil || runs < 1 {
			b.Fatalf("SPOOL_BENCH_RUNS=%q: want a count of runs", v)
		}
	}
	seq := 0
	for _, w := range []struct {
		size int
		n    int
	}{{100, counts[0]}, {1024, counts[1]}} {
		res := map[string][4][]float64{} // impl → produce, consume, rss, produce CPU samples
		for range runs {
			for _, impl := range []string{"ours", "theirs"} {
				seq++
				topic := fmt.Sprintf("bench-%d", seq)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				if err := cl.Admin().CreateTopic(ctx, topic, partitions, 1, nil); err != nil {
					b.Fatal(err)
				}
				// The runs alternate, so the page cache that one run leaves dirty would be
				// written back during the next, the other library's: each starts clean.
				syscall.Sync()
				cmd := impls[impl](addr, topic, strconv.Itoa(partitions), strconv.Itoa(w.n), strconv.Itoa(w.size))
				var stderr strings.Builder
				cmd.Stderr = &stderr
				out, err := runCtx(ctx, cmd)
				if err != nil {
					cancel()
					b.Fatalf("%s: %v\n%s%s", impl, err, out, stderr.String())
				}
				// Its files go too, so that no run writes back or reads another's.
				err = cl.Admin().DeleteTopics(ctx, topic)
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				f := strings.Fields(string(out))
				if len(f) != 3 {
					b.Fatalf("%s printed %q", impl, out)
				}
				r := res[impl]
				for i := range 3 {
					v, err := strconv.ParseFloat(f[i], 64)
					if err != nil {
						b.Fatalf("%s printed %q", impl, out)
					}
					r[i] = append(r[i], v)
				}
				// The C programs also say how much CPU producing took (bench_phase): on a
				// loaded machine a steadier measure than the wall clock. The Python script
				// does not.
				var rssKiB, cpu float64
				phase := stderr.String()[max(strings.Index(stderr.String(), "peak RSS after produce:"), 0):]
				if _, err := fmt.Sscanf(phase, "peak RSS after produce: %f KiB, CPU %f s", &rssKiB, &cpu); err == nil {
					r[3] = append(r[3], cpu)
				}
				res[impl] = r
				b.Logf("%d B, %s, run %d: %s (produce rec/s, consume rec/s, peak RSS KiB); %s", w.size, impl, len(r[0]),
					strings.TrimSpace(string(out)), strings.TrimSpace(stderr.String()))
			}
		}
		med := func(xs []float64) float64 { xs = slices.Clone(xs); slices.Sort(xs); return xs[len(xs)/2] }
		s, k := res["ours"], res["theirs"]
		b.Logf("%d B: produce %.0f vs %.0f rec/s (%.2fx), consume %.0f vs %.0f rec/s (%.2fx), peak RSS %.0f vs %.0f MiB (%.2fx)",
			w.size, med(s[0]), med(k[0]), med(s[0])/med(k[0]), med(s[1]), med(k[1]), med(s[1])/med(k[1]),
			med(s[2])/1024, med(k[2])/1024, med(s[2])/med(k[2]))
		b.ReportMetric(med(s[0])/med(k[0]), fmt.Sprintf("produce-x-%dB", w.size))
		b.ReportMetric(med(s[1])/med(k[1]), fmt.Sprintf("consume-x-%dB", w.size))
		b.ReportMetric(med(s[2])/med(k[2]), fmt.Sprintf("rss-x-%dB", w.size))
		if len(s[3]) == runs && len(k[3]) == runs {
			b.Logf("%d B: CPU to produce %.2f vs %.2f s (%.2fx)", w.size, med(s[3]), med(k[3]), med(s[3])/med(k[3]))
			b.ReportMetric(med(s[3])/med(k[3]), fmt.Sprintf("produce-cpu-x-%dB", w.size))
		}
	}
}

// runCtx runs cmd, killing it when ctx ends, and returns its standard output.
func runCtx(ctx context.Context, cmd *exec.Cmd) ([]byte, error) {
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return []byte(out.String()), err
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		return []byte(out.String()), ctx.Err()
	}
}

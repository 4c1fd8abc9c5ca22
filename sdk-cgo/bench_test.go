package main

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	spool "github.com/spoolmq/spool/sdk-go"
)

// BenchmarkVsLibrdkafka runs bench/spool_bench.c (libspool) and bench/rdkafka_bench.c
// (librdkafka, Debian librdkafka-dev) on the same workload against one broker: N records of
// 100 B and of 1 KiB without keys to 6 partitions, acks=all, linger.ms=5, batch.size=1 MiB,
// then consumed back. Each runs three times, alternating; the medians are reported (records/s
// and peak RSS) with the ratios. `make bench` runs it; the table is in README.md.
func BenchmarkVsLibrdkafka(b *testing.B) {
	brokertest.NeedTool(b, "/usr/include/librdkafka/rdkafka.h", "librdkafka-dev")
	progs := map[string]string{
		"libspool":   compile(b, "", "bench/spool_bench.c", "spool_bench", "-O2"),
		"librdkafka": compile(b, "", "bench/rdkafka_bench.c", "rdkafka_bench", "-O2", "-lrdkafka"),
	}
	addr := brokertest.Start(b, brokertest.Options{}).Addr
	cl, err := spool.NewClient(spool.SeedBrokers(addr))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	const partitions = 6
	seq := 0
	for _, w := range []struct {
		size int
		n    int
	}{{100, 500000}, {1024, 200000}} {
		res := map[string][3][]float64{} // impl → produce, consume, rss samples
		for range 3 {
			for _, impl := range []string{"libspool", "librdkafka"} {
				seq++
				topic := fmt.Sprintf("bench-%d", seq)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				if err := cl.Admin().CreateTopic(ctx, topic, partitions, 1, nil); err != nil {
					b.Fatal(err)
				}
				out, err := exec.CommandContext(ctx, progs[impl], addr, topic, strconv.Itoa(partitions), strconv.Itoa(w.n), strconv.Itoa(w.size)).Output()
				cancel()
				if err != nil {
					b.Fatalf("%s: %v\n%s", impl, err, out)
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
				res[impl] = r
			}
		}
		med := func(xs []float64) float64 { xs = slices.Clone(xs); slices.Sort(xs); return xs[len(xs)/2] }
		s, k := res["libspool"], res["librdkafka"]
		b.Logf("%d B: produce %.0f vs %.0f rec/s (%.2fx), consume %.0f vs %.0f rec/s (%.2fx), peak RSS %.0f vs %.0f MiB (%.2fx)",
			w.size, med(s[0]), med(k[0]), med(s[0])/med(k[0]), med(s[1]), med(k[1]), med(s[1])/med(k[1]),
			med(s[2])/1024, med(k[2])/1024, med(s[2])/med(k[2]))
		b.ReportMetric(med(s[0])/med(k[0]), fmt.Sprintf("produce-x-%dB", w.size))
		b.ReportMetric(med(s[1])/med(k[1]), fmt.Sprintf("consume-x-%dB", w.size))
		b.ReportMetric(med(s[2])/med(k[2]), fmt.Sprintf("rss-x-%dB", w.size))
	}
}

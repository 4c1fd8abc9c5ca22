package server_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// TestUnopenableLogCostsOnlyItsPartition: a partition whose log cannot be opened (a leader
// epoch checkpoint that cannot be parsed) is offline, counted in spool_replicas_offline and
// retried; the broker starts and serves its other partitions, and the partition comes back once
// its log opens (issue 28).
func TestUnopenableLogCostsOnlyItsPartition(t *testing.T) {
	dataDir := t.TempDir()
	b := brokertest.Start(t, brokertest.Options{DataDir: dataDir})
	c := dial(t, b.Addr)
	createTopic(t, c, "t", 3, nil)
	for p := range int32(3) {
		if r := produce(t, c, "t", p, buildBatch(t, 1, nil)); r.ErrorCode != 0 {
			t.Fatalf("produce to t-%d: %v", p, wire.ErrorForCode(r.ErrorCode))
		}
	}
	c.conn.Close()
	b.Stop(t)

	checkpoint := filepath.Join(dataDir, "t-1", "leader-epoch-checkpoint")
	if err := os.WriteFile(checkpoint, []byte("not a checkpoint\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b = brokertest.Start(t, brokertest.Options{DataDir: dataDir, Props: map[string]string{
		"spool.metrics.listener":  "127.0.0.1:0",
		"replica.lag.time.max.ms": "1000", // the reconciler's retry tick is a quarter of it
	}})
	c = dial(t, b.Addr)
	for _, p := range []int32{0, 2} {
		if r := produce(t, c, "t", p, buildBatch(t, 1, nil)); r.ErrorCode != 0 || r.BaseOffset != 1 {
			t.Fatalf("produce to t-%d beside an offline partition: %v at %d; want offset 1", p, wire.ErrorForCode(r.ErrorCode), r.BaseOffset)
		}
	}
	if r := produce(t, c, "t", 1, buildBatch(t, 1, nil)); r.ErrorCode == 0 {
		t.Fatalf("produce to the offline t-1 succeeded at %d", r.BaseOffset)
	}
	if n := scrapeMetric(b.MetricsAddr, "spool_replicas_offline"); n != 1 {
		t.Fatalf("spool_replicas_offline %d, want 1", n)
	}

	if err := os.Remove(checkpoint); err != nil { // the operator's fix
		t.Fatal(err)
	}
	var last wire.ProduceResponsePartitionProduceResponse
	brokertest.WaitFor(t, 30*time.Second, "t-1 back online", func() bool {
		last = produce(t, c, "t", 1, buildBatch(t, 1, nil))
		return last.ErrorCode == 0
	})
	if last.BaseOffset != 1 {
		t.Errorf("t-1 came back with its first append at %d, want 1 (its record kept)", last.BaseOffset)
	}
	brokertest.WaitFor(t, 10*time.Second, "spool_replicas_offline 0", func() bool {
		return scrapeMetric(b.MetricsAddr, "spool_replicas_offline") == 0
	})
}

// scrapeMetric reads one sample (the first, whatever its labels) from /metrics; -1 when it cannot.
func scrapeMetric(metricsAddr, name string) int64 {
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return -1
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(?:\{[^}]*\})? ([0-9.e+]+)$`).FindSubmatch(body)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		return -1
	}
	return int64(v)
}

package server_test

// The operations listener (spool.metrics.listener): /metrics scraped and parsed with the
// Prometheus text parser after real franz-go traffic, /healthz and /readyz, and in cluster
// mode the under-replicated partition count following a broker's death and return.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/broker/internal/config"
	"github.com/spoolmq/spool/broker/internal/server"
)

// scrape fetches and parses /metrics.
func scrape(t testing.TB, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := tryScrape(addr)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

func tryScrape(addr string) (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing /metrics: %w", err)
	}
	return fams, nil
}

// value sums the samples of a counter, gauge or histogram (its count) whose labels include
// every pair of want.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	var sum float64
next:
	for _, m := range f.Metric {
		for k, v := range want {
			found := false
			for _, l := range m.Label {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestMetricsScrapeAfterProduceAndFetch(t *testing.T) {
	parallel(t)
	b := brokertest.Start(t, brokertest.Options{Props: map[string]string{"spool.metrics.listener": "127.0.0.1:0"}})
	if b.MetricsAddr == "" {
		t.Fatal("no metrics address with spool.metrics.listener set")
	}
	// The broker serves: alive and ready.
	brokertest.WaitFor(t, 30*time.Second, "/readyz answers 200", func() bool {
		code, _ := get(t, "http://"+b.MetricsAddr+"/readyz")
		return code == http.StatusOK
	})
	if code, body := get(t, "http://"+b.MetricsAddr+"/healthz"); code != http.StatusOK || !strings.Contains(body, "ok") {
		t.Fatalf("/healthz: %d %q", code, body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic("metered"), kgo.ConsumeTopics("metered"),
		kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "metered"); err != nil {
		t.Fatal(err)
	}
	const n = 50
	value100 := strings.Repeat("v", 100)
	for i := range n {
		// One record per request (ProduceSync waits), so requests and records match.
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(value100), Key: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}

	// A request is counted once its response is written, which may be just after the client
	// has read it.
	produce := map[string]string{"rpc_method": "Produce"}
	var fams map[string]*dto.MetricFamily
	brokertest.WaitFor(t, 30*time.Second, fmt.Sprintf("%d Produce requests and a Fetch counted", n), func() bool {
		fams = scrape(t, b.MetricsAddr)
		return value(fams, "rpc_server_call_duration_seconds", produce) >= n &&
			value(fams, "rpc_server_call_duration_seconds", map[string]string{"rpc_method": "Fetch"}) >= 1
	})
	topic := map[string]string{"messaging_destination_name": "metered"}
	if v := value(fams, "spool_topic_records_in_total", topic); v != n {
		t.Errorf("records in: %v, want %d", v, n)
	}
	// Each batch holds one 100-byte value plus its headers: more than n*100 bytes.
	bytesIn := value(fams, "spool_topic_bytes_in_total", topic)
	if bytesIn < n*100 {
		t.Errorf("bytes in: %v, want more than %d; families: %v", bytesIn, n*100, slices.Sorted(maps.Keys(fams)))
	}
	// The consumer read every batch at least once.
	if v := value(fams, "spool_topic_bytes_out_total", topic); v < bytesIn {
		t.Errorf("bytes out: %v, want at least the %v produced", v, bytesIn)
	}
	part := map[string]string{"messaging_destination_name": "metered", "messaging_destination_partition_id": "0"}
	if v := value(fams, "spool_partition_log_end_offset", part); v != n {
		t.Errorf("log end offset: %v, want %d", v, n)
	}
	if v := value(fams, "spool_partition_high_watermark", part); v != n {
		t.Errorf("high watermark: %v, want %d", v, n)
	}
	if v := value(fams, "spool_partition_log_start_offset", part); v != 0 {
		t.Errorf("log start offset: %v, want 0", v)
	}
	if v := value(fams, "spool_connections_active", nil); v < 1 {
		t.Errorf("active connections: %v, want at least the client's", v)
	}
	// fsync=always (the default): the appends were fsynced.
	fsyncs := value(fams, "spool_storage_fsyncs_total", nil)
	if fsyncs < 1 {
		t.Errorf("fsyncs: %v", fsyncs)
	}
	// Each counted fsync is in the latency histogram too (a flush in progress may be counted
	// in one and not yet the other: at rest they agree).
	brokertest.WaitForState(t, 10*time.Second, "the fsync histogram's count is the fsync counter", func() (bool, string) {
		f := scrape(t, b.MetricsAddr)
		h, c := value(f, "spool_storage_fsync_duration_seconds", nil), value(f, "spool_storage_fsyncs_total", nil)
		return h == c && h >= 1, fmt.Sprintf("histogram %v, counter %v", h, c)
	})
	// A single node reports no cluster gauges.
	if fams["spool_partitions_under_replicated"] != nil {
		t.Error("under-replicated partitions reported on a single node")
	}

	// An error code is counted by API and name: a fetch of a partition that does not exist.
	if pd := fetch(t, dial(t, b.Addr), 12, fetchRequest("metered", 5, 0, 0, 0, 1<<20)); pd.ErrorCode == 0 {
		t.Fatal("fetch of partition 5 of a one-partition topic succeeded")
	}
	brokertest.WaitFor(t, 10*time.Second, "an UNKNOWN_TOPIC_OR_PARTITION error of Fetch counted", func() bool {
		return value(scrape(t, b.MetricsAddr), "spool_request_errors_total",
			map[string]string{"rpc_method": "Fetch", "error_type": "UNKNOWN_TOPIC_OR_PARTITION"}) == 1
	})
}

// TestMetricsReadyzFollowsServe: /readyz answers 503 while the broker has loaded its storage
// but does not serve yet, and 200 once it serves.
func TestMetricsReadyzFollowsServe(t *testing.T) {
	parallel(t)
	conf, err := config.Load([]string{"--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--metrics-listen", "127.0.0.1:0"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(conf, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	addr := srv.MetricsAddr().String()
	if code, body := get(t, "http://"+addr+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "not ready") {
		t.Fatalf("/readyz before Serve: %d %q", code, body)
	}
	if code, _ := get(t, "http://"+addr+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz before Serve: %d", code)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	brokertest.WaitFor(t, 30*time.Second, "/readyz answers 200", func() bool {
		code, _ := get(t, "http://"+addr+"/readyz")
		return code == http.StatusOK
	})
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestMetricsUnderReplicatedFollowsBrokerDeath: in a three-broker cluster the leaders report
// no under-replicated partition; with a broker killed they report some, and ISR shrinks; with
// it back, none, and ISR expansions.
func TestMetricsUnderReplicatedFollowsBrokerDeath(t *testing.T) {
	heavy(t)
	zk := brokertest.SharedZooKeeper(t)
	props := map[string]string{"num.partitions": "1", "replica.lag.time.max.ms": "2000", "broker.session.timeout.ms": "2000",
		"spool.metrics.listener": "127.0.0.1:0"}
	c := brokertest.StartCluster(t, 3, zk.Connect(""), props)
	adm := admin(t, c.Addrs())
	createReplicated(t, adm, "urp", 3)
	down := int32(0) // the killed broker, not scraped
	total := func(name string) (float64, bool) {
		var sum float64
		for id, b := range c.Brokers {
			if id == down {
				continue
			}
			if b.MetricsAddr == "" {
				t.Fatalf("broker %d has no metrics address", id)
			}
			fams, err := tryScrape(b.MetricsAddr)
			if err != nil {
				return 0, false
			}
			sum += value(fams, name, nil)
		}
		return sum, true
	}
	brokertest.WaitFor(t, 60*time.Second, "no under-replicated partition and one controller", func() bool {
		urp, ok1 := total("spool_partitions_under_replicated")
		ctrl, ok2 := total("spool_controller_active")
		return ok1 && ok2 && urp == 0 && ctrl == 1
	})
	c.Kill(t, 3)
	down = 3
	brokertest.WaitFor(t, 60*time.Second, "under-replicated partitions and ISR shrinks after broker 3 died", func() bool {
		urp, ok1 := total("spool_partitions_under_replicated")
		shrinks, ok2 := total("spool_isr_shrinks_total")
		return ok1 && ok2 && urp > 0 && shrinks > 0
	})
	// Partitions were created (first leaders) or moved off broker 3 by a live controller.
	if n, _ := total("spool_controller_leader_elections_total"); n < 1 {
		t.Errorf("leader elections counted by the live brokers: %v", n)
	}
	// Their durations, the ZooKeeper requests' latencies and the session state: a broker
	// that was never down has seen elections and requests, and its session is connected.
	// The controller (whichever broker it is) timed its elections.
	if n, _ := total("spool_controller_leader_election_duration_seconds"); n < 1 {
		t.Errorf("leader election durations recorded by the live brokers: %v", n)
	}
	fams := scrape(t, c.Brokers[1].MetricsAddr)
	if n := value(fams, "spool_zookeeper_request_duration_seconds", nil); n < 10 {
		t.Errorf("ZooKeeper request latencies recorded: %v, want at least the registration's and the image's", n)
	}
	for _, st := range []string{"connected", "connecting", "disconnected", "expired", "auth_failed"} {
		want := 0.0
		if st == "connected" {
			want = 1
		}
		if v := value(fams, "spool_zookeeper_session", map[string]string{"spool_zookeeper_state": st}); v != want || fams["spool_zookeeper_session"] == nil {
			t.Errorf("spool_zookeeper_session{spool_zookeeper_state=%q} = %v, want %v", st, v, want)
		}
	}
	expandsBefore, _ := total("spool_isr_expands_total")
	c.Restart(t, 3)
	down = 0
	brokertest.WaitFor(t, 60*time.Second, "no under-replicated partition and ISR expansions after broker 3 came back", func() bool {
		urp, ok1 := total("spool_partitions_under_replicated")
		expands, ok2 := total("spool_isr_expands_total")
		return ok1 && ok2 && urp == 0 && expands > expandsBefore
	})
	// The cluster metrics the example Grafana dashboard queries are there.
	_, clusterNames := dashboardMetrics(t)
	checkDashboard(t, scrape(t, c.Brokers[1].MetricsAddr), clusterNames)
}

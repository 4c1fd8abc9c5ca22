package server_test

// The split of request time (spool.request.phase.duration), the requests-waiting gauge
// (Kafka's purgatory sizes) and the per-partition log size and segment gauges, against a
// broker driven by raw requests so that every request is known.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/protocol-spec/wire"
	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

// histSum is the sum of the histogram samples of name whose labels include want.
func histSum(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
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
				found = found || (l.GetName() == k && l.GetValue() == v)
			}
			if !found {
				continue next
			}
		}
		sum += m.Histogram.GetSampleSum()
	}
	return sum
}

// TestMetricsLongPollWaitsAndPhases: a long-polling fetch is counted as waiting while it
// waits and its wait lands in the remote phase once data arrives; the produce requests that
// fed it are counted in every phase; the partition's size and segment count follow a roll.
func TestMetricsLongPollWaitsAndPhases(t *testing.T) {
	parallel(t)
	b := brokertest.Start(t, brokertest.Options{Props: map[string]string{"spool.metrics.listener": "127.0.0.1:0"}})
	c := dial(t, b.Addr)
	// segment.bytes at storage's floor (1024): every batch of a 700-byte record rolls a segment.
	createTopic(t, c, "phased", 1, map[string]string{"segment.bytes": "1024"})

	fetchBefore := value(scrape(t, b.MetricsAddr), "spool_request_phase_duration_seconds", map[string]string{"rpc_method": "Fetch", "spool_request_phase": "remote"})
	waiter := dial(t, b.Addr)
	id := waiter.send(fetchRequest("phased", 0, 0, 30000, 1, 1<<20), 12)
	fetchWaiting := map[string]string{"rpc_method": "Fetch"}
	brokertest.WaitFor(t, 20*time.Second, "one fetch waiting", func() bool {
		return value(scrape(t, b.MetricsAddr), "spool_requests_waiting", fetchWaiting) == 1
	})
	const batches = 3
	for range batches {
		if pr := produce(t, c, "phased", 0, bigBatch(t, 700)); pr.ErrorCode != 0 {
			t.Fatalf("produce: %v", wire.ErrorForCode(pr.ErrorCode))
		}
	}
	resp := &wire.FetchResponse{}
	if got := waiter.recv(resp, 12); got != id {
		t.Fatalf("correlation id %d, want %d", got, id)
	}
	if n := len(recordValues(t, resp.Responses[0].Partitions[0].Records)); n == 0 {
		t.Fatal("the long poll answered without records")
	}

	var fams map[string]*dto.MetricFamily
	// A request is counted once its response is written, which may be just after the client
	// has read it.
	brokertest.WaitFor(t, 20*time.Second, "the long poll's and produces' phases recorded and nothing waiting", func() bool {
		fams = scrape(t, b.MetricsAddr)
		return value(fams, "rpc_server_call_duration_seconds", map[string]string{"rpc_method": "Produce"}) == batches && value(fams, "spool_request_phase_duration_seconds", map[string]string{"rpc_method": "Fetch", "spool_request_phase": "remote"}) == fetchBefore+1 &&
			value(fams, "spool_requests_waiting", fetchWaiting) == 0 &&
			value(fams, "spool_requests_waiting", map[string]string{"rpc_method": "Produce"}) == 0
	})
	// The fetch waited from before the first produce to after it: its remote phase holds
	// most of its total, which is at least the three produce round trips.
	remote := histSum(fams, "spool_request_phase_duration_seconds", map[string]string{"rpc_method": "Fetch", "spool_request_phase": "remote"})
	if remote <= 0 {
		t.Errorf("fetch remote time %v, want > 0", remote)
	}
	var phaseSum float64
	for _, ph := range []string{"queue", "local", "remote", "send"} {
		labels := map[string]string{"rpc_method": "Produce", "spool_request_phase": ph}
		if n := value(fams, "spool_request_phase_duration_seconds", labels); n != batches {
			t.Errorf("Produce %s phase: %v samples, want %d", ph, n, batches)
		}
		phaseSum += histSum(fams, "spool_request_phase_duration_seconds", labels)
	}
	// The phases add up to the total (same instants; float sums may differ in the last bits).
	total := histSum(fams, "rpc_server_call_duration_seconds", map[string]string{"rpc_method": "Produce"})
	if d := phaseSum - total; d > 1e-6 || d < -1e-6 {
		t.Errorf("Produce phases add up to %v s, total %v s", phaseSum, total)
	}

	part := map[string]string{"messaging_destination_name": "phased", "messaging_destination_partition_id": "0"}
	// Each batch is past segment.bytes: every append after the first rolls a segment.
	if v := value(fams, "spool_partition_log_segments", part); v != batches {
		t.Errorf("segments: %v, want %d (size %v, end %v)", v, batches, value(fams, "spool_partition_log_size_bytes", part), value(fams, "spool_partition_log_end_offset", part))
	}
	size := value(fams, "spool_partition_log_size_bytes", part)
	if size < batches*700 {
		t.Errorf("log size %v bytes, want at least %d", size, batches*700)
	}
	if fams["spool_partition_log_size_bytes"] == nil || !strings.Contains(fams["spool_partition_log_size_bytes"].GetHelp(), "Bytes") {
		t.Errorf("log size family: %v", fams["spool_partition_log_size_bytes"])
	}
}

// bigBatch is one record batch of one record with a value of n bytes.
func bigBatch(t *testing.T, n int) []byte {
	t.Helper()
	bb := batch.NewBuilder()
	bb.Append(time.Now().UnixMilli(), nil, []byte(strings.Repeat("x", n)), nil)
	b, err := bb.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), b...)
}

// TestMetricsZooKeeperSessionFollowsOutage: a broker's ZooKeeper session gauge reads
// connected, then, with ZooKeeper stopped, not connected with a disconnect counted, and
// connected again once ZooKeeper is back.
//
// It runs alone (not parallel): it stops and restarts its ZooKeeper, and in the full parallel
// run on a loaded machine its broker's session stayed "connecting" after the restart (and the
// broker then ignored SIGTERM for 30 s), in both such runs; run alone it passes, also with a
// 25 s outage. The cause is not found yet.
func TestMetricsZooKeeperSessionFollowsOutage(t *testing.T) {
	zk := brokertest.StartZooKeeper(t) // its own: the test stops and restarts it
	c := brokertest.StartCluster(t, 1, zk.Connect(""), map[string]string{"spool.metrics.listener": "127.0.0.1:0"})
	addr := c.Brokers[1].MetricsAddr
	state := func() (string, float64) {
		fams, err := tryScrape(addr)
		if err != nil {
			return err.Error(), 0
		}
		cur := ""
		for _, st := range []string{"connected", "connecting", "disconnected", "expired", "auth_failed"} {
			if value(fams, "spool_zookeeper_session", map[string]string{"spool_zookeeper_state": st}) == 1 {
				cur += st
			}
		}
		return cur, value(fams, "spool_zookeeper_disconnects_total", nil)
	}
	brokertest.WaitForState(t, 30*time.Second, "session connected", func() (bool, string) {
		st, _ := state()
		return st == "connected", st
	})
	zk.Stop(t)
	brokertest.WaitForState(t, 30*time.Second, "session lost and a disconnect counted", func() (bool, string) {
		st, n := state()
		return (st == "connecting" || st == "disconnected") && n >= 1, fmt.Sprintf("%s, %v disconnects", st, n)
	})
	zk.Restart(t)
	brokertest.WaitForState(t, 60*time.Second, "session connected again", func() (bool, string) {
		st, _ := state()
		return st == "connected", st
	})
}

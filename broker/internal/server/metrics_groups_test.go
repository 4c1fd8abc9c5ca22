package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spoolmq/spool/broker/brokertest"
)

// TestMetricsGroupLag: a franz-go group consumes two partitions (30 and 20 records) and
// commits 10 and 20; the scrape shows one Stable group with one member and lags 20 and 0, then
// Empty with no member once the consumer leaves, the lag kept. The scrape has every metric
// the example dashboard queries.
func TestMetricsGroupLag(t *testing.T) {
	parallel(t)
	b := brokertest.Start(t, brokertest.Options{Props: map[string]string{"spool.metrics.listener": "127.0.0.1:0"}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic("lagged"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if _, err := kadm.NewClient(prod).CreateTopic(ctx, 2, 1, nil, "lagged"); err != nil {
		t.Fatal(err)
	}
	sizes := map[int32]int{0: 30, 1: 20}
	for p, n := range sizes {
		for range n {
			if err := prod.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConsumerGroup("lag-group"), kgo.ConsumeTopics("lagged"),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for got := 0; got < 50; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	commit := map[string]map[int32]kgo.EpochOffset{"lagged": {0: {Epoch: -1, Offset: 10}, 1: {Epoch: -1, Offset: 20}}}
	var commitErr error
	cons.CommitOffsetsSync(ctx, commit, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		commitErr = err
		if err == nil {
			for _, rt := range resp.Topics {
				for _, rp := range rt.Partitions {
					if e := kerr.ErrorForCode(rp.ErrorCode); e != nil && commitErr == nil {
						commitErr = e
					}
				}
			}
		}
	})
	if commitErr != nil {
		t.Fatal(commitErr)
	}

	group := map[string]string{"messaging_consumer_group_name": "lag-group"}
	lagOf := func(p string) map[string]string {
		return map[string]string{"messaging_consumer_group_name": "lag-group", "messaging_destination_name": "lagged",
			"messaging_destination_partition_id": p}
	}
	fams := scrape(t, b.MetricsAddr)
	if v := value(fams, "spool_groups", map[string]string{"spool_group_state": "Stable"}); v != 1 {
		t.Errorf("Stable groups: %v, want 1", v)
	}
	if v := value(fams, "spool_groups", map[string]string{"spool_group_state": "PreparingRebalance"}); v != 0 {
		t.Errorf("PreparingRebalance groups: %v, want 0 (and the series present)", v)
	}
	if fams["spool_groups"] == nil || len(fams["spool_groups"].Metric) != 4 {
		t.Errorf("spool_groups should have one series per live state: %v", fams["spool_groups"])
	}
	if v := value(fams, "spool_group_members", group); v != 1 {
		t.Errorf("members: %v, want 1", v)
	}
	for p, want := range map[string][2]float64{"0": {10, 20}, "1": {20, 0}} {
		if v := value(fams, "spool_group_committed_offset", lagOf(p)); v != want[0] {
			t.Errorf("partition %s committed offset: %v, want %v", p, v, want[0])
		}
		if v := value(fams, "spool_group_lag", lagOf(p)); v != want[1] {
			t.Errorf("partition %s lag: %v, want %v", p, v, want[1])
		}
	}

	// Every metric the example Grafana dashboard reads on a single node is there, once a
	// request has failed (errors are counted from the first).
	if pd := fetch(t, dial(t, b.Addr), 12, fetchRequest("lagged", 5, 0, 0, 0, 1<<20)); pd.ErrorCode == 0 {
		t.Fatal("fetch of partition 5 of a two-partition topic succeeded")
	}
	single, _ := dashboardMetrics(t)
	brokertest.WaitFor(t, 10*time.Second, "the failed fetch counted", func() bool {
		fams = scrape(t, b.MetricsAddr)
		return fams["spool_request_errors_total"] != nil
	})
	checkDashboard(t, fams, single)

	cons.Close() // leaves the group
	brokertest.WaitFor(t, 30*time.Second, "the group Empty with no member", func() bool {
		fams = scrape(t, b.MetricsAddr)
		return value(fams, "spool_groups", map[string]string{"spool_group_state": "Empty"}) == 1 &&
			value(fams, "spool_group_members", group) == 0
	})
	if v := value(fams, "spool_group_lag", lagOf("0")); v != 20 {
		t.Errorf("lag after the consumer left: %v, want 20", v)
	}
}

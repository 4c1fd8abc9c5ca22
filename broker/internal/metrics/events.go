package metrics

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
)

// Cluster events counted where they happen, in the replication, controller and ZooKeeper
// code, with one call each and no reference to a *Metrics: the counters are process-wide, as
// Kafka's JMX counters are per JVM (one broker per process; in-process test brokers share
// them). The observable counters in Observe report them in cluster mode; the durations go to
// the histograms of every *Metrics of the process (sinks).
var (
	isrShrinks      atomic.Int64
	isrExpands      atomic.Int64
	leaderElections atomic.Int64
	zkExpirations   atomic.Int64
	zkDisconnects   atomic.Int64
)

// sinks are the process's meters that record the cluster event durations: each New adds
// its own, Shutdown removes it.
var sinks struct {
	mu  sync.RWMutex
	all map[*Metrics]struct{}
}

func addSink(m *Metrics) {
	sinks.mu.Lock()
	defer sinks.mu.Unlock()
	if sinks.all == nil {
		sinks.all = map[*Metrics]struct{}{}
	}
	sinks.all[m] = struct{}{}
}

func removeSink(m *Metrics) {
	sinks.mu.Lock()
	defer sinks.mu.Unlock()
	delete(sinks.all, m)
}

// record records d in the histogram pick chooses of every sink.
func record(d time.Duration, pick func(*Metrics) metric.Float64Histogram) {
	sinks.mu.RLock()
	defer sinks.mu.RUnlock()
	for m := range sinks.all {
		pick(m).Record(context.Background(), d.Seconds())
	}
}

// ISRChanged counts an ISR change from from to to replicas, written by a partition leader
// (a follower caught up or fell behind) or by the controller (a broker died or a leader was
// elected): a shrink or an expansion (Kafka's IsrShrinksPerSec, IsrExpandsPerSec). From 0 is
// a new partition's first ISR, not a change.
func ISRChanged(from, to int) {
	switch {
	case from == 0:
	case to < from:
		isrShrinks.Add(1)
	case to > from:
		isrExpands.Add(1)
	}
}

// LeaderElected counts a partition leader the controller elected (a new partition's first
// leader included) and how long the election took, from the controller's decision to the
// partition state written to ZooKeeper (Kafka's LeaderElectionRateAndTimeMs).
func LeaderElected(took time.Duration) {
	leaderElections.Add(1)
	record(took, func(m *Metrics) metric.Float64Histogram { return m.electionTime })
}

// ZooKeeperRequest records the time of one ZooKeeper request, sent to answered (Kafka's
// ZooKeeperRequestLatencyMs).
func ZooKeeperRequest(took time.Duration) {
	record(took, func(m *Metrics) metric.Float64Histogram { return m.zkLatency })
}

// ZooKeeperSessionExpired counts a session expiry (Kafka's ZooKeeperExpiresPerSec).
func ZooKeeperSessionExpired() { zkExpirations.Add(1) }

// ZooKeeperDisconnected counts a lost connection to ZooKeeper (Kafka's ZooKeeperDisconnectsPerSec).
func ZooKeeperDisconnected() { zkDisconnects.Add(1) }

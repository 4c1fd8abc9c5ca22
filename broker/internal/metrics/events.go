package metrics

import "sync/atomic"

// Cluster events counted where they happen, in the replication and controller code, with one
// call each and no reference to a *Metrics: the counters are process-wide, as Kafka's JMX
// counters are per JVM (one broker per process; in-process test brokers share them). The
// observable counters in Observe report them in cluster mode.
var (
	isrShrinks      atomic.Int64
	isrExpands      atomic.Int64
	leaderElections atomic.Int64
)

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
// leader included), Kafka's LeaderElectionRateAndTimeMs count.
func LeaderElected() { leaderElections.Add(1) }

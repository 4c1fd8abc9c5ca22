package storage

import (
	"fmt"
	"testing"
)

// BenchmarkCreateReplica measures what a broker pays to take a new replica (issue 28): a
// Manager opens (creates) the partition's empty log, and the replica, as leader, records its
// first leader epoch. One op is one replica; the report adds fsyncs per op.
func BenchmarkCreateReplica(b *testing.B) {
	m, err := OpenManager(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	cfg := DefaultLogConfig()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		l, err := m.Open(fmt.Sprintf("bench-%d", i/100), int32(i%100), cfg)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.AssignLeaderEpoch(0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCloseManyEmptyLogs measures a Manager's Close of 1,000 new, empty logs (a broker
// stopping with thousands of replicas that took no data). One op is one Close.
func BenchmarkCloseManyEmptyLogs(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		m, err := OpenManager(b.TempDir(), nil)
		if err != nil {
			b.Fatal(err)
		}
		for i := range 1000 {
			if _, err := m.Open(fmt.Sprintf("bench-%d", i/100), int32(i%100), DefaultLogConfig()); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		if err := m.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

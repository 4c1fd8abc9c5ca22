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

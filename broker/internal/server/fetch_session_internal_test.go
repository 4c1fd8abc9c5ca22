package server

import (
	"testing"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// openN opens a session over n partitions of topic t and returns its id.
func openN(c *fetchSessionCache, t string, n int) int32 {
	targets := make([]fetchTarget, n)
	parts := make([]wire.FetchResponsePartitionData, n)
	for i := range targets {
		targets[i] = fetchTarget{topicPartition: topicPartition{t, int32(i)}}
	}
	return c.open(targets, parts)
}

// The cache never holds more than its slots; a full cache evicts as Kafka's does: a session
// idle past the eviction time, else the smallest old session when the new one is larger.
func TestFetchSessionCacheEviction(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newFetchSessionCache(2, time.Minute)
	c.now = func() time.Time { return now }

	a := openN(c, "a", 3)
	b := openN(c, "b", 5)
	if a == 0 || b == 0 || a == b {
		t.Fatalf("ids %d, %d: want two distinct sessions", a, b)
	}
	if id := openN(c, "c", 10); id != 0 {
		t.Fatalf("a full cache of young sessions made room (id %d)", id)
	}

	// Both old, both recently used: a larger newcomer evicts the smallest (a); an equal one
	// evicts nothing.
	now = now.Add(2 * time.Minute)
	for _, id := range []int32{a, b} {
		c.sessions[id].lastUsed = now
	}
	if id := openN(c, "d", 3); id != 0 {
		t.Fatalf("a session no larger than the smallest evicted one (id %d)", id)
	}
	d := openN(c, "d", 4)
	if d == 0 || c.sessions[a] != nil || c.sessions[b] == nil {
		t.Fatalf("newcomer of 4: id %d, a kept %v, b kept %v; want a evicted", d, c.sessions[a] != nil, c.sessions[b] != nil)
	}

	// An idle session goes whatever its size.
	now = now.Add(90 * time.Second)
	c.sessions[d].lastUsed = now
	e := openN(c, "e", 1)
	if e == 0 || c.sessions[b] != nil || c.sessions[d] == nil {
		t.Fatalf("after b idled: id %d, b kept %v, d kept %v; want b evicted", e, c.sessions[b] != nil, c.sessions[d] != nil)
	}
	if len(c.sessions) != 2 {
		t.Fatalf("%d sessions in a 2-slot cache", len(c.sessions))
	}
}

// With no slots the broker is sessionless.
func TestFetchSessionCacheDisabled(t *testing.T) {
	c := newFetchSessionCache(0, time.Minute)
	r := &wire.FetchRequest{}
	r.Default()
	r.SessionEpoch = epochInitial
	if p := c.plan(r, 12); p.openSession {
		t.Fatal("a zero-slot cache plans to open a session")
	}
}

func TestNextEpoch(t *testing.T) {
	for in, want := range map[int32]int32{0: 1, 1: 2, 1<<31 - 1: 1, -1: -1} {
		if got := nextEpoch(in); got != want {
			t.Errorf("nextEpoch(%d) = %d, want %d", in, got, want)
		}
	}
}

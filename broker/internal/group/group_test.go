package group

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/internal/storage"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func TestPartitionForIsJavaHashCode(t *testing.T) {
	// Java: "hello".hashCode() == 99162322; "polygenelubricants".hashCode() == Integer.MIN_VALUE,
	// which Kafka's Utils.abs maps to 0.
	for _, c := range []struct {
		group string
		n     int32
		want  int32
	}{{"hello", 50, 99162322 % 50}, {"polygenelubricants", 50, 0}, {"", 7, 0}, {"é", 50, 233 % 50}} {
		if got := partitionFor(c.group, c.n); got != c.want {
			t.Errorf("partitionFor(%q, %d) = %d, want %d", c.group, c.n, got, c.want)
		}
	}
}

func TestRecordLayouts(t *testing.T) {
	// Offset commit key v1 and value v3, byte for byte.
	key := offsetKey("g", "t", 2)
	if want := []byte{0, 1, 0, 1, 'g', 0, 1, 't', 0, 0, 0, 2}; !bytes.Equal(key, want) {
		t.Fatalf("offset key % x", key)
	}
	v := offsetValue(offsetEntry{offset: 5, leaderEpoch: 3, metadata: "m", commitTime: 9, expireTime: -1})
	want := []byte{0, 3, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 3, 0, 1, 'm', 0, 0, 0, 0, 0, 0, 0, 9}
	if !bytes.Equal(v, want) {
		t.Fatalf("offset value % x", v)
	}
	o, err := parseOffsetValue(v)
	if err != nil || o.offset != 5 || o.leaderEpoch != 3 || o.metadata != "m" || o.commitTime != 9 || o.expireTime != -1 {
		t.Fatalf("parsed %+v %v", o, err)
	}
	v1 := offsetValue(offsetEntry{offset: 5, metadata: "", commitTime: 9, expireTime: 11})
	if o, err := parseOffsetValue(v1); err != nil || o.expireTime != 11 || v1[1] != 1 {
		t.Fatalf("v1 value %+v %v", o, err)
	}
	if k := groupKey("g"); !bytes.Equal(k, []byte{0, 2, 0, 1, 'g'}) {
		t.Fatalf("group key % x", k)
	}
	inst, proto, leader := "i", "range", "m1"
	s := groupSnapshot{protocolType: "consumer", generation: 4, protocol: &proto, leader: &leader, stateTime: 77,
		members: []memberSnapshot{{id: "m1", instanceID: &inst, clientID: "c", clientHost: "/h", rebalanceTimeout: 100, sessionTimeout: 200, subscription: []byte{1}, assignment: []byte{2, 3}}}}
	gv := groupValue(s)
	if gv[0] != 0 || gv[1] != 3 {
		t.Fatalf("group value version % x", gv[:2])
	}
	back, err := parseGroupValue(gv)
	if err != nil || back.generation != 4 || *back.protocol != "range" || *back.leader != "m1" || back.stateTime != 77 || len(back.members) != 1 {
		t.Fatalf("parsed group %+v %v", back, err)
	}
	m := back.members[0]
	if m.id != "m1" || *m.instanceID != "i" || m.clientHost != "/h" || m.rebalanceTimeout != 100 || m.sessionTimeout != 200 || !bytes.Equal(m.assignment, []byte{2, 3}) {
		t.Fatalf("parsed member %+v", m)
	}
	if _, err := parseGroupValue(gv[:len(gv)-1]); err == nil {
		t.Fatal("a truncated group value parsed")
	}
}

// testLogs opens n compacted logs standing in for __consumer_offsets.
func testLogs(t *testing.T, dir string, n int) []*storage.Log {
	var logs []*storage.Log
	for i := 0; i < n; i++ {
		cfg := storage.DefaultLogConfig()
		cfg.Compact, cfg.Delete = true, false
		l, err := storage.Open(filepath.Join(dir, fmt.Sprintf("%s-%d", Topic, i)), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, l)
	}
	t.Cleanup(func() {
		for _, l := range logs {
			l.Close()
		}
	})
	return logs
}

// newLoaded makes a coordinator that leads every partition of logs.
func newLoaded(t *testing.T, cfg Config, logs []*storage.Log) *Coordinator {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range logs {
		if err := c.OnElection(int32(i), int32(len(logs)), LogPartition(l)); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitLoad(context.Background(), int32(i)); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func commit(t *testing.T, c *Coordinator, r CommitRequest) []int16 {
	t.Helper()
	ch := make(chan []int16, 1)
	c.Commit(r, func(codes []int16) { ch <- codes })
	return <-ch
}

func TestOffsetRetentionAndReload(t *testing.T) {
	dir := t.TempDir()
	logs := testLogs(t, dir, 3)
	c := newLoaded(t, Config{OffsetsRetention: time.Hour}, logs)
	md := "x"
	codes := commit(t, c, CommitRequest{GroupID: "solo", Generation: -1, Retention: -1, Commits: []Commit{{Topic: "t", Partition: 0, Offset: 10, LeaderEpoch: -1, Metadata: &md}}})
	codes = append(codes, commit(t, c, CommitRequest{GroupID: "short", Generation: -1, Retention: time.Minute, Commits: []Commit{{Topic: "t", Partition: 0, Offset: 3, LeaderEpoch: -1}}})...)
	for _, code := range codes {
		if code != 0 {
			t.Fatalf("commit: %v", wire.ErrorForCode(code))
		}
	}
	// A reload sees both.
	c.Close()
	c2 := newLoaded(t, Config{OffsetsRetention: time.Hour}, logs)
	defer c2.Close()
	got, _ := c2.FetchOffsets("solo", []TopicPartitions{{Topic: "t", Partitions: []int32{0}}}, false)
	if got[0].Offset != 10 || got[0].Metadata != "x" {
		t.Fatalf("reloaded %+v", got)
	}
	// Two minutes on: the explicit one-minute retention has expired, the hour has not.
	c2.ExpireOffsets(time.Now().Add(2 * time.Minute))
	if got, _ := c2.FetchOffsets("short", nil, true); len(got) != 0 {
		t.Fatalf("short retention kept %+v", got)
	}
	if got, _ := c2.FetchOffsets("solo", nil, true); len(got) != 1 {
		t.Fatalf("solo lost %+v", got)
	}
	if l := c2.List(nil); len(l) != 1 || l[0].GroupID != "solo" {
		t.Fatalf("groups after expiry %+v", l)
	}
	// Past the hour the standalone group's offsets expire and the group goes with them.
	c2.ExpireOffsets(time.Now().Add(2 * time.Hour))
	if l := c2.List(nil); len(l) != 0 {
		t.Fatalf("groups after full expiry %+v", l)
	}
	// The tombstones are durable: a reload agrees.
	for _, l := range logs {
		if err := l.WaitDurable(context.Background(), l.LogEndOffset()); err != nil {
			t.Fatal(err)
		}
	}
	c3 := newLoaded(t, Config{OffsetsRetention: time.Hour}, logs)
	defer c3.Close()
	if l := c3.List(nil); len(l) != 0 {
		t.Fatalf("groups after reload %+v", l)
	}
}

package server_test

// A consumer's long poll is woken by what it may see: on a replicated topic the high watermark
// advances after the append, when the followers fetch it, and that advance must complete a
// parked fetch at once, not at fetch.max.wait.ms (issue 27).

import (
	"encoding/binary"
	"io"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/protocol-spec/wire"
	"github.com/twmb/franz-go/pkg/kadm"
)

func TestWakeParkedFetchOnHighWatermarkAdvance(t *testing.T) {
	zk := brokertest.StartZooKeeper(t)
	c := brokertest.StartCluster(t, 3, zk.Connect(""), map[string]string{"num.partitions": "1"})
	adm := admin(t, c.Addrs())
	td := createReplicated(t, adm, "wake", 1)
	// The first record, through the partition's leader. On a loaded machine the failure
	// detector may move the leadership just after creation (a broker slow to answer is taken
	// for dead): then the produce is refused, and it goes again to the leader metadata names
	// once the ISR is full again.
	var conn *rawClient
	for deadline := time.Now().Add(60 * time.Second); ; {
		conn = dial(t, c.Proxies[td.Partitions[0].Leader].Addr)
		first := produce(t, conn, "wake", 0, buildBatch(t, 1, nil))
		if first.ErrorCode == 0 {
			break
		}
		err := wire.ErrorForCode(first.ErrorCode)
		if first.ErrorCode != wire.ErrNotLeaderOrFollower.Code || time.Now().After(deadline) {
			t.Fatalf("first produce: %v", err)
		}
		t.Logf("first produce: %v; the leadership moved, trying the new leader", err)
		td = waitMetadata(t, adm, "wake", "a leader with a full ISR", func(td kadm.TopicDetail) bool {
			return len(td.Partitions) == 1 && td.Partitions[0].Leader >= 0 && len(td.Partitions[0].ISR) == 3
		})
	}
	// On one connection requests are handled in order: the fetch (at the high watermark,
	// so it parks) is taken before the produce is read, whose acks=all reply comes after
	// the fetch's.
	const maxWait = 20 * time.Second
	fetchID := conn.send(fetchRequest("wake", 0, 1, int32(maxWait/time.Millisecond), 1, 1<<20), 12)
	start := time.Now()
	produceID := conn.send(produceRequest("wake", 0, -1, buildBatch(t, 1, nil)), 9)

	fresp := &wire.FetchResponse{}
	if id := recvWithin(t, conn, fresp, 12, 2*maxWait); id != fetchID {
		t.Fatalf("correlation id %d, want the fetch's %d", id, fetchID)
	}
	took := time.Since(start)
	if fresp.ErrorCode != 0 || len(fresp.Responses) != 1 || len(fresp.Responses[0].Partitions) != 1 {
		t.Fatalf("fetch response: %+v", fresp)
	}
	pd := fresp.Responses[0].Partitions[0]
	if pd.ErrorCode != 0 || pd.HighWatermark != 2 {
		t.Fatalf("fetch: error %v, high watermark %d, want 2", wire.ErrorForCode(pd.ErrorCode), pd.HighWatermark)
	}
	if vals := recordValues(t, pd.Records); len(vals) != 1 {
		t.Fatalf("the parked fetch returned %d records, want the one produced", len(vals))
	}
	if took >= maxWait {
		t.Fatalf("the parked fetch returned after %v, at its max wait: the high watermark advance did not wake it", took)
	}
	presp := &wire.ProduceResponse{}
	if id := recvWithin(t, conn, presp, 9, 30*time.Second); id != produceID {
		t.Fatalf("correlation id %d, want the produce's %d", id, produceID)
	}
	if p := presp.Responses[0].PartitionResponses[0]; p.ErrorCode != 0 || p.BaseOffset != 1 {
		t.Fatalf("produce: %v at %d, want offset 1", wire.ErrorForCode(p.ErrorCode), p.BaseOffset)
	}
	t.Logf("parked fetch answered %v after the produce was sent (max wait %v)", took.Round(time.Millisecond), maxWait)
}

// recvWithin reads one response like rawClient.recv, waiting up to d.
func recvWithin(t *testing.T, c *rawClient, msg wire.Message, version int16, d time.Duration) int32 {
	t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(d))
	var size [4]byte
	if _, err := io.ReadFull(c.conn, size[:]); err != nil {
		t.Fatalf("reading a response: %v", err)
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c.conn, b); err != nil {
		t.Fatalf("reading a response: %v", err)
	}
	api := wire.LookupAPI(msg.APIKey())
	r := wire.NewReader(b)
	var h wire.ResponseHeader
	h.ReadFrom(r, api.ResponseHeaderVersion(version))
	msg.ReadFrom(r, version)
	if r.Err() != nil {
		t.Fatalf("decoding %s v%d response: %v", api.Name, version, r.Err())
	}
	return h.CorrelationId
}

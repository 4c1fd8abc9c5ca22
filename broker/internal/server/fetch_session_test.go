package server_test

import (
	"testing"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// sessionFetch builds a Fetch at (session, epoch) listing parts (partition → offset) of topic and
// forgetting forget. MaxWaitMs is 0, so the broker answers at once.
func sessionFetch(topic string, session, epoch int32, parts map[int32]int64, forget ...int32) *wire.FetchRequest {
	req := &wire.FetchRequest{}
	req.Default()
	req.MinBytes, req.SessionId, req.SessionEpoch = 1, session, epoch
	if len(parts) > 0 {
		ft := wire.FetchRequestTopic{Topic: topic}
		for p, off := range parts {
			ft.Partitions = append(ft.Partitions, wire.FetchRequestPartition{Partition: p, FetchOffset: off,
				PartitionMaxBytes: 1 << 20, LogStartOffset: -1, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1})
		}
		req.Topics = []wire.FetchRequestTopic{ft}
	}
	if len(forget) > 0 {
		req.ForgottenTopicsData = []wire.FetchRequestForgottenTopic{{Topic: topic, Partitions: forget}}
	}
	return req
}

// sessionResult is a fetch response reduced to what session tests look at.
type sessionResult struct {
	errorCode int16
	sessionID int32
	parts     map[int32]wire.FetchResponsePartitionData
}

func fetchSession(t *testing.T, c *rawClient, version int16, req *wire.FetchRequest) sessionResult {
	t.Helper()
	resp := &wire.FetchResponse{}
	c.roundTrip(req, resp, version)
	out := sessionResult{errorCode: resp.ErrorCode, sessionID: resp.SessionId, parts: map[int32]wire.FetchResponsePartitionData{}}
	for _, tr := range resp.Responses {
		for _, p := range tr.Partitions {
			if _, dup := out.parts[p.PartitionIndex]; dup {
				t.Fatalf("partition %d answered twice", p.PartitionIndex)
			}
			out.parts[p.PartitionIndex] = p
		}
	}
	return out
}

func (r sessionResult) partitionSet() []int32 {
	var out []int32
	for p := range r.parts {
		out = append(out, p)
	}
	return out
}

func wantPartitions(t *testing.T, what string, r sessionResult, want ...int32) {
	t.Helper()
	if r.errorCode != 0 {
		t.Fatalf("%s: error %v", what, wire.ErrorForCode(r.errorCode))
	}
	if len(r.parts) != len(want) {
		t.Fatalf("%s: partitions %v, want %v", what, r.partitionSet(), want)
	}
	for _, p := range want {
		if _, ok := r.parts[p]; !ok {
			t.Fatalf("%s: partitions %v, want %v", what, r.partitionSet(), want)
		}
	}
}

// A full fetch at epoch 0 opens a session; incremental fetches then answer only partitions
// with news (records, a new high watermark), fetch unlisted partitions from where the session
// left them, and drop forgotten ones.
func TestFetchSessionIncremental(t *testing.T) {
	parallel(t)
	b := startBroker(t, nil)
	c := dial(t, b.Addr)
	createTopic(t, c, "s", 3, nil)
	for p := int32(0); p < 3; p++ {
		produce(t, c, "s", p, buildBatch(t, 2, nil))
	}
	for _, version := range []int16{7, 12} {
		full := fetchSession(t, c, version, sessionFetch("s", 0, 0, map[int32]int64{0: 0, 1: 0, 2: 0}))
		wantPartitions(t, "full fetch", full, 0, 1, 2)
		id := full.sessionID
		if id <= 0 {
			t.Fatalf("v%d full fetch at epoch 0 got session id %d, want a new positive id", version, id)
		}
		for p, pd := range full.parts {
			if got := recordValues(t, pd.Records); len(got) < 2 {
				t.Fatalf("partition %d: %d records in the full fetch, want >= 2", p, len(got))
			}
		}

		// The client consumed partitions 0 and 1 (new offsets listed); partition 2 is not
		// listed, so the session still fetches it from 0 and its records come back.
		hw0, hw1 := full.parts[0].HighWatermark, full.parts[1].HighWatermark
		inc := fetchSession(t, c, version, sessionFetch("s", id, 1, map[int32]int64{0: hw0, 1: hw1}))
		wantPartitions(t, "epoch 1", inc, 2)
		if inc.sessionID != id {
			t.Fatalf("epoch 1 answered session %d, want %d", inc.sessionID, id)
		}

		// Everything consumed: nothing changed, so the response is empty.
		hw2 := full.parts[2].HighWatermark
		wantPartitions(t, "epoch 2", fetchSession(t, c, version, sessionFetch("s", id, 2, map[int32]int64{2: hw2})))

		// New records on partition 1 only: an empty incremental fetch returns just them, with
		// the new high watermark.
		produce(t, c, "s", 1, buildBatch(t, 3, nil))
		inc = fetchSession(t, c, version, sessionFetch("s", id, 3, nil))
		wantPartitions(t, "epoch 3 after producing to 1", inc, 1)
		if got := recordValues(t, inc.parts[1].Records); len(got) != 3 {
			t.Fatalf("epoch 3: %d records from the session's offset, want the 3 new ones", len(got))
		}
		if inc.parts[1].HighWatermark != hw1+3 {
			t.Fatalf("epoch 3: high watermark %d, want %d", inc.parts[1].HighWatermark, hw1+3)
		}

		// Forget partition 1 (consumed or not, it is out of the session): new records there
		// are no longer answered, while partition 0's are.
		produce(t, c, "s", 0, buildBatch(t, 1, nil))
		produce(t, c, "s", 1, buildBatch(t, 1, nil))
		inc = fetchSession(t, c, version, sessionFetch("s", id, 4, nil, 1))
		wantPartitions(t, "epoch 4 forgetting 1", inc, 0)

		// Closing the session (epoch -1) fetches sessionless: every listed partition answers,
		// with session id 0, and the old id is gone.
		closed := fetchSession(t, c, version, sessionFetch("s", id, -1, map[int32]int64{0: 0, 1: 0}))
		wantPartitions(t, "closing fetch", closed, 0, 1)
		if closed.sessionID != 0 {
			t.Fatalf("closing fetch answered session %d, want 0", closed.sessionID)
		}
		if r := fetchSession(t, c, version, sessionFetch("s", id, 5, nil)); r.errorCode != wire.ErrFetchSessionIdNotFound.Code {
			t.Fatalf("fetch on a closed session: error %d, want FETCH_SESSION_ID_NOT_FOUND", r.errorCode)
		}
	}
}

// Session errors are top-level with no partitions, and a sessionless client is never given a
// session.
func TestFetchSessionErrors(t *testing.T) {
	parallel(t)
	b := startBroker(t, nil)
	c := dial(t, b.Addr)
	createTopic(t, c, "e", 2, nil)
	produce(t, c, "e", 0, buildBatch(t, 1, nil))

	r := fetchSession(t, c, 12, sessionFetch("e", 0, -1, map[int32]int64{0: 0}))
	wantPartitions(t, "sessionless fetch", r, 0)
	if r.sessionID != 0 {
		t.Fatalf("epoch -1 fetch got session %d, want none", r.sessionID)
	}

	r = fetchSession(t, c, 12, sessionFetch("e", 12345, 1, map[int32]int64{0: 0}))
	if r.errorCode != wire.ErrFetchSessionIdNotFound.Code || len(r.parts) != 0 {
		t.Fatalf("unknown session: error %d with %d partitions, want FETCH_SESSION_ID_NOT_FOUND and none", r.errorCode, len(r.parts))
	}

	id := fetchSession(t, c, 12, sessionFetch("e", 0, 0, map[int32]int64{0: 0, 1: 0})).sessionID
	if id == 0 {
		t.Fatal("no session opened")
	}
	for _, bad := range []int32{2, 7} {
		r = fetchSession(t, c, 12, sessionFetch("e", id, bad, nil))
		if r.errorCode != wire.ErrInvalidFetchSessionEpoch.Code || len(r.parts) != 0 {
			t.Fatalf("epoch %d on a session at 1: error %d with %d partitions, want INVALID_FETCH_SESSION_EPOCH", bad, r.errorCode, len(r.parts))
		}
	}
	// The wrong epochs did not move the session on.
	wantPartitions(t, "epoch 1 after bad epochs", fetchSession(t, c, 12, sessionFetch("e", id, 1, map[int32]int64{0: 1})))

	// A full fetch naming the session replaces it.
	id2 := fetchSession(t, c, 12, sessionFetch("e", id, 0, map[int32]int64{1: 0})).sessionID
	if id2 == 0 || id2 == id {
		t.Fatalf("re-opened session id %d (old %d), want a new one", id2, id)
	}
	if r = fetchSession(t, c, 12, sessionFetch("e", id, 2, nil)); r.errorCode != wire.ErrFetchSessionIdNotFound.Code {
		t.Fatalf("replaced session still answers: error %d", r.errorCode)
	}

	// Forgetting the last partition ends the session.
	wantPartitions(t, "forget all", fetchSession(t, c, 12, sessionFetch("e", id2, 1, nil, 1)))
	if r = fetchSession(t, c, 12, sessionFetch("e", id2, 2, nil)); r.errorCode != wire.ErrFetchSessionIdNotFound.Code {
		t.Fatalf("emptied session still answers: error %d", r.errorCode)
	}

	// Sessions exist from v7: a v6 fetch is always sessionless.
	if r = fetchSession(t, c, 6, sessionFetch("e", 0, 0, map[int32]int64{0: 0})); r.sessionID != 0 {
		t.Fatalf("v6 fetch got session %d", r.sessionID)
	}
}

// A session partition with an error is answered on every incremental fetch even though
// nothing changed; a long poll on an incremental fetch wakes on appends to session partitions
// that the request does not list.
func TestFetchSessionLongPollAndErrors(t *testing.T) {
	parallel(t)
	b := startBroker(t, map[string]string{"auto.create.topics.enable": "false"})
	c := dial(t, b.Addr)
	createTopic(t, c, "lp", 1, nil)

	req := sessionFetch("lp", 0, 0, map[int32]int64{0: 0})
	req.Topics = append(req.Topics, wire.FetchRequestTopic{Topic: "missing", Partitions: []wire.FetchRequestPartition{{Partition: 5, PartitionMaxBytes: 1 << 20, LogStartOffset: -1, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1}}})
	full := fetchSession(t, c, 12, req)
	if full.sessionID == 0 {
		t.Fatal("no session opened")
	}
	inc := fetchSession(t, c, 12, sessionFetch("lp", full.sessionID, 1, nil))
	if len(inc.parts) != 1 || inc.parts[5].ErrorCode != wire.ErrUnknownTopicOrPartition.Code {
		t.Fatalf("epoch 1: %+v, want only the missing topic's error", inc.parts)
	}

	// A long poll on a session of lp alone, listing nothing.
	id := fetchSession(t, c, 12, sessionFetch("lp", 0, 0, map[int32]int64{0: 0})).sessionID
	if id == 0 {
		t.Fatal("no session opened")
	}
	long := sessionFetch("lp", id, 1, nil)
	long.MaxWaitMs = 30000
	corr := c.send(long, 12)
	p := dial(t, b.Addr)
	produce(t, p, "lp", 0, buildBatch(t, 2, nil))
	resp := &wire.FetchResponse{}
	if got := c.recv(resp, 12); got != corr {
		t.Fatalf("correlation id %d, want %d", got, corr)
	}
	var values []string
	for _, tr := range resp.Responses {
		if tr.Topic == "lp" {
			values = append(values, recordValues(t, tr.Partitions[0].Records)...)
		}
	}
	if len(values) != 2 {
		t.Fatalf("long poll returned %d records of lp, want the 2 produced", len(values))
	}
}

// max.incremental.fetch.session.cache.slots=0 makes the broker sessionless: a full fetch at
// epoch 0 gets its records and session id 0, so the client keeps sending full fetches.
func TestFetchSessionCacheSlotsProperty(t *testing.T) {
	parallel(t)
	b := startBroker(t, map[string]string{"max.incremental.fetch.session.cache.slots": "0"})
	c := dial(t, b.Addr)
	createTopic(t, c, "ns", 2, nil)
	produce(t, c, "ns", 1, buildBatch(t, 3, nil))
	full := fetchSession(t, c, 12, sessionFetch("ns", 0, 0, map[int32]int64{0: 0, 1: 0}))
	wantPartitions(t, "full fetch", full, 0, 1)
	if full.sessionID != 0 {
		t.Fatalf("session id %d with no slots, want 0", full.sessionID)
	}
	if got := recordValues(t, full.parts[1].Records); len(got) != 3 {
		t.Fatalf("partition 1: %d records, want 3", len(got))
	}
}

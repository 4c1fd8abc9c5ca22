package conformance

import (
	"bytes"
	"fmt"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// Fetch and ListOffsets semantics: SPEC.md §8.2, §8.3.

func init() {
	register(&Case{ID: "fetch/high-watermark", Spec: "§8.2",
		Desc: "a fetch reports the high watermark, last stable offset and log start offset with the records",
		Run: func(t *T) {
			topic := t.Topic(1)
			c := t.Conn()
			t.produceOK(c, topic, 0, plain, values("h", 5)...)
			r := t.fetch(c, topic, 0, 0)
			t.wantCode("Fetch", r.ErrorCode, nil)
			if r.HighWatermark != 5 || r.LastStableOffset != 5 || r.LogStartOffset != 0 {
				t.Errorf("HW %d LSO %d log start %d, want 5 5 0", r.HighWatermark, r.LastStableOffset, r.LogStartOffset)
			}
			if n := len(t.records(r.Records)); n != 5 {
				t.Errorf("%d records, want 5", n)
			}
			if r.PreferredReadReplica != -1 {
				t.Errorf("PreferredReadReplica %d, want -1", r.PreferredReadReplica)
			}
		}})
	register(&Case{ID: "fetch/offset-out-of-range", Spec: "§8.2",
		Desc: "a fetch offset above the log end gets OFFSET_OUT_OF_RANGE",
		Run: func(t *T) {
			topic := t.Topic(1)
			c := t.Conn()
			t.produceOK(c, topic, 0, plain, values("o", 2)...)
			r := t.fetch(c, topic, 0, 100)
			t.wantCode("Fetch at 100 of 2", r.ErrorCode, wire.ErrOffsetOutOfRange)
		}})
	register(&Case{ID: "fetch/mid-batch", Spec: "§8.2",
		Desc: "a fetch from the middle of a batch returns the whole batch containing that offset",
		Run: func(t *T) {
			topic := t.Topic(1)
			c := t.Conn()
			t.produceOK(c, topic, 0, plain, values("m", 5)...)
			got := t.records(t.fetch(c, topic, 0, 3).Records)
			if len(got) == 0 || got[0].batch.BaseOffset != 0 {
				t.Fatalf("fetch at 3 returned %d records, want the batch starting at 0", len(got))
			}
			if got[len(got)-1].offset != 4 || !bytes.Equal(got[3].value, []byte("m3")) {
				t.Errorf("records end at %d with record 3 = %q, want 4 and m3", got[len(got)-1].offset, got[3].value)
			}
		}})
	register(&Case{ID: "fetch/at-high-watermark-empty", Spec: "§8.2",
		Desc: "a fetch at the high watermark with MaxWaitMs 0 is valid and returns no records",
		Run: func(t *T) {
			topic := t.Topic(1)
			c := t.Conn()
			t.produceOK(c, topic, 0, plain, values("e", 3)...)
			r := t.fetch(c, topic, 0, 3)
			t.wantCode("Fetch at HW", r.ErrorCode, nil)
			if len(r.Records) != 0 || r.HighWatermark != 3 {
				t.Errorf("%d bytes of records and HW %d, want none and 3", len(r.Records), r.HighWatermark)
			}
		}})
	register(&Case{ID: "fetch/max-wait-expires", Spec: "§8.2",
		Desc: "a long poll with no new data answers empty, without error, once MaxWaitMs has passed",
		Run: func(t *T) {
			topic := t.Topic(1)
			c := t.Conn()
			r := t.fetchWith(c, fetchReq(topic, 0, 0, 300, 1, 1<<20, 1<<20), maxV(wire.KeyFetch))
			t.wantCode("Fetch", r.ErrorCode, nil)
			if len(r.Records) != 0 {
				t.Errorf("%d bytes of records from an empty partition", len(r.Records))
			}
		}})
	register(&Case{ID: "fetch/min-bytes-not-reached", Spec: "§8.2",
		Desc: "a fetch whose MinBytes the partition cannot fill answers with what there is once MaxWaitMs has passed",
		Run: func(t *T) {
			topic := t.Topic(1)
			c := t.Conn()
			t.produceOK(c, topic, 0, plain, values("small", 3)...)
			r := t.fetchWith(c, fetchReq(topic, 0, 0, 300, 1<<20, 4<<20, 4<<20), maxV(wire.KeyFetch))
			t.wantCode("Fetch", r.ErrorCode, nil)
			t.sameRecords(t.records(r.Records), values("small", 3))
		}})
	register(&Case{ID: "fetch/long-poll-wakeup", Spec: "§8.2",
		Desc: "a long poll waiting at the high watermark is answered with a record produced while it waits",
		Run: func(t *T) {
			topic := t.Topic(1)
			c := t.Conn()
			corr, err := c.Send(fetchReq(topic, 0, 0, 30000, 1, 1<<20, 1<<20), maxV(wire.KeyFetch))
			if err != nil {
				t.Fatalf("%v", err)
			}
			t.produceOK(t.Conn(), topic, 0, plain, values("wake", 1)...)
			var resp wire.FetchResponse
			if err := c.Recv(&resp, maxV(wire.KeyFetch), corr, 40*time.Second); err != nil {
				t.Fatalf("%v", err)
			}
			p := resp.Responses[0].Partitions[0]
			if got := t.records(p.Records); len(got) != 1 || string(got[0].value) != "wake0" {
				t.Errorf("long poll returned %d records, want the one produced (its MaxWaitMs was 30 s)", len(got))
			}
		}})
	register(&Case{ID: "fetch/oversized-first-batch", Spec: "§8.2",
		Desc: "the first batch is returned whole even when it exceeds MaxBytes and PartitionMaxBytes",
		Run: func(t *T) {
			topic := t.Topic(1)
			c := t.Conn()
			big := values("big-record-"+string(bytes.Repeat([]byte("x"), 500)), 40) // ~20 KB
			t.produceOK(c, topic, 0, plain, big...)
			r := t.fetchWith(c, fetchReq(topic, 0, 0, 0, 1, 1000, 1000), maxV(wire.KeyFetch))
			t.wantCode("Fetch", r.ErrorCode, nil)
			if got := t.records(r.Records); len(got) != len(big) {
				t.Errorf("%d records, want the whole first batch of %d", len(got), len(big))
			}
		}})
	register(&Case{ID: "fetch/partition-max-bytes", Spec: "§8.2",
		Desc: "PartitionMaxBytes stops a partition's data after the first batch that reaches it",
		Run: func(t *T) {
			topic := t.Topic(1)
			c := t.Conn()
			for i := range 10 {
				t.produceOK(c, topic, 0, plain, values(fmt.Sprintf("b%d-%s", i, bytes.Repeat([]byte("y"), 1000)), 2)...)
			}
			r := t.fetchWith(c, fetchReq(topic, 0, 0, 0, 1, 1<<20, 5000), maxV(wire.KeyFetch))
			got := t.records(r.Records)
			if len(got) == 0 || len(got) >= 20 {
				t.Errorf("%d records with PartitionMaxBytes 5000 over 10 batches of ~2 KB, want some but not all", len(got))
			}
			if len(r.Records) > 5000+2100 {
				t.Errorf("%d bytes returned, want at most about 5000", len(r.Records))
			}
		}})
	register(&Case{ID: "fetch/max-bytes", Spec: "§8.2",
		Desc: "MaxBytes caps the response across partitions, which are filled in request order",
		Run: func(t *T) {
			topic := t.Topic(2)
			c := t.Conn()
			for p := range int32(2) {
				for range 5 {
					t.produceOK(c, topic, p, plain, values(string(bytes.Repeat([]byte("z"), 1000)), 2)...)
				}
			}
			req := fetchReq(topic, 0, 0, 0, 1, 3000, 1<<20)
			second := req.Topics[0].Partitions[0]
			second.Partition = 1
			req.Topics[0].Partitions = append(req.Topics[0].Partitions, second)
			var resp wire.FetchResponse
			t.Do(c, req, &resp, maxV(wire.KeyFetch))
			total, first := 0, 0
			for _, tp := range resp.Responses {
				for _, p := range tp.Partitions {
					n := len(t.records(p.Records))
					total += n
					if p.PartitionIndex == 0 {
						first = n
					}
				}
			}
			if first == 0 || total >= 20 {
				t.Errorf("%d records in all, %d from partition 0, with MaxBytes 3000 over 20 KB: want partition 0 first and not everything", total, first)
			}
		}})
	register(&Case{ID: "fetch/unknown-topic", Spec: "§8.2",
		Desc: "fetching a topic that does not exist gets UNKNOWN_TOPIC_OR_PARTITION",
		Run: func(t *T) {
			r := t.fetch(t.Conn(), t.Name("missing"), 0, 0)
			t.wantCode("Fetch", r.ErrorCode, wire.ErrUnknownTopicOrPartition)
		}})
	register(&Case{ID: "fetch/unknown-partition", Spec: "§8.2",
		Desc: "fetching a partition beyond the topic's count gets UNKNOWN_TOPIC_OR_PARTITION",
		Run: func(t *T) {
			topic := t.Topic(1)
			r := t.fetch(t.Conn(), topic, 3, 0)
			t.wantCode("Fetch", r.ErrorCode, wire.ErrUnknownTopicOrPartition)
		}})
	register(&Case{ID: "fetch/read-committed", Spec: "§8.2",
		Desc: "IsolationLevel 1 (read_committed) without transactions reads up to the high watermark",
		Run: func(t *T) {
			topic := t.Topic(1)
			c := t.Conn()
			t.produceOK(c, topic, 0, plain, values("rc", 4)...)
			req := fetchReq(topic, 0, 0, 0, 1, 1<<20, 1<<20)
			req.IsolationLevel = 1
			r := t.fetchWith(c, req, maxV(wire.KeyFetch))
			if n := len(t.records(r.Records)); n != 4 || r.LastStableOffset != 4 {
				t.Errorf("%d records, LSO %d; want 4 and 4", n, r.LastStableOffset)
			}
		}})
	for _, v := range []int16{4, 10} {
		register(&Case{ID: fmt.Sprintf("fetch/v%d", v), Spec: "§8.2",
			Desc: fmt.Sprintf("Fetch v%d (kafka-python, librdkafka) returns the records and high watermark", v),
			Run: func(t *T) {
				topic := t.Topic(1)
				c := t.Conn()
				t.produceOK(c, topic, 0, plain, values("old", 3)...)
				r := t.fetchWith(c, fetchReq(topic, 0, 0, 0, 1, 1<<20, 1<<20), v)
				t.sameRecords(t.records(r.Records), values("old", 3))
				if r.HighWatermark != 3 {
					t.Errorf("HW %d, want 3", r.HighWatermark)
				}
			}})
	}
	register(&Case{ID: "fetch/session-unknown-id", Spec: "§8.2",
		Desc: "an incremental fetch naming a session id the broker does not have gets FETCH_SESSION_ID_NOT_FOUND",
		Run: func(t *T) {
			topic := t.Topic(1)
			req := fetchReq(topic, 0, 0, 0, 1, 1<<20, 1<<20)
			req.SessionId, req.SessionEpoch = 987654321, 1
			var resp wire.FetchResponse
			t.Do(t.Conn(), req, &resp, maxV(wire.KeyFetch))
			t.wantCode("Fetch with an unknown session", resp.ErrorCode, wire.ErrFetchSessionIdNotFound)
		}})
	register(&Case{ID: "fetch/session-incremental", Spec: "§8.2",
		Desc: "a fetch session: epoch 0 creates it, an incremental fetch without partitions returns a partition with news, a wrong epoch gets INVALID_FETCH_SESSION_EPOCH",
		Run: func(t *T) {
			topic := t.Topic(1)
			c := t.Conn()
			v := maxV(wire.KeyFetch)
			req := fetchReq(topic, 0, 0, 0, 1, 1<<20, 1<<20)
			req.SessionEpoch = 0
			var resp wire.FetchResponse
			t.Do(c, req, &resp, v)
			if resp.ErrorCode != 0 || resp.SessionId == 0 {
				t.Fatalf("full fetch asking for a session: error %s, session id %d", codeName(resp.ErrorCode), resp.SessionId)
			}
			t.produceOK(t.Conn(), topic, 0, plain, values("inc", 2)...)
			inc := def[wire.FetchRequest]()
			inc.SessionId, inc.SessionEpoch, inc.MaxWaitMs, inc.MinBytes = resp.SessionId, 1, 0, 1
			inc.Topics = []wire.FetchRequestTopic{}
			var got []fetchedRecord
			for epoch := int32(1); len(got) < 2; epoch++ {
				inc.SessionEpoch = epoch
				var r wire.FetchResponse
				t.Do(c, inc, &r, v)
				if r.ErrorCode != 0 {
					t.Fatalf("incremental fetch epoch %d: %s", epoch, codeName(r.ErrorCode))
				}
				for _, tp := range r.Responses {
					for _, p := range tp.Partitions {
						got = append(got, t.records(p.Records)...)
					}
				}
				if t.Ctx.Err() != nil {
					t.Fatalf("incremental fetches returned %d of 2 records", len(got))
				}
				inc.MaxWaitMs = 500
			}
			t.sameRecords(got, values("inc", 2))
			inc.SessionEpoch = 1000
			var bad wire.FetchResponse
			t.Do(c, inc, &bad, v)
			t.wantCode("incremental fetch with a wrong epoch", bad.ErrorCode, wire.ErrInvalidFetchSessionEpoch)
		}})

	// ListOffsets
	register(&Case{ID: "listoffsets/empty", Spec: "§8.3",
		Desc: "on an empty partition earliest (-2) and latest (-1) are both 0, with timestamp -1",
		Run: func(t *T) {
			topic := t.Topic(1)
			c := t.Conn()
			for _, ts := range []int64{-2, -1} {
				r := t.listOffset(c, topic, 0, ts)
				t.wantCode(fmt.Sprintf("ListOffsets %d", ts), r.ErrorCode, nil)
				if r.Offset != 0 || r.Timestamp != -1 {
					t.Errorf("timestamp %d: offset %d ts %d, want 0 and -1", ts, r.Offset, r.Timestamp)
				}
			}
		}})
	register(&Case{ID: "listoffsets/latest-is-high-watermark", Spec: "§8.3",
		Desc: "latest (-1) is the high watermark and earliest (-2) the log start offset",
		Run: func(t *T) {
			topic := t.Topic(1)
			c := t.Conn()
			t.produceOK(c, topic, 0, plain, values("l", 4)...)
			t.produceOK(c, topic, 0, plain, values("m", 3)...)
			if r := t.listOffset(c, topic, 0, -1); r.Offset != 7 {
				t.Errorf("latest %d, want 7", r.Offset)
			}
			if r := t.listOffset(c, topic, 0, -2); r.Offset != 0 {
				t.Errorf("earliest %d, want 0", r.Offset)
			}
		}})
	register(&Case{ID: "listoffsets/v1", Spec: "§8.3",
		Desc: "ListOffsets v1 (no isolation level) answers latest with the high watermark",
		Run: func(t *T) {
			topic := t.Topic(1)
			c := t.Conn()
			t.produceOK(c, topic, 0, plain, values("l", 2)...)
			var resp wire.ListOffsetsResponse
			t.Do(c, listOffsetsReq(topic, -1, 0), &resp, 1)
			if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != 2 {
				t.Errorf("v1 latest: %s offset %d, want 2", codeName(p.ErrorCode), p.Offset)
			}
		}})
	type byTime struct {
		name       string
		query      int64 // relative to base
		wantOffset int64
		wantTS     int64 // relative to base; -1 absolute
	}
	for _, bt := range []byTime{
		{"before-all", -5000, 0, 0},
		{"between", 500, 1, 1000},
		{"exact", 2000, 2, 2000},
		{"second-batch", 2500, 3, 3000},
		{"after-all", 10000, -1, -1},
	} {
		register(&Case{ID: "listoffsets/by-time-" + bt.name, Spec: "§8.3",
			Desc: "a timestamp query returns the first offset whose record timestamp is at or after it (" + bt.name + ")",
			Run: func(t *T) {
				topic := t.Topic(1)
				c := t.Conn()
				base := time.Now().Add(-time.Hour).UnixMilli()
				t.produceOK(c, topic, 0, plain, rec{value: []byte("0"), ts: base}, rec{value: []byte("1"), ts: base + 1000}, rec{value: []byte("2"), ts: base + 2000})
				t.produceOK(c, topic, 0, plain, rec{value: []byte("3"), ts: base + 3000}, rec{value: []byte("4"), ts: base + 4000})
				r := t.listOffset(c, topic, 0, base+bt.query)
				t.wantCode("ListOffsets by time", r.ErrorCode, nil)
				wantTS := bt.wantTS
				if wantTS != -1 {
					wantTS += base
				}
				if r.Offset != bt.wantOffset || r.Timestamp != wantTS {
					t.Errorf("query base%+d: offset %d ts %d, want %d and %d", bt.query, r.Offset, r.Timestamp, bt.wantOffset, wantTS)
				}
			}})
	}
	for _, e := range []struct {
		id, desc  string
		partition int32
		ts        int64
		want      error
	}{
		{"unknown-partition", "ListOffsets for a partition that does not exist gets UNKNOWN_TOPIC_OR_PARTITION", 9, -1, wire.ErrUnknownTopicOrPartition},
		{"max-timestamp-needs-v7", "timestamp -3 (max timestamp) at v6 gets UNSUPPORTED_VERSION for the partition", 0, -3, wire.ErrUnsupportedVersion},
	} {
		register(&Case{ID: "listoffsets/" + e.id, Spec: "§8.3", Desc: e.desc,
			Run: func(t *T) {
				r := t.listOffset(t.Conn(), t.Topic(1), e.partition, e.ts)
				t.wantCode(fmt.Sprintf("ListOffsets partition %d timestamp %d", e.partition, e.ts), r.ErrorCode, e.want)
			}})
	}
	register(&Case{ID: "listoffsets/duplicate-partition", Spec: "§8.3",
		Desc: "a partition listed twice gets INVALID_REQUEST",
		Run: func(t *T) {
			topic := t.Topic(1)
			var resp wire.ListOffsetsResponse
			t.Do(t.Conn(), listOffsetsReq(topic, -1, 0, 0), &resp, maxV(wire.KeyListOffsets))
			for _, tp := range resp.Topics {
				for _, p := range tp.Partitions {
					t.wantCode("duplicate partition", p.ErrorCode, wire.ErrInvalidRequest)
				}
			}
		}})
}

func init() {
	// leaderEpoch is the partition's current leader epoch, from Metadata.
	leaderEpoch := func(t *T, c *Conn, topic string) int32 {
		resp := t.metadata(c, false, topic)
		tp := findTopic(resp, topic)
		if tp == nil || len(tp.Partitions) == 0 {
			t.Fatalf("no metadata for %s", topic)
		}
		return tp.Partitions[0].LeaderEpoch
	}
	register(&Case{ID: "fetch/unknown-leader-epoch", Spec: "§8.2",
		Desc: "Fetch v9+ with a CurrentLeaderEpoch newer than the leader's gets UNKNOWN_LEADER_EPOCH; the current one reads",
		Run: func(t *T) {
			topic := t.Topic(1)
			c := t.Conn()
			t.produceOK(c, topic, 0, plain, values("e", 1)...)
			epoch := leaderEpoch(t, c, topic)
			req := fetchReq(topic, 0, 0, 0, 1, 1<<20, 1<<20)
			req.Topics[0].Partitions[0].CurrentLeaderEpoch = epoch + 5
			t.wantCode("Fetch with a future epoch", t.fetchWith(c, req, maxV(wire.KeyFetch)).ErrorCode, wire.ErrUnknownLeaderEpoch)
			req.Topics[0].Partitions[0].CurrentLeaderEpoch = epoch
			r := t.fetchWith(c, req, maxV(wire.KeyFetch))
			t.wantCode("Fetch with the current epoch", r.ErrorCode, nil)
			if len(t.records(r.Records)) != 1 {
				t.Errorf("the fetch with the current epoch read no record")
			}
		}})
	register(&Case{ID: "listoffsets/unknown-leader-epoch", Spec: "§8.3",
		Desc: "ListOffsets v4+ with a CurrentLeaderEpoch newer than the leader's gets UNKNOWN_LEADER_EPOCH",
		Run: func(t *T) {
			topic := t.Topic(1)
			c := t.Conn()
			req := listOffsetsReq(topic, -1, 0)
			req.Topics[0].Partitions[0].CurrentLeaderEpoch = leaderEpoch(t, c, topic) + 5
			var resp wire.ListOffsetsResponse
			t.Do(c, req, &resp, maxV(wire.KeyListOffsets))
			t.wantCode("ListOffsets with a future epoch", resp.Topics[0].Partitions[0].ErrorCode, wire.ErrUnknownLeaderEpoch)
		}})
}

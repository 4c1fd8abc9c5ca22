package conformance

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
	"github.com/spoolmq/spool/protocol-spec/wire/batch"
	"github.com/spoolmq/spool/protocol-spec/wire/compress"
)

// Produce semantics and batch validation: SPEC.md §5.6, §6, §8.1.

func init() {
	register(&Case{ID: "produce/offsets-in-order", Spec: "§8.1",
		Desc: "successive batches get base offsets 0, n, n+m: offsets assigned in order with no gaps",
		Run: func(t *T) {
			topic := t.Topic(1)
			c := t.Conn()
			next := int64(0)
			for _, n := range []int{3, 1, 5} {
				got := t.produceOK(c, topic, 0, plain, values("v", n)...)
				if got != next {
					t.Errorf("batch of %d: base offset %d, want %d", n, got, next)
				}
				next += int64(n)
			}
		}})
	for _, acks := range []int16{1, -1} {
		register(&Case{ID: fmt.Sprintf("produce/acks%s", acksName(acks)), Spec: "§8.1",
			Desc: fmt.Sprintf("acks=%s is answered with the base offset, and the records are readable", acksName(acks)),
			Run: func(t *T) {
				topic := t.Topic(1)
				c := t.Conn()
				want := values("a", 4)
				r := t.produce(c, topic, 0, acks, t.makeBatch(plain, want...), maxV(wire.KeyProduce))
				t.wantCode("Produce", r.ErrorCode, nil)
				if r.BaseOffset != 0 {
					t.Errorf("base offset %d, want 0", r.BaseOffset)
				}
				t.sameRecords(t.fetchAll(c, topic, 0, 0, 4), want)
			}})
	}
	register(&Case{ID: "produce/acks0-no-response", Spec: "§8.1",
		Desc: "acks=0 gets no response at all: the next response on the connection is the next request's",
		Run: func(t *T) {
			topic := t.Topic(1)
			c := t.Conn()
			if err := c.WriteRaw(Frame(produceReq(topic, 0, 0, t.makeBatch(plain, values("z", 2)...)), maxV(wire.KeyProduce), 41)); err != nil {
				t.Fatalf("%v", err)
			}
			if err := c.WriteRaw(Frame(&wire.ApiVersionsRequest{}, 0, 42)); err != nil {
				t.Fatalf("%v", err)
			}
			var resp wire.ApiVersionsResponse
			if err := c.Recv(&resp, 0, 42, 20*time.Second); err != nil {
				t.Fatalf("the response after an acks=0 produce: %v", err)
			}
			t.sameRecords(t.fetchAll(t.Conn(), topic, 0, 0, 2), values("z", 2))
		}})
	// One batch to one partition, refused with a partition error.
	for _, e := range []struct {
		id, desc        string
		topicPartitions int32 // 0: the topic does not exist
		partition       int32
		acks            int16
		want            error
	}{
		{"invalid-acks", "acks=2 gets INVALID_REQUIRED_ACKS", 1, 0, 2, wire.ErrInvalidRequiredAcks},
		{"unknown-topic", "producing to a topic that does not exist gets UNKNOWN_TOPIC_OR_PARTITION and base offset -1 (Produce never creates topics)", 0, 0, 1, wire.ErrUnknownTopicOrPartition},
		{"unknown-partition", "producing to a partition beyond the topic's count gets UNKNOWN_TOPIC_OR_PARTITION", 2, 7, 1, wire.ErrUnknownTopicOrPartition},
	} {
		register(&Case{ID: "produce/" + e.id, Spec: "§8.1", Desc: e.desc,
			Run: func(t *T) {
				topic := t.Name("missing")
				if e.topicPartitions > 0 {
					topic = t.Topic(e.topicPartitions)
				}
				r := t.produce(t.Conn(), topic, e.partition, e.acks, t.makeBatch(plain, values("x", 1)...), maxV(wire.KeyProduce))
				t.wantCode(fmt.Sprintf("Produce acks=%d to partition %d", e.acks, e.partition), r.ErrorCode, e.want)
				if r.BaseOffset != -1 {
					t.Errorf("base offset %d on error, want -1", r.BaseOffset)
				}
			}})
	}
	register(&Case{ID: "produce/partitions-independent", Spec: "§8.1",
		Desc: "one request with a good and a bad partition: each gets its own answer",
		Run: func(t *T) {
			topic := t.Topic(1)
			c := t.Conn()
			req := produceReq(topic, 0, 1, t.makeBatch(plain, values("g", 1)...))
			req.TopicData[0].PartitionData = append(req.TopicData[0].PartitionData,
				wire.ProduceRequestPartitionProduceData{Index: 5, Records: t.makeBatch(plain, values("b", 1)...)})
			var resp wire.ProduceResponse
			t.Do(c, req, &resp, maxV(wire.KeyProduce))
			got := map[int32]int16{}
			for _, tr := range resp.Responses {
				for _, p := range tr.PartitionResponses {
					got[p.Index] = p.ErrorCode
				}
			}
			t.wantCode("partition 0", got[0], nil)
			t.wantCode("partition 5", got[5], wire.ErrUnknownTopicOrPartition)
			if len(got) != 2 {
				t.Errorf("answers for %d partitions, want 2", len(got))
			}
		}})
	register(&Case{ID: "produce/corrupt-crc", Spec: "§5.6",
		Desc: "a batch whose CRC does not match gets CORRUPT_MESSAGE and nothing is appended",
		Run: func(t *T) {
			topic := t.Topic(1)
			c := t.Conn()
			b := t.makeBatch(plain, values("c", 3)...)
			b[len(b)-1] ^= 0xff
			r := t.produce(c, topic, 0, 1, b, maxV(wire.KeyProduce))
			t.wantCode("Produce with a bad CRC", r.ErrorCode, wire.ErrCorruptMessage)
			t.wantLogEnd(c, topic, 0, 0, "a refused batch")
		}})
	register(&Case{ID: "produce/message-too-large", Spec: "§5.6",
		Desc: "a batch above the topic's max.message.bytes gets MESSAGE_TOO_LARGE",
		Run: func(t *T) {
			topic := t.Topic(1, "max.message.bytes", "1024")
			c := t.Conn()
			big := rec{value: bytes.Repeat([]byte("x"), 4000)}
			r := t.produce(c, topic, 0, 1, t.makeBatch(plain, big), maxV(wire.KeyProduce))
			t.wantCode("Produce 4 KB into max.message.bytes=1024", r.ErrorCode, wire.ErrMessageTooLarge)
			small := t.produce(c, topic, 0, 1, t.makeBatch(plain, values("s", 1)...), maxV(wire.KeyProduce))
			t.wantCode("Produce a small batch afterwards", small.ErrorCode, nil)
		}})
	register(&Case{ID: "produce/two-batches-refused", Spec: "§5.6",
		Desc: "a partition's Records holding two batches gets INVALID_RECORD",
		Run: func(t *T) {
			topic := t.Topic(1)
			two := append(t.makeBatch(plain, values("a", 1)...), t.makeBatch(plain, values("b", 1)...)...)
			r := t.produce(t.Conn(), topic, 0, 1, two, maxV(wire.KeyProduce))
			t.wantCode("Produce two batches", r.ErrorCode, wire.ErrInvalidRecord)
		}})
	register(&Case{ID: "produce/count-mismatch-refused", Spec: "§5.6",
		Desc: "a batch whose lastOffsetDelta+1 differs from its record count (CRC fixed up) gets INVALID_RECORD or CORRUPT_MESSAGE",
		Run: func(t *T) {
			topic := t.Topic(1)
			b := t.makeBatch(plain, values("m", 3)...)
			binary.BigEndian.PutUint32(b[23:], 5) // lastOffsetDelta
			binary.BigEndian.PutUint32(b[17:], batch.Checksum(b))
			r := t.produce(t.Conn(), topic, 0, 1, b, maxV(wire.KeyProduce))
			if r.ErrorCode != wire.CodeOf(wire.ErrInvalidRecord) && r.ErrorCode != wire.CodeOf(wire.ErrCorruptMessage) {
				t.Errorf("error %s, want INVALID_RECORD (87) or CORRUPT_MESSAGE (2)", codeName(r.ErrorCode))
			}
		}})
	register(&Case{ID: "produce/zstd-needs-v7", Spec: "§5.6",
		Desc: "a zstd batch in Produce v6 gets UNSUPPORTED_COMPRESSION_TYPE",
		Run: func(t *T) {
			topic := t.Topic(1)
			b := t.makeBatch(batchOpts{codec: compress.Zstd, producerID: -1, epoch: -1, sequence: -1}, values("zstd-compressible-", 20)...)
			r := t.produce(t.Conn(), topic, 0, 1, b, 6)
			t.wantCode("zstd in Produce v6", r.ErrorCode, wire.ErrUnsupportedCompressionType)
		}})
	for _, codec := range []compress.Codec{compress.None, compress.Gzip, compress.Snappy, compress.LZ4, compress.Zstd} {
		register(&Case{ID: "produce/codec-" + codec.String(), Spec: "§6",
			Desc: fmt.Sprintf("a %s batch is stored and fetched back with the same records and codec (the broker never recompresses)", codec),
			Run: func(t *T) {
				topic := t.Topic(1)
				c := t.Conn()
				want := make([]rec, 30)
				for i := range want {
					want[i] = rec{key: fmt.Appendf(nil, "k%d", i%3), value: bytes.Repeat(fmt.Appendf(nil, "value %d ", i), 10),
						headers: []batch.RecordHeader{{Key: []byte("h"), Value: []byte(codec.String())}}}
				}
				t.produceOK(c, topic, 0, batchOpts{codec: codec, producerID: -1, epoch: -1, sequence: -1}, want...)
				got := t.fetchAll(c, topic, 0, 0, len(want))
				t.sameRecords(got, want)
				if gc := got[0].batch.Attributes.Codec(); gc != codec {
					t.Errorf("fetched batch codec %s, want %s", gc, codec)
				}
			}})
	}
	register(&Case{ID: "produce/create-time-kept", Spec: "§8.1",
		Desc: "under CreateTime the producer's timestamps are kept and LogAppendTimeMs is -1",
		Run: func(t *T) {
			topic := t.Topic(1)
			c := t.Conn()
			base := time.Now().Add(-time.Hour).UnixMilli()
			want := []rec{{value: []byte("a"), ts: base}, {value: []byte("b"), ts: base + 7}, {value: []byte("c"), ts: base + 3}}
			r := t.produce(c, topic, 0, 1, t.makeBatch(plain, want...), maxV(wire.KeyProduce))
			t.wantCode("Produce", r.ErrorCode, nil)
			if r.LogAppendTimeMs != -1 {
				t.Errorf("LogAppendTimeMs %d under CreateTime, want -1", r.LogAppendTimeMs)
			}
			got := t.fetchAll(c, topic, 0, 0, 3)
			for i := range want {
				if got[i].ts != want[i].ts {
					t.Errorf("record %d: timestamp %d, want %d", i, got[i].ts, want[i].ts)
				}
			}
			if got[0].batch.MaxTimestamp != base+7 {
				t.Errorf("batch maxTimestamp %d, want %d", got[0].batch.MaxTimestamp, base+7)
			}
		}})
	register(&Case{ID: "produce/log-append-time", Spec: "§8.1",
		Desc: "under message.timestamp.type=LogAppendTime the broker stamps the batch and returns the time it used",
		Run: func(t *T) {
			topic := t.Topic(1, "message.timestamp.type", "LogAppendTime")
			c := t.Conn()
			old := time.Now().Add(-time.Hour).UnixMilli()
			r := t.produce(c, topic, 0, 1, t.makeBatch(plain, rec{value: []byte("a"), ts: old}, rec{value: []byte("b"), ts: old}), maxV(wire.KeyProduce))
			t.wantCode("Produce", r.ErrorCode, nil)
			if r.LogAppendTimeMs <= old {
				t.Fatalf("LogAppendTimeMs %d, want the broker's time (after %d)", r.LogAppendTimeMs, old)
			}
			got := t.fetchAll(c, topic, 0, 0, 2)
			if !got[0].batch.Attributes.LogAppendTime() {
				t.Errorf("fetched batch does not have the LogAppendTime attribute")
			}
			for i, g := range got {
				if g.ts != r.LogAppendTimeMs {
					t.Errorf("record %d: timestamp %d, want the append time %d", i, g.ts, r.LogAppendTimeMs)
				}
			}
		}})
	register(&Case{ID: "produce/null-and-empty", Spec: "§5.3",
		Desc: "null and empty keys and values, and null header values, come back as they were sent",
		Run: func(t *T) {
			topic := t.Topic(1)
			c := t.Conn()
			want := []rec{
				{key: nil, value: nil},
				{key: []byte{}, value: []byte{}},
				{key: []byte("k"), value: nil},
				{key: nil, value: []byte("v"), headers: []batch.RecordHeader{{Key: []byte("n"), Value: nil}, {Key: []byte("e"), Value: []byte{}}}},
			}
			t.produceOK(c, topic, 0, plain, want...)
			t.sameRecords(t.fetchAll(c, topic, 0, 0, len(want)), want)
		}})
	register(&Case{ID: "produce/headers", Spec: "§5.3",
		Desc: "record headers, repeated keys and binary values included, come back in order",
		Run: func(t *T) {
			topic := t.Topic(1)
			c := t.Conn()
			hs := []batch.RecordHeader{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("a"), Value: []byte("2")}, {Key: []byte("bin"), Value: []byte{0, 1, 2, 255}}}
			want := []rec{{value: []byte("x"), headers: hs}, {value: []byte("y")}}
			t.produceOK(c, topic, 0, plain, want...)
			t.sameRecords(t.fetchAll(c, topic, 0, 0, 2), want)
		}})
	register(&Case{ID: "produce/log-start-offset", Spec: "§8.1",
		Desc: "Produce v5+ returns the partition's log start offset (0 on a new topic)",
		Run: func(t *T) {
			topic := t.Topic(1)
			r := t.produce(t.Conn(), topic, 0, 1, t.makeBatch(plain, values("l", 1)...), maxV(wire.KeyProduce))
			t.wantCode("Produce", r.ErrorCode, nil)
			if r.LogStartOffset != 0 {
				t.Errorf("LogStartOffset %d, want 0", r.LogStartOffset)
			}
		}})
	for _, v := range []int16{3, 7} {
		register(&Case{ID: fmt.Sprintf("produce/v%d", v), Spec: "§8.1",
			Desc: fmt.Sprintf("Produce v%d (non-flexible) appends and answers with the base offset", v),
			Run: func(t *T) {
				topic := t.Topic(1)
				c := t.Conn()
				r := t.produce(c, topic, 0, 1, t.makeBatch(plain, values("v", 2)...), v)
				t.wantCode("Produce", r.ErrorCode, nil)
				r = t.produce(c, topic, 0, 1, t.makeBatch(plain, values("w", 1)...), v)
				if r.BaseOffset != 2 {
					t.Errorf("second base offset %d, want 2", r.BaseOffset)
				}
			}})
	}
	register(&Case{ID: "produce/internal-topic-refused", Spec: "§8.1",
		Desc: "a client producing to __consumer_offsets gets INVALID_TOPIC_EXCEPTION",
		Run: func(t *T) {
			c := t.Conn()
			t.coordinator(c, t.Name("g")) // makes the broker create __consumer_offsets
			r := t.produce(c, "__consumer_offsets", 0, 1, t.makeBatch(plain, values("x", 1)...), maxV(wire.KeyProduce))
			t.wantCode("Produce to __consumer_offsets", r.ErrorCode, wire.ErrInvalidTopicException)
		}})
}

func acksName(a int16) string {
	if a == -1 {
		return "all"
	}
	return fmt.Sprint(a)
}

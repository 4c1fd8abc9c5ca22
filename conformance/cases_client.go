package conformance

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire/batch"
	"github.com/spoolmq/spool/protocol-spec/wire/compress"
)

// Client-level cases: an SDK driven through a driver (DRIVERS.md), checked through the driver
// and, where the bytes matter, through the wire.

// produceVia produces recs through a driver session and fails on any record's error.
func (t *T) produceVia(s *Session, recs []DriverRecord) []ProduceResult {
	r := t.Call(s, Request{Cmd: "produce", Records: recs})
	if len(r.Results) != len(recs) {
		t.Fatalf("produce: %d results for %d records", len(r.Results), len(recs))
	}
	for i, res := range r.Results {
		if res.Error != "" {
			t.Fatalf("produce: record %d: %s", i, res.Error)
		}
	}
	return r.Results
}

// consumeVia reads n records of topic from the start through a new driver session.
func (t *T) consumeVia(topic string, n int) []DriverRecord {
	s := t.Client(Request{})
	r := t.Call(s, Request{Cmd: "consume", Topic: topic, FromOffset: -2, Count: n, TimeoutMs: 20000})
	if len(r.Records) != n {
		t.Fatalf("consumed %d records, want %d", len(r.Records), n)
	}
	return r.Records
}

func driverRecords(topic string, n int, prefix string) []DriverRecord {
	out := make([]DriverRecord, n)
	for i := range out {
		out[i] = DriverRecord{Topic: topic, Partition: 0, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "%s-%d", prefix, i),
			Headers: []DriverHeader{{Key: "i", Value: fmt.Appendf(nil, "%d", i)}}}
	}
	return out
}

// sameDriverRecords compares keys, values (null-ness included) and headers in order.
func (t *T) sameDriverRecords(got, want []DriverRecord) {
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if !bytes.Equal(g.Key, w.Key) || (g.Key == nil) != (w.Key == nil) || !bytes.Equal(g.Value, w.Value) || (g.Value == nil) != (w.Value == nil) {
			t.Errorf("record %d: key %q (null %v) value %q (null %v), want %q (null %v) %q (null %v)",
				i, g.Key, g.Key == nil, g.Value, g.Value == nil, w.Key, w.Key == nil, w.Value, w.Value == nil)
		}
		if len(g.Headers) != len(w.Headers) {
			t.Errorf("record %d: %d headers, want %d", i, len(g.Headers), len(w.Headers))
			continue
		}
		for j := range w.Headers {
			if g.Headers[j].Key != w.Headers[j].Key || !bytes.Equal(g.Headers[j].Value, w.Headers[j].Value) || (g.Headers[j].Value == nil) != (w.Headers[j].Value == nil) {
				t.Errorf("record %d header %d: %q=%q, want %q=%q", i, j, g.Headers[j].Key, g.Headers[j].Value, w.Headers[j].Key, w.Headers[j].Value)
			}
		}
	}
}

// murmur2Vectors are keys and the partition Kafka's default partitioner gives them for 3, 6
// and 10 partitions (../shared/reference/murmur2-vectors.md, from Kafka's UtilsTest).
var murmur2Vectors = []struct {
	key  string
	part map[int32]int32
}{
	{"21", map[int32]int32{3: 0, 6: 0, 10: 0}},
	{"foobar", map[int32]int32{3: 0, 6: 0, 10: 6}},
	{"a-little-bit-long-string", map[int32]int32{3: 2, 6: 2, 10: 2}},
	{"a-little-bit-longer-string", map[int32]int32{3: 2, 6: 5, 10: 9}},
	{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", map[int32]int32{3: 2, 6: 5, 10: 7}},
	{"abc", map[int32]int32{3: 0, 6: 3, 10: 7}},
	{"key1", map[int32]int32{3: 2, 6: 2, 10: 0}},
	{"key2", map[int32]int32{3: 2, 6: 5, 10: 1}},
	{"key3", map[int32]int32{3: 1, 6: 1, 10: 5}},
	{"hello", map[int32]int32{3: 0, 6: 3, 10: 9}},
	{"", map[int32]int32{3: 0, 6: 3, 10: 1}},
	{"a", map[int32]int32{3: 1, 6: 4, 10: 4}},
}

func init() {
	register(&Case{ID: "client/produce-consume", Level: Client, Spec: "§8.1, §8.2",
		Desc: "records produced through the SDK are consumed back in order with their keys, values, headers and offsets 0..n-1",
		Run: func(t *T) {
			topic := t.Topic(1)
			want := driverRecords(topic, 50, "pc")
			res := t.produceVia(t.Client(Request{Partitioner: "manual"}), want)
			for i, r := range res {
				if r.Partition != 0 || r.Offset != int64(i) {
					t.Errorf("record %d acknowledged at %d/%d, want 0/%d", i, r.Partition, r.Offset, i)
				}
			}
			got := t.consumeVia(topic, len(want))
			t.sameDriverRecords(got, want)
			for i, r := range got {
				if r.Offset != int64(i) {
					t.Errorf("record %d consumed at offset %d", i, r.Offset)
				}
			}
		}})
	for _, codec := range []compress.Codec{compress.None, compress.Gzip, compress.Snappy, compress.LZ4, compress.Zstd} {
		register(&Case{ID: "client/codec-" + codec.String(), Level: Client, Spec: "§6",
			Desc: fmt.Sprintf("the SDK compresses with %s (the stored batch says so) and reads it back", codec),
			Run: func(t *T) {
				topic := t.Topic(1)
				// Each record compresses well on its own: SDKs send a batch uncompressed
				// when the codec does not make it smaller (a one-record gzip batch of a
				// 100-byte value grows), and a batch may hold one record.
				want := driverRecords(topic, 40, strings.Repeat("compressible ", 64))
				t.produceVia(t.Client(Request{Partitioner: "manual", Compression: codec.String()}), want)
				t.sameDriverRecords(t.consumeVia(topic, len(want)), want)
				for _, r := range t.fetchAll(t.Leader(topic, 0), topic, 0, 0, len(want)) {
					if c := r.batch.Attributes.Codec(); c != codec {
						t.Fatalf("offset %d is in a %s batch, want %s", r.offset, c, codec)
					}
				}
			}})
	}
	for _, acks := range []string{"0", "1", "all"} {
		register(&Case{ID: "client/acks-" + acks, Level: Client, Spec: "§8.1",
			Desc: fmt.Sprintf("with acks=%s every record is written once, in order", acks),
			Run: func(t *T) {
				topic := t.Topic(1)
				want := driverRecords(topic, 30, "acks"+acks)
				res := t.produceVia(t.Client(Request{Partitioner: "manual", Acks: acks, Idempotent: ptr(false)}), want)
				if acks != "0" {
					for i, r := range res {
						if r.Offset != int64(i) {
							t.Errorf("record %d acknowledged at offset %d", i, r.Offset)
						}
					}
				}
				got := t.fetchAll(t.Leader(topic, 0), topic, 0, 0, len(want))
				for i, r := range got {
					if string(r.value) != string(want[i].Value) {
						t.Errorf("offset %d holds %q, want %q", r.offset, r.value, want[i].Value)
					}
				}
				t.wantLogEnd(t.Leader(topic, 0), topic, 0, int64(len(want)), "producing each record once")
			}})
	}
	register(&Case{ID: "client/idempotent-batches", Level: Client, Spec: "§8.1, §8.13",
		Desc: "an idempotent SDK producer writes batches with a producer id and sequences that start at 0 and follow each other",
		Run: func(t *T) {
			topic := t.Topic(1)
			want := driverRecords(topic, 40, "idem")
			t.produceVia(t.Client(Request{Partitioner: "manual", Idempotent: ptr(true)}), want)
			got := t.fetchAll(t.Leader(topic, 0), topic, 0, 0, len(want))
			var last batch.Header
			for i, r := range got {
				h := r.batch
				if h.ProducerID < 0 {
					t.Fatalf("offset %d: no producer id", r.offset)
				}
				if i == 0 && h.BaseSequence != 0 {
					t.Errorf("first batch at sequence %d, want 0", h.BaseSequence)
				}
				if h.BaseOffset != last.BaseOffset && i > 0 {
					if h.BaseSequence != last.BaseSequence+last.LastOffsetDelta+1 || h.ProducerID != last.ProducerID {
						t.Errorf("batch at %d: producer %d sequence %d after producer %d sequences %d-%d",
							h.BaseOffset, h.ProducerID, h.BaseSequence, last.ProducerID, last.BaseSequence, last.BaseSequence+last.LastOffsetDelta)
					}
				}
				last = h
			}
		}})
	register(&Case{ID: "client/null-and-empty", Level: Client, Spec: "§5.3",
		Desc: "null and empty keys, values and header values survive the SDK both ways",
		Run: func(t *T) {
			topic := t.Topic(1)
			want := []DriverRecord{
				{Topic: topic, Key: nil, Value: nil},
				{Topic: topic, Key: []byte{}, Value: []byte{}},
				{Topic: topic, Key: []byte("k"), Value: nil},
				{Topic: topic, Key: nil, Value: []byte("v"), Headers: []DriverHeader{{Key: "null", Value: nil}, {Key: "empty", Value: []byte{}}}},
			}
			t.produceVia(t.Client(Request{Partitioner: "manual"}), want)
			t.sameDriverRecords(t.consumeVia(topic, len(want)), want)
		}})
	register(&Case{ID: "client/timestamps", Level: Client, Spec: "§5.3, §8.1",
		Desc: "record timestamps set by the producer are kept (CreateTime) and read back",
		Run: func(t *T) {
			topic := t.Topic(1)
			base := time.Now().Add(-2 * time.Hour).Truncate(time.Millisecond).UnixMilli()
			want := driverRecords(topic, 5, "ts")
			for i := range want {
				want[i].TimestampMs = base + int64(i)*1000
			}
			t.produceVia(t.Client(Request{Partitioner: "manual"}), want)
			for i, r := range t.consumeVia(topic, len(want)) {
				if r.TimestampMs != want[i].TimestampMs {
					t.Errorf("record %d: timestamp %d, want %d", i, r.TimestampMs, want[i].TimestampMs)
				}
			}
		}})
	for _, n := range []int32{3, 6, 10} {
		register(&Case{ID: fmt.Sprintf("client/murmur2-%d-partitions", n), Level: Client, Spec: "§8.1 (Kafka's default partitioner)",
			Desc: fmt.Sprintf("the default partitioner places keyed records as Kafka's murmur2 does over %d partitions", n),
			Run: func(t *T) {
				topic := t.Topic(n)
				var recs []DriverRecord
				for _, v := range murmur2Vectors {
					recs = append(recs, DriverRecord{Topic: topic, Partition: -1, Key: []byte(v.key), Value: []byte("v")})
				}
				for i, r := range t.produceVia(t.Client(Request{}), recs) {
					if want := murmur2Vectors[i].part[n]; r.Partition != want {
						t.Errorf("key %q went to partition %d, want %d", murmur2Vectors[i].key, r.Partition, want)
					}
				}
			}})
	}
	register(&Case{ID: "client/group-commit-resume", Level: Client, Spec: "§8.5, §8.6, §8.8",
		Desc: "a group member commits what it consumed and leaves; the next member of the group resumes right after it",
		Run: func(t *T) {
			topic := t.Topic(1)
			group := t.Name("g")
			c := t.Leader(topic, 0)
			t.produceOK(c, topic, 0, plain, values("first", 10)...)
			a := t.Client(Request{Group: group, Topics: []string{topic}})
			got := t.Call(a, Request{Cmd: "poll", Count: 10, TimeoutMs: 30000}).Records
			if len(got) != 10 {
				t.Fatalf("first member polled %d records, want 10", len(got))
			}
			t.Call(a, Request{Cmd: "commit"})
			t.Call(a, Request{Cmd: "close"})
			t.produceOK(c, topic, 0, plain, values("second", 5)...)
			b := t.Client(Request{Group: group, Topics: []string{topic}})
			next := t.Call(b, Request{Cmd: "poll", Count: 5, TimeoutMs: 30000}).Records
			if len(next) != 5 || next[0].Offset != 10 || string(next[0].Value) != "second0" {
				t.Fatalf("second member polled %d records starting at %v, want 5 from offset 10", len(next), firstOffset(next))
			}
		}})
	register(&Case{ID: "client/group-broadcast", Level: Client, Spec: "§8.8",
		Desc: "two consumer groups on one topic each read every record",
		Run: func(t *T) {
			topic := t.Topic(2)
			for p := range int32(2) {
				t.produceOK(t.Leader(topic, p), topic, p, plain, values(fmt.Sprintf("p%d-", p), 6)...)
			}
			for _, g := range []string{t.Name("g1"), t.Name("g2")} {
				s := t.Client(Request{Group: g, Topics: []string{topic}})
				if got := t.Call(s, Request{Cmd: "poll", Count: 12, TimeoutMs: 30000}).Records; len(got) != 12 {
					t.Errorf("group %s read %d records, want 12", g, len(got))
				}
			}
		}})
	register(&Case{ID: "client/group-unicast-and-leave", Level: Client, Spec: "§8.8, §8.8.1",
		Desc: "two members of a group split the partitions and each record goes to one of them; when one leaves, the other takes every partition",
		Run: func(t *T) {
			topic := t.Topic(4)
			group := t.Name("g")
			a := t.Client(Request{Group: group, Topics: []string{topic}})
			b := t.Client(Request{Group: group, Topics: []string{topic}})
			t.waitSplit(topic, 4, a, b)
			as := t.Call(a, Request{Cmd: "assignment"}).Assignment[topic]
			for p := range int32(4) {
				t.produceOK(t.Leader(topic, p), topic, p, plain, values(fmt.Sprintf("p%d-", p), 5)...)
			}
			seen := map[string]string{}
			for name, s := range map[string]*Session{"a": a, "b": b} {
				want := 5 * len(as)
				if name == "b" {
					want = 20 - want
				}
				got := t.Call(s, Request{Cmd: "poll", Count: want, TimeoutMs: 30000}).Records
				for _, r := range got {
					key := fmt.Sprintf("%d/%d", r.Partition, r.Offset)
					if prev, dup := seen[key]; dup {
						t.Errorf("record %s went to %s and %s", key, prev, name)
					}
					seen[key] = name
					if mine := slices.Contains(as, r.Partition); mine != (name == "a") {
						t.Errorf("member %s got a record of partition %d it does not own", name, r.Partition)
					}
				}
			}
			if len(seen) != 20 {
				t.Errorf("%d distinct records consumed, want 20", len(seen))
			}
			t.Call(b, Request{Cmd: "close"})
			t.waitSplit(topic, 4, a)
		}})
	register(&Case{ID: "client/group-rebalance-on-crash", Level: Client, Spec: "§8.8",
		Desc: "when a member's process dies, its session times out and the other member takes over its partitions",
		Run: func(t *T) {
			topic := t.Topic(2)
			group := t.Name("g")
			open := Request{Group: group, Topics: []string{topic}, SessionTimeoutMs: 6000}
			a, b := t.Client(open), t.Client(open)
			t.waitSplit(topic, 2, a, b)
			b.Kill()
			t.waitSplit(topic, 2, a)
		}})
	register(&Case{ID: "client/group-cooperative", Level: Client, Spec: "§8.8, §8.8.1",
		Desc: "with the cooperative-sticky assignor a member joining takes partitions from the first one, which gives up only those (no stop-the-world revocation)",
		Run: func(t *T) {
			topic := t.Topic(4)
			open := Request{Group: t.Name("g"), Topics: []string{topic}, Balancer: "cooperative-sticky"}
			a := t.Client(open)
			t.waitSplit(topic, 4, a)
			b := t.Client(open)
			t.waitSplit(topic, 4, a, b)
			moved := t.Call(b, Request{Cmd: "assignment"}).Assignment[topic]
			if revoked := t.Call(a, Request{Cmd: "assignment"}).Revoked[topic]; !slices.Equal(revoked, moved) {
				t.Errorf("the first member had %v revoked, want only the partitions that moved, %v", revoked, moved)
			}
		}})
}

// waitSplit polls the members (which drives their groups) until each owns some partitions of
// topic and together they own all n, each once. Records polled meanwhile are dropped.
func (t *T) waitSplit(topic string, n int32, members ...*Session) {
	t.waitFor(fmt.Sprintf("%d members to share the %d partitions", len(members), n), func() (bool, string) {
		var all []int32
		var state []string
		ok := true
		for _, m := range members {
			t.Call(m, Request{Cmd: "poll", Count: 1, TimeoutMs: 100})
			owned := t.Call(m, Request{Cmd: "assignment"}).Assignment[topic]
			ok = ok && len(owned) > 0
			all = append(all, owned...)
			state = append(state, fmt.Sprint(owned))
		}
		slices.Sort(all)
		return ok && slices.Equal(all, seq(n)), strings.Join(state, " ")
	})
}

func firstOffset(rs []DriverRecord) any {
	if len(rs) == 0 {
		return "nothing"
	}
	return rs[0].Offset
}

func init() {
	register(&Case{ID: "client/consume-from-offset", Level: Client, Spec: "§8.2",
		Desc: "a consumer assigned at an offset starts exactly there",
		Run: func(t *T) {
			topic := t.Topic(1)
			t.produceOK(t.Leader(topic, 0), topic, 0, plain, values("o", 10)...)
			s := t.Client(Request{})
			got := t.Call(s, Request{Cmd: "consume", Topic: topic, FromOffset: 6, Count: 4, TimeoutMs: 20000}).Records
			if len(got) != 4 || got[0].Offset != 6 || string(got[0].Value) != "o6" || got[3].Offset != 9 {
				t.Errorf("consumed %d records from %v, want offsets 6-9", len(got), firstOffset(got))
			}
		}})
	register(&Case{ID: "client/large-record", Level: Client, Spec: "§8.1, §8.2",
		Desc: "a 900 KB record (under max.message.bytes, near the default fetch sizes) goes through the SDK both ways",
		Run: func(t *T) {
			topic := t.Topic(1)
			big := make([]byte, 900<<10)
			for i := range big {
				big[i] = byte(i % 251)
			}
			want := []DriverRecord{{Topic: topic, Key: []byte("big"), Value: big}, {Topic: topic, Key: []byte("small"), Value: []byte("after")}}
			t.produceVia(t.Client(Request{Partitioner: "manual"}), want)
			t.sameDriverRecords(t.consumeVia(topic, len(want)), want)
		}})
	register(&Case{ID: "client/per-partition-order", Level: Client, Spec: "§8.1",
		Desc: "keyed records spread over 6 partitions keep their order within each partition and land by key",
		Run: func(t *T) {
			topic := t.Topic(6)
			var recs []DriverRecord
			for i := range 300 {
				recs = append(recs, DriverRecord{Topic: topic, Partition: -1, Key: fmt.Appendf(nil, "key-%d", i%17), Value: fmt.Appendf(nil, "%d", i)})
			}
			res := t.produceVia(t.Client(Request{}), recs)
			partOf := map[string]int32{}
			for i, r := range res {
				k := string(recs[i].Key)
				if p, ok := partOf[k]; ok && p != r.Partition {
					t.Errorf("key %s went to partitions %d and %d", k, p, r.Partition)
				}
				partOf[k] = r.Partition
			}
			last := map[int32]int{}
			for _, r := range t.consumeVia(topic, len(recs)) {
				var n int
				fmt.Sscan(string(r.Value), &n)
				if prev, ok := last[r.Partition]; ok && n <= prev {
					t.Errorf("partition %d: record %d after %d", r.Partition, n, prev)
				}
				last[r.Partition] = n
			}
		}})
}

package conformance

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
	"github.com/spoolmq/spool/protocol-spec/wire/batch"
	"github.com/spoolmq/spool/protocol-spec/wire/compress"
)

// maxV is the highest version of an API in the spec's window (SPEC.md §1).
func maxV(key int16) int16 { return wire.LookupAPI(key).MaxVersion }

// Conn opens a raw connection to the target, closed when the case ends.
func (t *T) Conn() *Conn {
	c, err := dialWire(t.sec, t.Bootstrap, 10*time.Second)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Do sends req at version v on c and decodes the response into resp, failing the case on a
// transport or decoding error.
func (t *T) Do(c *Conn, req, resp wire.Message, v int16) {
	if err := c.Do(req, resp, v); err != nil {
		t.Fatalf("%s v%d: %v", wire.LookupAPI(req.APIKey()).Name, v, err)
	}
}

// Name returns a fresh name for a topic or group of this case: the case id, made safe, and
// random bytes, so runs against a long-lived broker never collide.
func (t *T) Name(kind string) string {
	var r [4]byte
	rand.Read(r[:])
	safe := []byte(t.id)
	for i, ch := range safe {
		if !(ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '-') {
			safe[i] = '.'
		}
	}
	return fmt.Sprintf("conf.%s.%s.%s", kind, safe, hex.EncodeToString(r[:]))
}

// wantCode fails the case unless code is want.
func (t *T) wantCode(what string, code int16, want error) {
	if wire.ErrorForCode(code) != want && !(want != nil && errors.Is(wire.ErrorForCode(code), want)) {
		t.Errorf("%s: error %s, want %s", what, codeName(code), errName(want))
	}
}

func codeName(code int16) string {
	if code == 0 {
		return "NONE (0)"
	}
	var e *wire.Error
	errors.As(wire.ErrorForCode(code), &e)
	return fmt.Sprintf("%s (%d)", e.Name, code)
}

func errName(err error) string {
	if err == nil {
		return "NONE (0)"
	}
	return codeName(wire.CodeOf(err))
}

// Topic creates a topic with n partitions and the given configs (name, value pairs) and
// waits until every partition has a leader that answers. It is deleted when the case ends.
func (t *T) Topic(n int32, configs ...string) string {
	name := t.Name("t")
	req := &wire.CreateTopicsRequest{TimeoutMs: 30000}
	topic := wire.CreateTopicsRequestCreatableTopic{Name: name, NumPartitions: n, ReplicationFactor: 1}
	for i := 0; i+1 < len(configs); i += 2 {
		v := configs[i+1]
		topic.Configs = append(topic.Configs, wire.CreateTopicsRequestCreatableTopicConfig{Name: configs[i], Value: &v})
	}
	req.Topics = []wire.CreateTopicsRequestCreatableTopic{topic}
	var resp wire.CreateTopicsResponse
	// The controller: a ZooKeeper-mode Kafka cluster answers NOT_CONTROLLER elsewhere.
	t.Do(t.ControllerConn(), req, &resp, maxV(wire.KeyCreateTopics))
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("creating topic %s: %+v", name, resp.Topics)
	}
	t.Cleanup(func() { t.deleteTopics(name) })
	if c := t.Conn(); t.brokerCount() > 1 {
		t.waitLeaders(name, n)
	} else {
		t.waitTopic(c, name, n)
	}
	t.mu.Lock()
	if t.partitions == nil {
		t.partitions = map[string]int32{}
	}
	t.partitions[name] = n
	t.mu.Unlock()
	return name
}

// waitLeaders waits until every broker of a cluster lists name with n partitions, each with a
// leader that answers ListOffsets for it: where clients (the drivers' SDKs) find it ready.
func (t *T) waitLeaders(name string, n int32) {
	md := t.metadata(t.Conn(), false)
	conns := map[int32]*Conn{}
	for _, b := range md.Brokers {
		conns[b.NodeId] = t.brokerConn(md, b.NodeId)
	}
	t.waitFor("every broker to list "+name+" with a leader for each partition", func() (bool, string) {
		for id, bc := range conns {
			tp := findTopic(t.metadata(bc, false, name), name)
			if tp == nil || tp.ErrorCode != 0 || len(tp.Partitions) != int(n) {
				return false, fmt.Sprintf("broker %d: topic %+v", id, tp)
			}
			for _, p := range tp.Partitions {
				lc, ok := conns[p.LeaderId]
				if p.ErrorCode != 0 || !ok {
					return false, fmt.Sprintf("broker %d: partition %d: %s leader %d", id, p.PartitionIndex, codeName(p.ErrorCode), p.LeaderId)
				}
				var lo wire.ListOffsetsResponse
				t.Do(lc, listOffsetsReq(name, -1, p.PartitionIndex), &lo, maxV(wire.KeyListOffsets))
				if len(lo.Topics) != 1 || len(lo.Topics[0].Partitions) != 1 || lo.Topics[0].Partitions[0].ErrorCode != 0 {
					return false, fmt.Sprintf("leader %d of partition %d: ListOffsets %+v", p.LeaderId, p.PartitionIndex, lo.Topics)
				}
			}
		}
		return true, ""
	})
}

func (t *T) deleteTopics(names ...string) {
	c, err := dialController(t.sec, t.Bootstrap)
	if err != nil {
		return
	}
	defer c.Close()
	req := &wire.DeleteTopicsRequest{TopicNames: names, TimeoutMs: 5000}
	v := int16(5) // by name; v6 takes Topics with ids
	_ = c.Do(req, new(wire.DeleteTopicsResponse), v)
}

// dialController connects to the controller Metadata names, which is where a ZooKeeper-mode
// Kafka cluster takes CreateTopics and DeleteTopics (others answer NOT_CONTROLLER); a single
// broker, or one that forwards, is its own answer.
func dialController(sec *Security, bootstrap string) (*Conn, error) {
	c, err := dialWire(sec, bootstrap, 5*time.Second)
	if err != nil {
		return nil, err
	}
	req := def[wire.MetadataRequest]()
	req.Topics = []wire.MetadataRequestTopic{}
	var md wire.MetadataResponse
	if err := c.Do(req, &md, maxV(wire.KeyMetadata)); err != nil {
		c.Close()
		return nil, err
	}
	if len(md.Brokers) < 2 {
		return c, nil
	}
	for _, b := range md.Brokers {
		if b.NodeId == md.ControllerId {
			cc, err := dialWire(sec, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), 5*time.Second)
			if err != nil {
				c.Close()
				return nil, fmt.Errorf("controller %d: %w", b.NodeId, err)
			}
			c.Close()
			return cc, nil
		}
	}
	return c, nil
}

// ControllerConn opens a raw connection to the target's controller (dialController), closed
// when the case ends.
func (t *T) ControllerConn() *Conn {
	c, err := dialController(t.sec, t.Bootstrap)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitTopic waits until name has n partitions whose leaders answer ListOffsets.
func (t *T) waitTopic(c *Conn, name string, n int32) {
	t.waitFor("topic "+name+" ready", func() (bool, string) {
		lo := listOffsetsReq(name, -1, seq(n)...)
		var resp wire.ListOffsetsResponse
		t.Do(c, lo, &resp, maxV(wire.KeyListOffsets))
		parts := 0
		for _, tp := range resp.Topics {
			for _, p := range tp.Partitions {
				if p.ErrorCode != 0 {
					return false, fmt.Sprintf("partition %d: %s", p.PartitionIndex, codeName(p.ErrorCode))
				}
				parts++
			}
		}
		return parts == int(n), fmt.Sprintf("%d of %d partitions answer", parts, n)
	})
}

// waitFor polls cond until it holds or the case's context ends.
func (t *T) waitFor(what string, cond func() (bool, string)) {
	delay := 5 * time.Millisecond
	for {
		ok, state := cond()
		if ok {
			return
		}
		select {
		case <-t.Ctx.Done():
			t.Fatalf("waiting for %s: %v (last: %s)", what, t.Ctx.Err(), state)
		case <-time.After(delay):
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}

func seq(n int32) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = int32(i)
	}
	return s
}

func listOffsetsReq(topic string, ts int64, parts ...int32) *wire.ListOffsetsRequest {
	req := &wire.ListOffsetsRequest{ReplicaId: -1}
	tp := wire.ListOffsetsRequestTopic{Name: topic}
	for _, p := range parts {
		tp.Partitions = append(tp.Partitions, wire.ListOffsetsRequestPartition{PartitionIndex: p, CurrentLeaderEpoch: -1, Timestamp: ts})
	}
	req.Topics = []wire.ListOffsetsRequestTopic{tp}
	return req
}

// listOffset asks for one partition's offset at ts and returns the partition's answer.
func (t *T) listOffset(c *Conn, topic string, p int32, ts int64) wire.ListOffsetsResponsePartitionResponse {
	var resp wire.ListOffsetsResponse
	t.Do(c, listOffsetsReq(topic, ts, p), &resp, maxV(wire.KeyListOffsets))
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("ListOffsets: want one partition in the response, got %+v", resp.Topics)
	}
	return resp.Topics[0].Partitions[0]
}

// wantLogEnd fails the case unless partition p of topic ends at offset want (latest, the
// high watermark): nothing was appended twice or left out.
func (t *T) wantLogEnd(c *Conn, topic string, p int32, want int64, after string) {
	if lo := t.listOffset(c, topic, p, -1); lo.Offset != want {
		t.Errorf("log end %d after %s, want %d", lo.Offset, after, want)
	}
}

// rec is a record to put in a batch.
type rec struct {
	key, value []byte
	ts         int64 // 0: now
	headers    []batch.RecordHeader
}

// batchOpts are the batch-level settings of a built batch.
type batchOpts struct {
	codec      compress.Codec
	producerID int64 // -1 none
	epoch      int16
	sequence   int32
}

var plain = batchOpts{producerID: -1, epoch: -1, sequence: -1}

// makeBatch builds one record batch v2.
func (t *T) makeBatch(o batchOpts, recs ...rec) []byte {
	b := batch.NewBuilder()
	b.SetCodec(o.codec)
	if o.producerID >= 0 {
		b.SetProducer(o.producerID, o.epoch, o.sequence)
	}
	now := time.Now().UnixMilli()
	for _, r := range recs {
		ts := r.ts
		if ts == 0 {
			ts = now
		}
		b.Append(ts, r.key, r.value, r.headers)
	}
	out, err := b.Finish()
	if err != nil {
		t.Fatalf("building a batch: %v", err)
	}
	return slices.Clone(out)
}

// values returns records with values v0, v1, ... (prefix-numbered) and no key.
func values(prefix string, n int) []rec {
	out := make([]rec, n)
	for i := range out {
		out[i] = rec{value: fmt.Appendf(nil, "%s%d", prefix, i)}
	}
	return out
}

func produceReq(topic string, p int32, acks int16, records []byte) *wire.ProduceRequest {
	return &wire.ProduceRequest{Acks: acks, TimeoutMs: 30000, TopicData: []wire.ProduceRequestTopicProduceData{{
		Name: topic, PartitionData: []wire.ProduceRequestPartitionProduceData{{Index: p, Records: records}},
	}}}
}

// produce sends one batch to a partition at version v and returns the partition's answer.
func (t *T) produce(c *Conn, topic string, p int32, acks int16, records []byte, v int16) wire.ProduceResponsePartitionProduceResponse {
	var resp wire.ProduceResponse
	t.Do(c, produceReq(topic, p, acks, records), &resp, v)
	if len(resp.Responses) != 1 || len(resp.Responses[0].PartitionResponses) != 1 {
		t.Fatalf("Produce: want one partition in the response, got %+v", resp.Responses)
	}
	return resp.Responses[0].PartitionResponses[0]
}

// produceOK produces records as one batch with acks=1 and fails unless it succeeds; it
// returns the base offset.
func (t *T) produceOK(c *Conn, topic string, p int32, o batchOpts, recs ...rec) int64 {
	r := t.produce(c, topic, p, 1, t.makeBatch(o, recs...), maxV(wire.KeyProduce))
	if r.ErrorCode != 0 {
		t.Fatalf("producing %d records to %s/%d: %s", len(recs), topic, p, codeName(r.ErrorCode))
	}
	return r.BaseOffset
}

func fetchReq(topic string, p int32, offset int64, maxWait, minBytes, maxBytes, partMax int32) *wire.FetchRequest {
	req := new(wire.FetchRequest)
	req.Default()
	req.MaxWaitMs, req.MinBytes, req.MaxBytes = maxWait, minBytes, maxBytes
	fp := wire.FetchRequestPartition{}
	fp.Default()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = p, offset, partMax
	req.Topics = []wire.FetchRequestTopic{{Topic: topic, Partitions: []wire.FetchRequestPartition{fp}}}
	return req
}

// fetch fetches one partition from offset without waiting and returns its answer.
func (t *T) fetch(c *Conn, topic string, p int32, offset int64) wire.FetchResponsePartitionData {
	return t.fetchWith(c, fetchReq(topic, p, offset, 0, 1, 1<<20, 1<<20), maxV(wire.KeyFetch))
}

func (t *T) fetchWith(c *Conn, req *wire.FetchRequest, v int16) wire.FetchResponsePartitionData {
	var resp wire.FetchResponse
	t.Do(c, req, &resp, v)
	if resp.ErrorCode != 0 {
		t.Fatalf("Fetch: top-level error %s", codeName(resp.ErrorCode))
	}
	if len(resp.Responses) != 1 || len(resp.Responses[0].Partitions) != 1 {
		t.Fatalf("Fetch: want one partition in the response, got %d topics", len(resp.Responses))
	}
	return resp.Responses[0].Partitions[0]
}

// fetchedRecord is a record read back, copied out of its batch.
type fetchedRecord struct {
	offset, ts int64
	key, value []byte
	headers    []batch.RecordHeader
	batch      batch.Header
}

// records decodes every whole batch of a fetched region.
func (t *T) records(region []byte) []fetchedRecord {
	var out []fetchedRecord
	sc := batch.NewScanner(region)
	var it batch.Iterator
	for sc.Next() {
		if err := it.Reset(sc.Batch(), 64<<20); err != nil {
			t.Fatalf("fetched batch: %v", err)
		}
		for it.Next() {
			r := it.Record()
			out = append(out, fetchedRecord{offset: r.Offset, ts: r.Timestamp, key: clone(r.Key), value: clone(r.Value),
				headers: cloneHeaders(r.AppendHeaders(nil)), batch: it.Header()})
		}
		if err := it.Err(); err != nil {
			t.Fatalf("fetched records: %v", err)
		}
	}
	if err := sc.Err(); err != nil && !sc.Truncated() {
		t.Fatalf("fetched region: %v", err)
	}
	return out
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

func cloneHeaders(hs []batch.RecordHeader) []batch.RecordHeader {
	for i := range hs {
		hs[i] = batch.RecordHeader{Key: clone(hs[i].Key), Value: clone(hs[i].Value)}
	}
	return hs
}

// fetchAll reads a partition from offset until n records came back (waiting up to the case's
// deadline, a fetch at a time).
func (t *T) fetchAll(c *Conn, topic string, p int32, offset int64, n int) []fetchedRecord {
	var out []fetchedRecord
	t.waitFor(fmt.Sprintf("%d records from %s/%d", n, topic, p), func() (bool, string) {
		r := t.fetchWith(c, fetchReq(topic, p, offset, 500, 1, 16<<20, 16<<20), maxV(wire.KeyFetch))
		if r.ErrorCode != 0 {
			t.Fatalf("fetch %s/%d at %d: %s", topic, p, offset, codeName(r.ErrorCode))
		}
		for _, fr := range t.records(r.Records) {
			if fr.offset >= offset {
				out = append(out, fr)
				offset = fr.offset + 1
			}
		}
		return len(out) >= n, fmt.Sprintf("%d records", len(out))
	})
	return out
}

// sameRecords fails unless got holds want's keys, values and headers in order.
func (t *T) sameRecords(got []fetchedRecord, want []rec) {
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if !bytes.Equal(g.key, w.key) || (g.key == nil) != (w.key == nil) {
			t.Errorf("record %d: key %q (null %v), want %q (null %v)", i, g.key, g.key == nil, w.key, w.key == nil)
		}
		if !bytes.Equal(g.value, w.value) || (g.value == nil) != (w.value == nil) {
			t.Errorf("record %d: value %q (null %v), want %q (null %v)", i, g.value, g.value == nil, w.value, w.value == nil)
		}
		if len(g.headers) != len(w.headers) {
			t.Errorf("record %d: %d headers, want %d", i, len(g.headers), len(w.headers))
			continue
		}
		for j := range w.headers {
			if !bytes.Equal(g.headers[j].Key, w.headers[j].Key) || !bytes.Equal(g.headers[j].Value, w.headers[j].Value) ||
				(g.headers[j].Value == nil) != (w.headers[j].Value == nil) {
				t.Errorf("record %d header %d: %q=%q, want %q=%q", i, j, g.headers[j].Key, g.headers[j].Value, w.headers[j].Key, w.headers[j].Value)
			}
		}
	}
}

func ptr[V any](v V) *V { return &v }

// Leader opens a raw connection to the broker that leads topic's partition p, as Metadata
// names it: the target itself on a single node. Client-level cases check what an SDK wrote
// through it, so that they hold on a cluster too.
func (t *T) Leader(topic string, p int32) *Conn {
	c := t.Conn()
	md := t.metadata(c, false, topic)
	if len(md.Brokers) < 2 {
		return c
	}
	tp := findTopic(md, topic)
	if tp == nil || tp.ErrorCode != 0 {
		t.Fatalf("Metadata of %s: %+v", topic, tp)
	}
	for _, part := range tp.Partitions {
		if part.PartitionIndex == p {
			return t.brokerConn(md, part.LeaderId)
		}
	}
	t.Fatalf("Metadata of %s lacks partition %d", topic, p)
	return nil
}

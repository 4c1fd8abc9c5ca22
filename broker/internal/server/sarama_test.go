package server_test

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/spoolmq/spool/protocol-spec/wire/batch"
	"github.com/spoolmq/spool/protocol-spec/wire/compress"
)

// allCodecs is every record batch codec Kafka defines; each interop test produces with all.
var allCodecs = []compress.Codec{compress.None, compress.Gzip, compress.Snappy, compress.LZ4, compress.Zstd}

// interopValue is a record value that compresses well yet is not text: it carries every byte
// value, so byte-exact comparisons catch any mangling.
func interopValue(prefix string, i int) []byte {
	v := fmt.Appendf(nil, "%s-%04d-", prefix, i)
	v = append(v, bytes.Repeat([]byte("compressible "), 4)...)
	for b := 0; b < 256; b++ {
		v = append(v, byte(b+i))
	}
	return v
}

// requireAllCodecs fails unless the topic's stored batches include every codec: the client
// really compressed (the broker never recompresses).
func requireAllCodecs(t *testing.T, client, addr, topic string, partitions int32) {
	t.Helper()
	seen := codecsStored(t, addr, topic, partitions)
	for _, c := range allCodecs {
		if !seen[c] {
			t.Errorf("%s: no %v batch stored in %s (stored: %v)", client, c, topic, seen)
		}
	}
}

// interopRec is one record as produced or consumed, compared byte for byte.
type interopRec struct {
	key, value []byte // nil stays distinct from empty
	headers    []string
}

func (r interopRec) equal(o interopRec) bool {
	return bytes.Equal(r.key, o.key) && (r.key == nil) == (o.key == nil) &&
		bytes.Equal(r.value, o.value) && fmt.Sprint(r.headers) == fmt.Sprint(o.headers)
}

func (r interopRec) String() string {
	if r.key == nil {
		return fmt.Sprintf("{key:nil value:%q headers:%q}", r.value, r.headers)
	}
	return fmt.Sprintf("{key:%q value:%q headers:%q}", r.key, r.value, r.headers)
}

// javaPartition is the partition Java's default partitioner (and kafka-go's Murmur2Balancer,
// librdkafka's murmur2_random) picks for a key: toPositive(murmur2(key)) % n.
func javaPartition(key []byte, n int32) int32 {
	return int32(uint32(murmur2(key))&0x7fffffff) % n
}

// saramaMurmur2 is a sarama Partitioner compatible with Java's: murmur2 for keys, round robin
// for nil keys. sarama's own hash partitioner is FNV-1a, which no other client uses.
type saramaMurmur2 struct{ next atomic.Int32 }

func (p *saramaMurmur2) Partition(m *sarama.ProducerMessage, n int32) (int32, error) {
	if m.Key == nil {
		return (p.next.Add(1) & 0x7fffffff) % n, nil
	}
	k, err := m.Key.Encode()
	if err != nil {
		return -1, err
	}
	return javaPartition(k, n), nil
}

func (p *saramaMurmur2) RequiresConsistency() bool { return true }

var saramaCodecs = map[compress.Codec]sarama.CompressionCodec{
	compress.None: sarama.CompressionNone, compress.Gzip: sarama.CompressionGZIP,
	compress.Snappy: sarama.CompressionSnappy, compress.LZ4: sarama.CompressionLZ4,
	compress.Zstd: sarama.CompressionZSTD,
}

func saramaConfig(version sarama.KafkaVersion) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.ClientID = "spool-sarama-test"
	cfg.Version = version
	cfg.Metadata.Retry.Backoff = 50 * time.Millisecond
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Partitioner = func(string) sarama.Partitioner { return &saramaMurmur2{} }
	cfg.Producer.Flush.Messages = 25
	cfg.Producer.Flush.Frequency = 10 * time.Millisecond
	cfg.Consumer.Return.Errors = true
	return cfg
}

// saramaAcked is what sarama's SyncProducer reported for one record.
type saramaAcked struct {
	partition int32
	offset    int64
}

// saramaProduce sends records with one SyncProducer and returns where each landed, checking
// that keyed records went where murmur2 says.
func saramaProduce(t *testing.T, addr, topic string, cfg *sarama.Config, recs []interopRec) map[saramaAcked]interopRec {
	t.Helper()
	p, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("sarama producer: %v", err)
	}
	defer p.Close()
	msgs := make([]*sarama.ProducerMessage, len(recs))
	for i, r := range recs {
		m := &sarama.ProducerMessage{Topic: topic, Value: sarama.ByteEncoder(r.value)}
		if r.key != nil {
			m.Key = sarama.ByteEncoder(r.key)
		}
		for j := 0; j+1 < len(r.headers); j += 2 {
			m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(r.headers[j]), Value: []byte(r.headers[j+1])})
		}
		msgs[i] = m
	}
	if err := p.SendMessages(msgs); err != nil {
		t.Fatalf("sarama SendMessages (%v): %v", cfg.Producer.Compression, err)
	}
	out := map[saramaAcked]interopRec{}
	for i, m := range msgs {
		at := saramaAcked{m.Partition, m.Offset}
		if prev, dup := out[at]; dup {
			t.Fatalf("two records acknowledged at %+v: %v and %v", at, prev, recs[i])
		}
		if recs[i].key != nil && m.Partition != javaPartition(recs[i].key, 3) {
			t.Errorf("key %q went to partition %d, murmur2 says %d", recs[i].key, m.Partition, javaPartition(recs[i].key, 3))
		}
		out[at] = recs[i]
	}
	return out
}

// saramaConsume reads every partition from the oldest offset to the high watermark with
// sarama's (group-less) Consumer.
func saramaConsume(t *testing.T, ctx context.Context, addr, topic string, cfg *sarama.Config, partitions int32) map[saramaAcked]interopRec {
	t.Helper()
	client, err := sarama.NewClient([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("sarama client: %v", err)
	}
	defer client.Close()
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		t.Fatalf("sarama consumer: %v", err)
	}
	defer consumer.Close()
	got := map[saramaAcked]interopRec{}
	for p := int32(0); p < partitions; p++ {
		hwm, err := client.GetOffset(topic, p, sarama.OffsetNewest)
		if err != nil {
			t.Fatalf("partition %d: high watermark: %v", p, err)
		}
		if hwm == 0 {
			continue
		}
		pc, err := consumer.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("partition %d: consume: %v", p, err)
		}
		next := int64(0)
		for next < hwm {
			select {
			case m := <-pc.Messages():
				if m.Offset != next {
					t.Fatalf("partition %d: offset %d, want %d", p, m.Offset, next)
				}
				r := interopRec{key: m.Key, value: m.Value}
				for _, h := range m.Headers {
					r.headers = append(r.headers, string(h.Key), string(h.Value))
				}
				got[saramaAcked{p, m.Offset}] = r
				next++
			case err := <-pc.Errors():
				t.Fatalf("partition %d: %v", p, err)
			case <-ctx.Done():
				t.Fatalf("partition %d: consumed up to %d of %d before the deadline", p, next, hwm)
			}
		}
		pc.Close()
	}
	return got
}

func compareAcked(t *testing.T, got, want map[saramaAcked]interopRec) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("consumed %d records, produced %d", len(got), len(want))
	}
	bad := 0
	for at, w := range want {
		g, ok := got[at]
		switch {
		case !ok:
			t.Errorf("partition %d offset %d: missing, want %v", at.partition, at.offset, w)
		case !g.equal(w):
			t.Errorf("partition %d offset %d: got %v, want %v", at.partition, at.offset, g, w)
		default:
			continue
		}
		if bad++; bad > 10 {
			t.Fatalf("too many differences")
		}
	}
}

// TestSaramaProduceConsume drives the broker with IBM/sarama: ClusterAdmin create, describe,
// incrementally alter and delete topics; a SyncProducer in every codec with keyed (murmur2)
// and unkeyed records; and a PartitionConsumer reading everything back byte for byte.
func TestSaramaProduceConsume(t *testing.T) {
	parallel(t)
	b := startBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := saramaConfig(sarama.V3_6_0_0)
	const topic = "sarama"

	admin, err := sarama.NewClusterAdmin([]string{b.Addr}, cfg)
	if err != nil {
		t.Fatalf("cluster admin: %v", err)
	}
	defer admin.Close()
	if err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1,
		ConfigEntries: map[string]*string{"retention.ms": ptr("86400000")}}, false); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	if err := admin.CreateTopic(topic+"-scratch", &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	if err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1}, false); err == nil {
		t.Errorf("creating %s twice succeeded", topic)
	}
	saramaConfigIs(t, admin, topic, "retention.ms", "86400000", sarama.SourceTopic)
	if err := admin.IncrementalAlterConfig(sarama.TopicResource, topic, map[string]sarama.IncrementalAlterConfigsEntry{
		"retention.ms":   {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: ptr("3600000")},
		"cleanup.policy": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: ptr("delete")},
	}, false); err != nil {
		t.Fatalf("incremental alter config: %v", err)
	}
	saramaConfigIs(t, admin, topic, "retention.ms", "3600000", sarama.SourceTopic)
	saramaConfigIs(t, admin, topic, "cleanup.policy", "delete", sarama.SourceTopic)
	if err := admin.IncrementalAlterConfig(sarama.TopicResource, topic, map[string]sarama.IncrementalAlterConfigsEntry{
		"cleanup.policy": {Operation: sarama.IncrementalAlterConfigsOperationDelete},
	}, false); err != nil {
		t.Fatalf("incremental alter config (delete): %v", err)
	}
	if e := saramaConfigEntry(t, admin, topic, "cleanup.policy"); e == nil || e.Source == sarama.SourceTopic {
		t.Errorf("cleanup.policy after DELETE: %+v, want the broker default", e)
	}
	if err := admin.DeleteTopic(topic + "-scratch"); err != nil {
		t.Fatalf("delete topic: %v", err)
	}
	topics, err := admin.ListTopics()
	if err != nil {
		t.Fatalf("list topics: %v", err)
	}
	if _, ok := topics[topic+"-scratch"]; ok {
		t.Errorf("%s-scratch still listed after DeleteTopic", topic)
	}
	if d, ok := topics[topic]; !ok || d.NumPartitions != 3 {
		t.Errorf("list topics: %s = %+v, %v", topic, d, ok)
	}

	want := map[saramaAcked]interopRec{}
	for _, codec := range allCodecs {
		cfg := saramaConfig(sarama.V3_6_0_0)
		cfg.Producer.Compression = saramaCodecs[codec]
		var recs []interopRec
		for i := 0; i < 60; i++ {
			r := interopRec{value: interopValue("sarama-"+codec.String(), i), headers: []string{"codec", codec.String()}}
			if i%2 == 0 {
				r.key = fmt.Appendf(nil, "sarama-key-%d", i%14)
			}
			recs = append(recs, r)
		}
		for at, r := range saramaProduce(t, b.Addr, topic, cfg, recs) {
			want[at] = r
		}
	}
	compareAcked(t, saramaConsume(t, ctx, b.Addr, topic, cfg, 3), want)
	requireAllCodecs(t, "sarama", b.Addr, topic, 3)
}

// TestSaramaIdempotentProducer runs sarama's idempotent producer (Version=MaxVersion): it needs
// InitProducerId, acks=all and one in-flight request. Every record must be stored exactly once,
// at contiguous offsets, in batches that carry the producer id and sequence numbers.
func TestSaramaIdempotentProducer(t *testing.T) {
	parallel(t)
	b := startBroker(t, map[string]string{"num.partitions": "3"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	createTopic(t, dial(t, b.Addr), "sarama-idem", 3, nil)

	want := map[saramaAcked]interopRec{}
	for _, codec := range allCodecs {
		cfg := saramaConfig(sarama.MaxVersion)
		cfg.Producer.Idempotent = true
		cfg.Producer.RequiredAcks = sarama.WaitForAll
		cfg.Producer.Retry.Max = 5
		cfg.Net.MaxOpenRequests = 1
		cfg.Producer.Compression = saramaCodecs[codec]
		var recs []interopRec
		for i := 0; i < 200; i++ {
			r := interopRec{value: interopValue("idem-"+codec.String(), i)}
			if i%3 != 0 {
				r.key = fmt.Appendf(nil, "k%d", i%10)
			}
			recs = append(recs, r)
		}
		for at, r := range saramaProduce(t, b.Addr, "sarama-idem", cfg, recs) {
			want[at] = r
		}
	}
	got := saramaConsume(t, ctx, b.Addr, "sarama-idem", saramaConfig(sarama.MaxVersion), 3)
	compareAcked(t, got, want)
	seenValue := map[string]bool{}
	for _, r := range got {
		if seenValue[string(r.value)] {
			t.Errorf("duplicate record %v", r)
		}
		seenValue[string(r.value)] = true
	}

	// Each stored batch carries a producer id and a base sequence that continues the previous
	// batch of the same producer on that partition.
	c := dial(t, b.Addr)
	for p := int32(0); p < 3; p++ {
		pd := fetch(t, c, 12, fetchRequest("sarama-idem", p, 0, 0, 0, 64<<20))
		nextSeq := map[int64]int32{}
		sc := batch.NewScanner(pd.Records)
		for sc.Next() {
			raw := batch.Raw(sc.Batch())
			pid := raw.ProducerID()
			if pid < 0 {
				t.Fatalf("partition %d offset %d: batch without a producer id", p, raw.BaseOffset())
			}
			if seq, ok := nextSeq[pid]; ok && raw.BaseSequence() != seq {
				t.Errorf("partition %d producer %d: base sequence %d, want %d", p, pid, raw.BaseSequence(), seq)
			} else if !ok && raw.BaseSequence() != 0 {
				t.Errorf("partition %d producer %d: first base sequence %d, want 0", p, pid, raw.BaseSequence())
			}
			nextSeq[pid] = raw.BaseSequence() + raw.LastOffsetDelta() + 1
		}
		if len(nextSeq) != len(allCodecs) {
			t.Errorf("partition %d: %d producer ids, want one per producer (%d)", p, len(nextSeq), len(allCodecs))
		}
	}
	requireAllCodecs(t, "sarama idempotent", b.Addr, "sarama-idem", 3)
}

func saramaConfigEntry(t *testing.T, admin sarama.ClusterAdmin, topic, name string) *sarama.ConfigEntry {
	t.Helper()
	entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
	if err != nil {
		t.Fatalf("describe config: %v", err)
	}
	for i := range entries {
		if entries[i].Name == name {
			return &entries[i]
		}
	}
	return nil
}

func saramaConfigIs(t *testing.T, admin sarama.ClusterAdmin, topic, name, value string, source sarama.ConfigSource) {
	t.Helper()
	e := saramaConfigEntry(t, admin, topic, name)
	if e == nil || e.Value != value || e.Source != source {
		t.Errorf("describe config %s %s: got %+v, want value %s source %v", topic, name, e, value, source)
	}
}

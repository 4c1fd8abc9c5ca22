package server_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/spoolmq/spool/protocol-spec/wire/compress"
)

var kafkaGoCodecs = map[compress.Codec]kafka.Compression{
	compress.None: 0, compress.Gzip: kafka.Gzip, compress.Snappy: kafka.Snappy,
	compress.LZ4: kafka.Lz4, compress.Zstd: kafka.Zstd,
}

func kafkaGoMessages(prefix string, n int) []kafka.Message {
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		msgs[i] = kafka.Message{Value: interopValue(prefix, i), Headers: []kafka.Header{{Key: "prefix", Value: []byte(prefix)}}}
		if i%2 == 0 {
			msgs[i].Key = fmt.Appendf(nil, "kafka-go-key-%d", i%14)
		}
	}
	return msgs
}

func kafkaGoRec(m kafka.Message) interopRec {
	r := interopRec{key: m.Key, value: m.Value}
	for _, h := range m.Headers {
		r.headers = append(r.headers, h.Key, string(h.Value))
	}
	return r
}

// kafkaGoConsume reads every partition from offset 0 to its last offset with group-less
// kafka.Readers (Partition set), after asking a kafka.Conn for the last offset. Keyed records
// must be on the partition murmur2 picks (the writers use Murmur2Balancer).
func kafkaGoConsume(t *testing.T, ctx context.Context, addr, topic string, partitions int) map[string]interopRec {
	t.Helper()
	got := map[string]interopRec{}
	for p := 0; p < partitions; p++ {
		conn, err := kafka.DialLeader(ctx, "tcp", addr, topic, p)
		if err != nil {
			t.Fatalf("partition %d: dial leader: %v", p, err)
		}
		first, last, err := conn.ReadOffsets()
		conn.Close()
		if err != nil {
			t.Fatalf("partition %d: read offsets: %v", p, err)
		}
		if first != 0 {
			t.Errorf("partition %d: first offset %d, want 0", p, first)
		}
		if last == 0 {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, Topic: topic, Partition: p,
			MinBytes: 1, MaxBytes: 10 << 20, MaxWait: 100 * time.Millisecond})
		if err := r.SetOffset(kafka.FirstOffset); err != nil {
			t.Fatal(err)
		}
		for next := int64(0); next < last; next++ {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				r.Close()
				t.Fatalf("partition %d: read at %d of %d: %v", p, next, last, err)
			}
			if m.Offset != next || m.Partition != p {
				t.Fatalf("partition %d: got partition %d offset %d, want offset %d", p, m.Partition, m.Offset, next)
			}
			if m.Key != nil && javaPartition(m.Key, int32(partitions)) != int32(p) {
				t.Errorf("key %q on partition %d, murmur2 says %d", m.Key, p, javaPartition(m.Key, int32(partitions)))
			}
			v := string(m.Value)
			if _, dup := got[v]; dup {
				t.Errorf("partition %d offset %d: duplicate value %q", p, m.Offset, v)
			}
			got[v] = kafkaGoRec(m)
		}
		r.Close()
	}
	return got
}

func compareByValue(t *testing.T, got map[string]interopRec, want []kafka.Message) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("consumed %d records, produced %d", len(got), len(want))
	}
	bad := 0
	for _, m := range want {
		w := kafkaGoRec(m)
		if g, ok := got[string(m.Value)]; !ok {
			t.Errorf("missing %v", w)
		} else if !g.equal(w) {
			t.Errorf("got %v, want %v", g, w)
		} else {
			continue
		}
		if bad++; bad > 10 {
			t.Fatalf("too many differences")
		}
	}
}

func kafkaGoCreateTopics(t *testing.T, ctx context.Context, client *kafka.Client, topics ...kafka.TopicConfig) {
	t.Helper()
	resp, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: topics})
	if err != nil {
		t.Fatalf("create topics: %v", err)
	}
	for _, tc := range topics {
		if err := resp.Errors[tc.Topic]; err != nil {
			t.Fatalf("create topic %s: %v", tc.Topic, err)
		}
	}
}

// TestKafkaGoProduceConsume drives the broker with segmentio/kafka-go: kafka.Client
// CreateTopics, DescribeConfigs and DeleteTopics; a kafka.Writer per codec (acks=all,
// Murmur2Balancer) with keyed and unkeyed records; group-less kafka.Readers reading it all back.
func TestKafkaGoProduceConsume(t *testing.T) {
	parallel(t)
	b := startBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tr := &kafka.Transport{ClientID: "spool-kafka-go-test"}
	defer tr.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(b.Addr), Transport: tr, Timeout: 10 * time.Second}
	const topic = "kafkago"

	kafkaGoCreateTopics(t, ctx, client,
		kafka.TopicConfig{Topic: topic, NumPartitions: 3, ReplicationFactor: 1,
			ConfigEntries: []kafka.ConfigEntry{{ConfigName: "retention.ms", ConfigValue: "86400000"}}},
		kafka.TopicConfig{Topic: topic + "-scratch", NumPartitions: 1, ReplicationFactor: 1})
	resp, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: 3, ReplicationFactor: 1}}})
	if err != nil || !errors.Is(resp.Errors[topic], kafka.TopicAlreadyExists) {
		t.Errorf("creating %s twice: %v %v, want TOPIC_ALREADY_EXISTS", topic, err, resp)
	}
	dc, err := client.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{
		{ResourceType: kafka.ResourceTypeTopic, ResourceName: topic, ConfigNames: []string{"retention.ms"}}}})
	if err != nil || len(dc.Resources) != 1 || dc.Resources[0].Error != nil {
		t.Fatalf("describe configs: %v %+v", err, dc)
	}
	found := false
	for _, e := range dc.Resources[0].ConfigEntries {
		found = found || e.ConfigName == "retention.ms" && e.ConfigValue == "86400000"
	}
	if !found {
		t.Errorf("describe configs: no retention.ms=86400000 in %+v", dc.Resources[0].ConfigEntries)
	}
	del, err := client.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{topic + "-scratch"}})
	if err != nil || del.Errors[topic+"-scratch"] != nil {
		t.Fatalf("delete topic: %v %+v", err, del)
	}

	var want []kafka.Message
	for _, codec := range allCodecs {
		w := &kafka.Writer{Addr: kafka.TCP(b.Addr), Topic: topic, Transport: tr, Balancer: &kafka.Murmur2Balancer{},
			RequiredAcks: kafka.RequireAll, Compression: kafkaGoCodecs[codec], BatchSize: 25, BatchTimeout: 10 * time.Millisecond}
		msgs := kafkaGoMessages("kafka-go-"+codec.String(), 60)
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatalf("%v: write: %v", codec, err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		want = append(want, msgs...)
	}
	compareByValue(t, kafkaGoConsume(t, ctx, b.Addr, topic, 3), want)
	requireAllCodecs(t, "kafka-go", b.Addr, topic, 3)
}

// TestKafkaGoDefaultAcksZero uses kafka.Writer's default RequiredAcks, RequireNone (acks=0), in
// every codec: the broker must store (and make visible) the records without anyone waiting for
// them, and send no response. A stray response would reach the next request on the same pooled
// connection as a correlation id mismatch, so acks=all writes on the same Transport follow.
func TestKafkaGoDefaultAcksZero(t *testing.T) {
	parallel(t)
	b := startBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tr := &kafka.Transport{ClientID: "spool-kafka-go-acks0"}
	defer tr.CloseIdleConnections()
	const topic = "kafkago-acks0"
	kafkaGoCreateTopics(t, ctx, &kafka.Client{Addr: kafka.TCP(b.Addr), Transport: tr, Timeout: 10 * time.Second},
		kafka.TopicConfig{Topic: topic, NumPartitions: 3, ReplicationFactor: 1})

	var want []kafka.Message
	for _, codec := range allCodecs {
		w := &kafka.Writer{Addr: kafka.TCP(b.Addr), Topic: topic, Transport: tr, Balancer: &kafka.Murmur2Balancer{},
			Compression: kafkaGoCodecs[codec], BatchSize: 25, BatchTimeout: 10 * time.Millisecond}
		if w.RequiredAcks != kafka.RequireNone {
			t.Fatalf("kafka-go's default RequiredAcks is %v, this test expects RequireNone", w.RequiredAcks)
		}
		msgs := kafkaGoMessages("acks0-"+codec.String(), 60)
		for i := 0; i < len(msgs); i += 20 { // several produce requests per connection
			if err := w.WriteMessages(ctx, msgs[i:i+20]...); err != nil {
				t.Fatalf("%v: acks=0 write: %v", codec, err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		want = append(want, msgs...)
	}

	// acks=0 gives no acknowledgement to wait for: poll the high watermarks (ListOffsets through
	// kafka.Conn) until everything is visible. Nothing else is written meanwhile, so nothing
	// else can make the records durable and visible.
	var total int64
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		total = 0
		for p := 0; p < 3; p++ {
			conn, err := kafka.DialLeader(ctx, "tcp", b.Addr, topic, p)
			if err != nil {
				t.Fatal(err)
			}
			last, err := conn.ReadLastOffset()
			conn.Close()
			if err != nil {
				t.Fatal(err)
			}
			total += last
		}
		if total >= int64(len(want)) || time.Now().After(deadline) {
			break
		}
	}
	if total != int64(len(want)) {
		t.Fatalf("%d acks=0 records visible after 10s, %d written", total, len(want))
	}

	for _, codec := range allCodecs {
		sync := &kafka.Writer{Addr: kafka.TCP(b.Addr), Topic: topic, Transport: tr, Balancer: &kafka.Murmur2Balancer{},
			RequiredAcks: kafka.RequireAll, Compression: kafkaGoCodecs[codec], BatchTimeout: 10 * time.Millisecond}
		after := kafkaGoMessages("acks-all-after-"+codec.String(), 6)
		if err := sync.WriteMessages(ctx, after...); err != nil {
			t.Fatalf("%v: acks=all write after acks=0 writes on the same transport: %v", codec, err)
		}
		sync.Close()
		want = append(want, after...)
	}
	compareByValue(t, kafkaGoConsume(t, ctx, b.Addr, topic, 3), want)
	requireAllCodecs(t, "kafka-go acks=0", b.Addr, topic, 3)
}

package server_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spoolmq/spool/protocol-spec/wire/batch"
	"github.com/spoolmq/spool/protocol-spec/wire/compress"
)

// TestFranzGoProduceConsume drives the broker with franz-go, a client we did not write: admin,
// idempotent produce in every codec, and consuming everything back in order.
func TestFranzGoProduceConsume(t *testing.T) {
	parallel(t)
	b := startBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	if _, err := adm.CreateTopic(ctx, 3, 1, map[string]*string{"retention.ms": ptr("86400000")}, "franz"); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	rc, err := adm.DescribeTopicConfigs(ctx, "franz")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := rc.On("franz", nil); err != nil || !hasConfig(v.Configs, "retention.ms", "86400000") {
		t.Fatalf("describe configs: %v %+v", err, v)
	}

	codecs := map[string]kgo.CompressionCodec{
		"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	const perCodec = 200
	want := map[string]bool{}
	for name, codec := range codecs {
		p, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ProducerBatchCompression(codec), kgo.DefaultProduceTopic("franz"))
		if err != nil {
			t.Fatal(err)
		}
		var recs []*kgo.Record
		for i := 0; i < perCodec; i++ {
			v := fmt.Sprintf("%s-%03d-compressible-compressible-compressible", name, i)
			want[v] = true
			recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint(i % 7)), Value: []byte(v)})
		}
		if err := p.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("%s: produce: %v", name, err)
		}
		p.Close()
	}

	cons, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConsumeTopics("franz"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := map[string]bool{}
	lastOffset := map[int32]int64{}
	for len(got) < len(want) {
		fs := cons.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("poll: %v (have %d of %d)", err, len(got), len(want))
		}
		fs.EachRecord(func(r *kgo.Record) {
			if last, ok := lastOffset[r.Partition]; ok && r.Offset != last+1 {
				t.Errorf("partition %d: offset %d after %d", r.Partition, r.Offset, last)
			}
			lastOffset[r.Partition] = r.Offset
			if got[string(r.Value)] {
				t.Errorf("duplicate %s", r.Value)
			}
			got[string(r.Value)] = true
		})
	}
	for v := range want {
		if !got[v] {
			t.Errorf("missing %s", v)
		}
	}

	// The broker stored what franz-go sent, compressed as sent (batches are never recompressed).
	seen := map[compress.Codec]bool{}
	for p := int32(0); p < 3; p++ {
		c := dial(t, b.Addr)
		pd := fetch(t, c, 12, fetchRequest("franz", p, 0, 0, 0, 64<<20))
		sc := batch.NewScanner(pd.Records)
		for sc.Next() {
			seen[batch.Raw(sc.Batch()).Attributes().Codec()] = true
		}
	}
	for _, c := range []compress.Codec{compress.None, compress.Gzip, compress.Snappy, compress.LZ4, compress.Zstd} {
		if !seen[c] {
			t.Errorf("no %v batch stored", c)
		}
	}

	// Admin: alter a config incrementally, read it back, grow the topic, delete it.
	alter, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "cleanup.policy", Value: ptr("compact")}}, "franz")
	if err != nil || alter[0].Err != nil {
		t.Fatalf("alter configs: %v %v", err, alter)
	}
	rc, err = adm.DescribeTopicConfigs(ctx, "franz")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := rc.On("franz", nil); err != nil || !hasConfig(v.Configs, "cleanup.policy", "compact") {
		t.Fatalf("after alter: %v %+v", err, v)
	}
	if _, err := adm.CreatePartitions(ctx, 2, "franz"); err != nil {
		t.Fatalf("create partitions: %v", err)
	}
	td, err := adm.ListTopics(ctx, "franz")
	if err != nil || len(td["franz"].Partitions) != 5 {
		t.Fatalf("list topics: %v %+v", err, td)
	}
	if del, err := adm.DeleteTopics(ctx, "franz"); err != nil || del["franz"].Err != nil {
		t.Fatalf("delete topics: %v %+v", err, del)
	}
	td, err = adm.ListTopics(ctx)
	if err != nil || td.Has("franz") {
		t.Fatalf("topic still listed after delete: %v", err)
	}
}

func hasConfig(cs []kadm.Config, name, value string) bool {
	for _, c := range cs {
		if c.Key == name && c.Value != nil && *c.Value == value {
			return true
		}
	}
	return false
}

package server_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/protocol-spec/wire"
	"github.com/spoolmq/spool/protocol-spec/wire/batch"
	"github.com/spoolmq/spool/protocol-spec/wire/compress"
)

// storedRecord is what a reader gets back of a record.
type storedRecord struct {
	offset    int64
	timestamp int64
	key       []byte
	value     []byte
	headers   string
}

// storedBatch is a fetched batch: its header and its records.
type storedBatch struct {
	h    batch.Header
	recs []storedRecord
}

func fetchBatches(t *testing.T, c *rawClient, topic string) []storedBatch {
	t.Helper()
	var out []storedBatch
	sc := batch.NewScanner(fetch(t, c, 12, fetchRequest(topic, 0, 0, 0, 1, 1<<20)).Records)
	for sc.Next() {
		var it batch.Iterator
		if err := it.Reset(sc.Batch(), 64<<20); err != nil {
			t.Fatalf("%s: stored batch: %v", topic, err)
		}
		sb := storedBatch{h: it.Header()}
		for it.Next() {
			r := it.Record()
			var hs []string
			for _, h := range r.AppendHeaders(nil) {
				hs = append(hs, string(h.Key)+"="+string(h.Value))
			}
			sb.recs = append(sb.recs, storedRecord{r.Offset, r.Timestamp, bytes.Clone(r.Key), bytes.Clone(r.Value), strings.Join(hs, ",")})
		}
		if it.Err() != nil {
			t.Fatalf("%s: stored records: %v", topic, it.Err())
		}
		out = append(out, sb)
	}
	return out
}

// A topic whose compression.type names a codec stores every produced batch in that codec,
// whatever the producer used; "producer" keeps each batch byte for byte. Records, headers,
// null values and timestamps survive; an idempotent retry of a recompressed batch is still
// recognised as a duplicate.
func TestRecompressOnAppend(t *testing.T) {
	parallel(t)
	b := startBroker(t, nil)
	c := dial(t, b.Addr)
	ts := time.Now().UnixMilli()
	pid := int64(5000)
	for _, target := range []string{"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"} {
		topic := "recompress-" + target
		createTopic(t, c, topic, 1, map[string]string{"compression.type": target})
		var sent [][]byte
		for _, src := range allCodecs {
			pid++
			bb := batch.NewBuilder()
			bb.SetCodec(src)
			bb.SetProducer(pid, 0, 0)
			for i := 0; i < 20; i++ {
				value := []byte(strings.Repeat(fmt.Sprintf("%s-%d ", src, i), 10))
				if i == 3 {
					value = nil // a tombstone stays null
				}
				bb.Append(ts+int64(i), []byte(fmt.Sprint("k", i)), value, []batch.RecordHeader{{Key: []byte("h"), Value: []byte(src.String())}})
			}
			raw, err := bb.Finish()
			if err != nil {
				t.Fatal(err)
			}
			raw = bytes.Clone(raw)
			sent = append(sent, raw)
			first := produce(t, c, topic, 0, bytes.Clone(raw))
			retry := produce(t, c, topic, 0, bytes.Clone(raw))
			if first.ErrorCode != 0 || retry.ErrorCode != 0 || retry.BaseOffset != first.BaseOffset {
				t.Fatalf("%s from %s: produced at %d (%v), the retry at %d (%v)", topic, src, first.BaseOffset,
					wire.ErrorForCode(first.ErrorCode), retry.BaseOffset, wire.ErrorForCode(retry.ErrorCode))
			}
		}
		stored := fetchBatches(t, c, topic)
		if len(stored) != len(allCodecs) {
			t.Fatalf("%s: %d batches stored, want %d (one per producer codec, retries dropped)", topic, len(stored), len(allCodecs))
		}
		next := int64(0)
		for i, sb := range stored {
			src := allCodecs[i]
			want := src
			if target != "producer" {
				want, _ = compress.ParseCodec(target)
			}
			orig := batch.Raw(sent[i])
			if got := sb.h.Attributes.Codec(); got != want {
				t.Errorf("%s: the batch produced with %s is stored as %s, want %s", topic, src, got, want)
			}
			if unchanged := sb.h.CRC == orig.CRC(); unchanged != (want == src) {
				t.Errorf("%s from %s: batch rewritten %v, want rewritten only when the codec differs", topic, src, !unchanged)
			}
			if sb.h.ProducerID != orig.ProducerID() || sb.h.BaseSequence != 0 || sb.h.RecordsCount != 20 || sb.h.BaseOffset != next {
				t.Errorf("%s from %s: header %+v, want producer %d, sequence 0, 20 records from offset %d", topic, src, sb.h, orig.ProducerID(), next)
			}
			for j, r := range sb.recs {
				wantValue := strings.Repeat(fmt.Sprintf("%s-%d ", src, j), 10)
				if r.offset != next+int64(j) || r.timestamp != ts+int64(j) || string(r.key) != fmt.Sprint("k", j) || r.headers != "h="+src.String() ||
					(j == 3) != (r.value == nil) || (j != 3 && string(r.value) != wantValue) {
					t.Errorf("%s from %s: record %d read back as %+v", topic, src, j, r)
				}
			}
			next += 20
		}
	}
}

// The leader recompresses at the topic's compression.<codec>.level, or at the broker's
// property of that name for a topic without its own: the stored records are exactly what the
// codec makes of them at that level, and the codec's lowest and highest levels differ.
func TestRecompressLevels(t *testing.T) {
	parallel(t)
	b := startBroker(t, map[string]string{"compression.zstd.level": "19"})
	c := dial(t, b.Addr)
	// Words and numbers in a pseudo-random order: compressible, but not so simply that every
	// level finds the same.
	words := strings.Fields("spool kafka record batch offset level topic leader replica group member commit")
	var value []byte
	for x := uint32(1); len(value) < 64<<10; {
		x = x*1664525 + 1013904223
		value = fmt.Appendf(value, "%s %d ", words[x>>24%uint32(len(words))], x>>16&0xff)
	}
	bb := batch.NewBuilder()
	bb.Append(time.Now().UnixMilli(), []byte("k"), value, nil)
	raw, err := bb.Finish()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		codec      compress.Codec
		levels     []string // "": the topic sets no level
		brokerWide string   // the level a topic without its own gets
	}{
		{compress.Gzip, []string{"1", "9", ""}, "-1"},
		{compress.LZ4, []string{"1", "17", ""}, "9"},
		{compress.Zstd, []string{"-5", "22", ""}, "19"},
	} {
		stored := map[string][]byte{}
		for _, level := range tc.levels {
			topic := fmt.Sprintf("level-%s-%s", tc.codec, level)
			configs := map[string]string{"compression.type": tc.codec.String()}
			if level != "" {
				configs["compression."+tc.codec.String()+".level"] = level
			}
			createTopic(t, c, topic, 1, configs)
			if r := produce(t, c, topic, 0, bytes.Clone(raw)); r.ErrorCode != 0 {
				t.Fatalf("%s: %v", topic, wire.ErrorForCode(r.ErrorCode))
			}
			sc := batch.NewScanner(fetch(t, c, 12, fetchRequest(topic, 0, 0, 0, 1, 1<<20)).Records)
			if !sc.Next() {
				t.Fatalf("%s: nothing stored", topic)
			}
			got := bytes.Clone(sc.Batch()[batch.HeaderSize:])
			if codec := batch.Raw(sc.Batch()).Attributes().Codec(); codec != tc.codec {
				t.Fatalf("%s: stored as %s", topic, codec)
			}
			want := level
			if want == "" {
				want = tc.brokerWide
			}
			l, _ := strconv.Atoi(want)
			recs, err := compress.Decompress(nil, got, tc.codec, 1<<20)
			if err != nil {
				t.Fatalf("%s: %v", topic, err)
			}
			if atLevel, _ := compress.CompressLevel(nil, recs, tc.codec, l); !bytes.Equal(got, atLevel) {
				t.Errorf("%s: the stored records (%d bytes) are not compressed at level %s (%d bytes)", topic, len(got), want, len(atLevel))
			}
			stored[level] = got
		}
		if lo, hi := stored[tc.levels[0]], stored[tc.levels[1]]; len(hi) >= len(lo) {
			t.Errorf("%s: level %s stores %d bytes, level %s %d: the level is not applied", tc.codec, tc.levels[1], len(hi), tc.levels[0], len(lo))
		}
	}
}

// Real clients: franz-go produces in each codec to topics of each target codec (one set by
// the broker's compression.type, the others by the topic's), and franz-go and kcat
// (librdkafka) read every record back.
func TestRecompressRealClients(t *testing.T) {
	heavy(t)
	kcat := brokertest.NeedTool(t, "/usr/bin/kcat", "kcat")
	b := startBroker(t, map[string]string{"compression.type": "lz4"})
	c := dial(t, b.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, target := range []string{"", "gzip", "snappy", "zstd", "uncompressed"} {
		topic := "clients-" + target
		var configs map[string]string
		if target == "" {
			topic, target = "clients-broker-default", "lz4"
		} else {
			configs = map[string]string{"compression.type": target}
		}
		createTopic(t, c, topic, 1, configs)
		var want []string
		for _, src := range []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()} {
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ProducerBatchCompression(src), kgo.ProducerLinger(50*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			var recs []*kgo.Record
			for i := 0; i < 50; i++ {
				v := fmt.Sprintf("%v-%d-%s", src, i, strings.Repeat("x", i))
				want = append(want, v)
				recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(v)})
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatalf("%s: produce with %v: %v", topic, src, err)
			}
			cl.Close()
		}
		wantCodec, _ := compress.ParseCodec(target)
		for _, sb := range fetchBatches(t, c, topic) {
			if got := sb.h.Attributes.Codec(); got != wantCodec {
				t.Errorf("%s: a batch is stored as %s, want %s", topic, got, wantCodec)
			}
		}

		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for len(got) < len(want) && ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		cl.Close()
		if !slices.Equal(got, want) {
			t.Errorf("%s: franz-go read back %d records, want the %d produced in order", topic, len(got), len(want))
		}
		out := run(t, "", kcat, "-b", b.Addr, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%s\n")
		if lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); !slices.Equal(lines, want) {
			t.Errorf("%s: kcat read back %d records, want the %d produced in order", topic, len(lines), len(want))
		}
	}
}

// In a cluster the leader recompresses and the followers copy its bytes: every replica's
// segment holds the same zstd batches, though the producer sent gzip.
func TestRecompressCluster(t *testing.T) {
	heavy(t)
	c, _ := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := admin(t, c.Addrs())
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"compression.type": ptr("zstd")}, "recompressed-replicas"); err != nil {
		t.Fatal(err)
	}
	waitMetadata(t, adm, "recompressed-replicas", "three in sync replicas", func(td kadm.TopicDetail) bool {
		return td.Partitions[0].Leader > 0 && len(td.Partitions[0].ISR) == 3
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.ProducerBatchCompression(kgo.GzipCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := 0; i < 20; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "recompressed-replicas", Value: []byte(strings.Repeat(fmt.Sprint(i), 100))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	segment := func(id int32) []byte {
		b, _ := os.ReadFile(filepath.Join(c.Brokers[id].DataDir, "recompressed-replicas-0", fmt.Sprintf("%020d.log", 0)))
		return b
	}
	brokertest.WaitForState(t, 30*time.Second, "three identical replicas", func() (bool, string) {
		a, b, d := segment(1), segment(2), segment(3)
		return len(a) > 0 && bytes.Equal(a, b) && bytes.Equal(b, d), fmt.Sprintf("segment sizes %d, %d, %d", len(a), len(b), len(d))
	})
	sc := batch.NewScanner(segment(1))
	n := 0
	for sc.Next() {
		if codec := batch.Raw(sc.Batch()).Attributes().Codec(); codec != compress.Zstd {
			t.Errorf("a replicated batch is %s, want zstd", codec)
		}
		n++
	}
	if n != 20 {
		t.Errorf("%d batches in the segment, want the 20 produced", n)
	}
}

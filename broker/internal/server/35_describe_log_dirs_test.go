package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// producePerPartition writes n*(p+1) records of size bytes to each partition p of the topic.
func producePerPartition(t *testing.T, ctx context.Context, addrs []string, topic string, partitions int32, n, size int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for p := int32(0); p < partitions; p++ {
		for i := 0; i < n*int(p+1); i++ {
			r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("%0*d", size, i))}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// segmentBytes sums a partition's .log files in a data directory.
func segmentBytes(t *testing.T, dataDir, topic string, partition int32) int64 {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dataDir, fmt.Sprintf("%s-%d", topic, partition), "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// DescribeLogDirs (franz-go's DescribeAllLogDirs) reports the data directory and each
// partition's size as its segment files hold it; a filter returns only what it names.
func TestDescribeLogDirs(t *testing.T) {
	parallel(t)
	b := startBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := admin(t, []string{b.Addr})
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "sized"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "other"); err != nil {
		t.Fatal(err)
	}
	producePerPartition(t, ctx, []string{b.Addr}, "sized", 2, 50, 100)

	all, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 {
		t.Fatalf("%d brokers answered, want 1", len(all))
	}
	dataDir, _ := filepath.Abs(b.DataDir)
	for _, dirs := range all {
		if err := dirs.Error(); err != nil {
			t.Fatal(err)
		}
		d, ok := dirs[dataDir]
		if !ok || len(dirs) != 1 {
			t.Fatalf("log dirs %v, want only %s", dirs.Sorted(), dataDir)
		}
		if d.TotalBytes <= 0 || d.UsableBytes < 0 || d.UsableBytes > d.TotalBytes {
			t.Errorf("volume total %d usable %d", d.TotalBytes, d.UsableBytes)
		}
		for p := int32(0); p < 2; p++ {
			got, ok := dirs.LookupPartition("sized", p)
			want := segmentBytes(t, b.DataDir, "sized", p)
			if !ok || got.Size != want || got.OffsetLag != 0 || got.IsFuture {
				t.Errorf("sized-%d: %+v (found %v), want size %d (the .log files), lag 0", p, got, ok, want)
			}
		}
		if p0, _ := dirs.LookupPartition("sized", 0); p0.Size < 50*100 {
			t.Errorf("sized-0 size %d is less than the 5000 value bytes produced", p0.Size)
		}
		if got, ok := dirs.LookupPartition("other", 0); !ok || got.Size != 0 {
			t.Errorf("empty partition other-0: %+v (found %v), want size 0", got, ok)
		}
	}

	// Only what is asked for.
	some, err := adm.DescribeAllLogDirs(ctx, kadm.TopicsSet{"sized": {1: {}}})
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	some.Each(func(d kadm.DescribedLogDir) {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) { seen = append(seen, fmt.Sprintf("%s-%d", p.Topic, p.Partition)) })
	})
	if strings.Join(seen, ",") != "sized-1" {
		t.Errorf("filtered describe listed %v, want sized-1 only", seen)
	}

	// What this broker does not hold is left out, not an error, at the window's ends; an
	// empty (not null) list asks for nothing.
	raw := dial(t, b.Addr)
	for _, v := range []int16{0, 4} {
		for _, topics := range [][]wire.DescribeLogDirsRequestDescribableLogDirTopic{
			{{Topic: "nosuch", Partitions: []int32{0}}, {Topic: "sized", Partitions: []int32{9}}},
			{},
		} {
			resp := &wire.DescribeLogDirsResponse{}
			raw.roundTrip(&wire.DescribeLogDirsRequest{Topics: topics}, resp, v)
			if len(resp.Results) != 1 || resp.Results[0].ErrorCode != 0 || len(resp.Results[0].Topics) != 0 || resp.Results[0].LogDir != dataDir {
				t.Errorf("v%d, %d topics not held here: %+v", v, len(topics), resp)
			}
		}
	}
}

// Kafka's kafka-log-dirs.sh --describe reads Spool's answer.
func TestKafkaLogDirsTool(t *testing.T) {
	heavy(t)
	b := startBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	adm := admin(t, []string{b.Addr})
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "tool-dirs"); err != nil {
		t.Fatal(err)
	}
	producePerPartition(t, ctx, []string{b.Addr}, "tool-dirs", 1, 20, 200)
	out, err := runKafkaTool(t, ctx, "org.apache.kafka.tools.LogDirsCommand", "--bootstrap-server", b.Addr, "--describe", "--topic-list", "tool-dirs")
	if err != nil {
		t.Fatalf("kafka-log-dirs: %v\n%s", err, out)
	}
	// The tool prints its answer as one JSON line.
	var report struct {
		Brokers []struct {
			Broker  int32
			LogDirs []struct {
				LogDir     string
				Error      *string
				Partitions []struct {
					Partition string
					Size      int64
					OffsetLag int64
					IsFuture  bool
				}
			}
		}
	}
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "{") {
			line = l
		}
	}
	if err := json.Unmarshal([]byte(line), &report); err != nil {
		t.Fatalf("kafka-log-dirs printed no JSON report (%v):\n%s", err, out)
	}
	want := segmentBytes(t, b.DataDir, "tool-dirs", 0)
	dataDir, _ := filepath.Abs(b.DataDir)
	if len(report.Brokers) != 1 || len(report.Brokers[0].LogDirs) != 1 {
		t.Fatalf("kafka-log-dirs report: %s", line)
	}
	d := report.Brokers[0].LogDirs[0]
	if d.LogDir != dataDir || d.Error != nil || len(d.Partitions) != 1 ||
		d.Partitions[0].Partition != "tool-dirs-0" || d.Partitions[0].Size != want || want < 20*200 {
		t.Errorf("kafka-log-dirs report %s, want tool-dirs-0 of %d bytes in %s", line, want, dataDir)
	}
}

// In a cluster each broker reports its own replica; once the followers caught up, the three
// copies have the same size.
func TestDescribeLogDirsCluster(t *testing.T) {
	heavy(t)
	c, _ := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := admin(t, c.Addrs())
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "replicated-dirs"); err != nil {
		t.Fatal(err)
	}
	waitMetadata(t, adm, "replicated-dirs", "a leader", func(td kadm.TopicDetail) bool { return td.Partitions[0].Leader >= 0 })
	producePerPartition(t, ctx, c.Addrs(), "replicated-dirs", 1, 30, 100)
	brokertest.WaitForState(t, 30*time.Second, "three replicas of equal size", func() (bool, string) {
		all, err := adm.DescribeAllLogDirs(ctx, kadm.TopicsSet{"replicated-dirs": {0: {}}})
		if err != nil {
			return false, err.Error()
		}
		sizes := map[int32]int64{}
		all.Each(func(d kadm.DescribedLogDir) {
			d.Topics.Each(func(p kadm.DescribedLogDirPartition) { sizes[p.Broker] = p.Size })
		})
		return len(sizes) == 3 && sizes[1] == sizes[2] && sizes[2] == sizes[3] && sizes[1] >= 30*100, fmt.Sprint(sizes)
	})
	for id, br := range c.Brokers {
		if got := segmentBytes(t, br.DataDir, "replicated-dirs", 0); got < 30*100 {
			t.Errorf("broker %d holds %d bytes of replicated-dirs-0", id, got)
		}
	}
}

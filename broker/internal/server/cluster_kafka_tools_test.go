package server_test

// Kafka's own command-line tools (kafka-topics.sh, kafka-reassign-partitions.sh,
// kafka-leader-election.sh), run from Kafka's jars against a Spool cluster, with their output
// checked: an operator's scripts work unchanged.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spoolmq/spool/broker/brokertest"
)

// kafkaTool runs one of Kafka's tool classes (what the kafka-*.sh scripts run) and returns
// its output; it fails the test on a non-zero exit.
func kafkaTool(t *testing.T, class string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	raw, err := runKafkaTool(t, ctx, class, args...)
	// The JVM's logging frameworks complain of having no configuration: not the tool's output.
	var lines []string
	for _, l := range strings.SplitAfter(raw, "\n") {
		if !strings.HasPrefix(l, "log4j:") && !strings.HasPrefix(l, "SLF4J:") {
			lines = append(lines, l)
		}
	}
	out := strings.Join(lines, "")
	t.Logf("%s %s:\n%s", class[strings.LastIndex(class, ".")+1:], strings.Join(args, " "), out)
	if err != nil {
		t.Fatalf("%s %s: %v", class, strings.Join(args, " "), err)
	}
	return out
}

func TestClusterKafkaTools(t *testing.T) {
	longest(t)
	zk := brokertest.SharedZooKeeper(t)
	c := brokertest.StartCluster(t, 3, zk.Connect(""), clusterProps)
	const (
		topics   = "org.apache.kafka.tools.TopicCommand"
		reassign = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
		elect    = "org.apache.kafka.tools.LeaderElectionCommand"
	)
	bs := strings.Join(c.Addrs(), ",")
	out := kafkaTool(t, topics, "--bootstrap-server", bs, "--create", "--topic", "payments", "--partitions", "3", "--replication-factor", "3", "--config", "min.insync.replicas=2")
	if !strings.Contains(out, "Created topic payments.") {
		t.Fatalf("kafka-topics --create: %s", out)
	}
	adm := admin(t, c.Addrs())
	waitMetadata(t, adm, "payments", "a full ISR everywhere", func(td kadm.TopicDetail) bool {
		for _, p := range td.Partitions {
			if len(p.ISR) != 3 {
				return false
			}
		}
		return len(td.Partitions) == 3
	})
	out = kafkaTool(t, topics, "--bootstrap-server", bs, "--describe", "--topic", "payments")
	if !strings.Contains(out, "ReplicationFactor: 3") || strings.Count(out, "Isr: ") != 3 {
		t.Fatalf("kafka-topics --describe: %s", out)
	}
	out = kafkaTool(t, topics, "--bootstrap-server", bs, "--alter", "--topic", "payments", "--partitions", "4")
	waitMetadata(t, adm, "payments", "4 partitions", func(td kadm.TopicDetail) bool { return len(td.Partitions) == 4 })

	// A fourth broker; kafka-reassign-partitions generates a plan onto it and executes it.
	c.Add(t, 4, clusterProps)
	bs = strings.Join(c.Addrs(), ",")
	dir := t.TempDir()
	move := filepath.Join(dir, "move.json")
	if err := os.WriteFile(move, []byte(`{"version":1,"topics":[{"topic":"payments"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out = kafkaTool(t, reassign, "--bootstrap-server", bs, "--generate", "--topics-to-move-json-file", move, "--broker-list", "1,2,3,4")
	i := strings.Index(out, "Proposed partition reassignment configuration")
	if i < 0 {
		t.Fatalf("kafka-reassign-partitions --generate: %s", out)
	}
	proposed := strings.TrimSpace(out[i+len("Proposed partition reassignment configuration"):])
	if !strings.Contains(proposed, "4") {
		t.Fatalf("the proposal does not use broker 4: %s", proposed)
	}
	plan := filepath.Join(dir, "plan.json")
	if err := os.WriteFile(plan, []byte(proposed), 0o644); err != nil {
		t.Fatal(err)
	}
	out = kafkaTool(t, reassign, "--bootstrap-server", bs, "--execute", "--reassignment-json-file", plan)
	if !strings.Contains(out, "Successfully started partition reassignment") {
		t.Fatalf("kafka-reassign-partitions --execute: %s", out)
	}
	brokertest.WaitForState(t, 60*time.Second, "kafka-reassign-partitions --verify: complete", func() (bool, string) {
		out := kafkaTool(t, reassign, "--bootstrap-server", bs, "--verify", "--reassignment-json-file", plan)
		return strings.Count(out, "is completed") == 4, out
	})
	// The plan's placement, as every broker reports it once its metadata has caught up.
	var want map[int32][]int32
	var planned struct {
		Partitions []struct {
			Partition int32   `json:"partition"`
			Replicas  []int32 `json:"replicas"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(proposed), &planned); err != nil {
		t.Fatalf("the proposal: %v", err)
	}
	want = map[int32][]int32{}
	onFour := 0
	for _, p := range planned.Partitions {
		want[p.Partition] = p.Replicas
		if slices.Contains(p.Replicas, 4) {
			onFour++
		}
	}
	if onFour == 0 {
		t.Fatalf("the proposal puts nothing on broker 4: %s", proposed)
	}
	waitMetadata(t, adm, "payments", "the proposed placement", func(td kadm.TopicDetail) bool {
		for p, rs := range want {
			if !slices.Equal(td.Partitions[p].Replicas, rs) {
				return false
			}
		}
		return true
	})

	// kafka-leader-election puts the preferred leaders in place.
	out = kafkaTool(t, elect, "--bootstrap-server", bs, "--election-type", "PREFERRED", "--all-topic-partitions")
	// It names the partitions it moved, or none when every preferred leader leads already (the
	// moves above may have left them so): the metadata below is the check.
	if strings.Contains(out, "Error") || strings.TrimSpace(out) != "" && !regexp.MustCompile(`Successfully completed leader election|Valid replica already elected`).MatchString(out) {
		t.Fatalf("kafka-leader-election: %s", out)
	}
	waitMetadata(t, adm, "payments", "preferred leaders", func(td kadm.TopicDetail) bool {
		for _, p := range td.Partitions {
			if p.Leader != p.Replicas[0] {
				return false
			}
		}
		return true
	})

	// kafka-reassign-partitions --cancel: a move broker 4 cannot copy (its fetches are
	// dropped) is cancelled, and the partition keeps its replicas.
	for _, px := range c.Proxies {
		px.Drop(brokertest.DropFollowerFetches(4))
	}
	td := waitMetadata(t, adm, "payments", "led", func(kadm.TopicDetail) bool { return true })
	var stuck int32 = -1
	for _, p := range td.Partitions {
		if !slices.Contains(p.Replicas, 4) {
			stuck = p.Partition
		}
	}
	if stuck < 0 {
		t.Fatalf("every partition is on broker 4: %+v", td)
	}
	before := td.Partitions[stuck].Replicas
	cancelPlan := filepath.Join(dir, "cancel.json")
	target := fmt.Sprintf(`{"version":1,"partitions":[{"topic":"payments","partition":%d,"replicas":[4,%d,%d]}]}`, stuck, before[1], before[2])
	if err := os.WriteFile(cancelPlan, []byte(target), 0o644); err != nil {
		t.Fatal(err)
	}
	kafkaTool(t, reassign, "--bootstrap-server", bs, "--execute", "--reassignment-json-file", cancelPlan)
	out = kafkaTool(t, reassign, "--bootstrap-server", bs, "--cancel", "--reassignment-json-file", cancelPlan)
	if !strings.Contains(out, "Successfully cancelled partition reassignment") {
		t.Fatalf("kafka-reassign-partitions --cancel: %s", out)
	}
	for _, px := range c.Proxies {
		px.Drop(nil)
	}
	// Back on its original replicas; as in Kafka, the list keeps the order it had during
	// the move (the target's replicas first), so only the set is the same.
	sorted := func(ids []int32) []int32 { return slices.Sorted(slices.Values(ids)) }
	waitMetadata(t, adm, "payments", "the cancelled partition back on its replicas", func(td kadm.TopicDetail) bool {
		return slices.Equal(sorted(td.Partitions[stuck].Replicas), sorted(before))
	})

	// kafka-configs: a topic config set and described; a broker's dynamic configs described.
	const configs = "kafka.admin.ConfigCommand"
	out = kafkaTool(t, configs, "--bootstrap-server", bs, "--entity-type", "topics", "--entity-name", "payments", "--alter", "--add-config", "retention.ms=3600000")
	if !strings.Contains(out, "Completed updating config for topic payments.") {
		t.Fatalf("kafka-configs --alter: %s", out)
	}
	out = kafkaTool(t, configs, "--bootstrap-server", bs, "--entity-type", "topics", "--entity-name", "payments", "--describe")
	if !strings.Contains(out, "retention.ms=3600000") {
		t.Fatalf("kafka-configs --describe: %s", out)
	}
	// A broker's dynamic config (the replication throttle, as kafka-reassign-partitions sets
	// it), set, described and deleted.
	out = kafkaTool(t, configs, "--bootstrap-server", bs, "--entity-type", "brokers", "--entity-name", "1", "--alter", "--add-config", "leader.replication.throttled.rate=5000000")
	if !strings.Contains(out, "Completed updating config for broker 1.") {
		t.Fatalf("kafka-configs --alter of a broker: %s", out)
	}
	out = kafkaTool(t, configs, "--bootstrap-server", bs, "--entity-type", "brokers", "--entity-name", "1", "--describe")
	if !strings.Contains(out, "configs for broker 1 are:") || !strings.Contains(out, "leader.replication.throttled.rate=5000000") {
		t.Fatalf("kafka-configs --describe of a broker: %s", out)
	}
	kafkaTool(t, configs, "--bootstrap-server", bs, "--entity-type", "brokers", "--entity-name", "1", "--alter", "--delete-config", "leader.replication.throttled.rate")
	out = kafkaTool(t, configs, "--bootstrap-server", bs, "--entity-type", "brokers", "--entity-name", "1", "--describe")
	if strings.Contains(out, "leader.replication.throttled.rate=5000000") {
		t.Fatalf("kafka-configs --delete-config of a broker: %s", out)
	}

	// kafka-consumer-groups: a group's lag described, then its offsets reset.
	const groups = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
	// Records only for the lag to show: acks=1, and a bounded wait, so that a partition still
	// regaining its ISR after the cancelled move above neither stalls nor hangs the test.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DefaultProduceTopic("payments"),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		// The client's own account (metadata it refused, retries) goes into the test's log, so
		// a failure here says what the client saw.
		kgo.WithLogger(kgo.BasicLogger(testWriter{t}, kgo.LogLevelInfo, nil)))
	if err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithTimeout(context.Background(), time.Minute)
	defer pcancel()
	for i := 0; i < 40; i++ {
		if err := cl.ProduceSync(pctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			td := waitMetadata(t, adm, "payments", "any answer", func(kadm.TopicDetail) bool { return true })
			for _, p := range td.Partitions {
				t.Logf("payments-%d: leader %d epoch %d replicas %v isr %v err %v", p.Partition, p.Leader, p.LeaderEpoch, p.Replicas, p.ISR, p.Err)
			}
			t.Fatalf("producing record %d: %v", i, err)
		}
	}
	cl.Close()
	commit := kadm.Offsets{}
	for p := int32(0); p < 4; p++ {
		commit.Add(kadm.Offset{Topic: "payments", Partition: p, At: 1})
	}
	if _, err := adm.CommitOffsets(context.Background(), "billing", commit); err != nil {
		t.Fatal(err)
	}
	out = kafkaTool(t, groups, "--bootstrap-server", bs, "--describe", "--group", "billing")
	if !strings.Contains(out, "LAG") || strings.Count(out, "payments") != 4 {
		t.Fatalf("kafka-consumer-groups --describe: %s", out)
	}
	out = kafkaTool(t, groups, "--bootstrap-server", bs, "--reset-offsets", "--group", "billing", "--topic", "payments", "--to-earliest", "--execute")
	if !strings.Contains(out, "NEW-OFFSET") || len(regexp.MustCompile(`billing\s+payments\s+\d\s+0\s`).FindAllString(out, -1)) < 4 {
		t.Fatalf("kafka-consumer-groups --reset-offsets: %s", out)
	}
	offs, err := adm.FetchOffsets(context.Background(), "billing")
	if err != nil {
		t.Fatal(err)
	}
	offs.Each(func(o kadm.OffsetResponse) {
		if o.At != 0 {
			t.Errorf("after the reset %s-%d is at %d", o.Topic, o.Partition, o.At)
		}
	})

	out = kafkaTool(t, topics, "--bootstrap-server", bs, "--delete", "--topic", "payments")
	brokertest.WaitForState(t, 30*time.Second, "payments deleted", func() (bool, string) {
		md, err := adm.Metadata(context.Background())
		if err != nil {
			return false, err.Error()
		}
		_, ok := md.Topics["payments"]
		return !ok, ""
	})
}

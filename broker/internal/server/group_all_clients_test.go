package server_test

import (
	"github.com/spoolmq/spool/broker/brokertest"

	"bufio"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// allClientsPos is where a produced record landed, as the producer's acks say.
type allClientsPos struct {
	partition int32
	offset    int64
}

// TestGroupAllSevenClients is issue 4's headline test: one group on a 6-partition topic with
// a member from each of kcat (librdkafka -G), confluent-kafka, kafka-python, franz-go (range
// beside cooperative-sticky), sarama, segmentio/kafka-go and the Java client, all converging on
// range. Every record is consumed exactly once, by the member DescribeGroups says owns its
// partition; each partition has exactly one owner; the committed offsets end at the log end.
func TestGroupAllSevenClients(t *testing.T) {
	heavy(t)
	kcat := brokertest.NeedTool(t, "/usr/bin/kcat", "kcat")
	brokertest.NeedPython(t, "kafka", "python3-kafka")
	brokertest.NeedPython(t, "confluent_kafka", "python3-confluent-kafka")
	java, cp := buildJavaMember(t)

	b := startBroker(t, map[string]string{"group.initial.rebalance.delay.ms": "0"})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const topic, group, partitions, n = "all7", "all7-group", 6, 700
	createTopicKadm(t, ctx, b.Addr, topic, partitions)
	adm := kadm.NewClient(mustClient(t, b.Addr))
	l := newLedger()
	// Member names are the client ids they show in DescribeGroups.
	names := []string{"kcat", "confluent-kafka", "kafka-python", "fz", "sarama", "kafka-go", "java"}

	// kcat: librdkafka's balanced consumer, which can only auto-commit; it prints
	// partition, offset and value, checked against the producer's acks below.
	kcatPos := map[string]allClientsPos{}
	kc := exec.Command(kcat, "-b", b.Addr, "-G", group, "-u", "-q", "-f", "%p %o %s\n",
		"-X", "client.id=kcat", "-X", "session.timeout.ms=6000", "-X", "heartbeat.interval.ms=300",
		"-X", "auto.commit.interval.ms=100", "-X", "partition.assignment.strategy=range,roundrobin",
		"-o", "beginning", topic)
	kout, err := kc.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	kc.Stderr = testWriter{t}
	if err := kc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kc.Process.Kill(); kc.Wait() })
	go func() {
		sc := bufio.NewScanner(kout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 3 {
				t.Errorf("kcat printed %q", sc.Text())
				continue
			}
			p, _ := strconv.Atoi(f[0])
			o, _ := strconv.ParseInt(f[1], 10, 64)
			l.mu.Lock()
			kcatPos[f[2]] = allClientsPos{int32(p), o}
			l.mu.Unlock()
			l.record(group, "kcat", f[2])
		}
	}()

	l.startPythonMember(t, b.Addr, "confluent-kafka", topic, group)
	l.startPythonMember(t, b.Addr, "kafka-python", topic, group)
	l.startMember(t, ctx, b.Addr, group, "fz", topic, kgo.Balancers(kgo.RangeBalancer(), kgo.CooperativeStickyBalancer()))

	l.startSaramaMember(t, ctx, b.Addr, group, topic)
	l.startKafkaGoMember(t, ctx, b.Addr, group, topic)

	l.startJavaMember(t, java, cp, b.Addr, topic, group, "java", "range")

	// All seven converge on range, and the six partitions are split among them.
	var stable kadm.DescribedGroup
	waitDescribed(t, ctx, adm, group, "seven members on range", func(d kadm.DescribedGroup) bool {
		stable = d
		return d.State == "Stable" && len(d.Members) == len(names) && d.Protocol == "range"
	})
	owner := ownersOf(t, stable, topic, partitions, names)

	// Keyed records so every partition gets some; the acks say where each landed.
	pos := map[string]allClientsPos{}
	var vals []string
	{
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic(topic))
		if err != nil {
			t.Fatal(err)
		}
		var recs []*kgo.Record
		for i := 0; i < n; i++ {
			v := fmt.Sprintf("all7-%05d", i)
			vals = append(vals, v)
			recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprintf("key-%d", i%37)), Value: []byte(v)})
		}
		err = cl.ProduceSync(ctx, recs...).FirstErr()
		cl.Close()
		if err != nil {
			t.Fatal(err)
		}
		perPartition := map[int32]int{}
		for _, r := range recs {
			pos[string(r.Value)] = allClientsPos{r.Partition, r.Offset}
			perPartition[r.Partition]++
		}
		if len(perPartition) != partitions {
			t.Fatalf("keyed records landed on partitions %v, want all %d", perPartition, partitions)
		}
	}

	l.waitFor(t, ctx, "all records consumed", func() bool { return l.consumedOnce(t, group, vals) })
	l.mu.Lock()
	who := map[string]int{}
	for _, v := range vals {
		m, p := l.by[group+"/"+v], pos[v]
		who[m]++
		if m != owner[p.partition] {
			t.Errorf("%s (partition %d offset %d) consumed by %s, but %s owns the partition", v, p.partition, p.offset, m, owner[p.partition])
		}
		if kp, ok := kcatPos[v]; ok && kp != p {
			t.Errorf("kcat reported %s at %+v, the producer's ack says %+v", v, kp, p)
		}
	}
	if extra := len(l.consumed[group]) - len(vals); extra != 0 {
		t.Errorf("the group consumed %d values that were never produced", extra)
	}
	l.mu.Unlock()
	t.Logf("consumed by %v", who)

	// The committed offsets catch up with the log end offsets (kcat auto-commits every 100 ms).
	for {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		offs, err := adm.FetchOffsets(ctx, group)
		done := err == nil
		var diff []string
		ends.Each(func(e kadm.ListedOffset) {
			c, ok := offs.Lookup(topic, e.Partition)
			if !ok || c.Err != nil || c.At != e.Offset {
				done = false
				diff = append(diff, fmt.Sprintf("p%d committed %d end %d", e.Partition, c.At, e.Offset))
			}
		})
		if done {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("committed offsets never reached the log end: %v (%v)", diff, err)
		}
		select { // polling the broker's view; no event to wait on
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
		}
	}

	// Still the same stable generation: same members, same single owner of each partition.
	final, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	d := final[group]
	if d.State != "Stable" || d.Protocol != "range" {
		t.Fatalf("group at the end: state %s protocol %s", d.State, d.Protocol)
	}
	if got := ownersOf(t, d, topic, partitions, names); !slices.Equal(got, owner) {
		t.Fatalf("owners changed while consuming: %v, then %v", owner, got)
	}
	var before, after []string
	for _, m := range stable.Members {
		before = append(before, m.MemberID)
	}
	for _, m := range d.Members {
		after = append(after, m.MemberID)
	}
	slices.Sort(before)
	slices.Sort(after)
	if !slices.Equal(before, after) {
		t.Fatalf("members changed while consuming: %v, then %v", before, after)
	}
}

// ownersOf decodes each member's consumer assignment and returns the client id owning each
// partition, failing unless the partitions are split among names with no overlap and no gap.
func ownersOf(t *testing.T, d kadm.DescribedGroup, topic string, partitions int32, names []string) []string {
	t.Helper()
	owner := make([]string, partitions)
	seen := map[string]bool{}
	for _, m := range d.Members {
		if !slices.Contains(names, m.ClientID) || seen[m.ClientID] {
			t.Fatalf("unexpected member %q (client id %q) among %v", m.MemberID, m.ClientID, names)
		}
		seen[m.ClientID] = true
		a, ok := m.Assigned.AsConsumer()
		if !ok {
			t.Fatalf("member %s (%s): assignment is not a consumer assignment", m.MemberID, m.ClientID)
		}
		for _, at := range a.Topics {
			if at.Topic != topic {
				t.Fatalf("%s assigned topic %q", m.ClientID, at.Topic)
			}
			for _, p := range at.Partitions {
				if p < 0 || p >= partitions {
					t.Fatalf("%s assigned partition %d of %d", m.ClientID, p, partitions)
				}
				if owner[p] != "" {
					t.Fatalf("partition %d owned by both %s and %s", p, owner[p], m.ClientID)
				}
				owner[p] = m.ClientID
			}
		}
	}
	for p, o := range owner {
		if o == "" {
			t.Fatalf("partition %d has no owner: %v", p, owner)
		}
	}
	return owner
}

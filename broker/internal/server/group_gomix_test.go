package server_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// saramaGroupHandler records what a sarama group member consumed, after committing it.
type saramaGroupHandler struct {
	l           *groupLedger
	group, name string
}

func (h saramaGroupHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h saramaGroupHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h saramaGroupHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		sess.MarkMessage(msg, "")
		sess.Commit()
		h.l.record(h.group, h.name, string(msg.Value))
	}
	return nil
}

func (l *groupLedger) record(group, name, v string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.consumed[group] == nil {
		l.consumed[group] = map[string]int{}
	}
	l.consumed[group][v]++
	l.by[group+"/"+v] = name
	l.notifyLocked()
}

// A group of franz-go, sarama (JoinGroup v7 era) and segmentio/kafka-go (JoinGroup v2,
// SyncGroup/Heartbeat/LeaveGroup v0, OffsetCommit v2, OffsetFetch v1) members on range.
func TestGroupSaramaKafkaGoFranzGoMixed(t *testing.T) {
	parallel(t)
	b := startBroker(t, map[string]string{"group.initial.rebalance.delay.ms": "0"})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	const topic, group = "gomix", "gogroup"
	createTopicKadm(t, ctx, b.Addr, topic, 6)
	adm := kadm.NewClient(mustClient(t, b.Addr))
	l := newLedger()
	l.startMember(t, ctx, b.Addr, group, "fz", topic, kgo.Balancers(kgo.RangeBalancer()))

	l.startSaramaMember(t, ctx, b.Addr, group, topic)
	stopKafkaGo := l.startKafkaGoMember(t, ctx, b.Addr, group, topic)

	waitDescribed(t, ctx, adm, group, "three members on range", func(d kadm.DescribedGroup) bool {
		return d.State == "Stable" && len(d.Members) == 3 && d.Protocol == "range"
	})
	l.waitFor(t, ctx, "franz-go owning two partitions", func() bool { return len(l.owned["fz"]) == 2 })
	vals := produceValues(t, ctx, b.Addr, topic, "g", 600)
	l.waitFor(t, ctx, "all consumed", func() bool { return l.consumedOnce(t, group, vals) })
	who := l.countBy(group, vals)
	if who["fz"] != 200 || who["sarama"] != 200 || who["kafka-go"] != 200 {
		t.Fatalf("consumed by %v, want 200 each", who)
	}
	stopKafkaGo() // leaves the group (LeaveGroup v0)
	waitDescribed(t, ctx, adm, group, "two members", func(d kadm.DescribedGroup) bool {
		return d.State == "Stable" && len(d.Members) == 2
	})
	l.waitFor(t, ctx, "franz-go owning three partitions", func() bool { return len(l.owned["fz"]) == 3 })
	vals2 := produceValues(t, ctx, b.Addr, topic, "h", 300)
	l.waitFor(t, ctx, "rest consumed", func() bool { return l.consumedOnce(t, group, vals2) })
}

// A static member (group.instance.id) that restarts gets its partitions back without a
// rebalance: the other member revokes nothing and the generation stays.
func TestGroupFranzGoStaticMemberRestart(t *testing.T) {
	parallel(t)
	b := startBroker(t, map[string]string{"group.initial.rebalance.delay.ms": "0"})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const topic, group = "statictopic", "staticgroup"
	createTopicKadm(t, ctx, b.Addr, topic, 4)
	adm := kadm.NewClient(mustClient(t, b.Addr))
	l := newLedger()
	opts := []kgo.Opt{kgo.Balancers(kgo.RangeBalancer()), kgo.SessionTimeout(10 * time.Second)}
	l.startMember(t, ctx, b.Addr, group, "dyn", topic, opts...)
	stop := l.startMember(t, ctx, b.Addr, group, "st1", topic, append(opts, kgo.InstanceID("static-1"))...)
	l.waitFor(t, ctx, "two owners", func() bool {
		return l.exclusiveOwners([]string{"dyn", "st1"}, 4) && len(l.owned["dyn"]) == 2
	})
	l.mu.Lock()
	before := map[int32]bool{}
	for p := range l.owned["st1"] {
		before[p] = true
	}
	dynRevokes := l.revokes["dyn"]
	l.mu.Unlock()
	stop() // a static member's Close does not leave the group
	waitDescribed(t, ctx, adm, group, "the static member still in the group", func(d kadm.DescribedGroup) bool {
		return d.State == "Stable" && len(d.Members) == 2
	})
	l.startMember(t, ctx, b.Addr, group, "st1-again", topic, append(opts, kgo.InstanceID("static-1"))...)
	l.waitFor(t, ctx, "the restarted static member owning its old partitions", func() bool {
		if len(l.owned["st1-again"]) != len(before) {
			return false
		}
		for p := range before {
			if !l.owned["st1-again"][p] {
				return false
			}
		}
		return true
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.revokes["dyn"] != dynRevokes || len(l.owned["dyn"]) != 2 {
		t.Fatalf("the dynamic member was disturbed: revokes %d -> %d, owns %v", dynRevokes, l.revokes["dyn"], l.owned["dyn"])
	}
}

// startSaramaMember runs a sarama group member ("sarama", range, manual commits) until the
// test ends.
func (l *groupLedger) startSaramaMember(t *testing.T, ctx context.Context, addr, group, topic string) {
	t.Helper()
	cfg := saramaConfig(sarama.V3_6_0_0)
	cfg.ClientID = "sarama"
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	cfg.Consumer.Group.Session.Timeout = 6 * time.Second
	cfg.Consumer.Group.Heartbeat.Interval = 300 * time.Millisecond
	// sarama commits on the connection its fetches long-poll on, and responses leave in
	// request order (as Kafka's do): a short fetch wait keeps per-record commits quick.
	cfg.Consumer.MaxWaitTime = 20 * time.Millisecond
	sg, err := sarama.NewConsumerGroup([]string{addr}, group, cfg)
	if err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithCancel(ctx)
	sdone := make(chan struct{})
	go func() {
		defer close(sdone)
		for sctx.Err() == nil {
			if err := sg.Consume(sctx, []string{topic}, saramaGroupHandler{l, group, "sarama"}); err != nil && sctx.Err() == nil {
				t.Logf("sarama consume: %v", err)
			}
		}
	}()
	go func() {
		for range sg.Errors() {
		}
	}()
	t.Cleanup(func() { scancel(); <-sdone; sg.Close() })
}

// startKafkaGoMember runs a segmentio/kafka-go group member ("kafka-go", range, a commit per
// record); stop leaves the group, and the test's end stops it too.
func (l *groupLedger) startKafkaGoMember(t *testing.T, ctx context.Context, addr, group, topic string) (stop func()) {
	t.Helper()
	kr := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, GroupID: group, Topic: topic,
		Dialer:      &kafka.Dialer{ClientID: "kafka-go", Timeout: 10 * time.Second, DualStack: true},
		StartOffset: kafka.FirstOffset, GroupBalancers: []kafka.GroupBalancer{kafka.RangeGroupBalancer{}},
		SessionTimeout: 6 * time.Second, HeartbeatInterval: 300 * time.Millisecond, MaxWait: 200 * time.Millisecond})
	kctx, kcancel := context.WithCancel(ctx)
	kdone := make(chan struct{})
	go func() {
		defer close(kdone)
		for {
			m, err := kr.FetchMessage(kctx)
			if err != nil {
				return
			}
			if err := kr.CommitMessages(kctx, m); err != nil {
				return
			}
			l.record(group, "kafka-go", string(m.Value))
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { kcancel(); <-kdone; kr.Close() }) }
	t.Cleanup(stop)
	return stop
}

// countBy counts, per member name, how many of values the group consumed.
func (l *groupLedger) countBy(group string, values []string) map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	who := map[string]int{}
	for _, v := range values {
		who[l.by[group+"/"+v]]++
	}
	return who
}

package spool_test

import (
	"bufio"
	"context"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/protocol-spec/wire"
	spool "github.com/spoolmq/spool/sdk-go"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// needTool returns path, or fails under CI=true and skips otherwise when it is missing.
// describedOwners asks the coordinator for group's members and decodes their assignments:
// client id → partitions of topic. It returns nil unless the group is stable with the protocol.
func describedOwners(t *testing.T, cl *spool.Client, group, topic, protocol string) map[string][]int32 {
	t.Helper()
	req := &wire.DescribeGroupsRequest{Groups: []string{group}}
	resp := &wire.DescribeGroupsResponse{}
	if err := cl.Request(testCtx(t), req, resp); err != nil || len(resp.Groups) != 1 {
		return nil
	}
	g := resp.Groups[0]
	if g.GroupState != "Stable" || g.ProtocolData != protocol {
		return nil
	}
	out := map[string][]int32{}
	for _, m := range g.Members {
		a := kmsg.NewConsumerMemberAssignment()
		if err := a.ReadFrom(m.MemberAssignment); err != nil {
			t.Fatalf("member %s (%s): assignment: %v", m.MemberId, m.ClientId, err)
		}
		for _, at := range a.Topics {
			if at.Topic == topic {
				out[m.ClientId] = append(out[m.ClientId], at.Partitions...)
			}
		}
		if _, ok := out[m.ClientId]; !ok {
			out[m.ClientId] = nil
		}
	}
	return out
}

// TestGroupMixedClients: two SDK members, a franz-go member and kcat (librdkafka) share one
// group on our broker, with range and with cooperative-sticky. Each of the four ends up owning
// two of eight partitions, every record is consumed exactly once, by the member that owns its
// partition.
func TestGroupMixedClients(t *testing.T) {
	kcat := brokertest.NeedTool(t, "/usr/bin/kcat", "kcat")
	for _, c := range []struct {
		balancer string
		franz    kgo.GroupBalancer
	}{{spool.BalancerRange, kgo.RangeBalancer()}, {spool.BalancerCooperativeSticky, kgo.CooperativeStickyBalancer()}} {
		t.Run(c.balancer, func(t *testing.T) {
			t.Parallel()
			testMixedGroup(t, kcat, c.balancer, c.franz)
		})
	}
}

func testMixedGroup(t *testing.T, kcat, balancer string, franzBalancer kgo.GroupBalancer) {
	addr := brokertest.Start(t, brokertest.Options{Props: map[string]string{"group.initial.rebalance.delay.ms": "0"}}).Addr
	admin := newClient(t, addr)
	topic := createTopic(t, admin, 8)
	group := groupName()
	l := newLedger()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	cmd := exec.CommandContext(ctx, kcat, "-b", addr, "-G", group, "-u", "-q", "-f", "%s\n",
		"-X", "client.id=kcat", "-X", "session.timeout.ms=10000", "-X", "heartbeat.interval.ms=300",
		"-X", "partition.assignment.strategy="+balancer, "-X", "auto.offset.reset=earliest", topic)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	kcatDone := make(chan struct{})
	go func() {
		defer close(kcatDone)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			l.mu.Lock()
			l.consumed[sc.Text()] = append(l.consumed[sc.Text()], "kcat")
			l.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cmd.Process.Kill(); <-kcatDone; cmd.Wait() })

	fz, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("franz"), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.Balancers(franzBalancer), kgo.HeartbeatInterval(300*time.Millisecond), kgo.FetchMaxWait(100*time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	fzDone := make(chan struct{})
	go func() {
		defer close(fzDone)
		for {
			fs := fz.PollFetches(ctx)
			if fz.Context().Err() != nil || ctx.Err() != nil {
				return
			}
			l.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) { l.consumed[string(r.Value)] = append(l.consumed[string(r.Value)], "franz") })
			l.mu.Unlock()
		}
	}()
	t.Cleanup(func() { fz.Close(); <-fzDone })

	groupMember(t, addr, group, "a", l, spool.ConsumeTopics(topic), spool.Balancers(balancer))
	groupMember(t, addr, group, "b", l, spool.ConsumeTopics(topic), spool.Balancers(balancer))

	var owners map[string][]int32
	waitCond(t, func() bool {
		owners = describedOwners(t, admin, group, topic, balancer)
		if len(owners) != 4 {
			return false
		}
		var all []int32
		for _, ps := range owners {
			if len(ps) != 2 {
				return false
			}
			all = append(all, ps...)
		}
		slices.Sort(all)
		return slices.Equal(all, []int32{0, 1, 2, 3, 4, 5, 6, 7})
	})
	for _, who := range []string{"kcat", "franz", "a", "b"} {
		if len(owners[who]) != 2 {
			t.Fatalf("owners %v: %s owns no two partitions", owners, who)
		}
	}
	// The SDK members learn their share (SyncGroup, then OnAssigned) a moment after the
	// coordinator reports it.
	waitCond(t, func() bool {
		return slices.Equal(l.ownedBy("a", topic), slices.Sorted(slices.Values(owners["a"]))) &&
			slices.Equal(l.ownedBy("b", topic), slices.Sorted(slices.Values(owners["b"])))
	})

	produceTo(t, addr, topic, "m", 8, 50)
	var vals []string
	ownerOf := map[string]string{}
	for who, ps := range owners {
		for _, p := range ps {
			for i := range 50 {
				v := "m-" + itoa(int(p)) + "-" + itoa(i)
				vals = append(vals, v)
				ownerOf[v] = who
			}
		}
	}
	waitCond(t, func() bool { return l.all(vals) })
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, v := range vals {
		if got := l.consumed[v]; len(got) != 1 || got[0] != ownerOf[v] {
			t.Errorf("%s consumed by %v, want once by %s", v, got, ownerOf[v])
		}
	}
}

func itoa(i int) string { return string(strconv.AppendInt(nil, int64(i), 10)) }

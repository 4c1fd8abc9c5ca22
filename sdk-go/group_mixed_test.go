package spool_test

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/protocol-spec/wire"
	spool "github.com/spoolmq/spool/sdk-go"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// share is one member's part of a topic as the group coordinator describes it.
type share struct {
	memberID, clientID string
	partitions         []int32 // sorted
}

// describedShares asks the coordinator for group's members and decodes their assignments of
// topic, ordered by member id (the order the range and roundrobin assignors deal in). It
// returns nil unless the group is stable with the protocol.
func describedShares(t *testing.T, cl *spool.Client, group, topic, protocol string) []share {
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
	var out []share
	for _, m := range g.Members {
		a := kmsg.NewConsumerMemberAssignment()
		if err := a.ReadFrom(m.MemberAssignment); err != nil {
			t.Fatalf("member %s (%s): assignment: %v", m.MemberId, m.ClientId, err)
		}
		s := share{memberID: m.MemberId, clientID: m.ClientId}
		for _, at := range a.Topics {
			if at.Topic == topic {
				s.partitions = append(s.partitions, at.Partitions...)
			}
		}
		slices.Sort(s.partitions)
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b share) int { return strings.Compare(a.memberID, b.memberID) })
	return out
}

// waitShares waits until members members share all n partitions of topic in a stable group.
// A cooperative group passes through stable generations that withhold partitions on the way.
func waitShares(t *testing.T, cl *spool.Client, group, topic, balancer string, members int, n int32) []share {
	t.Helper()
	var shares []share
	waitCond(t, func() bool {
		shares = describedShares(t, cl, group, topic, balancer)
		total := 0
		for _, s := range shares {
			total += len(s.partitions)
		}
		return len(shares) == members && total == int(n)
	})
	return shares
}

// checkShape reports whether shares split partitions 0..n-1 completely and disjointly, each
// member getting n/len(shares) or one more, in the balancer's shape: range deals the k-th
// member (by member id) a contiguous block, roundrobin every len(shares)-th partition from k;
// cooperative-sticky promises only the balance.
func checkShape(shares []share, n int32, balancer string) error {
	owner := map[int32]string{}
	per, extra := int(n)/len(shares), int(n)%len(shares)
	for k, s := range shares {
		for _, p := range s.partitions {
			if prev, ok := owner[p]; ok || p < 0 || p >= n {
				return fmt.Errorf("partition %d given to %s and %q (out of 0..%d?)", p, s.clientID, prev, n-1)
			}
			owner[p] = s.clientID
		}
		if len(s.partitions) != per && !(extra > 0 && len(s.partitions) == per+1) {
			return fmt.Errorf("%s owns %v: unbalanced over %d members", s.clientID, s.partitions, len(shares))
		}
		var want []int32
		switch balancer {
		case spool.BalancerRange:
			start := per*k + min(k, extra)
			for p := start; p < start+len(s.partitions); p++ {
				want = append(want, int32(p))
			}
		case spool.BalancerRoundRobin:
			for p := k; p < int(n); p += len(shares) {
				want = append(want, int32(p))
			}
		default:
			want = s.partitions
		}
		if !slices.Equal(s.partitions, want) {
			return fmt.Errorf("%s, member %d of %d by id, owns %v, want %v from %s", s.clientID, k, len(shares), s.partitions, want, balancer)
		}
	}
	if len(owner) != int(n) {
		return fmt.Errorf("%d of %d partitions assigned", len(owner), n)
	}
	return nil
}

// mixedBalancers are the assignors every client of the mixed group speaks, by their protocol
// names (which are also librdkafka's partition.assignment.strategy values).
var mixedBalancers = []struct {
	name  string
	franz func() kgo.GroupBalancer
}{
	{spool.BalancerRange, kgo.RangeBalancer},
	{spool.BalancerRoundRobin, kgo.RoundRobinBalancer},
	{spool.BalancerCooperativeSticky, kgo.CooperativeStickyBalancer},
}

// TestGroupMixedClients: two SDK members, a franz-go member and kcat (librdkafka) share one
// group, with each assignor, on our broker and on kfake. The four split eight partitions two
// each, in the assignor's shape whoever leads, and every record is consumed exactly once, by
// the member that owns its partition.
func TestGroupMixedClients(t *testing.T) {
	t.Parallel()
	kcat := brokertest.NeedTool(t, "/usr/bin/kcat", "kcat")
	for _, b := range mixedBalancers {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			eachGroupTarget(t, func(t *testing.T, addr string) { testMixedGroup(t, addr, kcat, b.name, b.franz()) })
		})
	}
}

func testMixedGroup(t *testing.T, addr, kcat, balancer string, franzBalancer kgo.GroupBalancer) {
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

	shares := waitShares(t, admin, group, topic, balancer, 4, 8)
	if err := checkShape(shares, 8, balancer); err != nil {
		t.Fatal(err)
	}
	clients := map[string]bool{}
	for _, s := range shares {
		clients[s.clientID] = true
	}
	if len(clients) != 4 || !clients["kcat"] || !clients["franz"] || !clients["a"] || !clients["b"] {
		t.Fatalf("members %v, want kcat, franz, a and b", clients)
	}
	consumedByOwners(t, addr, topic, l, shares, "a", "b")
}

// consumedByOwners produces 50 records to each partition that shares name and checks that
// each is consumed once, by the member that owns its partition. The SDK members (client ids
// sdk) learn their share (SyncGroup, then OnAssigned) a moment after the coordinator reports
// it, so that is awaited first.
func consumedByOwners(t *testing.T, addr, topic string, l *ledger, shares []share, sdk ...string) {
	t.Helper()
	waitCond(t, func() bool {
		for _, s := range shares {
			if slices.Contains(sdk, s.clientID) && !slices.Equal(l.ownedBy(s.clientID, topic), s.partitions) {
				return false
			}
		}
		return true
	})
	var n int32
	for _, s := range shares {
		n += int32(len(s.partitions))
	}
	produceTo(t, addr, topic, "m", n, 50)
	var vals []string
	ownerOf := map[string]string{}
	for _, s := range shares {
		for _, p := range s.partitions {
			for i := range 50 {
				v := "m-" + itoa(int(p)) + "-" + itoa(i)
				vals = append(vals, v)
				ownerOf[v] = s.clientID
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

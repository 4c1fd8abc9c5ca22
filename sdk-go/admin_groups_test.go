package spool_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
	spool "github.com/spoolmq/spool/sdk-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceEach writes n records to every partition of topic.
func produceEach(t *testing.T, cl *spool.Client, topic string, partitions int32, n int) {
	t.Helper()
	ctx := testCtx(t)
	for p := range partitions {
		for range n {
			r := &spool.Record{Topic: topic, Partition: p, Value: []byte("v")}
			cl.Produce(ctx, r, func(_ *spool.Record, err error) {
				if err != nil {
					t.Error(err)
				}
			})
		}
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

func listed(t *testing.T, ad *spool.Admin, group string) (spool.GroupListing, bool) {
	t.Helper()
	gs, err := ad.ListGroups(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gs {
		if g.GroupID == group {
			return g, true
		}
	}
	return spool.GroupListing{}, false
}

// TestAdminGroupOffsets walks an admin-only group through commit, fetch, lag, offset delete
// and group delete.
func TestAdminGroupOffsets(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		ctx := testCtx(t)
		cl := newClient(t, addr, spool.WithPartitioner(spool.ManualPartitioner()))
		ad := cl.Admin()
		topic := createTopic(t, cl, 3)
		produceEach(t, cl, topic, 3, 4)

		if err := ad.CommitGroupOffsets(ctx, "offsets", map[string]map[int32]int64{topic: {0: 1, 1: 3}}); err != nil {
			t.Fatal(err)
		}
		got, err := ad.FetchOffsets(ctx, "offsets")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || len(got[topic]) != 2 || got[topic][0].Offset != 1 || got[topic][1].Offset != 3 {
			t.Fatalf("fetched %+v", got)
		}
		if _, ok := listed(t, ad, "offsets"); !ok {
			t.Fatal("the group is not listed")
		}
		ds, err := ad.DescribeGroups(ctx, "offsets", "no-such-group")
		if err != nil {
			t.Fatal(err)
		}
		if ds[0].Err != nil || ds[0].State != "Empty" || len(ds[0].Members) != 0 {
			t.Fatalf("described %+v", ds[0])
		}
		if !errors.Is(ds[1].Err, wire.ErrGroupIdNotFound) {
			t.Fatalf("unknown group described as %+v", ds[1])
		}

		lag, err := ad.GroupLag(ctx, "offsets")
		if err != nil {
			t.Fatal(err)
		}
		want := []spool.PartitionLag{{Topic: topic, Partition: 0, Committed: 1, End: 4, Lag: 3}, {Topic: topic, Partition: 1, Committed: 3, End: 4, Lag: 1}}
		if !slices.Equal(lag, want) {
			t.Fatalf("lag %+v, want %+v", lag, want)
		}

		res, err := ad.DeleteGroupOffsets(ctx, "offsets", map[string][]int32{topic: {0}})
		if err != nil || res[topic][0] != nil {
			t.Fatalf("delete offsets: %v %v", res, err)
		}
		if got, _ := ad.FetchOffsets(ctx, "offsets"); len(got[topic]) != 1 || got[topic][1].Offset != 3 {
			t.Fatalf("after deleting partition 0: %+v", got)
		}
		if _, err := ad.DeleteGroupOffsets(ctx, "no-such-group", map[string][]int32{topic: {0}}); !errors.Is(err, wire.ErrGroupIdNotFound) {
			t.Fatalf("delete offsets of an unknown group: %v", err)
		}
		if _, err := ad.GroupLag(ctx, "no-such-group"); !errors.Is(err, wire.ErrGroupIdNotFound) {
			t.Fatalf("lag of an unknown group: %v", err)
		}

		del, err := ad.DeleteGroups(ctx, "offsets", "no-such-group")
		if err != nil {
			t.Fatal(err)
		}
		if del["offsets"] != nil || !errors.Is(del["no-such-group"], wire.ErrGroupIdNotFound) {
			t.Fatalf("delete groups: %v", del)
		}
		if _, ok := listed(t, ad, "offsets"); ok {
			t.Fatal("a deleted group is still listed")
		}
		if got, _ := ad.FetchOffsets(ctx, "offsets"); len(got) != 0 {
			t.Fatalf("a deleted group still has offsets %+v", got)
		}
	})
}

// startKgoMember runs a franz-go group member consuming topic until the test ends or stop
// is called; stop leaves the group.
func startKgoMember(t *testing.T, addr, group, topic string) (stop func()) {
	t.Helper()
	m, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ClientID("kgo-member"), kgo.HeartbeatInterval(100*time.Millisecond), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			m.PollFetches(ctx)
		}
	}()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		<-done
		m.Close() // leaves the group
	}
	t.Cleanup(stop)
	return stop
}

// TestAdminGroupWithMembers checks what an active group refuses and how it is described.
func TestAdminGroupWithMembers(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		ctx := testCtx(t)
		cl := newClient(t, addr)
		ad := cl.Admin()
		topic := createTopic(t, cl, 3)
		other := createTopic(t, cl, 1)
		stop := startKgoMember(t, addr, "active", topic)

		var d spool.GroupDescription
		waitCond(t, func() bool {
			ds, err := ad.DescribeGroups(ctx, "active")
			if err != nil {
				t.Fatal(err)
			}
			d = ds[0]
			return d.State == "Stable" && len(d.Members) == 1 && len(d.Members[0].Assignment[topic]) == 3
		})
		m := d.Members[0]
		if d.ProtocolType != "consumer" || d.Protocol == "" || m.ClientID != "kgo-member" || m.MemberID == "" || m.AssignmentErr != nil {
			t.Fatalf("described %+v", d)
		}
		slices.Sort(m.Assignment[topic])
		if !slices.Equal(m.Assignment[topic], []int32{0, 1, 2}) {
			t.Fatalf("assignment %v", m.Assignment)
		}
		if g, ok := listed(t, ad, "active"); !ok || g.ProtocolType != "consumer" {
			t.Fatalf("listed %+v %v", g, ok)
		}

		err := ad.CommitGroupOffsets(ctx, "active", map[string]map[int32]int64{topic: {0: 1}})
		if !errors.Is(err, spool.ErrGroupActive) {
			t.Fatalf("admin commit to an active group: %v", err)
		}
		del, err := ad.DeleteGroups(ctx, "active")
		if err != nil || !errors.Is(del["active"], wire.ErrNonEmptyGroup) {
			t.Fatalf("delete an active group: %v %v", del, err)
		}
		lag, err := ad.GroupLag(ctx, "active")
		if err != nil || len(lag) != 3 || lag[0].MemberID != m.MemberID || lag[0].End != 0 {
			t.Fatalf("lag of an active group: %+v %v", lag, err)
		}

		// The member's own commits (none yet) are protected while it consumes the topic;
		// another topic's are not.
		res, err := ad.DeleteGroupOffsets(ctx, "active", map[string][]int32{topic: {0}, other: {0}})
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(res[topic][0], wire.ErrGroupSubscribedToTopic) || res[other][0] != nil {
			t.Fatalf("delete offsets of an active group: %v", res)
		}

		// Once the member has left, the administrator may move the group.
		stop()
		waitCond(t, func() bool {
			ds, err := ad.DescribeGroups(ctx, "active")
			return err == nil && ds[0].State == "Empty"
		})
		if err := ad.CommitGroupOffsets(ctx, "active", map[string]map[int32]int64{topic: {0: 0}}); err != nil {
			t.Fatalf("admin commit after the member left: %v", err)
		}
	})
}

// TestAdminGroupCoordinatorMoves sends group requests whose coordinator first answers
// NOT_COORDINATOR and COORDINATOR_LOAD_IN_PROGRESS: the SDK looks the coordinator up again and
// retries. kfake runs three brokers; our broker is single-node, so there the lookup finds the
// same node again (a coordinator truly moving needs cluster mode), and the refused requests
// were really served first, so the retries repeat them.
func TestAdminGroupCoordinatorMoves(t *testing.T) {
	t.Parallel()
	t.Run("kfake", func(t *testing.T) {
		t.Parallel()
		c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.DefaultNumPartitions(2))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		testCoordinatorMoves(t, kfakeFaults(c))
	})
	t.Run("spool", func(t *testing.T) {
		t.Parallel()
		testCoordinatorMoves(t, relayFaults(t, targets[0].start(t)))
	})
}

func testCoordinatorMoves(t *testing.T, f *faults) {
	cl := newClient(t, f.addr, f.opts...)
	ad := cl.Admin()
	ctx := testCtx(t)
	topic := createTopic(t, cl, 2)
	if err := ad.CommitGroupOffsets(ctx, "moving", map[string]map[int32]int64{topic: {0: 7, 1: 8}}); err != nil {
		t.Fatal(err)
	}
	f.failNext(wire.KeyOffsetDelete, wire.ErrNotCoordinator.Code)
	f.failNext(wire.KeyOffsetFetch, wire.ErrCoordinatorLoadInProgress.Code)
	finds := f.requests(wire.KeyFindCoordinator)
	got, err := ad.FetchOffsets(ctx, "moving")
	if err != nil || got[topic][0].Offset != 7 {
		t.Fatalf("fetch after COORDINATOR_LOAD_IN_PROGRESS: %+v %v", got, err)
	}
	res, err := ad.DeleteGroupOffsets(ctx, "moving", map[string][]int32{topic: {0}})
	if err != nil || res[topic][0] != nil {
		t.Fatalf("delete after NOT_COORDINATOR: %v %v", res, err)
	}
	if n := f.injected.Load(); n != 2 {
		t.Fatalf("%d requests refused, want 2", n)
	}
	if f.requests(wire.KeyFindCoordinator) == finds {
		t.Fatal("NOT_COORDINATOR did not make the SDK look the coordinator up again")
	}
	if got, _ := ad.FetchOffsets(ctx, "moving"); len(got[topic]) != 1 || got[topic][1].Offset != 8 {
		t.Fatalf("after delete: %+v", got)
	}
}

// TestAdminListGroupsPartial lists the groups of a three-broker kfake cluster in which broker
// 1 refuses ListGroups: the groups coordinated by the other brokers come back, with an error
// that names broker 1 and carries its error code. Our broker is single-node, so a partial
// answer cannot happen there; it proves the other half, that the only broker's real
// ListGroups response carrying an error is an error naming it, not an empty list.
func TestAdminListGroupsPartial(t *testing.T) {
	t.Run("kfake", func(t *testing.T) { t.Parallel(); testListGroupsPartial(t) })
	t.Run("spool", func(t *testing.T) { t.Parallel(); testListGroupsRefused(t) })
}

func testListGroupsPartial(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.DefaultNumPartitions(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl := newClient(t, c.ListenAddrs()[0])
	ad := cl.Admin()
	ctx := testCtx(t)
	topic := createTopic(t, cl, 1)
	for i := range 12 {
		if err := ad.CommitGroupOffsets(ctx, fmt.Sprintf("partial-%d", i), map[string]map[int32]int64{topic: {0: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := ad.ListGroups(ctx)
	if err != nil || len(all) != 12 {
		t.Fatalf("with every broker up: %d groups, %v; want 12", len(all), err)
	}
	onOne := 0
	for _, g := range all {
		if g.Coordinator == 1 {
			onOne++
		}
	}
	if onOne == 0 || onOne == len(all) {
		t.Fatalf("%d of %d groups on broker 1; the test needs some on it and some elsewhere", onOne, len(all))
	}

	c.ControlKey(int16(kmsg.ListGroups), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if c.CurrentNode() != 1 {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
		resp.ErrorCode = wire.ErrClusterAuthorizationFailed.Code
		return resp, nil, true
	})
	got, err := ad.ListGroups(ctx)
	if !errors.Is(err, wire.ErrClusterAuthorizationFailed) || !strings.Contains(err.Error(), "broker 1") {
		t.Fatalf("error %v, want CLUSTER_AUTHORIZATION_FAILED naming broker 1", err)
	}
	if len(got) != len(all)-onOne {
		t.Fatalf("%d groups with broker 1 failing, want %d", len(got), len(all)-onOne)
	}
	for _, g := range got {
		if g.Coordinator == 1 {
			t.Fatalf("group %s listed from the failing broker", g.GroupID)
		}
	}
}

func testListGroupsRefused(t *testing.T) {
	f := relayFaults(t, targets[0].start(t))
	cl := newClient(t, f.addr, f.opts...)
	ad := cl.Admin()
	ctx := testCtx(t)
	topic := createTopic(t, cl, 1)
	for i := range 3 {
		if err := ad.CommitGroupOffsets(ctx, fmt.Sprintf("refused-%d", i), map[string]map[int32]int64{topic: {0: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := ad.ListGroups(ctx)
	if err != nil || len(all) != 3 {
		t.Fatalf("before the refusal: %d groups, %v; want 3", len(all), err)
	}
	f.failNext(wire.KeyListGroups, wire.ErrClusterAuthorizationFailed.Code)
	got, err := ad.ListGroups(ctx)
	if want := fmt.Sprintf("broker %d", all[0].Coordinator); !errors.Is(err, wire.ErrClusterAuthorizationFailed) || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want CLUSTER_AUTHORIZATION_FAILED naming %s", err, want)
	}
	if len(got) != 0 {
		t.Fatalf("%d groups listed from the only broker, which refused", len(got))
	}
	if n := f.injected.Load(); n != 1 {
		t.Fatalf("%d refusals injected, want 1", n)
	}
}

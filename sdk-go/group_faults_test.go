package spool_test

import (
	"context"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
	spool "github.com/spoolmq/spool/sdk-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// faults injects error responses into a broker. kfake answers in the coordinator's place
// (ControlKey), so the request is never served; our broker serves it and a rewriteRelay
// changes its real response, which also proves that the SDK's retry of an already served
// request is harmless.
type faults struct {
	addr string
	opts []spool.Opt // routes a client through the injector
	// failNext makes the next response of API key carry code.
	failNext func(key, code int16)
	// requests counts the requests of API key that reached the broker.
	requests func(key int16) int64
	injected atomic.Int64
}

// faultTargets are the SDK targets, each behind a fault injector.
var faultTargets = []struct {
	name  string
	start func(t *testing.T, props map[string]string) *faults
}{
	{"spool", func(t *testing.T, props map[string]string) *faults {
		return relayFaults(t, brokerTargets(props)[0].start(t))
	}},
	{"kfake", func(t *testing.T, _ map[string]string) *faults {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(3))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return kfakeFaults(c)
	}},
}

// eachFaultTarget runs fn as a subtest against every broker behind a fault injector.
func eachFaultTarget(t *testing.T, props map[string]string, fn func(t *testing.T, f *faults)) {
	for _, tg := range faultTargets {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			fn(t, tg.start(t, props))
		})
	}
}

func kfakeFaults(c *kfake.Cluster) *faults {
	f := &faults{addr: c.ListenAddrs()[0]}
	var mu sync.Mutex
	counts := map[int16]int64{}
	c.ControlKey(-1, func(req kmsg.Request) (kmsg.Response, error, bool) {
		mu.Lock()
		counts[req.Key()]++
		mu.Unlock()
		return nil, nil, false
	})
	f.requests = func(key int16) int64 { mu.Lock(); defer mu.Unlock(); return counts[key] }
	f.failNext = func(key, code int16) {
		c.ControlKey(key, func(req kmsg.Request) (kmsg.Response, error, bool) {
			f.injected.Add(1)
			resp := req.ResponseKind()
			resp.SetVersion(req.GetVersion())
			setKmsgError(req, resp, code)
			return resp, nil, true
		})
	}
	return f
}

// setKmsgError builds kfake's stand-in answer to req: code wherever the response carries one.
func setKmsgError(req kmsg.Request, resp kmsg.Response, code int16) {
	switch r := resp.(type) {
	case *kmsg.JoinGroupResponse:
		r.ErrorCode = code
	case *kmsg.SyncGroupResponse:
		r.ErrorCode = code
	case *kmsg.HeartbeatResponse:
		r.ErrorCode = code
	case *kmsg.OffsetDeleteResponse:
		r.ErrorCode = code
	case *kmsg.OffsetFetchResponse:
		r.ErrorCode = code
	case *kmsg.ListGroupsResponse:
		r.ErrorCode = code
	case *kmsg.OffsetCommitResponse:
		for _, t := range req.(*kmsg.OffsetCommitRequest).Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			r.Topics = append(r.Topics, rt)
		}
	}
}

func relayFaults(t *testing.T, addr string) *faults {
	f := &faults{addr: addr}
	var mu sync.Mutex
	counts := map[int16]int64{}
	armed := map[int16][]int16{}
	rr := startRewriteRelay(t, addr, rewriteHooks{
		request: func(key, _ int16, _ wire.Message) {
			mu.Lock()
			counts[key]++
			mu.Unlock()
		},
		response: func(key, _ int16, resp wire.Message) bool {
			mu.Lock()
			codes := armed[key]
			if len(codes) == 0 {
				mu.Unlock()
				return false
			}
			armed[key] = codes[1:]
			mu.Unlock()
			f.injected.Add(1)
			setWireError(resp, codes[0])
			return true
		},
	})
	f.opts = []spool.Opt{spool.Dialer(rr.dial)}
	f.requests = func(key int16) int64 { mu.Lock(); defer mu.Unlock(); return counts[key] }
	f.failNext = func(key, code int16) { mu.Lock(); armed[key] = append(armed[key], code); mu.Unlock() }
	return f
}

// setWireError puts code into a real response wherever it carries an error, over whatever
// the broker answered.
func setWireError(resp wire.Message, code int16) {
	switch r := resp.(type) {
	case *wire.JoinGroupResponse:
		r.ErrorCode = code
	case *wire.SyncGroupResponse:
		r.ErrorCode = code
	case *wire.HeartbeatResponse:
		r.ErrorCode = code
	case *wire.OffsetDeleteResponse:
		r.ErrorCode = code
	case *wire.OffsetFetchResponse:
		r.ErrorCode = code
	case *wire.ListGroupsResponse:
		r.ErrorCode = code
	case *wire.OffsetCommitResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				r.Topics[i].Partitions[j].ErrorCode = code
			}
		}
	}
}

// TestGroupCoordinatorErrors: the member gets through COORDINATOR_NOT_AVAILABLE on JoinGroup,
// REBALANCE_IN_PROGRESS on SyncGroup, NOT_COORDINATOR on a heartbeat (it looks the coordinator
// up again) and on a commit (retried), and ILLEGAL_GENERATION on a heartbeat (its partitions
// are lost, then it rejoins and gets them back). On our broker the refused JoinGroup was
// served, so the group holds a member the client never learnt of and, as Kafka does, waits
// for it to expire (the 6 s session timeout) before the first generation completes.
func TestGroupCoordinatorErrors(t *testing.T) {
	t.Parallel()
	eachFaultTarget(t, map[string]string{"group.initial.rebalance.delay.ms": "0"}, func(t *testing.T, f *faults) {
		f.failNext(wire.KeyJoinGroup, wire.ErrCoordinatorNotAvailable.Code)
		f.failNext(wire.KeySyncGroup, wire.ErrRebalanceInProgress.Code)
		topic := createTopic(t, newClient(t, f.addr), 3)
		l := newLedger()
		cl := groupMember(t, f.addr, groupName(), "m", l, append([]spool.Opt{spool.ConsumeTopics(topic), spool.DisableAutoCommit()}, f.opts...)...)
		waitCond(t, func() bool { return l.count("m") == 3 })

		before := f.requests(wire.KeyFindCoordinator)
		f.failNext(wire.KeyHeartbeat, wire.ErrNotCoordinator.Code)
		waitCond(t, func() bool { return f.requests(wire.KeyFindCoordinator) > before })

		f.failNext(wire.KeyOffsetCommit, wire.ErrNotCoordinator.Code)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := cl.CommitOffsets(ctx, map[string]map[int32]int64{topic: {0: 0}}); err != nil {
			t.Fatalf("commit through NOT_COORDINATOR: %v", err)
		}

		f.failNext(wire.KeyHeartbeat, wire.ErrIllegalGeneration.Code)
		waitCond(t, func() bool { return len(l.memberEvents("m")) == 3 && l.count("m") == 3 })
		if got, want := l.memberEvents("m"), []string{"assigned:3", "lost:3", "assigned:3"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("callbacks %v, want %v", got, want)
		}
		if n := f.injected.Load(); n != 5 {
			t.Fatalf("%d injected errors reached the member, want 5", n)
		}
		if _, gen := cl.GroupMemberID(); gen < 2 {
			t.Fatalf("generation %d after a rejoin", gen)
		}
	})
}

package spool_test

import (
	"context"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	spool "github.com/spoolmq/spool/sdk-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// failOnce makes the next request of key fail with code, answered by kfake in place of the
// group coordinator; injected counts the errors sent.
func failOnce(c *kfake.Cluster, injected *atomic.Int64, key int16, code int16) {
	c.ControlKey(key, func(req kmsg.Request) (kmsg.Response, error, bool) {
		injected.Add(1)
		resp := req.ResponseKind()
		resp.SetVersion(req.GetVersion())
		switch r := resp.(type) {
		case *kmsg.JoinGroupResponse:
			r.ErrorCode = code
		case *kmsg.SyncGroupResponse:
			r.ErrorCode = code
		case *kmsg.HeartbeatResponse:
			r.ErrorCode = code
		case *kmsg.OffsetCommitResponse:
			ocr := req.(*kmsg.OffsetCommitRequest)
			for _, t := range ocr.Topics {
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
		return resp, nil, true
	})
}

// TestGroupCoordinatorErrors: the member gets through COORDINATOR_NOT_AVAILABLE on JoinGroup,
// REBALANCE_IN_PROGRESS on SyncGroup, NOT_COORDINATOR on a heartbeat (it looks the coordinator
// up again) and on a commit (retried), and ILLEGAL_GENERATION on a heartbeat (its partitions
// are lost, then it rejoins and gets them back). kfake injects the errors.
func TestGroupCoordinatorErrors(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(3))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	addr := c.ListenAddrs()[0]
	var finds, injected atomic.Int64
	c.ControlKey(int16(kmsg.FindCoordinator), func(kmsg.Request) (kmsg.Response, error, bool) {
		finds.Add(1)
		return nil, nil, false
	})
	failOnce(c, &injected, int16(kmsg.JoinGroup), 15) // COORDINATOR_NOT_AVAILABLE
	failOnce(c, &injected, int16(kmsg.SyncGroup), 27) // REBALANCE_IN_PROGRESS
	admin := newClient(t, addr)
	topic := createTopic(t, admin, 3)
	l := newLedger()
	cl := groupMember(t, addr, groupName(), "m", l, spool.ConsumeTopics(topic), spool.DisableAutoCommit())
	waitCond(t, func() bool { return l.count("m") == 3 })

	before := finds.Load()
	failOnce(c, &injected, int16(kmsg.Heartbeat), 16) // NOT_COORDINATOR
	waitCond(t, func() bool { return finds.Load() > before })

	failOnce(c, &injected, int16(kmsg.OffsetCommit), 16)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.CommitOffsets(ctx, map[string]map[int32]int64{topic: {0: 0}}); err != nil {
		t.Fatalf("commit through NOT_COORDINATOR: %v", err)
	}

	failOnce(c, &injected, int16(kmsg.Heartbeat), 22) // ILLEGAL_GENERATION
	waitCond(t, func() bool { return len(l.memberEvents("m")) == 3 && l.count("m") == 3 })
	if got, want := l.memberEvents("m"), []string{"assigned:3", "lost:3", "assigned:3"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("callbacks %v, want %v", got, want)
	}
	if n := injected.Load(); n != 5 {
		t.Fatalf("%d injected errors reached the cluster, want 5", n)
	}
	if _, gen := cl.GroupMemberID(); gen < 2 {
		t.Fatalf("generation %d after a rejoin", gen)
	}
}

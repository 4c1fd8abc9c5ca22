package zk_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/broker/internal/cluster"
	zkstore "github.com/spoolmq/spool/broker/internal/cluster/zk"
)

// syncBuffer is a log destination safe for the store's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestManyPartitionsElectedInBatches: the controller writes the states of a new topic's
// partitions in a few fenced multis, not one round trip each, and says so in one info line per
// batch (issue 28). A batch that one stale write spoils is written again partition by partition:
// the others land, the stale one is left for the next pass.
func TestManyPartitionsElectedInBatches(t *testing.T) {
	z := brokertest.StartZooKeeper(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var logs syncBuffer
	s, err := zkstore.Open(ctx, zkstore.Config{Connect: z.Connect("/batch"), SessionTimeout: 6 * time.Second, ConnectTimeout: 10 * time.Second,
		Self: cluster.Broker{NodeID: 1, Host: "127.0.0.1", Port: 1},
		Log:  slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	brokertest.WaitFor(t, 20*time.Second, "broker 1 the controller", func() bool { return s.ControllerID() == 1 })
	const n = 600
	began := time.Now()
	if _, err := s.CreateTopic(ctx, "wide", n, 1, nil, false); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d partitions led in %v", n, time.Since(began))
	perPartition := strings.Count(logs.String(), `msg="partition leader elected"`)
	batches := strings.Count(logs.String(), `msg="partition states written by the controller"`)
	if perPartition != 0 || batches == 0 || batches > 2*(n/250+1) {
		t.Fatalf("info log: %d lines per partition, %d per batch; want none per partition and a few batches:\n%s", perPartition, batches, logs.String())
	}

	before, _ := s.Topic("wide")
	const stale = 17
	if err := s.BumpEpochsPass("wide", stale); err != nil {
		t.Fatalf("a pass with one stale write: %v", err)
	}
	brokertest.WaitForState(t, 20*time.Second, "every partition but the stale one at the next epoch", func() (bool, string) {
		after, _ := s.Topic("wide")
		for i, p := range after.Partitions {
			want := before.Partitions[i].LeaderEpoch + 1
			if int32(i) == stale {
				want--
			}
			if p.LeaderEpoch != want {
				return false, fmt.Sprintf("partition %d at epoch %d, want %d", p.Index, p.LeaderEpoch, want)
			}
		}
		return true, ""
	})
}

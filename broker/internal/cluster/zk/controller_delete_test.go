package zk_test

import (
	"context"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/broker/internal/cluster"
	zkstore "github.com/spoolmq/spool/broker/internal/cluster/zk"
)

// A controller pass that still sees a topic the previous pass deleted (its image had not
// caught up) finds nothing left to do: no error, so no warning in the controller's log.
func TestDeletedTopicPassedAgain(t *testing.T) {
	zk := brokertest.StartZooKeeper(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := zkstore.Open(ctx, zkstore.Config{Connect: zk.Connect("/delete"), SessionTimeout: 6 * time.Second, ConnectTimeout: 10 * time.Second,
		Self: cluster.Broker{NodeID: 1, Host: "127.0.0.1", Port: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	brokertest.WaitFor(t, 20*time.Second, "broker 1 the controller", func() bool { return s.ControllerID() == 1 })
	if _, err := s.CreateTopic(ctx, "gone", 2, 1, nil, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteTopic(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	for pass := 1; pass <= 2; pass++ {
		if err := s.DeleteTopicPass("gone"); err != nil {
			t.Errorf("pass %d over the deleted topic: %v", pass, err)
		}
	}
}

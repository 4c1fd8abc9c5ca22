package cluster

import (
	"context"
	"errors"
	"testing"
)

func TestEmbeddedPersistsTopics(t *testing.T) {
	dir := t.TempDir()
	self := Broker{NodeID: 7, Host: "127.0.0.1", Port: 9092}
	e, err := OpenEmbedded(dir, self)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	changes := e.Changes()
	a, err := e.CreateTopic(ctx, "orders", 3, 1, map[string]string{"retention.ms": "1000"}, false)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-changes:
	default:
		t.Error("Changes was not signalled by a create")
	}
	if a.ID == [16]byte{} {
		t.Error("topic id is zero")
	}
	if len(a.Partitions) != 3 || a.Partitions[2].Leader != 7 {
		t.Errorf("partitions = %+v", a.Partitions)
	}
	if _, err := e.CreateTopic(ctx, "orders", 1, 1, nil, false); !errors.Is(err, ErrTopicExists) {
		t.Errorf("duplicate create: %v", err)
	}
	if _, err := e.CreateTopic(ctx, "ord_ers", 1, 1, nil, false); err != nil {
		t.Fatal(err)
	}
	// '.' and '_' collide in metric names, so Kafka refuses ord.ers next to ord_ers.
	if _, err := e.CreateTopic(ctx, "ord.ers", 1, 1, nil, false); !errors.Is(err, ErrInvalidTopic) {
		t.Errorf("colliding name: %v", err)
	}
	if _, err := e.CreateTopic(ctx, "bad name", 1, 1, nil, false); !errors.Is(err, ErrInvalidTopic) {
		t.Errorf("bad name: %v", err)
	}
	if _, err := e.CreateTopic(ctx, "zero", 0, 1, nil, false); !errors.Is(err, ErrInvalidPartitions) {
		t.Errorf("zero partitions: %v", err)
	}
	if _, err := e.CreateTopic(ctx, "rf3", 1, 3, nil, false); !errors.Is(err, ErrInvalidReplication) {
		t.Errorf("rf 3 on one node: %v", err)
	}
	if _, err := e.CreateTopic(ctx, "dry", 1, 1, nil, true); err != nil {
		t.Errorf("validate only: %v", err)
	}
	if _, ok := e.Topic("dry"); ok {
		t.Error("validate-only created the topic")
	}
	if err := e.CreatePartitions(ctx, "orders", 5, false); err != nil {
		t.Fatal(err)
	}
	if err := e.CreatePartitions(ctx, "orders", 4, false); !errors.Is(err, ErrInvalidPartitions) {
		t.Errorf("shrinking: %v", err)
	}
	if err := e.SetTopicConfigs(ctx, "orders", map[string]string{"cleanup.policy": "compact"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.DeleteTopic(ctx, "ord_ers"); err != nil {
		t.Fatal(err)
	}

	// Reopen: everything is still there, with the same ids.
	e2, err := OpenEmbedded(dir, self)
	if err != nil {
		t.Fatal(err)
	}
	if e2.ClusterID() != e.ClusterID() {
		t.Errorf("cluster id changed: %s -> %s", e.ClusterID(), e2.ClusterID())
	}
	got, ok := e2.Topic("orders")
	if !ok || got.ID != a.ID || len(got.Partitions) != 5 || got.Configs["cleanup.policy"] != "compact" || got.Configs["retention.ms"] != "" {
		t.Errorf("after reopen: %+v", got)
	}
	if byID, ok := e2.TopicByID(a.ID); !ok || byID.Name != "orders" {
		t.Errorf("TopicByID: %+v %v", byID, ok)
	}
	if _, ok := e2.Topic("ord_ers"); ok {
		t.Error("deleted topic came back")
	}

	// Another node id must not take over this directory.
	if _, err := OpenEmbedded(dir, Broker{NodeID: 8}); err == nil {
		t.Error("a different node id opened the data directory")
	}
}

func TestValidTopicName(t *testing.T) {
	for name, want := range map[string]bool{"a": true, "a.b_c-D9": true, "": false, ".": false, "..": false, "a b": false, "é": false, string(make([]byte, 250)): false} {
		if got := ValidTopicName(name); got != want {
			t.Errorf("ValidTopicName(%q) = %v", name, got)
		}
	}
}

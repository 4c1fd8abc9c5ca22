package cluster_test

// One contract suite for every metadata store: the embedded single-node store and the
// ZooKeeper store (against a real ZooKeeper), so both keep the same promises to the broker.

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/broker/internal/cluster"
	"github.com/spoolmq/spool/broker/internal/cluster/zk"
	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/scram"
)

// store opens a store; reopen opens another view of the same state (a restart, or a second
// broker of the cluster).
type storeFactory struct {
	name string
	open func(t *testing.T) (md cluster.Metadata, reopen func() cluster.Metadata)
}

var self = cluster.Broker{NodeID: 1, Host: "127.0.0.1", Port: 9092}

func factories() []storeFactory {
	return []storeFactory{
		{"embedded", func(t *testing.T) (cluster.Metadata, func() cluster.Metadata) {
			dir := t.TempDir()
			open := func() cluster.Metadata {
				md, err := cluster.OpenEmbedded(dir, self)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { md.Close() })
				return md
			}
			first := open()
			return first, func() cluster.Metadata { first.Close(); return open() }
		}},
		{"zookeeper", func(t *testing.T) (cluster.Metadata, func() cluster.Metadata) {
			z := brokertest.StartZooKeeper(t)
			open := func(b cluster.Broker, start bool) cluster.Metadata {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				s, err := zk.Open(ctx, zk.Config{Connect: z.Connect("/contract"), SessionTimeout: 6 * time.Second, Self: b,
					LivenessTimeout: 2 * time.Second, ProbeInterval: 100 * time.Millisecond, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				if start {
					if err := s.Start(); err != nil {
						t.Fatal(err)
					}
				}
				return s
			}
			// A second store that does not register: another broker's view of the same state.
			return open(self, true), func() cluster.Metadata { return open(cluster.Broker{NodeID: 2, Host: "127.0.0.1", Port: 9093}, false) }
		}},
	}
}

func TestMetadataStoreContract(t *testing.T) {
	for _, f := range factories() {
		t.Run(f.name, func(t *testing.T) {
			md, reopen := f.open(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if md.ClusterID() == "" {
				t.Fatal("no cluster id")
			}
			waitFor(t, "this broker listed", func() bool { return len(md.Brokers()) == 1 && md.Brokers()[0].NodeID == self.NodeID })

			changed := md.Changes()
			tp, err := md.CreateTopic(ctx, "orders", 3, 1, map[string]string{"retention.ms": "1000"}, false)
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-changed:
			default:
				t.Error("Changes not closed by a topic creation")
			}
			got, ok := md.Topic("orders")
			if !ok || got.ID != tp.ID || len(got.Partitions) != 3 || got.Configs["retention.ms"] != "1000" {
				t.Fatalf("created topic reads back as %+v", got)
			}
			for _, p := range got.Partitions {
				if p.Leader != self.NodeID || !slices.Equal(p.Replicas, []int32{self.NodeID}) || !slices.Equal(p.ISR, []int32{self.NodeID}) || p.LeaderEpoch < 0 {
					t.Fatalf("partition %+v: want led by %d, alone in its ISR", p, self.NodeID)
				}
			}
			if byID, ok := md.TopicByID(tp.ID); !ok || byID.Name != "orders" {
				t.Fatalf("TopicByID: %+v %v", byID, ok)
			}
			if vt, err := md.CreateTopic(ctx, "dry", 2, 1, nil, true); err != nil || len(vt.Partitions) != 2 {
				t.Fatalf("validate only: %+v %v", vt, err)
			}
			if _, ok := md.Topic("dry"); ok {
				t.Fatal("validate only created the topic")
			}

			for _, c := range []struct {
				name       string
				partitions int32
				rf         int16
				want       error
			}{
				{"orders", 1, 1, cluster.ErrTopicExists},
				{"bad/name", 1, 1, cluster.ErrInvalidTopic},
				{"zero", 0, 1, cluster.ErrInvalidPartitions},
				{"wide", 1, 2, cluster.ErrInvalidReplication},
			} {
				if _, err := md.CreateTopic(ctx, c.name, c.partitions, c.rf, nil, false); !errors.Is(err, c.want) {
					t.Errorf("CreateTopic(%s, %d, %d) = %v, want %v", c.name, c.partitions, c.rf, err, c.want)
				}
			}
			if _, err := md.CreateTopic(ctx, "a.b", 1, 1, nil, false); err != nil {
				t.Fatal(err)
			}
			if _, err := md.CreateTopic(ctx, "a_b", 1, 1, nil, false); !errors.Is(err, cluster.ErrInvalidTopic) {
				t.Errorf("a_b next to a.b: %v, want ErrInvalidTopic", err)
			}

			if err := md.SetTopicConfigs(ctx, "orders", map[string]string{"cleanup.policy": "compact"}); err != nil {
				t.Fatal(err)
			}
			if got, _ := md.Topic("orders"); got.Configs["cleanup.policy"] != "compact" || got.Configs["retention.ms"] != "" {
				t.Fatalf("configs after replacement: %v", got.Configs)
			}
			if err := md.CreatePartitions(ctx, "orders", 5, false); err != nil {
				t.Fatal(err)
			}
			if got, _ := md.Topic("orders"); len(got.Partitions) != 5 || got.Partitions[4].Leader != self.NodeID {
				t.Fatalf("after growing: %+v", got.Partitions)
			}
			if err := md.CreatePartitions(ctx, "orders", 2, false); !errors.Is(err, cluster.ErrInvalidPartitions) {
				t.Errorf("shrinking: %v", err)
			}
			if err := md.CreatePartitions(ctx, "nope", 2, false); !errors.Is(err, cluster.ErrUnknownTopic) {
				t.Errorf("growing an unknown topic: %v", err)
			}

			p0, _ := md.Topic("orders")
			if _, err := md.AlterISR(ctx, "orders", 0, p0.Partitions[0].LeaderEpoch, []int32{self.NodeID, 7}, p0.Partitions[0].Version+1); !errors.Is(err, cluster.ErrStaleState) {
				t.Errorf("AlterISR at a stale version: %v, want ErrStaleState", err)
			}

			// Dynamic broker configs: a write reads back, closes Changes, and is listed by
			// DynamicBrokerConfigs (the default's and this broker's always, empty ones too).
			changed = md.Changes()
			if err := md.SetBrokerConfigs(ctx, "", map[string]string{"log.retention.ms": "5000"}); err != nil {
				t.Fatal(err)
			}
			if err := md.SetBrokerConfigs(ctx, "1", map[string]string{"log.cleaner.threads": "2"}); err != nil {
				t.Fatal(err)
			}
			select {
			case <-changed:
			default:
				t.Error("Changes not closed by a dynamic broker config change")
			}
			if got := md.BrokerConfigs("1"); got["log.cleaner.threads"] != "2" {
				t.Errorf("BrokerConfigs(1) = %v", got)
			}
			dyn := md.DynamicBrokerConfigs()
			if dyn[""]["log.retention.ms"] != "5000" || dyn["1"]["log.cleaner.threads"] != "2" {
				t.Errorf("DynamicBrokerConfigs = %v, want the default's and broker 1's", dyn)
			}
			dyn[""]["log.retention.ms"] = "1" // a copy: the store keeps its own
			if err := md.SetBrokerConfigs(ctx, "1", nil); err != nil {
				t.Fatal(err)
			}
			dyn = md.DynamicBrokerConfigs()
			if c, ok := dyn["1"]; !ok || len(c) != 0 || dyn[""]["log.retention.ms"] != "5000" {
				t.Errorf("after clearing broker 1's: %v, want broker 1 listed with none and the default's kept", dyn)
			}

			// ACLs and SCRAM credentials written through one view are read by the other
			// (another broker, or the node after a restart).
			acls, ok := md.(security.ACLStore)
			if !ok {
				t.Fatalf("%T keeps no ACLs", md)
			}
			acl := security.Binding{Pattern: security.Pattern{Type: security.ResourceTopic, Name: "orders", PatternType: security.PatternLiteral},
				Entry: security.Entry{Principal: "User:alice", Host: "*", Operation: security.OpRead, Permission: security.Allow}}
			if err := acls.UpdateACLs([]security.ACLUpdate{{Pattern: acl.Pattern, Update: func(cur []security.Entry) []security.Entry { return append(cur, acl.Entry) }}}); err != nil {
				t.Fatal(err)
			}
			creds, ok := md.(security.ScramStore)
			if !ok {
				t.Fatalf("%T keeps no SCRAM credentials", md)
			}
			cred := security.ScramCredential{Salt: []byte("salt"), StoredKey: []byte("stored-key-32-bytes-long-enough!"), ServerKey: []byte("server-key-32-bytes-long-enough!"), Iterations: 4096}
			if err := creds.UpdateScramCredentials("alice", func(cur map[scram.Mechanism]security.ScramCredential) map[scram.Mechanism]security.ScramCredential {
				cur[scram.SHA256] = cred
				return cur
			}); err != nil {
				t.Fatal(err)
			}
			a, err := md.AllocateProducerIDs(ctx, 1000)
			if err != nil {
				t.Fatal(err)
			}
			other := reopen()
			b, err := other.AllocateProducerIDs(ctx, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if b < a+1000 && a < b+1000 {
				t.Fatalf("producer id blocks overlap: [%d,%d) and [%d,%d)", a, a+1000, b, b+1000)
			}

			otherACLs, ok1 := other.(security.ACLStore)
			otherCreds, ok2 := other.(security.ScramStore)
			if !ok1 || !ok2 {
				t.Fatalf("%T keeps no ACLs or SCRAM credentials", other)
			}
			waitFor(t, "the other view reads the ACL", func() bool {
				bs, err := otherACLs.ACLs()
				return err == nil && slices.Contains(bs, acl)
			})
			waitFor(t, "the other view reads the SCRAM credential", func() bool {
				all, err := otherCreds.ScramCredentials()
				got := all["alice"][scram.SHA256]
				return err == nil && string(got.StoredKey) == string(cred.StoredKey) && string(got.Salt) == string(cred.Salt) && got.Iterations == cred.Iterations
			})

			waitFor(t, "the other view sees the topics", func() bool {
				got, ok := other.Topic("orders")
				return ok && got.ID == tp.ID && len(got.Partitions) == 5 && got.Configs["cleanup.policy"] == "compact"
			})
			if _, err := other.DeleteTopic(ctx, "orders"); err != nil {
				t.Fatal(err)
			}
			if _, ok := other.Topic("orders"); ok {
				t.Fatal("deleted topic still there")
			}
			if _, err := other.DeleteTopic(ctx, "orders"); !errors.Is(err, cluster.ErrUnknownTopic) {
				t.Errorf("deleting twice: %v", err)
			}
		})
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	brokertest.WaitFor(t, 30*time.Second, what, cond)
}

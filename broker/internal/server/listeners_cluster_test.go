package server_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spoolmq/spool/broker/brokertest"
)

// In cluster mode each broker registers every listener in /brokers/ids/N as Kafka does;
// clients get every broker's endpoint on their own listener, and replication runs over the
// inter-broker listener.
func TestClusterRegistersEveryListener(t *testing.T) {
	heavy(t)
	zk := brokertest.SharedZooKeeper(t)
	chroot := zk.Chroot(t)
	props := map[string]string{
		"listeners":                      "INTERNAL://127.0.0.1:0,CLIENT://127.0.0.1:0",
		"listener.security.protocol.map": "INTERNAL:PLAINTEXT,CLIENT:PLAINTEXT",
		"inter.broker.listener.name":     "INTERNAL",
		"num.partitions":                 "1",
	}
	brokers := map[int32]*brokertest.Broker{}
	for id := int32(1); id <= 2; id++ {
		brokers[id] = brokertest.Start(t, brokertest.Options{NodeID: id, ZooKeeper: zk.Connect(chroot), Props: props})
	}

	conn, _, err := gozk.Connect([]string{zk.Addr}, 10*time.Second, gozk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	data, _, err := conn.Get(chroot + "/brokers/ids/2")
	if err != nil {
		t.Fatal(err)
	}
	var reg struct {
		Endpoints []string          `json:"endpoints"`
		Protocols map[string]string `json:"listener_security_protocol_map"`
	}
	if err := json.Unmarshal(data, &reg); err != nil {
		t.Fatal(err)
	}
	wantEps := []string{"INTERNAL://" + brokers[2].Listener(t, "INTERNAL"), "CLIENT://" + brokers[2].Listener(t, "CLIENT")}
	if !slices.Equal(reg.Endpoints, wantEps) || reg.Protocols["INTERNAL"] != "PLAINTEXT" || reg.Protocols["CLIENT"] != "PLAINTEXT" {
		t.Errorf("/brokers/ids/2: %s, want endpoints %v", data, wantEps)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers[1].Listener(t, "CLIENT")), kgo.DefaultProduceTopic("rf2"), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	want := []string{brokers[1].Listener(t, "CLIENT"), brokers[2].Listener(t, "CLIENT")}
	brokertest.WaitFor(t, 60*time.Second, "both brokers in metadata on the CLIENT listener", func() bool {
		got := metadataBrokers(t, kgo.SeedBrokers(brokers[1].Listener(t, "CLIENT")))
		slices.Sort(got)
		slices.Sort(want)
		return slices.Equal(got, want)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 2, nil, "rf2"); err != nil {
		t.Fatal(err)
	}
	// acks=all with both replicas in the ISR: the follower fetched over INTERNAL.
	brokertest.WaitFor(t, 60*time.Second, "acks=all produce to a two-replica topic", func() bool {
		return cl.ProduceSync(ctx, kgo.StringRecord("replicated")).FirstErr() == nil
	})
	// The record reached the follower over INTERNAL: with the leader stopped (a controlled
	// shutdown hands leadership to the follower in the ISR), the other broker serves it.
	td, err := adm.ListTopics(ctx, "rf2")
	if err != nil {
		t.Fatal(err)
	}
	leader := td["rf2"].Partitions[0].Leader
	other := 3 - leader
	brokers[leader].Stop(t)
	cons, err := kgo.NewClient(kgo.SeedBrokers(brokers[other].Listener(t, "CLIENT")), kgo.ConsumeTopics("rf2"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading from broker %d after broker %d stopped: %v", other, leader, fs.Errors())
		}
		if recs := fs.Records(); len(recs) > 0 {
			if string(recs[0].Value) != "replicated" {
				t.Fatalf("read %q", recs[0].Value)
			}
			return
		}
	}
}

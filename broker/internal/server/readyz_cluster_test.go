package server_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spoolmq/spool/broker/brokertest"
)

// TestReadyzClusterWaitsForCatchUp: in a three-broker cluster on a real ZooKeeper, a broker
// restarted behind its leader (4 MiB produced while it was down, its catch-up throttled to
// 100 kB/s by the leader) answers /readyz 503 naming the partition it has not caught up on,
// although it is registered; with the throttle lifted it catches up and answers 200.
func TestReadyzClusterWaitsForCatchUp(t *testing.T) {
	heavy(t)
	zk := brokertest.SharedZooKeeper(t)
	c := brokertest.StartCluster(t, 3, zk.Connect(""), withProps(map[string]string{"spool.metrics.listener": "127.0.0.1:0"}))
	adm := admin(t, c.Addrs())
	const topic = "lagging"
	createReplicated(t, adm, topic, 1)
	readyz := func(b *brokertest.Broker) (bool, string) {
		resp, err := http.Get("http://" + b.MetricsAddr + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return false, err.Error()
		}
		return resp.StatusCode == http.StatusOK, strings.TrimSpace(string(body))
	}
	for id, b := range c.Brokers {
		brokertest.WaitForState(t, 30*time.Second, "broker ready", func() (bool, string) {
			ok, body := readyz(b)
			return ok, fmt.Sprintf("broker %d: %s", id, body)
		})
	}

	c.Kill(t, 3)
	td := waitMetadata(t, adm, topic, "broker 3 out of the ISR", func(td kadm.TopicDetail) bool {
		return !slices.Contains(td.Partitions[0].ISR, 3) && td.Partitions[0].Leader != 3
	})
	leader := td.Partitions[0].Leader
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()[:2]...), kgo.DefaultProduceTopic(topic), kgo.ProducerBatchMaxBytes(1<<20),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	value := make([]byte, 64<<10)
	rand.Read(value) // incompressible
	for range 64 {   // 4 MiB
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("producing: %v", err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	// The leader serves its followers' fetches of this topic at 100 kB/s: 40 s for 4 MiB.
	rate, all := "100000", "*"
	if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "leader.replication.throttled.rate", Value: &rate}}); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "leader.replication.throttled.replicas", Value: &all}}, topic); err != nil {
		t.Fatal(err)
	}

	// The throttle reaches the leader through its ZooKeeper watches; broker 3 starts only once
	// the leader itself describes both settings, else it may catch up unthrottled.
	waitLeaderThrottle(t, c.Brokers[leader].Addr, leader, topic)

	b3 := c.Restart(t, 3)
	if b3.MetricsAddr == "" {
		t.Fatal("restarted broker has no metrics address")
	}
	var body string
	brokertest.WaitForState(t, 30*time.Second, "broker 3 registered but not caught up", func() (bool, string) {
		var ok bool
		ok, body = readyz(b3)
		if ok {
			t.Fatalf("broker 3 ready before catching up on 4 MiB at 100 kB/s: %q", body)
		}
		return strings.Contains(body, "registered in ZooKeeper; 1 of 1 local replicas not caught up") && strings.Contains(body, topic+"-0"), body
	})

	fast := "1000000000"
	if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "leader.replication.throttled.rate", Value: &fast}}); err != nil {
		t.Fatal(err)
	}
	brokertest.WaitForState(t, 60*time.Second, "broker 3 caught up and ready", func() (bool, string) {
		ok, body := readyz(b3)
		return ok, body
	})
	waitMetadata(t, adm, topic, "broker 3 back in the ISR", func(td kadm.TopicDetail) bool {
		return len(td.Partitions[0].ISR) == 3
	})
}

// waitLeaderThrottle waits until the broker leader, asked directly, describes the leader
// replication throttle: its leader.replication.throttled.rate and the topic's
// leader.replication.throttled.replicas, which its fetch path reads from the same view.
func waitLeaderThrottle(t *testing.T, addr string, leader int32, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	describe := func(typ kmsg.ConfigResourceType, name, key string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req := kmsg.NewPtrDescribeConfigsRequest()
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType, res.ResourceName, res.ConfigNames = typ, name, []string{key}
		req.Resources = append(req.Resources, res)
		resp, err := req.RequestWith(ctx, cl.Broker(int(leader)))
		if err != nil {
			return "", err
		}
		for _, r := range resp.Resources {
			for _, c := range r.Configs {
				if c.Name == key && c.Value != nil {
					return *c.Value, nil
				}
			}
		}
		return "", nil
	}
	brokertest.WaitForState(t, 30*time.Second, "the leader applies the replication throttle", func() (bool, string) {
		rate, err := describe(kmsg.ConfigResourceTypeBroker, fmt.Sprint(leader), "leader.replication.throttled.rate")
		if err != nil {
			return false, err.Error()
		}
		replicas, err := describe(kmsg.ConfigResourceTypeTopic, topic, "leader.replication.throttled.replicas")
		if err != nil {
			return false, err.Error()
		}
		return rate == "100000" && replicas == "*", fmt.Sprintf("broker %d: rate %q, replicas %q", leader, rate, replicas)
	})
}

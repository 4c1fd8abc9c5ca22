package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/spoolmq/spool/broker/brokertest"
)

// Kafka's kafka-configs.sh --alter --add-config 'SCRAM-SHA-512=[...]' (ConfigCommand, through
// AlterUserScramCredentials) creates a user that then authenticates with SCRAM-SHA-512.
func TestKafkaConfigsSCRAM(t *testing.T) {
	heavy(t)
	b := scramBroker(t, "")
	configs := kafkaAdminTool(t, b.Listener(t, "SASL_PLAINTEXT"), "kafka.admin.ConfigCommand")
	configs("--alter", "--add-config", "SCRAM-SHA-512=[iterations=8192,password=carol-secret]", "--entity-type", "users", "--entity-name", "carol")
	carol := kgo.SASL(scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha512Mechanism())
	if err := produceConsume(t, "configs-scram", 3, kgo.SeedBrokers(b.Listener(t, "SASL_PLAINTEXT")), carol); err != nil {
		t.Errorf("SCRAM-SHA-512 with the credential kafka-configs.sh set: %v", err)
	}
	d, err := scramAdmin(t, b).DescribeUserSCRAMs(context.Background(), "carol")
	if err != nil || len(d["carol"].CredInfos) != 1 || d["carol"].CredInfos[0].Iterations != 8192 {
		t.Errorf("DescribeUserScramCredentials after kafka-configs.sh: %+v %v", d, err)
	}
}

// In cluster mode a credential altered through one broker is stored in Kafka's
// /config/users/<user> and reaches every broker through /config/changes.
func TestSCRAMCluster(t *testing.T) {
	heavy(t)
	zk := brokertest.SharedZooKeeper(t)
	c := brokertest.StartCluster(t, 2, zk.Connect(""), map[string]string{"num.partitions": "1"})
	addrs := c.Addrs()
	one, err := kgo.NewClient(kgo.SeedBrokers(addrs[0]))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(one.Close)
	res, err := kadm.NewClient(one).AlterUserSCRAMs(context.Background(), nil,
		[]kadm.UpsertSCRAM{{User: "dave", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "dave-secret"}})
	if err != nil || res["dave"].Err != nil {
		t.Fatalf("AlterUserScramCredentials: %v %+v", err, res)
	}
	for _, id := range []int32{1, 2} {
		brokertest.WaitForState(t, 10*time.Second, "broker knows dave's credential", func() (bool, string) {
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.Proxies[id].Addr))
			if err != nil {
				return false, err.Error()
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			d, err := kadm.NewClient(cl).DescribeUserSCRAMs(ctx, "dave")
			if err != nil {
				return false, err.Error()
			}
			return d["dave"].Err == nil && len(d["dave"].CredInfos) == 1, d["dave"].ErrMessage
		})
	}
	conn, _, err := gozk.Connect([]string{zk.Addr}, 10*time.Second, gozk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	data, _, err := conn.Get(c.Chroot + "/config/users/dave")
	if err != nil || !strings.Contains(string(data), `"SCRAM-SHA-512":"salt=`) || !strings.Contains(string(data), ",iterations=4096") {
		t.Errorf("/config/users/dave: %s %v", data, err)
	}
	kids, _, err := conn.Children(c.Chroot + "/config/changes")
	if err != nil || len(kids) == 0 {
		t.Fatalf("/config/changes: %v %v", kids, err)
	}
	note, _, _ := conn.Get(c.Chroot + "/config/changes/" + kids[0])
	if string(note) != `{"entity_path":"users/dave","version":2}` {
		t.Errorf("change notification %s", note)
	}
}

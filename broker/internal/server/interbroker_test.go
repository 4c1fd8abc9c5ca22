package server_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/broker/brokertest/testca"
)

// TestInterBrokerSASLSSL runs a three-broker cluster whose only listener is SASL_SSL, with
// ACLs on and nothing allowed without an ACL: the brokers replicate to each other and the
// controller probes them over TLS with SASL PLAIN as User:broker (a super user), so a record
// written with acks=all is read back after its leader is killed, and writes go on with the
// two brokers left.
func TestInterBrokerSASLSSL(t *testing.T) {
	zk := brokertest.StartZooKeeper(t)
	ca := testca.New(t)
	cert := ca.Server(t, "broker")
	props := map[string]string{
		"listeners":                            "SASL_SSL://127.0.0.1:0",
		"inter.broker.listener.name":           "SASL_SSL",
		"ssl.keystore.type":                    "PEM",
		"ssl.keystore.location":                cert.File,
		"ssl.truststore.type":                  "PEM",
		"ssl.truststore.location":              ca.File,
		"sasl.enabled.mechanisms":              "PLAIN",
		"sasl.mechanism.inter.broker.protocol": "PLAIN",
		"listener.name.sasl_ssl.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
			`username="broker" password="broker-secret" user_broker="broker-secret" user_admin="admin-secret";`,
		"authorizer.class.name":            "kafka.security.authorizer.AclAuthorizer",
		"allow.everyone.if.no.acl.found":   "false",
		"super.users":                      "User:broker;User:admin",
		"offsets.topic.replication.factor": "3",
		"replica.lag.time.max.ms":          "5000",
	}
	brokers := map[int32]*brokertest.Broker{}
	var seeds []string
	for id := int32(1); id <= 3; id++ {
		brokers[id] = brokertest.StartProcess(t, brokertest.Options{NodeID: id, ZooKeeper: zk.Connect("/spool-sasl-ssl"), Props: props})
		seeds = append(seeds, brokers[id].Addr)
	}
	client := func(user string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool()}),
			kgo.SASL(plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism()), kgo.RecordRetries(20))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	admin := client("admin")
	adm := kadm.NewClient(admin)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	brokertest.WaitForState(t, 30*time.Second, "three brokers registered", func() (bool, string) {
		bs, err := adm.ListBrokers(ctx)
		return err == nil && len(bs) == 3, fmt.Sprintf("%d brokers, %v", len(bs), err)
	})
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "secure"); err != nil {
		t.Fatal(err)
	}
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if err := admin.ProduceSync(ctx, &kgo.Record{Topic: "secure", Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", i, err)
			}
		}
	}
	produce(0, 50)
	// Both followers caught up over SASL_SSL: the leader reports the ISR whole, and the high
	// watermark (acks=all, min.insync.replicas=2) moved.
	leader := func() (int32, []int32) {
		md, err := adm.Metadata(ctx, "secure")
		if err != nil {
			return -1, nil
		}
		p := md.Topics["secure"].Partitions[0]
		return p.Leader, p.ISR
	}
	old, isr := leader()
	if len(isr) != 3 {
		t.Fatalf("ISR %v after 50 acks=all records, want all three brokers", isr)
	}
	t.Logf("killing the leader, broker %d", old)
	brokers[old].Kill(t)
	brokertest.WaitForState(t, 60*time.Second, "a new leader", func() (bool, string) {
		l, isr := leader()
		return l > 0 && l != old, fmt.Sprintf("leader %d, isr %v", l, isr)
	})
	// The two left replicate to each other: acks=all with min.insync.replicas=2 succeeds.
	produce(50, 60)
	consumer, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool()}),
		kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()), kgo.ConsumeTopics("secure"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	seen := map[string]bool{}
	for len(seen) < 60 {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of 60 records after the failover", len(seen))
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	// Without credentials nothing is allowed: the ACLs are on for clients too.
	short, cancelShort := context.WithTimeout(ctx, 10*time.Second)
	defer cancelShort()
	if err := client("nobody").ProduceSync(short, &kgo.Record{Topic: "secure", Value: []byte("x")}).FirstErr(); err == nil {
		t.Error("a user without a password in the JAAS config produced")
	}
}

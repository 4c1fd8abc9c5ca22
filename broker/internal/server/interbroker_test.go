package server_test

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/broker/brokertest/testca"
)

// secureCluster is how a three-broker cluster secures its one listener, which is also the
// inter-broker listener: ACLs on, nothing allowed without an ACL, and the brokers' principal a
// super user.
type secureCluster struct {
	props map[string]string // every broker's security properties
	// broker adds one broker's own properties (its keystore); nil: none.
	broker func(id int32) map[string]string
	// setup runs against ZooKeeper before the brokers start (SCRAM credentials); nil: none.
	setup func(t *testing.T, zkConnect string)
	// as is a client's security as user: "admin" is a super user, "nobody" has no ACL and no
	// super-user rights (or no credentials at all).
	as func(user string) []kgo.Opt
}

// secureBrokers are the brokers secureCluster.start started and a super user's client.
type secureBrokers struct {
	brokers map[int32]*brokertest.Broker
	seeds   []string
	admin   *kgo.Client
	adm     *kadm.Client
}

// start runs three brokers with sc's security and creates the topic "secure" (three replicas,
// min.insync.replicas=2); extra are more properties for every broker.
func (sc secureCluster) start(t *testing.T, ctx context.Context, extra map[string]string) *secureBrokers {
	t.Helper()
	zk := brokertest.SharedZooKeeper(t)
	connect := zk.Connect(zk.Chroot(t))
	if sc.setup != nil {
		sc.setup(t, connect)
	}
	sb := &secureBrokers{brokers: map[int32]*brokertest.Broker{}}
	for id := int32(1); id <= 3; id++ {
		props := map[string]string{
			"authorizer.class.name":            "kafka.security.authorizer.AclAuthorizer",
			"allow.everyone.if.no.acl.found":   "false",
			"offsets.topic.replication.factor": "3",
			"replica.lag.time.max.ms":          "5000",
		}
		for _, m := range []map[string]string{sc.props, extra} {
			for k, v := range m {
				props[k] = v
			}
		}
		if sc.broker != nil {
			for k, v := range sc.broker(id) {
				props[k] = v
			}
		}
		sb.brokers[id] = brokertest.StartProcess(t, brokertest.Options{NodeID: id, ZooKeeper: connect, Props: props})
		sb.seeds = append(sb.seeds, sb.brokers[id].Addr)
	}
	sb.admin = sc.client(t, sb.seeds, "admin")
	sb.adm = kadm.NewClient(sb.admin)
	brokertest.WaitForState(t, 30*time.Second, "three brokers registered", func() (bool, string) {
		bs, err := sb.adm.ListBrokers(ctx)
		return err == nil && len(bs) == 3, fmt.Sprintf("%d brokers, %v", len(bs), err)
	})
	if _, err := sb.adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "secure"); err != nil {
		t.Fatal(err)
	}
	return sb
}

func (sc secureCluster) client(t *testing.T, seeds []string, user string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.RecordRetries(20)}, sc.as(user)...), opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produce writes the records "from".."to-1" to "secure" with acks=all as the super user.
func (sb *secureBrokers) produce(t *testing.T, ctx context.Context, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := sb.admin.ProduceSync(ctx, &kgo.Record{Topic: "secure", Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
}

// leader is the leader and the ISR of "secure" (-1, nil if the metadata cannot be read).
func (sb *secureBrokers) leader(ctx context.Context) (int32, []int32) {
	md, err := sb.adm.Metadata(ctx, "secure")
	if err != nil {
		return -1, nil
	}
	p := md.Topics["secure"].Partitions[0]
	return p.Leader, p.ISR
}

// replicateAndFailOver checks that the brokers replicate to each other over the secured
// listener, that a record written with acks=all is read back after its leader is killed, and
// that writes go on with the two brokers left; then that the client "nobody" cannot write.
func (sc secureCluster) replicateAndFailOver(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sb := sc.start(t, ctx, nil)
	sb.produce(t, ctx, 0, 50)
	// Both followers caught up: the leader reports the ISR whole, and the high watermark
	// (acks=all, min.insync.replicas=2) moved.
	old, isr := sb.leader(ctx)
	if len(isr) != 3 {
		t.Fatalf("ISR %v after 50 acks=all records, want all three brokers", isr)
	}
	t.Logf("killing the leader, broker %d", old)
	sb.brokers[old].Kill(t)
	brokertest.WaitForState(t, 60*time.Second, "a new leader", func() (bool, string) {
		l, isr := sb.leader(ctx)
		return l > 0 && l != old, fmt.Sprintf("leader %d, isr %v", l, isr)
	})
	// The two left replicate to each other: acks=all with min.insync.replicas=2 succeeds.
	sb.produce(t, ctx, 50, 60)
	consumer := sc.client(t, sb.seeds, "admin", kgo.ConsumeTopics("secure"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	for len(seen) < 60 {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of 60 records after the failover", len(seen))
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	// Without credentials or rights nothing is allowed: the ACLs are on for clients too.
	// "nobody" is refused at the door (SASL_AUTHENTICATION_FAILED) where it has no password,
	// and its write refused (TOPIC_AUTHORIZATION_FAILED) where its certificate names it.
	// Matching the code, not any error, also spares waiting out a producer that retries a
	// failed authentication until its deadline.
	short, cancelShort := context.WithTimeout(ctx, 10*time.Second)
	defer cancelShort()
	nobody := sc.client(t, sb.seeds, "nobody")
	if _, mdErr := nobody.Request(short, kmsg.NewPtrMetadataRequest()); !errors.Is(mdErr, kerr.SaslAuthenticationFailed) {
		if err := nobody.ProduceSync(short, &kgo.Record{Topic: "secure", Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Errorf("a client that is neither a super user nor granted anything: metadata %v, produce %v; want SASL_AUTHENTICATION_FAILED or TOPIC_AUTHORIZATION_FAILED", mdErr, err)
		}
	}
}

// saslSSL is a cluster whose only listener is SASL_SSL and whose brokers authenticate to
// each other with mechanism as User:broker (a super user).
func saslSSL(t *testing.T, mechanism string) secureCluster {
	ca := testca.New(t)
	cert := ca.Server(t, "broker")
	sc := secureCluster{props: map[string]string{
		"listeners":                            "SASL_SSL://127.0.0.1:0",
		"inter.broker.listener.name":           "SASL_SSL",
		"ssl.keystore.type":                    "PEM",
		"ssl.keystore.location":                cert.File,
		"ssl.truststore.type":                  "PEM",
		"ssl.truststore.location":              ca.File,
		"sasl.enabled.mechanisms":              mechanism,
		"sasl.mechanism.inter.broker.protocol": mechanism,
		"super.users":                          "User:broker;User:admin",
	}}
	tlsOpt := kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool()})
	switch mechanism {
	case "PLAIN":
		sc.props["listener.name.sasl_ssl.plain.sasl.jaas.config"] = `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
			`username="broker" password="broker-secret" user_broker="broker-secret" user_admin="admin-secret";`
		sc.as = func(user string) []kgo.Opt {
			return []kgo.Opt{tlsOpt, kgo.SASL(plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism())}
		}
	case "SCRAM-SHA-512":
		sc.props["listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"] = `org.apache.kafka.common.security.scram.ScramLoginModule required ` +
			`username="broker" password="broker-secret";`
		// The brokers' and the admin's credentials exist before any broker does, created in
		// ZooKeeper as Kafka operators do: kafka-configs.sh --zookeeper.
		sc.setup = func(t *testing.T, zkConnect string) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			for _, user := range []string{"broker", "admin"} {
				out, err := runKafkaTool(t, ctx, "kafka.admin.ConfigCommand", "--zookeeper", zkConnect, "--alter",
					"--add-config", "SCRAM-SHA-512=[iterations=4096,password="+user+"-secret]", "--entity-type", "users", "--entity-name", user)
				if err != nil {
					t.Fatalf("kafka-configs.sh --zookeeper --alter %s: %v\n%s", user, err, out)
				}
			}
		}
		sc.as = func(user string) []kgo.Opt {
			return []kgo.Opt{tlsOpt, kgo.SASL(scram.Auth{User: user, Pass: user + "-secret"}.AsSha512Mechanism())}
		}
	default:
		t.Fatalf("no setup for %s", mechanism)
	}
	return sc
}

// TestInterBrokerSASLSSL runs a three-broker cluster whose only listener is SASL_SSL: the
// brokers replicate to each other and the controller probes them over TLS with SASL PLAIN or
// SCRAM-SHA-512 as User:broker.
func TestInterBrokerSASLSSL(t *testing.T) {
	heavy(t)
	for _, mechanism := range []string{"PLAIN", "SCRAM-SHA-512"} {
		t.Run(mechanism, func(t *testing.T) { saslSSL(t, mechanism).replicateAndFailOver(t) })
	}
}

// TestInterBrokerMutualTLS runs a three-broker cluster whose only listener is SSL with
// ssl.client.auth=required: each broker presents its keystore's certificate when it connects
// to the others (follower fetches, liveness probes), and its subject is its principal, a super
// user as Kafka operators configure it (super.users=User:CN=...).
func TestInterBrokerMutualTLS(t *testing.T) {
	heavy(t)
	ca := testca.New(t)
	var supers []string
	certs := map[int32]*testca.Issued{}
	for id := int32(1); id <= 3; id++ {
		subject := pkix.Name{CommonName: fmt.Sprintf("broker-%d", id), Organization: []string{"Spool"}}
		certs[id] = ca.Broker(t, subject.CommonName, subject)
		supers = append(supers, "User:"+subject.String())
	}
	users := map[string]*testca.Issued{}
	for _, user := range []string{"admin", "nobody"} {
		users[user] = ca.Client(t, user, pkix.Name{CommonName: user, Organization: []string{"Spool"}})
	}
	sc := secureCluster{
		props: map[string]string{
			"listeners":                  "SSL://127.0.0.1:0",
			"inter.broker.listener.name": "SSL",
			"ssl.keystore.type":          "PEM",
			"ssl.truststore.type":        "PEM",
			"ssl.truststore.location":    ca.File,
			"ssl.client.auth":            "required",
			"super.users":                strings.Join(append(supers, "User:CN=admin,O=Spool"), ";"),
		},
		broker: func(id int32) map[string]string { return map[string]string{"ssl.keystore.location": certs[id].File} },
		as: func(user string) []kgo.Opt {
			return []kgo.Opt{kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{users[user].Cert}})}
		},
	}
	if got := supers[0]; got != "User:CN=broker-1,O=Spool" {
		t.Fatalf("the broker's principal would be %s; Kafka's form is User:CN=broker-1,O=Spool", got)
	}
	sc.replicateAndFailOver(t)
}

// TestInterBrokerReauthentication: with connections.max.reauth.ms on the SASL_SSL inter-broker
// listener, the brokers' connections to each other re-authenticate on the same connection
// before their sessions end (KIP-368) instead of being cut off: replication with acks=all goes
// on across several session lifetimes, and no broker opens a new connection meanwhile.
func TestInterBrokerReauthentication(t *testing.T) {
	heavy(t)
	const lifetime = 2 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sb := saslSSL(t, "PLAIN").start(t, ctx, map[string]string{
		"connections.max.reauth.ms": strconv.FormatInt(lifetime.Milliseconds(), 10),
		"spool.metrics.listener":    "127.0.0.1:0",
	})
	sb.produce(t, ctx, 0, 10)
	leader, isr := sb.leader(ctx)
	if len(isr) != 3 {
		t.Fatalf("ISR %v after 10 acks=all records, want all three brokers", isr)
	}
	auths := func(id int32, reauth bool) float64 {
		return value(scrape(t, sb.brokers[id].MetricsAddr), "spool_peer_authentications_total",
			map[string]string{"spool_reauthentication": strconv.FormatBool(reauth)})
	}
	connects, reauths := map[int32]float64{}, map[int32]float64{}
	for id := range sb.brokers {
		connects[id], reauths[id] = auths(id, false), auths(id, true)
	}
	for id := range sb.brokers {
		if id != leader && connects[id] < 1 {
			t.Fatalf("follower %d counts %v SASL authentications to its peers, want its fetch connection's", id, connects[id])
		}
	}
	// Produce with acks=all through three session lifetimes, each of which would cut the
	// followers' fetch connections off without re-authentication. A connection re-authenticates
	// at 85-95% of its session, so each follower's fetch connection alone does so at least three
	// times (its liveness probes, if it is the controller, add theirs).
	next := 10
	start := time.Now()
	for time.Since(start) < 3*lifetime {
		sb.produce(t, ctx, next, next+1)
		next++
	}
	brokertest.WaitForState(t, 10*time.Second, "three re-authentications on each follower", func() (bool, string) {
		state, done := "", true
		for id := range sb.brokers {
			if id != leader {
				n := auths(id, true) - reauths[id]
				state += fmt.Sprintf("broker %d: %v re-authentications; ", id, n)
				done = done && n >= 3
			}
		}
		return done, state
	})
	for id := range sb.brokers {
		if got := auths(id, false); got != connects[id] {
			t.Errorf("broker %d opened %v new authenticated connections to its peers while re-authenticating, want none", id, got-connects[id])
		}
	}
	if _, isr := sb.leader(ctx); len(isr) != 3 {
		t.Errorf("ISR %v after %d acks=all records across the re-authentications, want all three brokers", isr, next)
	}
}

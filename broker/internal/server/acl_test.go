package server_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/spoolmq/spool/broker/brokertest"
)

const aclJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";`

// aclBroker is a broker with the authorizer on, a SASL_PLAINTEXT listener with PLAIN users
// admin (a super user), alice and bob, and no topic auto-creation. dataDir "" is a new one.
func aclBroker(t *testing.T, dataDir string) *brokertest.Broker {
	return brokertest.Start(t, brokertest.Options{DataDir: dataDir, Props: map[string]string{
		"listeners":               "SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms": "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": aclJAAS,
		"authorizer.class.name":                               "kafka.security.authorizer.AclAuthorizer",
		"super.users":                                         "User:admin",
		"auto.create.topics.enable":                           "false",
	}})
}

// aclClient is a franz-go client of user on b (non-idempotent unless asked, so a refused
// produce fails on the topic, not on InitProducerId).
func aclClient(t *testing.T, b *brokertest.Broker, user string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Listener(t, "SASL_PLAINTEXT")),
		kgo.SASL(plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism()), kgo.RequestRetries(1),
		kgo.DisableIdempotentWrite(), kgo.RecordRetries(1), kgo.UnknownTopicRetries(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func produceTo(cl *kgo.Client, topic, value string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(value)}).FirstErr()
}

func createACLs(t *testing.T, adm *kadm.Client, b *kadm.ACLBuilder) {
	t.Helper()
	res, err := adm.CreateACLs(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("creating %s %s: %v", r.Principal, r.Name, r.Err)
		}
	}
}

// metadataTopics lists the topics a client is shown when it asks for all of them.
func metadataTopics(t *testing.T, cl *kgo.Client) []string {
	t.Helper()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tp := range resp.Topics {
		out = append(out, *tp.Topic)
	}
	slices.Sort(out)
	return out
}

// The ACL matrix through franz-go's admin client: no ACL denies produce, fetch, metadata,
// group join and admin; a PREFIXED ALLOW opens matching topics only; DENY overrides ALLOW;
// deleting an ACL takes the permission back; a super user needs no ACL; ACLs survive a
// restart.
func TestACLMatrix(t *testing.T) {
	parallel(t)
	b := aclBroker(t, "")
	admin := kadm.NewClient(aclClient(t, b, "admin"))
	ctx := context.Background()
	for _, topic := range []string{"logs-a", "logs-secret", "other"} {
		if _, err := admin.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatalf("super user creating %s: %v", topic, err)
		}
	}
	if err := produceTo(aclClient(t, b, "admin"), "other", "by admin"); err != nil {
		t.Fatalf("super user producing: %v", err)
	}

	alice := aclClient(t, b, "alice")
	// No ACL: everything is refused, and metadata shows nothing.
	if err := produceTo(alice, "logs-a", "x"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("produce without ACL: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if got := metadataTopics(t, alice); len(got) != 0 {
		t.Errorf("metadata without ACL shows %v", got)
	}
	aliceAdm := kadm.NewClient(alice)
	if _, err := aliceAdm.CreateTopic(ctx, 1, 1, nil, "alices"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("create topic without ACL: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if _, err := describeACLs(aliceAdm); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("DescribeAcls without ACL: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	// The cluster administration APIs need the cluster: refused without an ACL, allowed to
	// the super user.
	for _, c := range []struct {
		name string
		send func(cl *kgo.Client) (int16, error)
	}{
		{"ElectLeaders", func(cl *kgo.Client) (int16, error) {
			r := kmsg.NewPtrElectLeadersRequest()
			r.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "other", Partitions: []int32{0}}}
			resp, err := r.RequestWith(ctx, cl)
			if err != nil {
				return 0, err
			}
			return resp.ErrorCode, nil
		}},
		{"AlterPartitionReassignments", func(cl *kgo.Client) (int16, error) {
			r := kmsg.NewPtrAlterPartitionAssignmentsRequest()
			r.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{{Topic: "other", Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0, Replicas: []int32{0}}}}}
			resp, err := r.RequestWith(ctx, cl)
			if err != nil {
				return 0, err
			}
			return resp.ErrorCode, nil
		}},
		{"ListPartitionReassignments", func(cl *kgo.Client) (int16, error) {
			resp, err := kmsg.NewPtrListPartitionReassignmentsRequest().RequestWith(ctx, cl)
			if err != nil {
				return 0, err
			}
			return resp.ErrorCode, nil
		}},
		{"DescribeLogDirs", func(cl *kgo.Client) (int16, error) {
			// To the broker itself: a client merging every broker's answer drops the top level.
			resp, err := cl.Broker(0).Request(ctx, kmsg.NewPtrDescribeLogDirsRequest())
			if err != nil {
				return 0, err
			}
			return resp.(*kmsg.DescribeLogDirsResponse).ErrorCode, nil
		}},
		{"AlterConfigs", func(cl *kgo.Client) (int16, error) {
			r := kmsg.NewPtrAlterConfigsRequest()
			v := "1000"
			r.Resources = []kmsg.AlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "other",
				Configs: []kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: &v}}}}
			resp, err := r.RequestWith(ctx, cl)
			if err != nil || len(resp.Resources) != 1 {
				return 0, fmt.Errorf("%v (%d resources)", err, len(resp.Resources))
			}
			return resp.Resources[0].ErrorCode, nil
		}},
	} {
		want := kerr.ClusterAuthorizationFailed.Code
		if c.name == "AlterConfigs" {
			want = kerr.TopicAuthorizationFailed.Code
		}
		if code, err := c.send(alice); err != nil || code != want {
			t.Errorf("%s without ACL: code %d, err %v; want %d", c.name, code, err, want)
		}
		if code, err := c.send(aclClient(t, b, "admin")); err != nil || code == want {
			t.Errorf("%s by the super user: code %d, err %v", c.name, code, err)
		}
	}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "g-1", "consumer", 10000, 10000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0}}}
	if resp, err := join.RequestWith(ctx, alice); err == nil && resp.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("join group without ACL: error %d, want GROUP_AUTHORIZATION_FAILED", resp.ErrorCode)
	} else if err != nil && !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Errorf("join group without ACL: %v, want GROUP_AUTHORIZATION_FAILED", err)
	}

	// A PREFIXED ALLOW: alice writes to logs-* only.
	createACLs(t, admin, kadm.NewACLs().Allow("User:alice").Topics("logs-").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpWrite))
	if err := produceTo(alice, "logs-a", "allowed"); err != nil {
		t.Errorf("produce under a prefixed ALLOW: %v", err)
	}
	if err := produceTo(alice, "other", "x"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("produce outside the prefix: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	// Write implies Describe: metadata now lists the prefixed topics, and only those.
	if got := metadataTopics(t, alice); !slices.Equal(got, []string{"logs-a", "logs-secret"}) {
		t.Errorf("metadata under the prefixed ALLOW shows %v", got)
	}
	// The idempotent producer's InitProducerId is allowed by Write on some topic.
	if err := produceTo(aclClient(t, b, "alice", kgo.RequestRetries(1)), "logs-a", "idempotent"); err != nil {
		t.Errorf("idempotent produce under a prefixed ALLOW: %v", err)
	}
	// A DENY overrides the ALLOW.
	createACLs(t, admin, kadm.NewACLs().Deny("User:alice").Topics("logs-secret").Operations(kadm.OpWrite))
	if err := produceTo(alice, "logs-secret", "x"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("produce under DENY and ALLOW: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	// Another principal is unaffected by alice's ACLs.
	if err := produceTo(aclClient(t, b, "bob"), "logs-a", "x"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("bob producing: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	// Consuming in a group needs Read on the topic and the group.
	createACLs(t, admin, kadm.NewACLs().Allow("User:alice").Topics("logs-a").Operations(kadm.OpRead))
	createACLs(t, admin, kadm.NewACLs().Allow("User:alice").Groups("g-").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpRead))
	consumer := aclClient(t, b, "alice", kgo.ConsumeTopics("logs-a"), kgo.ConsumerGroup("g-1"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var got []string
	for len(got) < 2 && cctx.Err() == nil {
		fs := consumer.PollFetches(cctx)
		if err := fs.Err0(); err != nil && cctx.Err() == nil {
			t.Fatalf("group consume: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if !slices.Equal(got, []string{"allowed", "idempotent"}) {
		t.Errorf("group consume read %q", got)
	}
	if err := consumer.CommitUncommittedOffsets(cctx); err != nil {
		t.Errorf("commit under Read on group and topic: %v", err)
	}

	// DescribeAcls lists what was created, with its pattern types.
	acls, err := describeACLs(admin)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"GROUP:PREFIXED:g-:READ:ALLOW", "TOPIC:LITERAL:logs-a:READ:ALLOW", "TOPIC:LITERAL:logs-secret:WRITE:DENY", "TOPIC:PREFIXED:logs-:WRITE:ALLOW"}
	if !slices.Equal(acls, want) {
		t.Errorf("DescribeAcls:\n got %v\nwant %v", acls, want)
	}

	// Deleting the prefixed ALLOW takes the permission back.
	deleted, err := admin.DeleteACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("logs-").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpWrite))
	if err != nil || len(deleted) != 1 || deleted[0].Err != nil || len(deleted[0].Deleted) != 1 {
		t.Fatalf("DeleteAcls: %v %+v", err, deleted)
	}
	if err := produceTo(alice, "logs-a", "x"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("produce after the ALLOW was deleted: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	// The ACLs are in the data directory: a restarted broker enforces them.
	dir := b.DataDir
	b.Stop(t)
	b = aclBroker(t, dir)
	alice = aclClient(t, b, "alice")
	if got := metadataTopics(t, alice); !slices.Equal(got, []string{"logs-a"}) {
		t.Errorf("after a restart alice is shown %v, want [logs-a] (Read on it)", got)
	}
	if err := produceTo(alice, "logs-secret", "x"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("after a restart: produce %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
}

// kcat (librdkafka) produces and consumes as an allowed principal and is refused as another.
func TestACLKcat(t *testing.T) {
	heavy(t)
	kcat := brokertest.NeedTool(t, "/usr/bin/kcat", "kcat")
	b := aclBroker(t, "")
	admin := kadm.NewClient(aclClient(t, b, "admin"))
	if _, err := admin.CreateTopic(context.Background(), 1, 1, nil, "kcat-acl"); err != nil {
		t.Fatal(err)
	}
	createACLs(t, admin, kadm.NewACLs().Allow("User:alice").Topics("kcat-acl").Operations(kadm.OpWrite, kadm.OpRead))
	as := func(user string) []string {
		return []string{"-b", b.Listener(t, "SASL_PLAINTEXT"), "-X", "security.protocol=sasl_plaintext", "-X", "sasl.mechanisms=PLAIN",
			"-X", "sasl.username=" + user, "-X", "sasl.password=" + user + "-secret"}
	}
	run(t, "one\ntwo\n", kcat, append(as("alice"), "-P", "-t", "kcat-acl")...)
	if out := run(t, "", kcat, append(as("alice"), "-C", "-t", "kcat-acl", "-o", "beginning", "-e", "-q")...); out != "one\ntwo\n" {
		t.Errorf("kcat as alice read %q", out)
	}
	for _, mode := range [][]string{{"-P", "-t", "kcat-acl"}, {"-C", "-t", "kcat-acl", "-o", "beginning", "-e"}} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound on a hang
		cmd := exec.CommandContext(ctx, kcat, append(as("bob"), mode...)...)
		cmd.Stdin = strings.NewReader("refused\n")
		out, err := cmd.CombinedOutput()
		hung := ctx.Err() != nil
		cancel()
		if err == nil || hung || !strings.Contains(string(out), "Topic authorization failed") {
			t.Errorf("kcat %s as bob: %v\n%s", mode[0], err, out)
		}
	}
}

// describeACLs lists every ACL as TYPE:PATTERN:name:OPERATION:PERMISSION, sorted.
func describeACLs(adm *kadm.Client) ([]string, error) {
	res, err := adm.DescribeACLs(context.Background(), kadm.NewACLs().AnyResource().Allow().AllowHosts().Deny().DenyHosts().
		Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil {
		return nil, err
	}
	var acls []string
	for _, r := range res {
		if r.Err != nil {
			return nil, r.Err
		}
		for _, d := range r.Described {
			acls = append(acls, d.Type.String()+":"+d.Pattern.String()+":"+d.Name+":"+d.Operation.String()+":"+d.Permission.String())
		}
	}
	slices.Sort(acls)
	return slices.Compact(acls), nil
}

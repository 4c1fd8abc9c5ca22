package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spoolmq/spool/broker/brokertest"
)

// topicErrorOn is the error code one broker (not the cluster) answers for a topic's metadata.
func topicErrorOn(t *testing.T, cl *kgo.Client, id int32, topic string) (int16, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
	if err != nil {
		return 0, err
	}
	return resp.Topics[0].ErrorCode, nil
}

// In cluster mode ACLs live in ZooKeeper where Kafka keeps them, and an ACL created or deleted
// through one broker is enforced by every broker, through Kafka's change notifications.
func TestACLCluster(t *testing.T) {
	heavy(t)
	zk := brokertest.SharedZooKeeper(t)
	props := map[string]string{
		"num.partitions":                 "1",
		"authorizer.class.name":          "kafka.security.authorizer.AclAuthorizer",
		"allow.everyone.if.no.acl.found": "true", // every client here is User:ANONYMOUS
	}
	c := brokertest.StartCluster(t, 3, zk.Connect(""), props)
	addrs := c.Addrs()
	one, err := kgo.NewClient(kgo.SeedBrokers(addrs[0]))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(one.Close)
	adm := kadm.NewClient(one)
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "guarded"); err != nil {
		t.Fatal(err)
	}
	for id := int32(1); id <= 3; id++ {
		brokertest.WaitForState(t, 30*time.Second, "broker sees guarded", func() (bool, string) {
			code, err := topicErrorOn(t, one, id, "guarded")
			return err == nil && code == 0, fmt.Sprintf("error code %d", code)
		})
	}
	// Created through broker 1 only.
	res, err := adm.CreateACLs(ctx, kadm.NewACLs().Deny("User:ANONYMOUS").Topics("guarded").Operations(kadm.OpAll))
	if err != nil || res[0].Err != nil {
		t.Fatalf("CreateAcls: %v %+v", err, res)
	}
	res, err = adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:ANONYMOUS").Topics("pre-").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpRead))
	if err != nil || res[0].Err != nil {
		t.Fatalf("CreateAcls: %v %+v", err, res)
	}
	for id := int32(1); id <= 3; id++ {
		brokertest.WaitForState(t, 10*time.Second, "broker enforces the DENY", func() (bool, string) {
			code, err := topicErrorOn(t, one, id, "guarded")
			if err != nil {
				return false, err.Error()
			}
			return code == kerr.TopicAuthorizationFailed.Code, fmt.Sprintf("error code %d", code)
		})
	}

	// Kafka's znodes, so Kafka's tools and brokers read the same ACLs.
	conn, _, err := gozk.Connect([]string{zk.Addr}, 10*time.Second, gozk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for path, want := range map[string]string{
		c.Chroot + "/kafka-acl/Topic/guarded":                `{"version":1,"acls":[{"principal":"User:ANONYMOUS","permissionType":"Deny","operation":"All","host":"*"}]}`,
		c.Chroot + "/kafka-acl-extended/prefixed/Topic/pre-": `{"version":1,"acls":[{"principal":"User:ANONYMOUS","permissionType":"Allow","operation":"Read","host":"*"}]}`,
	} {
		data, _, err := conn.Get(path)
		if err != nil || string(data) != want {
			t.Errorf("%s: %s, %v\nwant %s", path, data, err, want)
		}
	}
	for path, want := range map[string]string{c.Chroot + "/kafka-acl-changes": "Topic:guarded", c.Chroot + "/kafka-acl-extended-changes": `"patternType":"PREFIXED"`} {
		kids, _, err := conn.Children(path)
		if err != nil || len(kids) == 0 || !strings.HasPrefix(kids[0], "acl_changes_") {
			t.Fatalf("%s: %v %v", path, kids, err)
		}
		data, _, err := conn.Get(path + "/" + kids[0])
		if err != nil || !strings.Contains(string(data), want) {
			t.Errorf("%s/%s: %s %v, want it to hold %s", path, kids[0], data, err, want)
		}
	}

	// Deleted through broker 3: every broker lets the topic be seen again.
	three, err := kgo.NewClient(kgo.SeedBrokers(addrs[2]))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(three.Close)
	del, err := kadm.NewClient(three).DeleteACLs(ctx, kadm.NewACLs().Deny("User:ANONYMOUS").DenyHosts().Topics("guarded").Operations(kadm.OpAll))
	if err != nil || del[0].Err != nil || len(del[0].Deleted) != 1 {
		t.Fatalf("DeleteAcls: %v %+v", err, del)
	}
	for id := int32(1); id <= 3; id++ {
		brokertest.WaitForState(t, 10*time.Second, "broker drops the DENY", func() (bool, string) {
			code, err := topicErrorOn(t, one, id, "guarded")
			if err != nil {
				return false, err.Error()
			}
			return code == 0, fmt.Sprintf("error code %d", code)
		})
	}
	if _, _, err := conn.Get(c.Chroot + "/kafka-acl/Topic/guarded"); err != gozk.ErrNoNode {
		t.Errorf("the emptied ACL znode remains: %v", err)
	}
}

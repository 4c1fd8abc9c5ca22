package zk_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/broker/internal/cluster"
	zkstore "github.com/spoolmq/spool/broker/internal/cluster/zk"
	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/scram"
)

// ACL and SCRAM change notifications are deleted once expired, as Kafka's brokers delete
// theirs: after a burst of changes, the next change leaves only itself under each path,
// while the ACLs and credentials themselves stay.
func TestChangeNotificationsExpire(t *testing.T) {
	zk := brokertest.StartZooKeeper(t)
	const expiry = 3 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := zkstore.Open(ctx, zkstore.Config{Connect: zk.Connect("/notify"), SessionTimeout: 6 * time.Second, ConnectTimeout: 10 * time.Second,
		Self: cluster.Broker{NodeID: 1, Host: "127.0.0.1", Port: 1}, NotificationExpiry: expiry})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	raw, _, err := gozk.Connect([]string{zk.Addr}, 6*time.Second, gozk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	addACL := func(topic string) {
		t.Helper()
		p := security.Pattern{Type: security.ResourceTopic, Name: topic, PatternType: security.PatternLiteral}
		e := security.Entry{Principal: "User:alice", Host: "*", Operation: security.OpRead, Permission: security.Allow}
		if err := s.UpdateACLs([]security.ACLUpdate{{Pattern: p, Update: func(cur []security.Entry) []security.Entry { return append(cur, e) }}}); err != nil {
			t.Fatal(err)
		}
	}
	addUser := func(user string) {
		t.Helper()
		m := security.ScramMechanisms["SCRAM-SHA-512"]
		salt := []byte("0123456789abcdef")
		cred := security.CredentialFromSalted(m, salt, m.SaltPassword("secret", salt, 4096), 4096)
		if err := s.UpdateScramCredentials(user, func(cur map[scram.Mechanism]security.ScramCredential) map[scram.Mechanism]security.ScramCredential {
			cur[m] = cred
			return cur
		}); err != nil {
			t.Fatal(err)
		}
	}
	const burst = 20
	start := time.Now()
	for i := range burst {
		addACL(fmt.Sprintf("t%d", i))
		addUser(fmt.Sprintf("u%d", i))
	}
	paths := []string{"/notify/kafka-acl-changes", "/notify/config/changes"}
	children := func(path string) []string {
		t.Helper()
		c, _, err := raw.Children(path)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// A burst shorter than the expiry (the usual case; not under a slow race detector) keeps
	// every notification: only expired ones are deleted.
	if took := time.Since(start); took < expiry {
		for _, p := range paths {
			if n := len(children(p)); n != burst {
				t.Fatalf("%s has %d notifications after %d changes in %v, want %d (none expired yet)", p, n, burst, took, burst)
			}
		}
	} else {
		t.Logf("the burst took %v, longer than the expiry: not checking that it kept every notification", took)
	}
	// Wait, by ZooKeeper's clock, until the burst's newest notifications have expired.
	brokertest.WaitForState(t, 20*time.Second, "the burst to expire", func() (bool, string) {
		probe, err := raw.Create("/notify/clock", nil, gozk.FlagEphemeral|gozk.FlagSequence, gozk.WorldACL(gozk.PermAll))
		if err != nil {
			return false, err.Error()
		}
		_, now, _ := raw.Get(probe)
		raw.Delete(probe, -1)
		for _, p := range paths {
			for _, c := range children(p) {
				if _, st, err := raw.Get(p + "/" + c); err == nil && now.Ctime-st.Ctime <= expiry.Milliseconds()+100 {
					return false, fmt.Sprintf("%s/%s is %d ms old", p, c, now.Ctime-st.Ctime)
				}
			}
		}
		return true, ""
	})
	addACL("after")
	addUser("after")
	for _, p := range paths {
		if c := children(p); len(c) != 1 {
			t.Errorf("%s holds %v after the burst expired and one more change, want only that change's", p, c)
		}
	}
	acls, err := s.ACLs()
	if err != nil || len(acls) != burst+1 {
		t.Errorf("%d ACLs (%v), want %d: purging notifications must keep the ACLs", len(acls), err, burst+1)
	}
	creds, err := s.ScramCredentials()
	if err != nil || len(creds) != burst+1 {
		t.Errorf("%d SCRAM users (%v), want %d", len(creds), err, burst+1)
	}
}

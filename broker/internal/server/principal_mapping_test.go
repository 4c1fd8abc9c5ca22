package server_test

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/broker/brokertest/testca"
)

// ssl.principal.mapping.rules turn a client certificate's subject into the principal the
// authorizer sees; a subject no rule applies to is refused.
func TestSSLPrincipalMappingRules(t *testing.T) {
	parallel(t)
	ca := testca.New(t)
	props := sslProps(ca, ca.Server(t, "broker"))
	props["ssl.client.auth"] = "required"
	props["ssl.principal.mapping.rules"] = `RULE:^CN=([^,]+),O=Spool$/$1/L`
	props["authorizer.class.name"] = "kafka.security.authorizer.AclAuthorizer"
	props["super.users"] = "User:alice"
	b := brokertest.Start(t, brokertest.Options{Props: props})
	dial := func(subject pkix.Name) []kgo.Opt {
		c := ca.Client(t, subject.CommonName, subject)
		return []kgo.Opt{kgo.SeedBrokers(b.Listener(t, "SSL")), kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{c.Cert}})}
	}
	// CN=Alice,O=Spool maps to alice, a super user.
	if err := produceConsume(t, "mapped", 3, dial(pkix.Name{CommonName: "Alice", Organization: []string{"Spool"}})...); err != nil {
		t.Errorf("CN=Alice,O=Spool (User:alice, a super user): %v", err)
	}
	// CN=carol,O=Spool maps to carol, who has no ACL.
	cl, err := kgo.NewClient(append(dial(pkix.Name{CommonName: "carol", Organization: []string{"Spool"}}), kgo.DisableIdempotentWrite(), kgo.RecordRetries(1))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := produceTo(cl, "mapped", "x"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("CN=carol,O=Spool (User:carol): %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	// No rule applies to O=Elsewhere: the connection is refused.
	if err := metadataErr(t, dial(pkix.Name{CommonName: "mallory", Organization: []string{"Elsewhere"}})...); err == nil {
		t.Error("a subject no rule applies to was let in")
	}
}

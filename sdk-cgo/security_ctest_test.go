package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/broker/brokertest/testca"
	spool "github.com/spoolmq/spool/sdk-go"
)

// secureBroker is a broker that clients reach on a SASL_SSL listener (a certificate of a test
// CA, SCRAM-SHA-512), with one SCRAM user, and an admin client on a SASL_PLAINTEXT listener
// (PLAIN, from the listener's JAAS config) that made the user. TestCSecurity and the
// bindings' security tests (TestPython, TestRust, TestNode, TestJava) run against one.
type secureBroker struct {
	Addr           string // HOST:PORT of the SASL_SSL listener
	CAFile         string // PEM of the CA that signed the broker's certificate: ssl.ca.location
	User, Password string // the SCRAM-SHA-512 user's credentials
	Admin          *spool.Client
}

// startSecureBroker starts a secureBroker for the test and makes its SCRAM user.
func startSecureBroker(t *testing.T) *secureBroker {
	t.Helper()
	ca := testca.New(t)
	props := brokertest.SASLSSLProps(t, ca)
	// The admin creates the SCRAM user over a second listener, without TLS.
	props["listeners"] = "SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0"
	props["listener.name.sasl_plaintext.plain.sasl.jaas.config"] = brokertest.AdminJAAS
	b := brokertest.Start(t, brokertest.Options{Props: props})
	admin, err := spool.NewClient(spool.SeedBrokers(b.Listener(t, "SASL_PLAINTEXT")), spool.SASL(spool.SASLPlain("admin", "admin-secret")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	s := &secureBroker{Addr: b.Listener(t, "SASL_SSL"), CAFile: ca.File, User: "carol", Password: "carol-secret", Admin: admin}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := admin.Admin().UpsertUserScram(ctx, s.User, spool.ScramSHA512, 4096, s.Password); err != nil {
		t.Fatal(err)
	}
	return s
}

// env is what a binding's security tests read: the SASL_SSL listener, the CA file and the
// SCRAM-SHA-512 user. They make their own topics through the listener.
func (s *secureBroker) env() []string {
	return []string{"SPOOL_SECURE_BROKERS=" + s.Addr, "SPOOL_SECURE_CA=" + s.CAFile,
		"SPOOL_SECURE_USER=" + s.User, "SPOOL_SECURE_PASSWORD=" + s.Password}
}

// TestCSecurity runs tests/security_test.c, configured with librdkafka's security keys,
// against a broker's SASL_SSL listener: a SCRAM-SHA-512 user made through the Go SDK's admin
// produces and consumes, and a wrong password is refused with SASL_AUTHENTICATION_FAILED.
func TestCSecurity(t *testing.T) {
	t.Parallel()
	rs := runnersOf(t, "tests/security_test.c", "security_test")
	s := startSecureBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel) // after the parallel subtests
	for _, r := range rs {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel() // every runner has a topic of its own
			topic := "c-secure-" + r.name
			if err := s.Admin.Admin().CreateTopic(ctx, topic, 1, 1, nil); err != nil {
				t.Fatal(err)
			}
			out, err := r.run(t, "roundtrip", s.Addr, s.CAFile, s.User, s.Password, topic, "50")
			if err != nil || !strings.Contains(out, "roundtrip: ok") {
				t.Fatalf("roundtrip: %v\n%s", err, out)
			}
			out, err = r.run(t, "refused", s.Addr, s.CAFile, s.User, "guess", topic)
			if err != nil || !strings.Contains(out, "refused: ok") {
				t.Fatalf("refused: %v\n%s", err, out)
			}
			t.Log(strings.TrimSpace(out))
		})
	}
}

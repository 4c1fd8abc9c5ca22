package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/broker/brokertest/testca"
	spool "github.com/spoolmq/spool/sdk-go"
)

// TestCSecurity runs tests/security_test.c, configured with librdkafka's security keys,
// against a broker's SASL_SSL listener: a SCRAM-SHA-512 user made through the Go SDK's admin
// produces and consumes, and a wrong password is refused with SASL_AUTHENTICATION_FAILED.
func TestCSecurity(t *testing.T) {
	rs := runnersOf(t, "tests/security_test.c", "security_test")
	ca := testca.New(t)
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";`
	b := brokertest.Start(t, brokertest.Options{Props: map[string]string{
		"listeners":               "SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
		"sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas,
		"listener.name.sasl_ssl.plain.sasl.jaas.config":       jaas,
		"ssl.keystore.type":     "PEM",
		"ssl.keystore.location": ca.Server(t, "broker").File,
	}})
	admin, err := spool.NewClient(spool.SeedBrokers(b.Listener(t, "SASL_PLAINTEXT")), spool.SASL(spool.SASLPlain("admin", "admin-secret")))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := admin.Admin().UpsertUserScram(ctx, "carol", spool.ScramSHA512, 4096, "carol-secret"); err != nil {
		t.Fatal(err)
	}
	addr := b.Listener(t, "SASL_SSL")
	for _, r := range rs {
		if testing.Short() && r.name == "valgrind" && os.Getenv("CI") != "true" { // as TestC
			continue
		}
		t.Run(r.name, func(t *testing.T) {
			topic := "c-secure-" + r.name
			if err := admin.Admin().CreateTopic(ctx, topic, 1, 1, nil); err != nil {
				t.Fatal(err)
			}
			out, err := r.run(t, "roundtrip", addr, ca.File, "carol", "carol-secret", topic, "50")
			if err != nil || !strings.Contains(out, "roundtrip: ok") {
				t.Fatalf("roundtrip: %v\n%s", err, out)
			}
			out, err = r.run(t, "refused", addr, ca.File, "carol", "guess", topic)
			if err != nil || !strings.Contains(out, "refused: ok") {
				t.Fatalf("refused: %v\n%s", err, out)
			}
			t.Log(strings.TrimSpace(out))
		})
	}
}

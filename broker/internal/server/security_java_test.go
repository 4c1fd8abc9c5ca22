package server_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// The Java client produces and consumes over SSL, SASL_SSL with SCRAM-SHA-512 (a user made
// through AlterUserScramCredentials) and SASL_PLAINTEXT with PLAIN, with the settings the
// README gives; a wrong password is refused with an AuthenticationException on both SASL
// listeners.
func TestJavaClientSecurity(t *testing.T) {
	heavy(t)
	b, ca, _ := securityBroker(t)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	trust := "ssl.truststore.type=PEM\nssl.truststore.location=" + ca.File + "\n"
	scram := func(pass string) string {
		return "sasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"carol\" password=\"" + pass + "\";\n"
	}
	plainCfg := func(pass string) string {
		return "sasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"alice\" password=\"" + pass + "\";\n"
	}
	run := compileJavaProgram(t, ctx, "testdata/security_SecureClient.java", "SecureClient")
	for _, tc := range []struct {
		name, listener, props, mode string
	}{
		{"ssl", "SSL", "security.protocol=SSL\n" + trust, "ok"},
		{"sasl-ssl-scram", "SASL_SSL", "security.protocol=SASL_SSL\n" + trust + scram("carol-secret"), "ok"},
		{"sasl-ssl-scram-wrong", "SASL_SSL", "security.protocol=SASL_SSL\n" + trust + scram("guess"), "refused"},
		{"sasl-plaintext-plain", "SASL_PLAINTEXT", "security.protocol=SASL_PLAINTEXT\n" + plainCfg("alice-secret"), "ok"},
		{"sasl-plaintext-plain-wrong", "SASL_PLAINTEXT", "security.protocol=SASL_PLAINTEXT\n" + plainCfg("guess"), "refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			props := filepath.Join(t.TempDir(), "client.properties")
			if err := os.WriteFile(props, []byte(tc.props), 0o600); err != nil {
				t.Fatal(err)
			}
			run(t, b.Listener(t, tc.listener), props, "java-"+tc.name, tc.mode)
		})
	}
}

// The ACL matrix through the Java Admin, producer and consumer (testdata/security_AclMatrix.java):
// no ACL denies produce, fetch, metadata and admin; createAcls with a PREFIXED ALLOW lets a
// denied send succeed on matching topics only; a DENY overrides it; deleteAcls makes the send
// fail again with TopicAuthorizationException; the super user needs no ACL. What the Java Admin
// left behind is what kadm reads.
func TestJavaAdminACLs(t *testing.T) {
	heavy(t)
	b := aclBroker(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := compileJavaProgram(t, ctx, "testdata/security_AclMatrix.java", "AclMatrix")
	run(t, b.Listener(t, "SASL_PLAINTEXT"))
	got, err := describeACLs(kadm.NewClient(aclClient(t, b, "admin")))
	if want := []string{"TOPIC:LITERAL:jacl-logs-secret:WRITE:DENY"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("ACLs after the Java Admin: %v %v, want %v", got, err, want)
	}
}

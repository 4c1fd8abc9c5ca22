package server_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The Java client produces and consumes over SSL, SASL_SSL with SCRAM-SHA-512 (a user made
// through AlterUserScramCredentials) and SASL_PLAINTEXT with PLAIN, with the settings the
// README gives; a wrong password is refused with an AuthenticationException on both SASL
// listeners.
func TestJavaClientSecurity(t *testing.T) {
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

package clientflags

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"io"
	"maps"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// caFile writes a self-signed CA certificate, PEM, for --tls-ca.
func caFile(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true,
		BasicConstraintsValid: true, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func keysOf(t *testing.T, defaults map[string]string, args ...string) (map[string]string, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	s := Add(fs, defaults)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return s.Keys()
}

func TestKeys(t *testing.T) {
	t.Setenv(PasswordEnv, "")
	ca := caFile(t)
	for _, c := range []struct {
		args []string
		want map[string]string
	}{
		{nil, nil},
		{[]string{"--tls"}, map[string]string{"security.protocol": "SSL"}},
		{[]string{"--sasl-mechanism", "PLAIN", "--sasl-username", "u", "--sasl-password", "p"},
			map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN", "sasl.username": "u", "sasl.password": "p"}},
		{[]string{"--tls-ca", ca, "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-username", "u"},
			map[string]string{"security.protocol": "SASL_SSL", "ssl.ca.location": ca, "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "u"}},
	} {
		got, err := keysOf(t, nil, c.args...)
		if err != nil || !maps.Equal(got, c.want) {
			t.Errorf("%v: keys %v, %v; want %v", c.args, got, err, c.want)
		}
	}
	// The password from the environment, and defaults (a profile's) under the flags.
	t.Setenv(PasswordEnv, "from-env")
	got, err := keysOf(t, map[string]string{"sasl-mechanism": "PLAIN", "sasl-username": "profile-user"}, "--sasl-username", "u")
	if err != nil || got["sasl.password"] != "from-env" || got["sasl.username"] != "u" || got["sasl.mechanisms"] != "PLAIN" {
		t.Errorf("keys %v, %v", got, err)
	}
}

func TestKeysErrorsNameTheFlags(t *testing.T) {
	t.Setenv(PasswordEnv, "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--sasl-username", "u"}, "--sasl-username and --sasl-password need --sasl-mechanism"},
		{[]string{"--sasl-mechanism", "PLAIN"}, "--sasl-mechanism needs --sasl-username"},
		{[]string{"--sasl-mechanism", "GSSAPI", "--sasl-username", "u"}, "--sasl-mechanism"},
		{[]string{"--tls-cert", "/dev/null"}, "key"},
		{[]string{"--tls-ca", "/dev/null"}, "/dev/null holds no PEM certificate"},
	} {
		_, err := keysOf(t, nil, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "sasl.mechanisms") {
			t.Errorf("%v: error %v, want one with %q", c.args, err, c.want)
		}
	}
}

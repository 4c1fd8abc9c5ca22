package spool_test

import (
	"crypto/x509/pkix"
	"errors"
	"strings"
	"testing"

	spool "github.com/spoolmq/spool/sdk-go"
)

// The Java client's ssl.truststore.* and ssl.keystore.* names, PEM only, configure the same TLS
// as librdkafka's ssl.ca.* and ssl.certificate.*/ssl.key.*: a client set up with them alone
// produces and consumes on a listener that requires a client certificate.
func TestConfJavaSSLKeys(t *testing.T) {
	t.Parallel()
	sb := startSecureBroker(t, nil)
	alice := sb.ca.Client(t, "alice", pkix.Name{CommonName: "alice", Organization: []string{"Spool"}})
	addr := sb.b.Listener(t, "MTLS")
	for name, keys := range map[string]map[string]string{
		"files": {"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.location": sb.ca.File,
			"ssl.keystore.type": "PEM", "ssl.keystore.location": alice.File},
		"inline": {"security.protocol": "SSL", "ssl.truststore.type": "pem", "ssl.truststore.certificates": readFile(t, sb.ca.File),
			"ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": alice.ChainPEM, "ssl.keystore.key": alice.KeyPEM, "ssl.key.password": ""},
	} {
		t.Run(name, func(t *testing.T) {
			conf, err := spool.NewConfFromMap(keys)
			if err != nil {
				t.Fatal(err)
			}
			roundTrip(t, addr, 10, conf.Opts()...)
		})
	}
	// Without the keystore the listener refuses the client: the keystore is what let it in.
	conf, err := spool.NewConfFromMap(map[string]string{"security.protocol": "SSL", "ssl.truststore.location": sb.ca.File})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := spool.NewClient(append(conf.Opts(), spool.SeedBrokers(addr))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.Admin().ListTopics(testCtx(t)); err == nil {
		t.Error("a client without ssl.keystore.location was served by a listener with ssl.client.auth=required")
	}
}

// Java's names are aliases of librdkafka's, and what the SDK cannot read is refused with a
// message saying what it needs.
func TestConfJavaSSLKeyErrors(t *testing.T) {
	for alias, name := range map[string]string{
		"ssl.truststore.location":        "ssl.ca.location",
		"ssl.truststore.certificates":    "ssl.ca.pem",
		"ssl.keystore.certificate.chain": "ssl.certificate.pem",
		"ssl.keystore.key":               "ssl.key.pem",
	} {
		if k, ok := spool.LookupConfKey(alias); !ok || k.Name != name {
			t.Errorf("%s looks up %q, want %s", alias, k.Name, name)
		}
		var c spool.Conf
		if err := c.Set(alias, "/etc/x.pem"); err != nil {
			t.Fatal(err)
		}
		if got, _ := c.Get(name); got != "/etc/x.pem" {
			t.Errorf("%s set through %s reads %q", name, alias, got)
		}
	}
	for _, kv := range [][3]string{
		{"ssl.keystore.type", "JKS", "PEM only"},
		{"ssl.truststore.type", "PKCS12", "PEM only"},
		{"ssl.key.password", "secret", "unencrypted keys only"},
		{"ssl.keystore.location", "", "empty value"},
	} {
		var c spool.Conf
		err := c.Set(kv[0], kv[1])
		if !errors.Is(err, spool.ErrBadConfValue) || !strings.Contains(err.Error(), kv[0]) || !strings.Contains(err.Error(), kv[2]) {
			t.Errorf("%s=%s: %v, want ErrBadConfValue naming the key and saying %q", kv[0], kv[1], err, kv[2])
		}
	}
	// A keystore is a security key: with security.protocol left at plaintext it is an error of
	// the combination, as ssl.certificate.location is.
	c, err := spool.NewConfFromMap(map[string]string{"ssl.keystore.location": "/k.pem"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Check(); err == nil || !strings.Contains(err.Error(), "ssl.keystore.location set") {
		t.Errorf("ssl.keystore.location with plaintext: %v", err)
	}
}

package spool_test

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/broker/brokertest/testca"
	"github.com/spoolmq/spool/protocol-spec/wire"
	spool "github.com/spoolmq/spool/sdk-go"
)

const securePlainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret" user_alice="alice-secret";`

// secureBroker is a broker with every kind of listener: PLAINTEXT, SSL, SASL_PLAINTEXT and
// SASL_SSL (PLAIN from the JAAS config, SCRAM from AlterUserScramCredentials) and MTLS, an SSL
// listener that requires a client certificate. Its SCRAM user alice (password alice-scram,
// both mechanisms) is made through this SDK's admin over the PLAIN listener.
type secureBroker struct {
	b  *brokertest.Broker
	ca *testca.CA
}

func startSecureBroker(t *testing.T, props map[string]string) *secureBroker {
	t.Helper()
	ca := testca.New(t)
	all := map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0,MTLS://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,MTLS:SSL",
		"sasl.enabled.mechanisms":        "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": securePlainJAAS,
		"listener.name.sasl_ssl.plain.sasl.jaas.config":       securePlainJAAS,
		"ssl.keystore.type":                         "PEM",
		"ssl.keystore.location":                     ca.Server(t, "broker").File,
		"ssl.truststore.type":                       "PEM",
		"ssl.truststore.location":                   ca.File,
		"listener.name.mtls.ssl.client.auth":        "required",
		"num.partitions":                            "2",
		"connection.failed.authentication.delay.ms": "50",
	}
	for k, v := range props {
		all[k] = v
	}
	sb := &secureBroker{b: brokertest.Start(t, brokertest.Options{Props: all}), ca: ca}
	adm := newClient(t, sb.b.Listener(t, "SASL_PLAINTEXT"), spool.SASL(spool.SASLPlain("admin", "admin-secret"))).Admin()
	for _, m := range []spool.ScramMechanism{spool.ScramSHA256, spool.ScramSHA512} {
		if err := adm.UpsertUserScram(testCtx(t), "alice", m, 4096, "alice-scram"); err != nil {
			t.Fatal(err)
		}
	}
	return sb
}

// roundTrip creates a topic, produces n records and consumes them back through one client.
func roundTrip(t *testing.T, addr string, n int, opts ...spool.Opt) {
	t.Helper()
	cl := newClient(t, addr, opts...)
	topic := createTopic(t, cl, 2)
	ctx := testCtx(t)
	for i := range n {
		if err := cl.ProduceSync(ctx, &spool.Record{Topic: topic, Value: fmt.Appendf(nil, "secure-%d", i)}); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	got := consumeN(t, cl, topic, n)
	seen := map[string]bool{}
	for _, r := range got {
		seen[string(r.Value)] = true
	}
	for i := range n {
		if !seen[fmt.Sprintf("secure-%d", i)] {
			t.Fatalf("record secure-%d not consumed (got %d records)", i, len(got))
		}
	}
}

// The SDK produces and consumes over each kind of listener, configured through options and
// through the librdkafka keys of the shared table.
func TestSecureRoundTrips(t *testing.T) {
	t.Parallel()
	sb := startSecureBroker(t, nil)
	b, ca := sb.b, sb.ca
	roots := &tls.Config{RootCAs: ca.Pool()}
	alice := ca.Client(t, "alice", pkix.Name{CommonName: "alice", Organization: []string{"Spool"}})
	for _, tc := range []struct {
		name, listener string
		opts           []spool.Opt
		keys           map[string]string
	}{
		{name: "SSL", listener: "SSL", opts: []spool.Opt{spool.TLS(roots)},
			keys: map[string]string{"security.protocol": "ssl", "ssl.ca.location": ca.File}},
		{name: "SASL_SSL SCRAM-SHA-512", listener: "SASL_SSL", opts: []spool.Opt{spool.TLS(roots), spool.SASL(spool.SASLScram(spool.ScramSHA512, "alice", "alice-scram"))},
			keys: map[string]string{"security.protocol": "SASL_SSL", "ssl.ca.location": ca.File, "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "alice", "sasl.password": "alice-scram"}},
		{name: "SASL_PLAINTEXT SCRAM-SHA-256", listener: "SASL_PLAINTEXT", opts: []spool.Opt{spool.SASL(spool.SASLScram(spool.ScramSHA256, "alice", "alice-scram"))},
			keys: map[string]string{"security.protocol": "sasl_plaintext", "sasl.mechanism": "scram-sha-256", "sasl.username": "alice", "sasl.password": "alice-scram"}},
		{name: "SASL_PLAINTEXT PLAIN", listener: "SASL_PLAINTEXT", opts: []spool.Opt{spool.SASL(spool.SASLPlain("alice", "alice-secret"))},
			keys: map[string]string{"security.protocol": "sasl_plaintext", "sasl.mechanisms": "PLAIN", "sasl.username": "alice", "sasl.password": "alice-secret"}},
		{name: "mutual TLS", listener: "MTLS", opts: []spool.Opt{spool.TLS(&tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{alice.Cert}})},
			keys: map[string]string{"security.protocol": "ssl", "ssl.ca.pem": readFile(t, ca.File), "ssl.certificate.location": alice.CertFile, "ssl.key.location": alice.KeyFile}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := b.Listener(t, tc.listener)
			t.Run("options", func(t *testing.T) { roundTrip(t, addr, 20, tc.opts...) })
			t.Run("keys", func(t *testing.T) {
				conf, err := spool.NewConfFromMap(tc.keys)
				if err != nil {
					t.Fatal(err)
				}
				roundTrip(t, addr, 20, conf.Opts()...)
			})
		})
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// countingDialer counts the connections a client opens.
type countingDialer struct{ n atomic.Int32 }

func (d *countingDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.n.Add(1)
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

// A wrong password, an unknown user and a mechanism the listener does not offer fail the first
// call at once with the broker's error, without retrying; so does a broker certificate from
// another CA, and a missing client certificate on the MTLS listener.
func TestSecureRefusals(t *testing.T) {
	t.Parallel()
	sb := startSecureBroker(t, nil)
	b, ca := sb.b, sb.ca
	roots := spool.TLS(&tls.Config{RootCAs: ca.Pool()})
	for _, tc := range []struct {
		name, listener string
		opts           []spool.Opt
		want           error
		text           string
	}{
		{"wrong SCRAM password", "SASL_SSL", []spool.Opt{roots, spool.SASL(spool.SASLScram(spool.ScramSHA512, "alice", "guess"))}, wire.ErrSaslAuthenticationFailed, "SCRAM-SHA-512"},
		{"unknown SCRAM user", "SASL_PLAINTEXT", []spool.Opt{spool.SASL(spool.SASLScram(spool.ScramSHA256, "mallory", "x"))}, wire.ErrSaslAuthenticationFailed, "mallory"},
		{"wrong PLAIN password", "SASL_PLAINTEXT", []spool.Opt{spool.SASL(spool.SASLPlain("alice", "guess"))}, wire.ErrSaslAuthenticationFailed, "PLAIN"},
		{"SASL on an SSL listener", "SSL", []spool.Opt{roots, spool.SASL(spool.SASLPlain("alice", "alice-secret"))}, wire.ErrIllegalSaslState, ""},
		{"another CA", "SSL", []spool.Opt{spool.TLS(&tls.Config{RootCAs: testca.New(t).Pool()})}, nil, "certificate"},
		{"no client certificate", "MTLS", []spool.Opt{roots}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &countingDialer{}
			cl := newClient(t, b.Listener(t, tc.listener), append(tc.opts, spool.Dialer(d.dial), spool.Idempotence(false))...)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := cl.ProduceSync(ctx, &spool.Record{Topic: "refused", Value: []byte("x")})
			if err == nil || errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("produce: %v, want a refusal", err)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("produce: %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.text) {
				t.Errorf("produce: %v, want it to mention %q", err, tc.text)
			}
			// One dial, maybe a second for the metadata request behind the first: no storm.
			if n := d.n.Load(); n > 3 {
				t.Errorf("%d connections for one refused call", n)
			}
			t.Logf("%s: %v (%d dials)", tc.name, err, d.n.Load())
		})
	}
}

// The keys combine only once all are set: contradictions and gaps are errors of NewClient.
func TestSecureConfErrors(t *testing.T) {
	for _, tc := range []struct {
		conf map[string]string
		bad  string
	}{
		{map[string]string{"sasl.username": "a", "sasl.password": "b", "sasl.mechanisms": "PLAIN"}, "security.protocol is PLAINTEXT"},
		{map[string]string{"security.protocol": "plaintext", "ssl.ca.location": "/x"}, "ssl.ca.location set"},
		{map[string]string{"security.protocol": "sasl_ssl", "sasl.username": "a"}, "needs sasl.mechanisms"},
		{map[string]string{"security.protocol": "sasl_plaintext", "sasl.mechanisms": "PLAIN"}, "needs sasl.username"},
		{map[string]string{"security.protocol": "ssl", "ssl.ca.location": "/no/such/ca.pem"}, "reading the CA"},
		{map[string]string{"security.protocol": "ssl", "ssl.ca.pem": "not a pem"}, "holds no PEM certificate"},
		{map[string]string{"security.protocol": "ssl", "ssl.certificate.pem": "x"}, "needs its key"},
		{map[string]string{"security.protocol": "ssl", "ssl.ca.pem": "x", "ssl.ca.location": "/x"}, "both as a file and inline"},
		{map[string]string{"security.protocol": "ssl", "enable.ssl.certificate.verification": "false"}, ""},
		{map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "scram-sha-512", "sasl.username": "a"}, ""},
	} {
		c, err := spool.NewConfFromMap(tc.conf)
		if err != nil {
			t.Fatalf("%v: %v", tc.conf, err)
		}
		err = c.Check()
		if (tc.bad == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.bad)) {
			t.Errorf("%v: %v, want %q", tc.conf, err, tc.bad)
		}
	}
	var c spool.Conf
	for _, kv := range [][2]string{{"security.protocol", "tls"}, {"sasl.mechanisms", "GSSAPI"}, {"ssl.endpoint.identification.algorithm", "dns"}, {"sasl.username", ""}} {
		if err := c.Set(kv[0], kv[1]); !errors.Is(err, spool.ErrBadConfValue) {
			t.Errorf("%s=%s: %v, want ErrBadConfValue", kv[0], kv[1], err)
		}
	}
	if v, _ := func() (string, bool) { c.Set("security.protocol", "SASL_SSL"); return c.Get("security.protocol") }(); v != "sasl_ssl" {
		t.Errorf("security.protocol canonical value %q", v)
	}
}

// ssl.endpoint.identification.algorithm=none checks the chain but not the name; https (the
// default) checks both.
func TestSecureHostnameCheck(t *testing.T) {
	t.Parallel()
	sb := startSecureBroker(t, nil)
	_, port, _ := net.SplitHostPort(sb.b.Listener(t, "SSL"))
	// The client dials a name the broker's certificate does not hold (it holds localhost and
	// 127.0.0.1); the dialer takes it to the broker.
	seed := net.JoinHostPort("broker.invalid", port)
	toBroker := spool.Dialer(func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, strings.Replace(addr, "broker.invalid", "127.0.0.1", 1))
	})
	for _, tc := range []struct {
		endpoint string
		ok       bool
	}{{"https", false}, {"none", true}} {
		conf, err := spool.NewConfFromMap(map[string]string{"security.protocol": "ssl", "ssl.ca.location": sb.ca.File,
			"ssl.endpoint.identification.algorithm": tc.endpoint})
		if err != nil {
			t.Fatal(err)
		}
		cl := newClient(t, seed, append(conf.Opts(), toBroker)...)
		_, err = cl.Admin().Cluster(testCtx(t))
		if tc.ok != (err == nil) || (err != nil && !strings.Contains(err.Error(), "broker.invalid")) {
			t.Errorf("ssl.endpoint.identification.algorithm=%s: %v", tc.endpoint, err)
		}
	}
	// Another CA's broker is refused even without the name check.
	conf, _ := spool.NewConfFromMap(map[string]string{"security.protocol": "ssl", "ssl.ca.location": testca.New(t).File,
		"ssl.endpoint.identification.algorithm": "none"})
	if _, err := newClient(t, seed, append(conf.Opts(), toBroker)...).Admin().Cluster(testCtx(t)); err == nil {
		t.Error("a broker certificate from another CA was accepted without the name check")
	}
}

// KIP-368: with connections.max.reauth.ms the SDK re-authenticates on its connections before
// each session ends, so requests keep being served over the same connections for several
// session lifetimes (a connection whose session ended is closed by the broker at its next
// request, which would show as a failure or a new dial).
func TestSecureReauthentication(t *testing.T) {
	t.Parallel()
	for _, mech := range []spool.SASLMechanism{spool.SASLPlain("alice", "alice-secret"), spool.SASLScram(spool.ScramSHA512, "alice", "alice-scram")} {
		t.Run(mech.Name(), func(t *testing.T) {
			// Sessions of 3 s: the SDK re-authenticates 150 to 450 ms before each ends, a
			// margin a loaded test machine keeps (1 s sessions left 50 to 150 ms, and a late
			// re-authentication showed as a new connection).
			sb := startSecureBroker(t, map[string]string{"connections.max.reauth.ms": "3000"})
			d := &countingDialer{}
			cl := newClient(t, sb.b.Listener(t, "SASL_PLAINTEXT"), spool.SASL(mech), spool.Dialer(d.dial))
			topic := createTopic(t, cl, 1)
			ctx := testCtx(t)
			if err := cl.ProduceSync(ctx, &spool.Record{Topic: topic, Value: []byte("first")}); err != nil {
				t.Fatal(err)
			}
			dials := d.n.Load()
			start := time.Now()
			var failed error
			sent := 0
			brokertest.WaitFor(t, 30*time.Second, "three session lifetimes of requests", func() bool {
				if err := cl.ProduceSync(ctx, &spool.Record{Topic: topic, Value: []byte("again")}); err != nil && failed == nil {
					failed = err
				}
				sent++
				return time.Since(start) > 9500*time.Millisecond
			})
			if failed != nil {
				t.Errorf("a request across re-authentications failed: %v", failed)
			}
			if n := d.n.Load(); n != dials {
				t.Errorf("%d connections opened during three session lifetimes: sessions were not renewed in place", n-dials)
			}
			t.Logf("%d produces over %v on %d connections", sent, time.Since(start).Round(time.Millisecond), dials)
		})
	}
}

// A consumer with a wrong password gets the refusal from Poll instead of waiting in silence.
func TestSecureConsumerRefused(t *testing.T) {
	t.Parallel()
	sb := startSecureBroker(t, nil)
	cl := newClient(t, sb.b.Listener(t, "SASL_PLAINTEXT"), spool.SASL(spool.SASLScram(spool.ScramSHA512, "alice", "guess")))
	ctx := testCtx(t)
	if err := cl.Assign(map[string]map[int32]spool.Offset{"any": {0: spool.OffsetStart()}}); err != nil {
		t.Fatal(err)
	}
	_, err := cl.Poll(ctx)
	if !errors.Is(err, wire.ErrSaslAuthenticationFailed) {
		t.Fatalf("poll: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}

// A group member with a wrong password gets the refusal from Poll too, not endless rejoins.
func TestSecureGroupConsumerRefused(t *testing.T) {
	t.Parallel()
	sb := startSecureBroker(t, nil)
	cl := newClient(t, sb.b.Listener(t, "SASL_PLAINTEXT"), spool.SASL(spool.SASLScram(spool.ScramSHA512, "alice", "guess")),
		spool.ConsumerGroup("refused"), spool.ConsumeTopics("any"))
	_, err := cl.Poll(testCtx(t))
	if !errors.Is(err, wire.ErrSaslAuthenticationFailed) {
		t.Fatalf("poll: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}

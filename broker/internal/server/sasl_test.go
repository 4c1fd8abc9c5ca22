package server_test

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/broker/brokertest/testca"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

const plainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`

// saslBroker has a PLAINTEXT, a SASL_PLAINTEXT and a SASL_SSL listener, PLAIN with the users
// admin and alice; it returns the CA of the SASL_SSL listener's certificate.
func saslBroker(t testing.TB) (*brokertest.Broker, *testca.CA) {
	ca := testca.New(t)
	b := brokertest.Start(t, brokertest.Options{Props: map[string]string{
		"listeners":               "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
		"sasl.enabled.mechanisms": "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": plainJAAS,
		"listener.name.sasl_ssl.plain.sasl.jaas.config":       plainJAAS,
		"ssl.keystore.type":      "PEM",
		"ssl.keystore.location":  ca.Server(t, "broker").File,
		"spool.metrics.listener": "127.0.0.1:0",
	}})
	return b, ca
}

// franz-go authenticates with PLAIN over SASL_SSL (SASL_PLAINTEXT with PLAIN is a cell of
// TestClientSecurityMatrix), and the listener's metadata names its own port.
func TestFranzSASLPlain(t *testing.T) {
	parallel(t)
	b, ca := saslBroker(t)
	alice := kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())
	tlsOpt := kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool()})
	if err := produceConsume(t, "sasl-ssl", 10, kgo.SeedBrokers(b.Listener(t, "SASL_SSL")), alice, tlsOpt); err != nil {
		t.Fatalf("SASL_SSL: %v", err)
	}
	if got := metadataBrokers(t, kgo.SeedBrokers(b.Listener(t, "SASL_SSL")), alice, tlsOpt); len(got) != 1 || got[0] != b.Listener(t, "SASL_SSL") {
		t.Errorf("metadata over SASL_SSL: %v", got)
	}
}

// A wrong password and an unknown user both get SASL_AUTHENTICATION_FAILED with the same
// message; an unknown mechanism UNSUPPORTED_SASL_MECHANISM.
func TestSASLRefusals(t *testing.T) {
	parallel(t)
	b, _ := saslBroker(t)
	addr := b.Listener(t, "SASL_PLAINTEXT")
	var messages []string
	for name, mech := range map[string]kgo.Opt{
		"wrong password": kgo.SASL(plain.Auth{User: "alice", Pass: "guess"}.AsMechanism()),
		"unknown user":   kgo.SASL(plain.Auth{User: "mallory", Pass: "alice-secret"}.AsMechanism()),
	} {
		err := metadataErr(t, kgo.SeedBrokers(addr), mech)
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s: %v, want SASL_AUTHENTICATION_FAILED", name, err)
			continue
		}
		messages = append(messages, strings.ReplaceAll(err.Error(), "mallory", "alice"))
	}
	if len(messages) == 2 && messages[0] != messages[1] {
		t.Errorf("the refusals differ, telling which users exist: %q vs %q", messages[0], messages[1])
	}
	// Each refusal is counted, by listener and mechanism.
	failures := map[string]string{"spool_listener": "SASL_PLAINTEXT", "spool_mechanism": "PLAIN"}
	if got := value(scrape(t, b.MetricsAddr), "spool_authentication_failures_total", failures); got < 2 {
		t.Errorf("spool_authentication_failures_total%v = %v after two refusals, want ≥ 2", failures, got)
	}
	scramOpt := kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism())
	if err := metadataErr(t, kgo.SeedBrokers(addr), scramOpt); !errors.Is(err, kerr.UnsupportedSaslMechanism) {
		t.Errorf("SCRAM-SHA-512: %v, want UNSUPPORTED_SASL_MECHANISM", err)
	}
	// No SASL at all on a SASL listener: the connection closes at the first other request.
	if err := metadataErr(t, kgo.SeedBrokers(addr)); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("no SASL: %v, want a closed connection", err)
	}
}

// metadataErr is the error of one metadata request through a client made with opts.
func metadataErr(t *testing.T, opts ...kgo.Opt) error {
	t.Helper()
	cl, err := kgo.NewClient(append(opts, kgo.RequestRetries(0))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	return err
}

// A request other than ApiVersions before authentication closes the connection at once,
// without an answer, as Kafka does; ApiVersions is answered.
func TestSASLRequestBeforeAuthentication(t *testing.T) {
	parallel(t)
	b, _ := saslBroker(t)
	c, err := net.Dial("tcp", b.Listener(t, "SASL_PLAINTEXT"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute)) // a bound on a hang, not on the broker's speed
	send := func(req []byte) {
		if _, err := c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(req))), req...)); err != nil {
			t.Fatal(err)
		}
	}
	send([]byte{0, 18, 0, 0, 0, 0, 0, 1, 0, 1, 'x'}) // ApiVersions v0
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		t.Fatalf("ApiVersions before authentication: %v", err)
	}
	resp := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, resp); err != nil || binary.BigEndian.Uint32(resp) != 1 {
		t.Fatalf("ApiVersions response: %x %v", resp, err)
	}
	send([]byte{0, 3, 0, 0, 0, 0, 0, 2, 0, 1, 'x', 0, 0, 0, 0}) // Metadata v0, no topics
	if rest, err := io.ReadAll(c); err != nil || len(rest) != 0 {
		t.Errorf("Metadata before authentication: read %x, %v; want the connection closed", rest, err)
	}
}

// After a SaslHandshake v0 the mechanism's tokens come as raw frames (Kafka before KIP-152; what
// kafka-python 2.0 sends): the right PLAIN password gets an empty frame and the connection is
// served; a wrong one, a token over sasl.server.max.receive.size and an empty token each get
// the connection closed, with no answer.
func TestSASLHandshakeV0RawTokens(t *testing.T) {
	parallel(t)
	b, _ := saslBroker(t)
	handshake := func() *rawClient {
		t.Helper()
		c := dial(t, b.Listener(t, "SASL_PLAINTEXT"))
		var resp wire.SaslHandshakeResponse
		c.roundTrip(&wire.SaslHandshakeRequest{Mechanism: "PLAIN"}, &resp, 0)
		if resp.ErrorCode != 0 || !slices.Equal(resp.Mechanisms, []string{"PLAIN"}) {
			t.Fatalf("SaslHandshake v0: %+v", resp)
		}
		return c
	}
	token := func(c *rawClient, tok string) {
		c.writeRaw(append(binary.BigEndian.AppendUint32(nil, uint32(len(tok))), tok...))
	}

	c := handshake()
	token(c, "\x00alice\x00alice-secret")
	if f, err := c.frame(); err != nil || len(f) != 0 {
		t.Fatalf("the right password: frame %x, %v; want an empty one", f, err)
	}
	var md wire.MetadataResponse
	c.roundTrip(&wire.MetadataRequest{}, &md, 1)
	if len(md.Brokers) != 1 {
		t.Errorf("Metadata after raw PLAIN: %+v", md)
	}

	c = handshake()
	token(c, "\x00alice\x00guess")
	c.expectClosed()

	c = handshake()
	token(c, "")
	c.expectClosed()

	c = handshake()
	c.writeRaw(binary.BigEndian.AppendUint32(nil, 1<<20)) // over the default 512 KiB; no body follows
	c.expectClosed()
}

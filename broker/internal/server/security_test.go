package server_test

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/broker/brokertest/testca"
)

// sslProps are the properties of a broker with a PLAINTEXT and an SSL listener whose
// keystore is the server certificate's PEM file.
func sslProps(ca *testca.CA, server *testca.Issued) map[string]string {
	return map[string]string{
		"listeners":               "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
		"ssl.keystore.type":       "PEM",
		"ssl.keystore.location":   server.File,
		"ssl.truststore.type":     "PEM",
		"ssl.truststore.location": ca.File,
	}
}

// metadataBrokers asks the seed broker (and only it) for metadata and returns its brokers
// as HOST:PORT.
func metadataBrokers(t *testing.T, opts ...kgo.Opt) []string {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	var out []string
	for _, b := range resp.Brokers {
		out = append(out, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))))
	}
	return out
}

// Metadata answers with the endpoints of the listener the client came through: each
// listener's bound port, or its advertised.listeners entry.
func TestMetadataAnswersWithTheClientsListener(t *testing.T) {
	parallel(t)
	b := brokertest.Start(t, brokertest.Options{Props: map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,CLIENT://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CLIENT:PLAINTEXT,EXTERNAL:PLAINTEXT",
		"advertised.listeners":           "EXTERNAL://spool.example:19093",
	}})
	for name, want := range map[string]string{
		"PLAINTEXT": b.Listener(t, "PLAINTEXT"),
		"CLIENT":    b.Listener(t, "CLIENT"),
		"EXTERNAL":  "spool.example:19093",
	} {
		got := metadataBrokers(t, kgo.SeedBrokers(b.Listener(t, name)))
		if len(got) != 1 || got[0] != want {
			t.Errorf("metadata through %s: brokers %v, want [%s]", name, got, want)
		}
	}
	if b.Addr != b.Listener(t, "PLAINTEXT") {
		t.Errorf("Addr %s is not the first listener %s", b.Addr, b.Listener(t, "PLAINTEXT"))
	}
}

// produceConsume produces n records through a client and reads them back.
func produceConsume(t *testing.T, topic string, n int, opts ...kgo.Opt) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(append(opts, kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.ConsumeTopics(topic), kgo.RequestRetries(2))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	for i := range n {
		if err := cl.ProduceSync(ctx, kgo.StringRecord("tls-"+strconv.Itoa(i))).FirstErr(); err != nil {
			return err
		}
	}
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return err
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) == "tls-"+strconv.Itoa(got) {
				got++
			}
		})
	}
	return nil
}

// franz-go produces and consumes over TLS. The SSL listener's metadata names the SSL port, or
// the TLS client could not reach the partition leader.
func TestFranzOverTLS(t *testing.T) {
	parallel(t)
	ca := testca.New(t)
	b := brokertest.Start(t, brokertest.Options{Props: sslProps(ca, ca.Server(t, "broker"))})
	ssl := b.Listener(t, "SSL")
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		cfg := &tls.Config{RootCAs: ca.Pool(), MinVersion: v, MaxVersion: v}
		if err := produceConsume(t, "tls-"+strconv.Itoa(int(v)), 20, kgo.SeedBrokers(ssl), kgo.DialTLSConfig(cfg)); err != nil {
			t.Fatalf("TLS version %x: %v", v, err)
		}
	}
	if got := metadataBrokers(t, kgo.SeedBrokers(ssl), kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool()})); len(got) != 1 || got[0] != ssl {
		t.Errorf("metadata over SSL: %v, want [%s]", got, ssl)
	}
}

// ssl.enabled.protocols=TLSv1.3 refuses a TLS 1.2 client.
func TestTLSEnabledProtocols(t *testing.T) {
	parallel(t)
	ca := testca.New(t)
	props := sslProps(ca, ca.Server(t, "broker"))
	props["ssl.enabled.protocols"] = "TLSv1.3"
	b := brokertest.Start(t, brokertest.Options{Props: props})
	_, err := tls.Dial("tcp", b.Listener(t, "SSL"), &tls.Config{RootCAs: ca.Pool(), MaxVersion: tls.VersionTLS12})
	if err == nil || !strings.Contains(err.Error(), "protocol version") {
		t.Errorf("TLS 1.2 client against TLSv1.3 only: %v", err)
	}
	c, err := tls.Dial("tcp", b.Listener(t, "SSL"), &tls.Config{RootCAs: ca.Pool()})
	if err != nil {
		t.Fatalf("TLS 1.3 client: %v", err)
	}
	defer c.Close()
	if v := c.ConnectionState().Version; v != tls.VersionTLS13 {
		t.Errorf("negotiated %x, want TLS 1.3", v)
	}
}

// Mutual TLS: with ssl.client.auth=required a client certificate signed by the CA gets in; a
// client without one, or with one from another CA, is refused.
func TestMutualTLSRequired(t *testing.T) {
	heavy(t)
	ca := testca.New(t)
	props := sslProps(ca, ca.Server(t, "broker"))
	props["ssl.client.auth"] = "required"
	b := brokertest.Start(t, brokertest.Options{Props: props})
	ssl := b.Listener(t, "SSL")
	alice := ca.Client(t, "alice", pkix.Name{CommonName: "alice", Organization: []string{"Spool"}})
	withCert := &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{alice.Cert}}
	if err := produceConsume(t, "mtls", 5, kgo.SeedBrokers(ssl), kgo.DialTLSConfig(withCert)); err != nil {
		t.Fatalf("client with a certificate: %v", err)
	}
	other := testca.New(t).Client(t, "mallory", pkix.Name{CommonName: "mallory"})
	for name, cfg := range map[string]*tls.Config{
		"no certificate":         {RootCAs: ca.Pool()},
		"another CA's signature": {RootCAs: ca.Pool(), Certificates: []tls.Certificate{other.Cert}},
	} {
		// TLS 1.3 clients learn of the refusal at their first read.
		c, err := tls.Dial("tcp", ssl, cfg)
		if err == nil {
			_, err = c.Read(make([]byte, 1))
			c.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("%s: %v, want a refusal for want of a certificate", name, err)
		}
	}
	kcat := brokertest.NeedTool(t, "/usr/bin/kcat", "kcat")
	out := run(t, "", kcat, "-b", ssl, "-X", "security.protocol=ssl", "-X", "ssl.ca.location="+ca.File,
		"-X", "ssl.certificate.location="+alice.CertFile, "-X", "ssl.key.location="+alice.KeyFile, "-C", "-t", "mtls", "-o", "beginning", "-e", "-q")
	if strings.Count(out, "tls-") != 5 {
		t.Errorf("kcat with a client certificate read %q", out)
	}
}

// A plaintext Kafka client on the SSL port has its connection closed, without a Kafka answer.
func TestPlaintextClientOnSSLPort(t *testing.T) {
	parallel(t)
	ca := testca.New(t)
	props := sslProps(ca, ca.Server(t, "broker"))
	props["spool.metrics.listener"] = "127.0.0.1:0"
	b := brokertest.Start(t, brokertest.Options{Props: props})
	c, err := net.Dial("tcp", b.Listener(t, "SSL"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// ApiVersions v0, correlation id 7, client id "x".
	req := []byte{0, 18, 0, 0, 0, 0, 0, 7, 0, 1, 'x'}
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(req)))
	if _, err := c.Write(append(frame, req...)); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(time.Minute)) // a bound on a hang, not on the broker's speed
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("the broker did not close the connection: %v (read %x)", err, got)
	}
	// At most a TLS alert record (type 21), never a Kafka response.
	if len(got) > 0 && got[0] != 21 {
		t.Errorf("plaintext client on the SSL port got %x", got)
	}
	// franz-go without TLS gets no metadata either.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Listener(t, "SSL")), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("plaintext franz-go on the SSL port: %v, want a closed connection", err)
	}
	// The failed handshakes are counted as failed authentications of the SSL listener.
	failures := map[string]string{"spool_listener": "SSL", "spool_mechanism": "SSL"}
	if got := value(scrape(t, b.MetricsAddr), "spool_authentication_failures_total", failures); got < 1 {
		t.Errorf("spool_authentication_failures_total%v = %v, want ≥ 1", failures, got)
	}
}

// A new certificate in the keystore file is served from the next handshake on, without a
// restart; a broken file leaves the last good one in place.
func TestTLSCertificateReload(t *testing.T) {
	parallel(t)
	ca := testca.New(t)
	first := ca.Server(t, "first")
	keystore := filepath.Join(t.TempDir(), "broker.pem")
	copyFile(t, first.File, keystore)
	props := sslProps(ca, first)
	props["ssl.keystore.location"] = keystore
	b := brokertest.Start(t, brokertest.Options{Props: props})
	serial := func() string {
		c, err := tls.Dial("tcp", b.Listener(t, "SSL"), &tls.Config{RootCAs: ca.Pool()})
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	if got := serial(); got != first.Leaf.SerialNumber.String() {
		t.Fatalf("serving serial %s, want %s", got, first.Leaf.SerialNumber)
	}
	// Replaced as certificate managers do: write aside, rename over.
	second := ca.Server(t, "second")
	copyFile(t, second.File, keystore)
	if got := serial(); got != second.Leaf.SerialNumber.String() {
		t.Errorf("after the keystore changed: serving serial %s, want %s", got, second.Leaf.SerialNumber)
	}
	if err := os.WriteFile(keystore+".tmp", []byte("not PEM"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(keystore+".tmp", keystore); err != nil {
		t.Fatal(err)
	}
	if got := serial(); got != second.Leaf.SerialNumber.String() {
		t.Errorf("after a broken keystore: serving serial %s, want the last good %s", got, second.Leaf.SerialNumber)
	}
}

// copyFile writes src's content to a temporary file beside dst and renames it over dst.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst+".tmp", b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dst+".tmp", dst); err != nil {
		t.Fatal(err)
	}
}

// Kafka's inline PEM keystore, as a properties file writes it with line continuations.
func TestInlinePEMKeystore(t *testing.T) {
	parallel(t)
	ca := testca.New(t)
	server := ca.Server(t, "broker")
	// Java's properties continuation drops each line break (and the next line's indent).
	flatten := func(s string) string { return strings.ReplaceAll(s, "\n", "") }
	props := map[string]string{
		"listeners":                      "SSL://127.0.0.1:0",
		"ssl.keystore.type":              "PEM",
		"ssl.keystore.certificate.chain": flatten(server.ChainPEM),
		"ssl.keystore.key":               flatten(server.KeyPEM),
	}
	b := brokertest.Start(t, brokertest.Options{Props: props})
	if err := produceConsume(t, "inline", 3, kgo.SeedBrokers(b.Addr), kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool()})); err != nil {
		t.Fatal(err)
	}
}

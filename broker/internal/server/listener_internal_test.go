package server

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"log/slog"
	"net"
	"testing"

	"github.com/spoolmq/spool/broker/brokertest/testca"
	"github.com/spoolmq/spool/broker/internal/config"
	"github.com/spoolmq/spool/broker/internal/security"
)

// A client certificate's subject becomes the connection's principal, which every request
// carries; without a certificate (ssl.client.auth=requested) the principal is ANONYMOUS.
func TestTLSPrincipalFromClientCertificate(t *testing.T) {
	ca := testca.New(t)
	srvCert := ca.Server(t, "broker")
	tl, err := security.NewTLS(config.SSL{KeystoreLocation: srvCert.File, TruststoreLocation: ca.File, ClientAuth: "requested",
		Protocols: []string{"TLSv1.2", "TLSv1.3"}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	alice := ca.Client(t, "alice", pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}, Organization: []string{"Spool"}})
	for want, certs := range map[string][]tls.Certificate{
		"User:CN=alice,OU=eng,O=Spool": {alice.Cert},
		security.Anonymous:             nil,
	} {
		sc, cc := net.Pipe()
		c := &conn{s: &Server{}, nc: sc, principal: security.Anonymous, log: slog.New(slog.DiscardHandler)}
		done := make(chan error, 1)
		go func() {
			tc := tls.Client(cc, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", Certificates: certs})
			done <- tc.Handshake()
		}()
		if err := c.handshake(context.Background(), tl.Config()); err != nil {
			t.Fatalf("%s: server handshake: %v", want, err)
		}
		if err := <-done; err != nil {
			t.Fatalf("%s: client handshake: %v", want, err)
		}
		if c.principal != want {
			t.Errorf("principal %q, want %q", c.principal, want)
		}
		c.listener = "SSL"
		p, err := c.dispatch(context.Background(), []byte{0, 18, 0, 0, 0, 0, 0, 7, 0, 1, 'x'}) // ApiVersions v0
		if err != nil || p.req.principal != want || p.req.listener != "SSL" {
			t.Errorf("request carries principal %q listener %q (%v), want %q SSL", p.req.principal, p.req.listener, err, want)
		}
		sc.Close()
		cc.Close()
	}
}

package server

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest/testca"
	"github.com/spoolmq/spool/broker/internal/config"
	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
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
		rules, _ := security.ParsePrincipalRules("DEFAULT")
		if err := c.handshake(context.Background(), &listener{tls: tl.Config(), principals: rules}); err != nil {
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

// requestFrame encodes a request (header v1, a non-flexible version) without its size.
func requestFrame(key, version int16, msg wire.Message) []byte {
	id := "test"
	h := wire.RequestHeader{RequestApiKey: key, RequestApiVersion: version, CorrelationId: 1, ClientId: &id}
	return msg.AppendTo(h.AppendTo(nil, 1), version)
}

// After SASL PLAIN the connection's principal is the user, carried by every later request;
// before it, only ApiVersions and the SASL exchange are served.
func TestSASLPrincipalOnRequests(t *testing.T) {
	sc, cc := net.Pipe()
	defer sc.Close()
	defer cc.Close()
	c := &conn{s: &Server{log: slog.New(slog.DiscardHandler)}, nc: sc, listener: "SASL_PLAINTEXT", principal: security.Anonymous,
		log: slog.New(slog.DiscardHandler), sasl: &saslSession{cfg: &saslConfig{mechanisms: []string{"PLAIN"}, plain: map[string]string{"alice": "pw"}}}}
	ctx := context.Background()
	if _, err := c.dispatch(ctx, requestFrame(wire.KeyMetadata, 1, &wire.MetadataRequest{})); err == nil {
		t.Fatal("Metadata before authentication was served")
	}
	p, err := c.dispatch(ctx, requestFrame(wire.KeySaslHandshake, 1, &wire.SaslHandshakeRequest{Mechanism: "PLAIN"}))
	if err != nil || p.reply.msg.(*wire.SaslHandshakeResponse).ErrorCode != 0 {
		t.Fatalf("handshake: %v %+v", err, p.reply.msg)
	}
	p, err = c.dispatch(ctx, requestFrame(wire.KeySaslAuthenticate, 1, &wire.SaslAuthenticateRequest{AuthBytes: []byte("\x00alice\x00pw")}))
	if err != nil || p.reply.msg.(*wire.SaslAuthenticateResponse).ErrorCode != 0 {
		t.Fatalf("authenticate: %v %+v", err, p.reply.msg)
	}
	p, err = c.dispatch(ctx, []byte{0, 18, 0, 0, 0, 0, 0, 7, 0, 1, 'x'}) // ApiVersions v0
	if err != nil || p.req.principal != "User:alice" || c.principal != "User:alice" {
		t.Errorf("after PLAIN: request principal %q, connection %q (%v)", p.req.principal, c.principal, err)
	}
	// A second exchange is out of order: ILLEGAL_SASL_STATE, and the connection is to close.
	p, _ = c.dispatch(ctx, requestFrame(wire.KeySaslHandshake, 1, &wire.SaslHandshakeRequest{Mechanism: "PLAIN"}))
	if p.reply.msg.(*wire.SaslHandshakeResponse).ErrorCode != wire.ErrIllegalSaslState.Code || !c.sasl.failed {
		t.Errorf("second handshake: %+v failed=%v", p.reply.msg, c.sasl.failed)
	}
}

// KIP-368: with connections.max.reauth.ms the answer carries the session lifetime; the client
// re-authenticates on the same connection with the same mechanism and principal; another
// principal is refused; a connection whose session ended is closed at its next request.
func TestSASLReauthentication(t *testing.T) {
	sc, cc := net.Pipe()
	defer sc.Close()
	defer cc.Close()
	newConn := func() *conn {
		return &conn{s: &Server{log: slog.New(slog.DiscardHandler)}, nc: sc, listener: "SASL_PLAINTEXT", principal: security.Anonymous,
			log: slog.New(slog.DiscardHandler), sasl: &saslSession{cfg: &saslConfig{mechanisms: []string{"PLAIN"},
				plain: map[string]string{"alice": "pw", "bob": "pw"}, reauth: time.Hour}}}
	}
	ctx := context.Background()
	auth := func(c *conn, user string) *wire.SaslAuthenticateResponse {
		t.Helper()
		p, err := c.dispatch(ctx, requestFrame(wire.KeySaslHandshake, 1, &wire.SaslHandshakeRequest{Mechanism: "PLAIN"}))
		if err != nil || p.reply.msg.(*wire.SaslHandshakeResponse).ErrorCode != 0 {
			t.Fatalf("handshake: %v %+v", err, p.reply.msg)
		}
		p, err = c.dispatch(ctx, requestFrame(wire.KeySaslAuthenticate, 1, &wire.SaslAuthenticateRequest{AuthBytes: []byte("\x00" + user + "\x00pw")}))
		if err != nil {
			t.Fatal(err)
		}
		return p.reply.msg.(*wire.SaslAuthenticateResponse)
	}
	c := newConn()
	if r := auth(c, "alice"); r.ErrorCode != 0 || r.SessionLifetimeMs != time.Hour.Milliseconds() {
		t.Fatalf("first authentication: %+v, want session lifetime %d", r, time.Hour.Milliseconds())
	}
	if r := auth(c, "alice"); r.ErrorCode != 0 || c.sasl.failed || c.principal != "User:alice" {
		t.Fatalf("re-authentication: %+v failed=%v principal=%s", r, c.sasl.failed, c.principal)
	}
	// DescribeAcls: a request served without anything behind it (no authorizer here).
	acls := func() []byte {
		return requestFrame(wire.KeyDescribeAcls, 1, &wire.DescribeAclsRequest{ResourceTypeFilter: 1, PatternTypeFilter: 1, Operation: 1, PermissionType: 1})
	}
	if _, err := c.dispatch(ctx, acls()); err != nil {
		t.Errorf("a request after re-authentication: %v", err)
	}
	if r := auth(c, "bob"); r.ErrorCode != wire.ErrSaslAuthenticationFailed.Code || !c.sasl.failed {
		t.Errorf("re-authentication as another principal: %+v failed=%v", r, c.sasl.failed)
	}
	// A session that has ended: only re-authentication is served.
	c = newConn()
	auth(c, "alice")
	c.sasl.expires = time.Now().Add(-time.Second)
	if _, err := c.dispatch(ctx, acls()); err == nil {
		t.Error("a request after the session ended was served")
	}
	if r := auth(c, "alice"); r.ErrorCode != 0 || c.sasl.expired(time.Now()) {
		t.Errorf("re-authentication after the session ended: %+v", r)
	}
	if _, err := c.dispatch(ctx, acls()); err != nil {
		t.Errorf("a request after re-authenticating an ended session: %v", err)
	}
}

package spool

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// This file is the client side of Kafka's security: TLS on every connection, and SASL
// (SaslHandshake v1, then SaslAuthenticate) right after ApiVersions, before any other
// request, with KIP-368 re-authentication when the broker gives the session a lifetime.

// Security protocols, Kafka's names for what a listener speaks (security.protocol).
const (
	ProtocolPlaintext     = "PLAINTEXT"
	ProtocolSSL           = "SSL"
	ProtocolSASLPlaintext = "SASL_PLAINTEXT"
	ProtocolSASLSSL       = "SASL_SSL"
)

// TLS turns TLS on for every broker connection (Kafka's SSL and SASL_SSL). cfg is cloned; a
// nil cfg means the system's roots. When cfg.ServerName is empty each connection verifies the
// host it dials, as Kafka's ssl.endpoint.identification.algorithm=https does. Build cfg from
// PEM files with TLSFiles.Config. Default: no TLS.
func TLS(cfg *tls.Config) Opt {
	return func(c *config) error {
		if cfg == nil {
			cfg = &tls.Config{}
		}
		c.sec.tls = cfg.Clone()
		return nil
	}
}

// SASL authenticates every broker connection with m (SASLPlain, SASLScram) before anything
// but ApiVersions is sent. A refusal fails the call that needed the connection with an error
// wrapping wire.ErrSaslAuthenticationFailed, and is not retried. Default: no SASL.
func SASL(m SASLMechanism) Opt {
	return func(c *config) error {
		if m == nil {
			return errors.New("SASL: nil mechanism")
		}
		c.sec.sasl = m
		return nil
	}
}

// TLSFiles are the PEM inputs of a client's TLS configuration, named after librdkafka's keys.
// Each of the CA, the certificate and the key comes from a file or inline PEM, not both.
type TLSFiles struct {
	CAFile, CAPEM     string // ssl.ca.location, ssl.ca.pem: the roots; empty: the system's
	CertFile, CertPEM string // ssl.certificate.location, ssl.certificate.pem: the client chain (mutual TLS)
	KeyFile, KeyPEM   string // ssl.key.location, ssl.key.pem: its unencrypted key (PKCS#8, PKCS#1 or EC)
	// ServerName is the name the broker's certificate must carry; empty: the dialed host.
	ServerName string
	// InsecureSkipVerify accepts any broker certificate (enable.ssl.certificate.verification=false).
	InsecureSkipVerify bool
	// NoHostnameCheck verifies the chain but not the name (ssl.endpoint.identification.algorithm=none).
	NoHostnameCheck bool
}

// Config loads the files and returns the TLS configuration they describe (TLS 1.2 at least).
func (f TLSFiles) Config() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: f.ServerName, InsecureSkipVerify: f.InsecureSkipVerify}
	ca, err := pemInput("CA", f.CAFile, f.CAPEM)
	if err != nil {
		return nil, err
	}
	if ca != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("TLS: CA %s holds no PEM certificate", orInline(f.CAFile))
		}
		cfg.RootCAs = pool
	}
	cert, err := pemInput("certificate", f.CertFile, f.CertPEM)
	if err != nil {
		return nil, err
	}
	key, err := pemInput("key", f.KeyFile, f.KeyPEM)
	if err != nil {
		return nil, err
	}
	switch {
	case cert != nil && key != nil:
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("TLS: client certificate %s and key %s: %w", orInline(f.CertFile), orInline(f.KeyFile), err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	case cert != nil || key != nil:
		return nil, errors.New("TLS: a client certificate needs its key, and a key its certificate")
	}
	if f.NoHostnameCheck && !f.InsecureSkipVerify {
		// Go checks the chain and the name together: skip both, then check the chain alone.
		cfg.InsecureSkipVerify = true
		roots := cfg.RootCAs
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
			for _, c := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(c)
			}
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the broker sent no certificate")
			}
			_, err := cs.PeerCertificates[0].Verify(opts)
			return err
		}
	}
	return cfg, nil
}

func orInline(file string) string {
	if file == "" {
		return "(inline PEM)"
	}
	return file
}

// pemInput is the PEM of one input, read from file or given inline; nil when neither is set.
func pemInput(what, file, inline string) ([]byte, error) {
	switch {
	case file != "" && inline != "":
		return nil, fmt.Errorf("TLS: the %s is given both as a file and inline: choose one", what)
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("TLS: reading the %s: %w", what, err)
		}
		return b, nil
	case inline != "":
		return []byte(inline), nil
	}
	return nil, nil
}

// securityConfig is a client's TLS and SASL settings: from the TLS and SASL options, or from
// the string keys (security.protocol, ssl.*, sasl.*), which combine only once all are set.
type securityConfig struct {
	tls  *tls.Config
	sasl SASLMechanism

	protocol   string // security.protocol, "" when not set
	files      TLSFiles
	endpointID string // ssl.endpoint.identification.algorithm: https or none
	mechanism  string // sasl.mechanisms
	user, pass string // sasl.username, sasl.password
	keysSet    []string
}

// resolve turns the string keys into the TLS configuration and the mechanism. Options given
// in code win over keys.
func (s *securityConfig) resolve() error {
	p := s.protocol
	if p == "" || p == ProtocolPlaintext {
		if len(s.keysSet) > 0 {
			return fmt.Errorf("%s set but security.protocol is %s: use SSL, SASL_PLAINTEXT or SASL_SSL", strings.Join(s.keysSet, ", "), orPlain(p))
		}
		return nil
	}
	if (p == ProtocolSSL || p == ProtocolSASLSSL) && s.tls == nil {
		f := s.files
		f.NoHostnameCheck = s.endpointID == "none"
		cfg, err := f.Config()
		if err != nil {
			return err
		}
		s.tls = cfg
	}
	if (p == ProtocolSASLPlaintext || p == ProtocolSASLSSL) && s.sasl == nil {
		if s.mechanism == "" {
			return fmt.Errorf("security.protocol=%s needs sasl.mechanisms (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", p)
		}
		if s.user == "" {
			return fmt.Errorf("security.protocol=%s needs sasl.username", p)
		}
		m, err := SASLByName(s.mechanism, s.user, s.pass)
		if err != nil {
			return err
		}
		s.sasl = m
	}
	return nil
}

func orPlain(p string) string {
	if p == "" {
		return "PLAINTEXT (the default)"
	}
	return p
}

// SASLByName is the mechanism named as Kafka names it (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512;
// case-insensitive) with a user and password.
func SASLByName(name, user, pass string) (SASLMechanism, error) {
	switch strings.ToUpper(name) {
	case "PLAIN":
		return SASLPlain(user, pass), nil
	case "SCRAM-SHA-256":
		return SASLScram(ScramSHA256, user, pass), nil
	case "SCRAM-SHA-512":
		return SASLScram(ScramSHA512, user, pass), nil
	}
	return nil, fmt.Errorf("unknown SASL mechanism %q (want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", name)
}

// SASLMechanism is a SASL mechanism with its credentials.
type SASLMechanism interface {
	// Name is the mechanism's name in SaslHandshake ("PLAIN", "SCRAM-SHA-512").
	Name() string
	// User is the name it authenticates as, for error messages.
	User() string
	// start begins one exchange.
	start() saslExchange
}

// saslExchange is one authentication: next gets the server's last message (nil at first) and
// returns the client's next one, or done when the exchange succeeded.
type saslExchange interface {
	next(server []byte) (client []byte, done bool, err error)
}

type plainMechanism struct{ user, pass string }

// SASLPlain is SASL PLAIN (RFC 4616): the password goes to the broker as it is, so use it
// over TLS (SASL_SSL) outside a trusted network.
func SASLPlain(user, pass string) SASLMechanism { return plainMechanism{user, pass} }

func (m plainMechanism) Name() string        { return "PLAIN" }
func (m plainMechanism) User() string        { return m.user }
func (m plainMechanism) start() saslExchange { return &plainExchange{m: m} }

type plainExchange struct {
	m    plainMechanism
	sent bool
}

func (e *plainExchange) next([]byte) ([]byte, bool, error) {
	if e.sent {
		return nil, true, nil // the broker's empty answer without an error code: accepted
	}
	e.sent = true
	return []byte("\x00" + e.m.user + "\x00" + e.m.pass), false, nil
}

// authenticator sends one request of the SASL exchange and waits for its response.
type authenticator func(ctx context.Context, req, resp wire.Message) error

// authenticate runs the SASL exchange of m on a connection whose versions are negotiated
// and returns the session lifetime the broker gave (0: unlimited).
func (c *conn) authenticate(ctx context.Context, m SASLMechanism, send authenticator) (time.Duration, error) {
	fail := func(err error) (time.Duration, error) {
		// Wrong credentials do not get better by retrying: the caller sees them at once.
		return 0, finalError{authError{fmt.Errorf("spool: SASL %s authentication as %q with %s: %w", m.Name(), m.User(), c.addr, err)}}
	}
	if c.versions[wire.KeySaslHandshake] < 1 || c.versions[wire.KeySaslAuthenticate] < 0 {
		return fail(fmt.Errorf("the broker offers no SaslHandshake v1 and SaslAuthenticate (is this a SASL listener?): %w", wire.ErrUnsupportedVersion))
	}
	hs := &wire.SaslHandshakeRequest{Mechanism: m.Name()}
	hsResp := &wire.SaslHandshakeResponse{}
	if err := send(ctx, hs, hsResp); err != nil {
		return 0, fmt.Errorf("spool: SaslHandshake with %s: %w", c.addr, err)
	}
	if err := wire.ErrorForCode(hsResp.ErrorCode); err != nil {
		if errors.Is(err, wire.ErrUnsupportedSaslMechanism) {
			err = fmt.Errorf("%w (the broker offers %s)", err, strings.Join(hsResp.Mechanisms, ", "))
		}
		return fail(err)
	}
	ex := m.start()
	var lifetime time.Duration
	var server []byte
	for {
		client, done, err := ex.next(server)
		if err != nil {
			return fail(err)
		}
		if done {
			return lifetime, nil
		}
		req := &wire.SaslAuthenticateRequest{AuthBytes: client}
		resp := &wire.SaslAuthenticateResponse{}
		if err := send(ctx, req, resp); err != nil {
			if errors.Is(err, ErrConnClosed) {
				// Kafka brokers before SaslAuthenticate v1 close instead of answering.
				return fail(fmt.Errorf("%w: %w", wire.ErrSaslAuthenticationFailed, err))
			}
			return 0, fmt.Errorf("spool: SaslAuthenticate with %s: %w", c.addr, err)
		}
		if err := wire.ErrorForCode(resp.ErrorCode); err != nil {
			return fail(withMessage(err, resp.ErrorMessage))
		}
		lifetime = time.Duration(resp.SessionLifetimeMs) * time.Millisecond
		server = resp.AuthBytes
	}
}

// authError is a refusal of the client's credentials or of the broker's certificate: it
// will not go away by retrying, so calls that retry in the background report it.
type authError struct{ error }

func (e authError) Unwrap() error { return e.error }

// isAuthError reports whether err is, or wraps, an authentication failure.
func isAuthError(err error) bool {
	var a authError
	return errors.As(err, &a)
}

// reauthAfter is when to re-authenticate in a session of lifetime d: at a random point
// between 85% and 95% of it, as the Java client does, so connections opened together do not
// all re-authenticate at once.
func reauthAfter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.85 + 0.1*rand.Float64()))
}

// startTLS runs the TLS handshake on nc to addr.
func startTLS(ctx context.Context, cfg *tls.Config, nc net.Conn, addr string) (net.Conn, error) {
	if cfg.ServerName == "" {
		cfg = cfg.Clone()
		if host, _, err := net.SplitHostPort(addr); err == nil {
			cfg.ServerName = host
		}
	}
	tc := tls.Client(nc, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		var cv *tls.CertificateVerificationError
		var ue x509.UnknownAuthorityError
		var he x509.HostnameError
		err = fmt.Errorf("spool: TLS handshake with %s: %w", addr, err)
		if errors.As(err, &cv) || errors.As(err, &ue) || errors.As(err, &he) {
			// A certificate the client refuses stays refused.
			return nil, finalError{authError{err}}
		}
		return nil, err
	}
	return tc, nil
}

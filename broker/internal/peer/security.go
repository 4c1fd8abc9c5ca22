package peer

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// Security is how a broker connects to the others: the inter-broker listener's TLS and SASL
// (security.inter.broker.protocol, sasl.mechanism.inter.broker.protocol and the broker's own
// credentials). A nil *Security is PLAINTEXT.
type Security struct {
	// TLS returns the client side of the listener's TLS setup (its truststore, and its
	// keystore as the client certificate), current at each call; nil without TLS.
	TLS func() *tls.Config
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; "" without SASL.
	Mechanism      string
	User, Password string
}

// secure runs the TLS handshake and the SASL exchange on a new connection.
func (s *Security) secure(ctx context.Context, nc net.Conn, addr string, deadline time.Time) (net.Conn, error) {
	if s.TLS != nil {
		cfg := s.TLS().Clone()
		if cfg.ServerName == "" {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			cfg.ServerName = host
		}
		tc := tls.Client(nc, cfg)
		hctx, cancel := context.WithDeadline(ctx, deadline)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("TLS handshake: %w", err)
		}
		nc = tc
	}
	return nc, nil
}

// mechanism is the SASL client for s.Mechanism.
func (s *Security) mechanism() (sasl.Mechanism, error) {
	switch s.Mechanism {
	case "PLAIN":
		return plain.Auth{User: s.User, Pass: s.Password}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: s.User, Pass: s.Password}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: s.User, Pass: s.Password}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("SASL mechanism %q is not supported between brokers", s.Mechanism)
}

// authenticate runs SaslHandshake v1 and SaslAuthenticate v2 until the mechanism is done.
func (c *Conn) authenticate(ctx context.Context, s *Security, host string, deadline time.Time) error {
	m, err := s.mechanism()
	if err != nil {
		return err
	}
	var hs wire.SaslHandshakeResponse
	if err := c.RoundTrip(&wire.SaslHandshakeRequest{Mechanism: s.Mechanism}, &hs, 1, deadline); err != nil {
		return err
	}
	if hs.ErrorCode != 0 {
		return fmt.Errorf("SASL handshake for %s: %w (the peer offers %v)", s.Mechanism, wire.ErrorForCode(hs.ErrorCode), hs.Mechanisms)
	}
	session, msg, err := m.Authenticate(ctx, host)
	if err != nil {
		return fmt.Errorf("SASL %s: %w", s.Mechanism, err)
	}
	for {
		var resp wire.SaslAuthenticateResponse
		if err := c.RoundTrip(&wire.SaslAuthenticateRequest{AuthBytes: msg}, &resp, 2, deadline); err != nil {
			return err
		}
		if resp.ErrorCode != 0 {
			detail := ""
			if resp.ErrorMessage != nil {
				detail = ": " + *resp.ErrorMessage
			}
			return fmt.Errorf("SASL %s as %s: %w%s", s.Mechanism, s.User, wire.ErrorForCode(resp.ErrorCode), detail)
		}
		done, next, err := session.Challenge(resp.AuthBytes)
		if err != nil {
			return fmt.Errorf("SASL %s: %w", s.Mechanism, err)
		}
		if done {
			return nil
		}
		msg = next
	}
}

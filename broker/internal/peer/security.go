package peer

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/spoolmq/spool/protocol-spec/scram"
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

// exchange is one SASL authentication, client side: given the server's last message (nil at
// first) it returns the next one to send, or done.
type exchange func(server []byte) (msg []byte, done bool, err error)

// start begins an exchange of s.Mechanism: PLAIN (RFC 4616) sends the credentials once;
// SCRAM is the protocol's one client (protocol-spec/scram), as the SDK's.
func (s *Security) start() (exchange, error) {
	switch s.Mechanism {
	case "PLAIN":
		sent := false
		return func([]byte) ([]byte, bool, error) {
			if sent {
				return nil, true, nil
			}
			sent = true
			return []byte("\x00" + s.User + "\x00" + s.Password), false, nil
		}, nil
	case "SCRAM-SHA-256", "SCRAM-SHA-512":
		m, err := scram.ParseMechanism(s.Mechanism)
		if err != nil {
			return nil, err
		}
		return scram.NewClient(m, s.User, s.Password).Step, nil
	}
	return nil, fmt.Errorf("SASL mechanism %q is not supported between brokers", s.Mechanism)
}

// authenticate runs SaslHandshake v1 and SaslAuthenticate v2 until the mechanism is done.
func (c *Conn) authenticate(s *Security, deadline time.Time) error {
	step, err := s.start()
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
	msg, _, err := step(nil)
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
		next, done, err := step(resp.AuthBytes)
		if err != nil {
			return fmt.Errorf("SASL %s: %w", s.Mechanism, err)
		}
		if done {
			return nil
		}
		msg = next
	}
}

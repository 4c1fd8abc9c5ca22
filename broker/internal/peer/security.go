package peer

import (
	"context"
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"net"
	"sync/atomic"
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
	// Counts, when set, counts the SASL authentications of every connection made with this
	// Security (for metrics).
	Counts *AuthCounts
}

// AuthCounts are cumulative SASL authentications to peers: the first of each connection, and
// the re-authentications (KIP-368) that keep a connection's session from expiring.
type AuthCounts struct {
	Authentications, Reauthentications atomic.Int64
}

// reauthAfter is when to re-authenticate in a session of lifetime d: at a random point
// between 85% and 95% of it, as Kafka's clients and brokers do, so connections opened together
// do not all re-authenticate at once.
func reauthAfter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.85 + 0.1*rand.Float64()))
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

// authenticate runs SaslHandshake v1 and SaslAuthenticate v2 until the mechanism is done, on
// a new connection or, with reauth, to re-authenticate an established one (KIP-368: the same
// exchange on the same connection). When the peer gives the session a lifetime
// (connections.max.reauth.ms), the connection re-authenticates before it ends: RoundTrip
// checks c.reauthAt before each request.
func (c *Conn) authenticate(s *Security, deadline time.Time, reauth bool) error {
	step, err := s.start()
	if err != nil {
		return err
	}
	// The session's lifetime runs from the peer's answer; counting from before the exchange
	// keeps the re-authentication on the early side of it.
	start := time.Now()
	var hs wire.SaslHandshakeResponse
	if err := c.roundTrip(&wire.SaslHandshakeRequest{Mechanism: s.Mechanism}, &hs, 1, deadline); err != nil {
		return err
	}
	if hs.ErrorCode != 0 {
		return fmt.Errorf("SASL handshake for %s: %w (the peer offers %v)", s.Mechanism, wire.ErrorForCode(hs.ErrorCode), hs.Mechanisms)
	}
	msg, _, err := step(nil)
	if err != nil {
		return fmt.Errorf("SASL %s: %w", s.Mechanism, err)
	}
	var lifetime time.Duration
	for {
		var resp wire.SaslAuthenticateResponse
		if err := c.roundTrip(&wire.SaslAuthenticateRequest{AuthBytes: msg}, &resp, 2, deadline); err != nil {
			return err
		}
		if resp.ErrorCode != 0 {
			detail := ""
			if resp.ErrorMessage != nil {
				detail = ": " + *resp.ErrorMessage
			}
			return fmt.Errorf("SASL %s as %s: %w%s", s.Mechanism, s.User, wire.ErrorForCode(resp.ErrorCode), detail)
		}
		lifetime = time.Duration(resp.SessionLifetimeMs) * time.Millisecond
		next, done, err := step(resp.AuthBytes)
		if err != nil {
			return fmt.Errorf("SASL %s: %w", s.Mechanism, err)
		}
		if done {
			break
		}
		msg = next
	}
	c.reauthAt = time.Time{}
	if lifetime > 0 {
		c.reauthAt = start.Add(reauthAfter(lifetime))
	}
	if s.Counts != nil {
		if reauth {
			s.Counts.Reauthentications.Add(1)
		} else {
			s.Counts.Authentications.Add(1)
		}
	}
	return nil
}

package conformance

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/spoolmq/spool/protocol-spec/scram"
	"github.com/spoolmq/spool/protocol-spec/wire"
	spool "github.com/spoolmq/spool/sdk-go"
)

// A secured target (TLS, SASL) is reached with librdkafka's keys (Config.Security:
// security.protocol, ssl.ca.location, ssl.certificate.location, ssl.key.location,
// sasl.mechanisms, sasl.username, sasl.password, ...), checked by the SDK's one table. Every
// driver's client gets them in its open request (Request.Config), and the suite's own raw
// connections speak them too: TLS, then SaslHandshake v1 and SaslAuthenticate before the
// case's first request.

// Security is what librdkafka-style security keys ask a connection for: how the suite's raw
// connections, and drivers of clients that take no such keys (franz-go), reach a secured
// target.
type Security struct {
	TLS                           *tls.Config // nil: no TLS; ServerName empty: the dialed host
	Mechanism, Username, Password string      // Mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) "": no SASL
}

// ParseSecurity reads librdkafka-style security keys, checked by the SDK's table (known keys,
// good values, files readable, a user for SASL); nil (plaintext, no SASL) when they ask for
// neither TLS nor SASL.
func ParseSecurity(keys map[string]string) (*Security, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	conf, err := spool.NewConfFromMap(keys)
	if err == nil {
		err = conf.Check()
	}
	if err != nil {
		return nil, fmt.Errorf("security settings: %w", err)
	}
	get := func(k string) string { v, _ := conf.Get(k); return v }
	s := &Security{}
	protocol := strings.ToUpper(get("security.protocol"))
	if protocol == spool.ProtocolSSL || protocol == spool.ProtocolSASLSSL {
		s.TLS, err = spool.TLSFiles{CAFile: get("ssl.ca.location"), CertFile: get("ssl.certificate.location"), KeyFile: get("ssl.key.location"),
			NoHostnameCheck: get("ssl.endpoint.identification.algorithm") == "none"}.Config()
		if err != nil {
			return nil, fmt.Errorf("security settings: %w", err)
		}
	}
	if protocol == spool.ProtocolSASLPlaintext || protocol == spool.ProtocolSASLSSL {
		s.Mechanism, s.Username, s.Password = strings.ToUpper(get("sasl.mechanisms")), get("sasl.username"), get("sasl.password")
	}
	if s.TLS == nil && s.Mechanism == "" {
		return nil, nil
	}
	return s, nil
}

// secure runs TLS and SASL on a new connection to addr, before anything else is sent.
func (s *Security) secure(c *Conn, addr string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if s.TLS != nil {
		cfg := s.TLS.Clone()
		if cfg.ServerName == "" {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return err
			}
			cfg.ServerName = host
		}
		tc := tls.Client(c.c, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return fmt.Errorf("TLS handshake with %s: %w", addr, err)
		}
		c.setConn(tc)
	}
	if s.Mechanism == "" {
		return nil
	}
	var hs wire.SaslHandshakeResponse
	if err := c.Do(&wire.SaslHandshakeRequest{Mechanism: s.Mechanism}, &hs, 1); err != nil {
		return fmt.Errorf("SaslHandshake: %w", err)
	}
	if hs.ErrorCode != 0 {
		return fmt.Errorf("SaslHandshake %s: %s (the broker offers %v)", s.Mechanism, codeName(hs.ErrorCode), hs.Mechanisms)
	}
	next, err := s.exchange()
	if err != nil {
		return err
	}
	var server []byte
	for {
		msg, done, err := next(server)
		if err != nil {
			return fmt.Errorf("SASL %s: %w", s.Mechanism, err)
		}
		if done {
			return nil
		}
		var resp wire.SaslAuthenticateResponse
		if err := c.Do(&wire.SaslAuthenticateRequest{AuthBytes: msg}, &resp, 2); err != nil {
			return fmt.Errorf("SaslAuthenticate: %w", err)
		}
		if resp.ErrorCode != 0 {
			text := ""
			if resp.ErrorMessage != nil {
				text = ": " + *resp.ErrorMessage
			}
			return fmt.Errorf("SaslAuthenticate as %s with %s: %s%s", s.Username, s.Mechanism, codeName(resp.ErrorCode), text)
		}
		server = resp.AuthBytes
	}
}

// exchange starts one SASL exchange: next takes the server's last message (nil at first)
// and returns the client's next one, or done.
func (s *Security) exchange() (next func(server []byte) ([]byte, bool, error), err error) {
	if s.Mechanism == "PLAIN" {
		sent := false
		return func([]byte) ([]byte, bool, error) {
			if sent {
				return nil, true, nil // an empty answer without an error code: accepted
			}
			sent = true
			return []byte("\x00" + s.Username + "\x00" + s.Password), false, nil
		}, nil
	}
	m, err := scram.ParseMechanism(s.Mechanism)
	if err != nil {
		return nil, errors.New("SASL mechanism " + s.Mechanism + ": want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
	}
	return scram.NewClient(m, s.Username, s.Password).Step, nil
}

package server

// SaslHandshake (key 17), versions 0-1; never flexible.
//
// On a SASL listener (SASL_PLAINTEXT, SASL_SSL) the client names its mechanism; an enabled one
// is kept for SaslAuthenticate and the enabled list is returned. A mechanism not enabled gets
// UNSUPPORTED_SASL_MECHANISM, a second handshake ILLEGAL_SASL_STATE; both close the connection
// after the reply, as Kafka does. With connections.max.reauth.ms set, an authenticated
// connection may hand-shake again with the same mechanism to re-authenticate (KIP-368; v1
// only). After a v0 handshake the mechanism's tokens come as raw frames instead of
// SaslAuthenticate requests (Kafka before KIP-152; kafka-python 2.0 speaks only that): the
// reader serves them through SaslAuthenticate's handler and answers each with the bare challenge
// (conn.rawToken); a refused token closes the connection, since raw frames carry no error.
// On other listeners: ILLEGAL_SASL_STATE.

import (
	"context"
	"slices"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleSaslHandshake(s *Server, _ context.Context, req *request) *pending {
	r := req.msg.(*wire.SaslHandshakeRequest)
	resp := &wire.SaslHandshakeResponse{}
	resp.Default()
	sess := req.sasl
	if sess == nil {
		resp.ErrorCode = wire.ErrIllegalSaslState.Code
		return ready(reply{msg: resp})
	}
	resp.Mechanisms = sess.cfg.mechanisms
	switch {
	case sess.authenticated && sess.cfg.reauth > 0 && !sess.reauthing && r.Mechanism == sess.mechanism && req.version >= 1:
		// KIP-368 re-authentication, with the mechanism of the first authentication.
		sess.reauthing, sess.scram = true, nil
	case sess.mechanism != "" || sess.authenticated:
		resp.ErrorCode = wire.ErrIllegalSaslState.Code
		sess.failed = true
	case !slices.Contains(sess.cfg.mechanisms, r.Mechanism):
		resp.ErrorCode = wire.ErrUnsupportedSaslMechanism.Code
		sess.failed = true
	default:
		sess.mechanism = r.Mechanism
		sess.raw = req.version == 0
	}
	return ready(reply{msg: resp})
}

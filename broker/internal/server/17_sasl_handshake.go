package server

// SaslHandshake (key 17), versions 0-1; never flexible.
//
// On a SASL listener (SASL_PLAINTEXT, SASL_SSL) the client names its mechanism; an enabled one
// is kept for SaslAuthenticate and the enabled list is returned. A mechanism not enabled gets
// UNSUPPORTED_SASL_MECHANISM, a second handshake ILLEGAL_SASL_STATE; both close the connection
// after the reply, as Kafka does. With connections.max.reauth.ms set, an authenticated
// connection may hand-shake again with the same mechanism to re-authenticate (KIP-368). v0 handshakes are followed by raw SASL frames, which Spool
// does not read: the connection is closed. On other listeners: ILLEGAL_SASL_STATE.

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
	case req.version == 0:
		s.log.Info("SASL handshake v0 (raw SASL frames) is not served; closing", "remote", req.remote, "client_id", req.clientID())
		return ready(reply{close: true})
	case sess.authenticated && sess.cfg.reauth > 0 && !sess.reauthing && r.Mechanism == sess.mechanism:
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
	}
	return ready(reply{msg: resp})
}

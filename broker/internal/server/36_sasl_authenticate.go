package server

// SaslAuthenticate (key 36), versions 0-2; flexible from 2.
//
// Carries the mechanism's tokens after SaslHandshake v1. PLAIN takes one message (authzid,
// user, password) and answers with empty AuthBytes; the connection's principal becomes
// User:<name>. A failure gets SASL_AUTHENTICATION_FAILED with one message whatever went wrong
// (no hint whether the user exists), after connection.failed.authentication.delay.ms, and the
// connection is closed. Without a handshake first, or once authenticated (re-authentication,
// KIP-368, is not served): ILLEGAL_SASL_STATE, then closed. SessionLifetimeMs is 0.

import (
	"context"
	"time"

	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleSaslAuthenticate(s *Server, _ context.Context, req *request) *pending {
	resp := &wire.SaslAuthenticateResponse{}
	resp.Default()
	sess := req.sasl
	if sess == nil || sess.mechanism == "" || sess.authenticated {
		resp.ErrorCode = wire.ErrIllegalSaslState.Code
		msg := "SaslAuthenticate without a SaslHandshake first, or after authentication"
		resp.ErrorMessage = &msg
		if sess != nil {
			sess.failed = true
		}
		return ready(reply{msg: resp})
	}
	principal, err := security.Plain(sess.cfg.plain, req.msg.(*wire.SaslAuthenticateRequest).AuthBytes)
	if err != nil {
		sess.failed = true
		s.log.Info("SASL authentication failed", "remote", req.remote, "listener", req.listener, "mechanism", sess.mechanism)
		resp.ErrorCode = wire.ErrSaslAuthenticationFailed.Code
		msg := err.Error()
		resp.ErrorMessage = &msg
		// Answered after a fixed delay, which slows password guessing.
		p := later()
		time.AfterFunc(sess.cfg.failDelay, func() { p.complete(reply{msg: resp}) })
		return p
	}
	sess.authenticated, sess.principal = true, principal
	return ready(reply{msg: resp})
}

package server

// SaslAuthenticate (key 36), versions 0-2; flexible from 2.
//
// Carries the mechanism's tokens after SaslHandshake v1. PLAIN takes one message (authzid,
// user, password) and answers with empty AuthBytes; the connection's principal becomes
// User:<name>. SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802/7677) take two: client-first (answered
// with the salt, the iteration count and the nonce) and client-final (answered with the server
// signature), checked against the salted credentials of AlterUserScramCredentials; the
// principal is User:<name>. A failure gets SASL_AUTHENTICATION_FAILED with one message whatever went wrong
// (no hint whether the user exists), after connection.failed.authentication.delay.ms, and the
// connection is closed. Without a handshake first, or once authenticated without a new
// handshake: ILLEGAL_SASL_STATE, then closed. With connections.max.reauth.ms set (KIP-368),
// v1+ answers carry it as SessionLifetimeMs: the client re-authenticates (SaslHandshake with
// the same mechanism, then SaslAuthenticate) before it ends, as the same principal (else
// SASL_AUTHENTICATION_FAILED and closed); a connection that lets it end is closed at its next
// request. 0 (the default): sessions never end. The raw tokens that follow a SaslHandshake v0
// come here too, as v0 requests (conn.rawToken), and the writer sends their AuthBytes bare.

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
	if sess == nil || sess.mechanism == "" || (sess.authenticated && !sess.reauthing) {
		resp.ErrorCode = wire.ErrIllegalSaslState.Code
		msg := "SaslAuthenticate without a SaslHandshake first, or after authentication"
		resp.ErrorMessage = &msg
		if sess != nil {
			sess.failed = true
		}
		return ready(reply{msg: resp})
	}
	auth := req.msg.(*wire.SaslAuthenticateRequest).AuthBytes
	var principal string
	var err error
	if m, ok := security.ScramMechanisms[sess.mechanism]; ok {
		if sess.scram == nil {
			sess.scram = security.NewScramServer(m, s.scramCredential)
		}
		var done bool
		resp.AuthBytes, done, err = sess.scram.Next(auth)
		if err == nil && !done {
			return ready(reply{msg: resp}) // server-first-message; the client answers
		}
		principal = sess.scram.Principal()
	} else {
		principal, err = security.Plain(sess.cfg.plain, auth)
	}
	if err != nil {
		resp.AuthBytes = nil
		sess.failed = true
		s.log.Info("SASL authentication failed", "remote", req.remote, "listener", req.listener, "mechanism", sess.mechanism)
		s.metrics.AuthenticationFailed(req.listener, sess.mechanism)
		resp.ErrorCode = wire.ErrSaslAuthenticationFailed.Code
		msg := err.Error()
		resp.ErrorMessage = &msg
		// Answered after a fixed delay, which slows password guessing.
		p := later()
		time.AfterFunc(sess.cfg.failDelay, func() { p.complete(reply{msg: resp}) })
		return p
	}
	if sess.reauthing && principal != sess.principal {
		// KIP-368: a re-authentication may not change who the connection is.
		sess.failed = true
		s.log.Info("SASL re-authentication as another principal refused", "remote", req.remote, "principal", sess.principal, "new", principal)
		resp.ErrorCode = wire.ErrSaslAuthenticationFailed.Code
		msg := "re-authentication must keep the principal " + sess.principal
		resp.ErrorMessage, resp.AuthBytes = &msg, nil
		return ready(reply{msg: resp})
	}
	sess.authenticated, sess.principal, sess.reauthing, sess.scram = true, principal, false, nil
	if sess.cfg.reauth > 0 && req.version >= 1 {
		// KIP-368: the client re-authenticates before this lifetime ends.
		sess.expires = time.Now().Add(sess.cfg.reauth)
		resp.SessionLifetimeMs = sess.cfg.reauth.Milliseconds()
	}
	return ready(reply{msg: resp})
}

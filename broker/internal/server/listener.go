package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/spoolmq/spool/broker/internal/config"
	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// handshakeTimeout bounds a TLS handshake, so that a client that connects and sends nothing
// (or a plaintext request too short to be refused at once) does not hold a connection.
const handshakeTimeout = 10 * time.Second

// listener is one bound listener.
type listener struct {
	conf config.Listener
	ln   net.Listener
	tls  *tls.Config // nil without TLS (PLAINTEXT, SASL_PLAINTEXT)
	// principals map client certificate subjects to principal names (ssl.principal.mapping.rules).
	principals security.PrincipalRules
	sasl       *saslConfig // nil without SASL (PLAINTEXT, SSL)
}

// saslConfig is a SASL listener's setup.
type saslConfig struct {
	mechanisms []string
	plain      map[string]string // PLAIN's users and passwords
	maxReceive int64             // sasl.server.max.receive.size: the largest frame before authentication
	failDelay  time.Duration     // connection.failed.authentication.delay.ms
	// reauth is connections.max.reauth.ms (KIP-368): the session lifetime given to clients,
	// which re-authenticate on the same connection before it ends; 0: sessions never end.
	reauth time.Duration
}

// saslSession is a connection's SASL state. Only the connection's reader goroutine touches
// it (handlers' synchronous parts).
type saslSession struct {
	cfg       *saslConfig
	mechanism string // chosen by SaslHandshake
	// raw: the handshake was v0, so the tokens come as raw frames until authenticated.
	raw           bool
	authenticated bool
	failed        bool // the exchange failed: the connection closes after the reply
	principal     string
	scram         *security.ScramServer // the SCRAM exchange under way
	reauthing     bool                  // a re-authentication (KIP-368) is under way
	expires       time.Time             // the session's end (zero: never); past it only re-authentication is served
}

// expired tells whether the session has ended: the client did not re-authenticate in time.
func (s *saslSession) expired(now time.Time) bool {
	return s.authenticated && !s.expires.IsZero() && now.After(s.expires)
}

// beforeAuth are the requests a SASL connection may send before it authenticates.
func beforeAuth(key int16) bool {
	return key == wire.KeyApiVersions || key == wire.KeySaslHandshake || key == wire.KeySaslAuthenticate
}

// handshake runs the TLS handshake on the connection and takes the principal from the client
// certificate, when one was given. A plaintext client on a TLS port fails here: its request
// is no TLS record.
func (c *conn) handshake(ctx context.Context, l *listener) error {
	tc := tls.Server(c.nc, l.tls)
	ctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return fmt.Errorf("TLS handshake: %w", err)
	}
	c.nc = tc
	if certs := tc.ConnectionState().PeerCertificates; len(certs) > 0 {
		name, err := l.principals.Name(certs[0].Subject.String())
		if err != nil {
			return err
		}
		c.principal = "User:" + name
		c.log = c.log.With("principal", c.principal)
	}
	return nil
}

// Accept retry pacing: the pause after a failed accept doubles from acceptMinDelay up to
// acceptMaxDelay; a line is logged at most every acceptLogEvery.
const (
	acceptMinDelay = 5 * time.Millisecond
	acceptMaxDelay = time.Second
	acceptLogEvery = 10 * time.Second
)

// accept serves one listener until Close. Accept errors never stop the broker: out of file
// descriptors (EMFILE, ENFILE), out of buffers, an aborted connection, anything but a closed
// listener is retried after a pause that grows to acceptMaxDelay, so a broker short of
// descriptors accepts more slowly and resumes at full speed once some are free (as Go's
// net/http server and Kafka's acceptor do). Each retry counts in spool.accept.retries; the log
// gets one line per acceptLogEvery at most.
func (s *Server) accept(l *listener) error {
	var delay time.Duration
	var unlogged int64
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			if s.ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("accepting on %s: %w", l.conf.Name, err)
			}
			delay = min(max(2*delay, acceptMinDelay), acceptMaxDelay)
			s.scale.acceptRetries.Add(1)
			unlogged++
			now := time.Now().UnixNano()
			if last := s.scale.acceptLogged.Load(); now-last >= int64(acceptLogEvery) && s.scale.acceptLogged.CompareAndSwap(last, now) {
				s.log.Warn("accepting connections failed; retrying after a pause", "listener", l.conf.Name, "err", err,
					"out_of_descriptors", errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE),
					"failures", unlogged, "pause", delay)
				unlogged = 0
			}
			select {
			case <-s.ctx.Done():
				return nil
			case <-time.After(delay):
			}
			continue
		}
		delay = 0
		host := hostOf(nc.RemoteAddr())
		if !s.connLimits.admit(l.conf.Name, host) {
			nc.Close()
			continue
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
		}
		s.wg.Add(1)
		s.connOpened() // for the connection summary at info (loglines.go)
		go func() {
			defer s.wg.Done()
			defer s.connLimits.release(l.conf.Name, host)
			defer s.connClosed()
			s.serveConn(s.ctx, l, nc)
		}()
	}
}

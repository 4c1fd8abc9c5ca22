package server

import (
	"fmt"

	"github.com/spoolmq/spool/broker/internal/metrics"

	"github.com/spoolmq/spool/broker/internal/config"
	"github.com/spoolmq/spool/broker/internal/peer"
	"github.com/spoolmq/spool/broker/internal/security"
)

// peerSecurity is how this broker connects to the others (follower fetches, the controller's
// liveness probes): the inter-broker listener's TLS and SASL, nil on PLAINTEXT or a single
// node.
func (s *Server) peerSecurity() (*peer.Security, error) {
	if s.conf.Get(config.ZooKeeperConnect) == "" {
		return nil, nil
	}
	name := s.conf.InterBrokerListener()
	var l config.Listener
	for _, x := range s.conf.Listeners() {
		if x.Name == name {
			l = x
		}
	}
	if !l.TLS() && !l.SASL() {
		return nil, nil
	}
	sec := &peer.Security{Counts: &s.peerAuth}
	if l.TLS() {
		t, err := security.NewTLS(s.conf.SSL(name), s.log.With("listener", name, "side", "inter-broker client"))
		if err != nil {
			return nil, &config.UsageError{Err: fmt.Errorf("inter-broker listener %s: %w", name, err)}
		}
		sec.TLS = t.ClientConfig
	}
	if l.SASL() {
		cr, err := s.conf.InterBrokerSASL()
		if err != nil {
			return nil, &config.UsageError{Err: err}
		}
		sec.Mechanism, sec.User, sec.Password = cr.Mechanism, cr.User, cr.Password
	}
	return sec, nil
}

// peerAuthStats is what the metrics report of this broker's authentications to the others.
func (s *Server) peerAuthStats() metrics.PeerAuthStats {
	return metrics.PeerAuthStats{Authentications: s.peerAuth.Authentications.Load(), Reauthentications: s.peerAuth.Reauthentications.Load()}
}

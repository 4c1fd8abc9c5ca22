package server

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/scram"
)

// scramUsers is the broker's SCRAM credentials: an immutable snapshot read by SASL
// exchanges, reloaded from the store (the embedded metadata, or ZooKeeper's /config/users,
// followed through /config/changes) whenever they change.
type scramUsers struct {
	store security.ScramStore
	mu    sync.Mutex // serialises reloads
	creds atomic.Pointer[map[string]map[scram.Mechanism]security.ScramCredential]
}

// openScram loads the SCRAM credentials and, in cluster mode, follows their changes.
func (s *Server) openScram() error {
	u := &scramUsers{}
	switch {
	case s.zk != nil:
		u.store = s.zk
	default:
		store, ok := s.md.(security.ScramStore)
		if !ok {
			return fmt.Errorf("the metadata store %T keeps no SCRAM credentials", s.md)
		}
		u.store = store
	}
	s.scram = u
	if err := s.reloadScram(); err != nil {
		return err
	}
	if s.zk != nil {
		return s.zk.WatchConfigChanges(func() {
			if err := s.reloadScram(); err != nil {
				s.log.Warn("reloading SCRAM credentials after a config change", "err", err)
			}
		})
	}
	return nil
}

func (s *Server) reloadScram() error {
	u := s.scram
	u.mu.Lock()
	defer u.mu.Unlock()
	creds, err := u.store.ScramCredentials()
	if err != nil {
		return fmt.Errorf("loading SCRAM credentials: %w", err)
	}
	u.creds.Store(&creds)
	s.images.SetScram(creds) // shared, never modified: the next reload reads a new map
	return nil
}

// scramCredential is a user's credential for a mechanism (security.ScramLookup), from the
// current metadata image.
func (s *Server) scramCredential(user string, m scram.Mechanism) (security.ScramCredential, bool) {
	return s.images.Current().ScramCredential(user, m)
}

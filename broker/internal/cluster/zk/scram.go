package zk

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/scram"
)

// SCRAM credentials live where Kafka's ZooKeeper mode keeps them: /config/users/<user> (the
// name sanitized as Kafka's Sanitizer does) holding {"version":1,"config":{"SCRAM-SHA-512":
// "salt=...,stored_key=...,server_key=...,iterations=N"}}; a change is announced by a
// sequential /config/changes/config_change_N holding {"version":2,"entity_path":"users/<user>"},
// which every broker watches.
const (
	configUsersPath   = "/config/users"
	configChangesPath = "/config/changes"
	configChangePfx   = "config_change_"
)

// sanitizeUser is Kafka's Sanitizer.sanitize: URL encoding, with "*" and "~" encoded and a
// space as %20.
func sanitizeUser(u string) string {
	s := url.QueryEscape(u)
	return strings.NewReplacer("+", "%20", "*", "%2A", "~", "%7E").Replace(s)
}

// ScramCredentials reads every user's SCRAM credentials (security.ScramStore).
func (s *Store) ScramCredentials() (map[string]map[scram.Mechanism]security.ScramCredential, error) {
	out := map[string]map[scram.Mechanism]security.ScramCredential{}
	users, _, err := s.conn.Children(s.p(configUsersPath))
	if errors.Is(err, zk.ErrNoNode) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", configUsersPath, err)
	}
	for _, su := range users {
		user, err := url.QueryUnescape(su)
		if err != nil {
			continue
		}
		creds, _, err := s.userCredentials(su)
		if err != nil {
			return nil, err
		}
		if len(creds) > 0 {
			out[user] = creds
		}
	}
	return out, nil
}

// userCredentials reads one user's znode: its SCRAM credentials and version (-1: none).
func (s *Store) userCredentials(sanitized string) (map[scram.Mechanism]security.ScramCredential, int32, error) {
	path := configUsersPath + "/" + sanitized
	data, st, err := s.conn.Get(s.p(path))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, -1, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("reading %s: %w", path, err)
	}
	cfg, err := decodeConfig(data)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	creds := map[scram.Mechanism]security.ScramCredential{}
	for name, m := range security.ScramMechanisms {
		if v, ok := cfg[name]; ok {
			c, err := security.ParseScramCredential(v)
			if err != nil {
				return nil, 0, fmt.Errorf("%s: %w", path, err)
			}
			creds[m] = c
		}
	}
	return creds, st.Version, nil
}

// UpdateScramCredentials rewrites one user's credentials with a conditional write (other
// configs of the user, such as quotas, are kept) and announces the change.
func (s *Store) UpdateScramCredentials(user string, update func(map[scram.Mechanism]security.ScramCredential) map[scram.Mechanism]security.ScramCredential) error {
	su := sanitizeUser(user)
	path := configUsersPath + "/" + su
	for {
		data, st, err := s.conn.Get(s.p(path))
		exists := err == nil
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		cfg := map[string]string{}
		if exists {
			if cfg, err = decodeConfig(data); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if cfg == nil {
				cfg = map[string]string{}
			}
		}
		cur := map[scram.Mechanism]security.ScramCredential{}
		for name, m := range security.ScramMechanisms {
			if v, ok := cfg[name]; ok {
				if c, err := security.ParseScramCredential(v); err == nil {
					cur[m] = c
				}
			}
			delete(cfg, name)
		}
		for m, c := range update(cur) {
			cfg[m.String()] = c.String()
		}
		if exists {
			_, err = s.conn.Set(s.p(path), encodeConfig(cfg), st.Version)
		} else {
			if err = s.ensurePath(configUsersPath); err != nil {
				return err
			}
			_, err = s.conn.Create(s.p(path), encodeConfig(cfg), 0, zk.WorldACL(zk.PermAll))
		}
		if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrNoNode) {
			continue // another writer came first
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		break
	}
	if err := s.ensurePath(configChangesPath); err != nil {
		return err
	}
	note := mustJSON(map[string]any{"version": 2, "entity_path": "users/" + su})
	if err := s.notify(configChangesPath, configChangePfx, note); err != nil {
		return fmt.Errorf("announcing the config change of user %s: %w", user, err)
	}
	return nil
}

// WatchConfigChanges calls changed (from a goroutine of the store) whenever a config change
// is announced under /config/changes, until the store closes.
func (s *Store) WatchConfigChanges(changed func()) error {
	if err := s.ensurePath(configChangesPath); err != nil {
		return err
	}
	s.wg.Add(1)
	go s.watchNotifications(configChangesPath, changed)
	return nil
}

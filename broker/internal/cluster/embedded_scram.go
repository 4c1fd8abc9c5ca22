package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spoolmq/spool/broker/internal/fsutil"
	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/scram"
)

// ScramFile is the embedded store's file of SCRAM credentials in the data directory (only
// salted keys, in Kafka's encoding), readable by its owner only.
const ScramFile = "spool-scram.json"

type scramFile struct {
	Version int                          `json:"version"`
	Users   map[string]map[string]string `json:"users"` // user → mechanism → credential
}

// ScramCredentials reads every user's credentials (security.ScramStore).
func (e *Embedded) ScramCredentials() (map[string]map[scram.Mechanism]security.ScramCredential, error) {
	e.aclMu.Lock()
	defer e.aclMu.Unlock()
	return e.readScram()
}

func (e *Embedded) readScram() (map[string]map[scram.Mechanism]security.ScramCredential, error) {
	out := map[string]map[scram.Mechanism]security.ScramCredential{}
	data, err := os.ReadFile(filepath.Join(e.dir, ScramFile))
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading SCRAM credentials: %w", err)
	}
	var f scramFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", ScramFile, err)
	}
	for user, mechs := range f.Users {
		for name, v := range mechs {
			m, ok := security.ScramMechanisms[name]
			if !ok {
				continue
			}
			c, err := security.ParseScramCredential(v)
			if err != nil {
				return nil, fmt.Errorf("%s: user %s: %w", ScramFile, user, err)
			}
			if out[user] == nil {
				out[user] = map[scram.Mechanism]security.ScramCredential{}
			}
			out[user][m] = c
		}
	}
	return out, nil
}

// UpdateScramCredentials replaces one user's credentials by update's result
// (security.ScramStore).
func (e *Embedded) UpdateScramCredentials(user string, update func(map[scram.Mechanism]security.ScramCredential) map[scram.Mechanism]security.ScramCredential) error {
	e.aclMu.Lock()
	defer e.aclMu.Unlock()
	all, err := e.readScram()
	if err != nil {
		return err
	}
	cur := all[user]
	if cur == nil {
		cur = map[scram.Mechanism]security.ScramCredential{}
	}
	next := update(cur)
	if len(next) == 0 {
		delete(all, user)
	} else {
		all[user] = next
	}
	f := scramFile{Version: 1, Users: map[string]map[string]string{}}
	for u, mechs := range all {
		f.Users[u] = map[string]string{}
		for m, c := range mechs {
			f.Users[u][m.String()] = c.String()
		}
	}
	data, _ := json.MarshalIndent(f, "", "  ")
	if err := fsutil.WriteFileAtomic(filepath.Join(e.dir, ScramFile), data, 0o600); err != nil {
		return fmt.Errorf("writing SCRAM credentials: %w", err)
	}
	return nil
}

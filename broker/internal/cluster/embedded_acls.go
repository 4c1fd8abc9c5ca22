package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/spoolmq/spool/broker/internal/fsutil"
	"github.com/spoolmq/spool/broker/internal/security"
)

// ACLFile is the embedded store's ACL file in the data directory (Kafka's ACL JSON, each ACL
// naming its resource pattern), rewritten atomically on every change.
const ACLFile = "spool-acls.json"

// ACLs reads the stored ACLs (security.ACLStore).
func (e *Embedded) ACLs() ([]security.Binding, error) {
	e.aclMu.Lock()
	defer e.aclMu.Unlock()
	return e.readACLs()
}

func (e *Embedded) readACLs() ([]security.Binding, error) {
	data, err := os.ReadFile(filepath.Join(e.dir, ACLFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading ACLs: %w", err)
	}
	bs, err := security.DecodeBindings(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ACLFile, err)
	}
	return bs, nil
}

// UpdateACLs applies updates with one write of the file (security.ACLStore).
func (e *Embedded) UpdateACLs(updates []security.ACLUpdate) error {
	e.aclMu.Lock()
	defer e.aclMu.Unlock()
	all, err := e.readACLs()
	if err != nil {
		return err
	}
	for _, u := range updates {
		var cur []security.Entry
		all = slices.DeleteFunc(all, func(b security.Binding) bool {
			if b.Pattern == u.Pattern {
				cur = append(cur, b.Entry)
				return true
			}
			return false
		})
		for _, en := range u.Update(cur) {
			all = append(all, security.Binding{Pattern: u.Pattern, Entry: en})
		}
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(e.dir, ACLFile), security.EncodeBindings(all), 0o600); err != nil {
		return fmt.Errorf("writing ACLs: %w", err)
	}
	return nil
}

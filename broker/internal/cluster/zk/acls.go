package zk

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/spoolmq/spool/broker/internal/security"
)

// ACLs live where Kafka's AclAuthorizer keeps them (ZkData.scala's ZkAclStore):
//
//	/kafka-acl/<Type>/<name>                      LITERAL patterns
//	/kafka-acl-extended/prefixed/<Type>/<name>    PREFIXED patterns
//
// each holding {"version":1,"acls":[{"principal","permissionType","operation","host"}]}. A
// change is announced by a sequential node acl_changes_N under /kafka-acl-changes (data
// "<Type>:<name>") or /kafka-acl-extended-changes (data {"version":1,"resourceType",
// "name","patternType"}); every broker watches both and reloads its ACLs, as Kafka's brokers do.
const (
	aclLiteralPath        = "/kafka-acl"
	aclPrefixedPath       = "/kafka-acl-extended/prefixed"
	aclLiteralChangePath  = "/kafka-acl-changes"
	aclExtendedChangePath = "/kafka-acl-extended-changes"
	aclChangePrefix       = "acl_changes_"
)

func aclRoot(pt security.PatternType) string {
	if pt == security.PatternPrefixed {
		return aclPrefixedPath
	}
	return aclLiteralPath
}

func aclPath(p security.Pattern) string {
	return aclRoot(p.PatternType) + "/" + p.Type.String() + "/" + p.Name
}

// aclChange is the notification data of a change to p, in Kafka's format.
func aclChange(p security.Pattern) (path string, data []byte) {
	if p.PatternType == security.PatternLiteral {
		return aclLiteralChangePath, []byte(p.Type.String() + ":" + p.Name)
	}
	return aclExtendedChangePath, mustJSON(map[string]any{"version": 1, "resourceType": p.Type.String(), "name": p.Name, "patternType": p.PatternType.String()})
}

// ensurePath creates path and its missing parents (persistent, no data).
func (s *Store) ensurePath(path string) error {
	for i := 1; i < len(path); i++ {
		if path[i] == '/' {
			if err := s.ensure(s.p(path[:i])); err != nil {
				return err
			}
		}
	}
	return s.ensure(s.p(path))
}

// ACLs reads every ACL from ZooKeeper (security.ACLStore).
func (s *Store) ACLs() ([]security.Binding, error) {
	var out []security.Binding
	for _, pt := range []security.PatternType{security.PatternLiteral, security.PatternPrefixed} {
		root := aclRoot(pt)
		types, _, err := s.conn.Children(s.p(root))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", root, err)
		}
		for _, tn := range types {
			typ, ok := security.ParseResourceType(tn)
			if !ok {
				s.log.Warn("ignoring ACLs of an unknown resource type", "path", root+"/"+tn)
				continue
			}
			names, _, err := s.conn.Children(s.p(root + "/" + tn))
			if err != nil && !errors.Is(err, zk.ErrNoNode) {
				return nil, fmt.Errorf("listing %s/%s: %w", root, tn, err)
			}
			for _, name := range names {
				p := security.Pattern{Type: typ, Name: name, PatternType: pt}
				data, _, err := s.conn.Get(s.p(aclPath(p)))
				if errors.Is(err, zk.ErrNoNode) {
					continue
				}
				if err != nil {
					return nil, fmt.Errorf("reading %s: %w", aclPath(p), err)
				}
				entries, err := security.DecodeEntries(data)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", aclPath(p), err)
				}
				for _, e := range entries {
					out = append(out, security.Binding{Pattern: p, Entry: e})
				}
			}
		}
	}
	return out, nil
}

// UpdateACLs applies each update with a conditional write on its znode's version (retried
// when another broker wrote in between), then announces the change, as Kafka does per
// resource pattern (security.ACLStore).
func (s *Store) UpdateACLs(updates []security.ACLUpdate) error {
	for _, u := range updates {
		if err := s.updateACL(u.Pattern, u.Update); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) updateACL(p security.Pattern, update func([]security.Entry) []security.Entry) error {
	path := aclPath(p)
	for {
		data, st, err := s.conn.Get(s.p(path))
		exists := err == nil
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		cur, err := security.DecodeEntries(data)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		next := update(cur)
		switch {
		case len(next) == 0 && !exists:
			return nil
		case len(next) == 0:
			err = s.conn.Delete(s.p(path), st.Version)
		case exists:
			_, err = s.conn.Set(s.p(path), security.EncodeEntries(next), st.Version)
		default:
			if err = s.ensurePath(aclRoot(p.PatternType) + "/" + p.Type.String()); err != nil {
				return err
			}
			_, err = s.conn.Create(s.p(path), security.EncodeEntries(next), 0, zk.WorldACL(zk.PermAll))
		}
		if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrNoNode) {
			continue // another writer came first: read again
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		break
	}
	changes, data := aclChange(p)
	if err := s.ensurePath(changes); err != nil {
		return err
	}
	if err := s.notify(changes, aclChangePrefix, data); err != nil {
		return fmt.Errorf("announcing the ACL change of %s: %w", p, err)
	}
	return nil
}

// WatchACLs calls changed (from a goroutine of the store) whenever an ACL change is
// announced under either change path, until the store closes. The caller reloads with ACLs.
func (s *Store) WatchACLs(changed func()) error {
	for _, path := range []string{aclLiteralChangePath, aclExtendedChangePath} {
		if err := s.ensurePath(path); err != nil {
			return err
		}
		s.wg.Add(1)
		go s.watchNotifications(path, changed)
	}
	return nil
}

// watchNotifications calls changed whenever the children of a change-notification path (ACL
// or config changes) change, until the store closes; the caller has done s.wg.Add(1). Kafka's
// notification sequence nodes only say "something changed": the caller reloads what it keeps.
func (s *Store) watchNotifications(path string, changed func()) {
	defer s.wg.Done()
	for s.ctx.Err() == nil {
		_, _, ev, err := s.conn.ChildrenW(s.p(path))
		if err != nil {
			if s.ctx.Err() == nil {
				s.log.Warn("watching change notifications", "path", path, "err", err)
			}
			sleep(s.ctx, time.Second)
			continue
		}
		select {
		case e := <-ev:
			if e.Type == zk.EventNodeChildrenChanged || e.Type == zk.EventNotWatching {
				// After a lost session, changes may have been missed: reload either way.
				changed()
			}
		case <-s.ctx.Done():
			return
		}
	}
}

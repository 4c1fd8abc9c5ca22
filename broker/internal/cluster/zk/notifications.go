package zk

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// defaultNotificationExpiry is how long change notifications (/kafka-acl-changes,
// /kafka-acl-extended-changes, /config/changes) are kept: Kafka's brokers delete the ones
// older than 15 minutes (ZkNodeChangeNotificationListener's changeExpirationMs), so the
// paths do not grow with every change ever made. Every broker reloads on any change, so an
// old notification serves nobody.
const defaultNotificationExpiry = 15 * time.Minute

// notify creates the sequential notification prefix_N under path with data, then deletes
// that path's notifications past their expiry. A failed purge is logged, not returned: the
// change itself was made and announced.
func (s *Store) notify(path, prefix string, data []byte) error {
	if _, err := s.conn.Create(s.p(path+"/"+prefix), data, zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
		return err
	}
	if err := s.purgeNotifications(path, prefix); err != nil {
		s.log.Warn("deleting expired change notifications", "path", path, "err", err)
	}
	return nil
}

// purgeNotifications deletes the notifications under path older than the expiry (by their
// creation time in ZooKeeper). Brokers purging at the same time race harmlessly: a node
// already gone is skipped.
func (s *Store) purgeNotifications(path, prefix string) error {
	expiry := s.cfg.NotificationExpiry
	if expiry <= 0 {
		expiry = defaultNotificationExpiry
	}
	children, _, err := s.conn.Children(s.p(path))
	if err != nil {
		return err
	}
	cutoff := time.Now().Add(-expiry).UnixMilli()
	// Sequence numbers (zero-padded, so they sort as strings) follow creation order: the
	// purge stops at the first notification not yet expired, so a write costs one read more
	// than the notifications it deletes.
	slices.Sort(children)
	for _, c := range children {
		if !strings.HasPrefix(c, prefix) {
			continue
		}
		_, st, err := s.conn.Get(s.p(path + "/" + c))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return err
		}
		if st.Ctime >= cutoff {
			return nil
		}
		if err := s.conn.Delete(s.p(path+"/"+c), -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
	}
	return nil
}

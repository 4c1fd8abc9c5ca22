package zk

// The watches that keep the image current. Each watched znode has one goroutine that reads it
// with a watch, applies what it read to the image, and waits for the next event; ZooKeeper's
// one-shot watches are re-armed by the next read. After a session expiry the library ends
// every watch with EventNotWatching; the loops read again once a session is back.

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"
)

func jsonUnmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// retryPause is the wait before reading again after a failed read (no connection).
const retryPause = 100 * time.Millisecond

func (s *Store) pause(stop <-chan struct{}) bool {
	select {
	case <-s.ctx.Done():
		return false
	case <-stop:
		return false
	case <-time.After(retryPause):
		return true
	}
}

func (s *Store) wait(ch <-chan zk.Event, stop <-chan struct{}) bool {
	select {
	case <-s.ctx.Done():
		return false
	case <-stop:
		return false
	case <-ch:
		return true
	}
}

// watchData follows one znode until stop is closed (nil: until Close). apply gets its data
// and version, or exists=false when it is missing, and returns whether to keep following.
func (s *Store) watchData(path string, stop <-chan struct{}, apply func(data []byte, stat *zk.Stat, exists bool) bool) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for s.ctx.Err() == nil {
			data, stat, ch, err := s.conn.GetW(s.p(path))
			if errors.Is(err, zk.ErrNoNode) {
				if !apply(nil, nil, false) {
					return
				}
				exists, _, ch, err := s.conn.ExistsW(s.p(path))
				if err != nil {
					if !s.pause(stop) {
						return
					}
					continue
				}
				if !exists && !s.wait(ch, stop) {
					return
				}
				continue
			}
			if err != nil {
				if !s.pause(stop) {
					return
				}
				continue
			}
			if !apply(data, stat, true) {
				return
			}
			if !s.wait(ch, stop) {
				return
			}
		}
	}()
}

// watchChildren follows a znode's children; the node must exist (a persistent path).
func (s *Store) watchChildren(path string, apply func(children []string)) {
	var stop <-chan struct{}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for s.ctx.Err() == nil {
			children, _, ch, err := s.conn.ChildrenW(s.p(path))
			if err != nil {
				if !s.pause(stop) {
					return
				}
				continue
			}
			apply(children)
			if !s.wait(ch, stop) {
				return
			}
		}
	}()
}

func (s *Store) startWatches() {
	s.watchData(controllerPath, nil, func(data []byte, _ *zk.Stat, exists bool) bool {
		id := int32(-1)
		if exists {
			if c, err := decodeController(data); err == nil {
				id = c
			}
		}
		s.mu.Lock()
		if s.controller != id {
			s.controller = id
			s.notifyLocked()
		}
		s.mu.Unlock()
		s.controllerChanged()
		return true
	})
	s.watchChildren(brokerIDsPath, s.applyBrokers)
	s.watchData(fencedBrokersPath, nil, func(data []byte, _ *zk.Stat, exists bool) bool {
		fenced := map[int32]bool{}
		if exists {
			f, err := decodeFenced(data)
			if err != nil {
				s.log.Warn("ignoring the fenced broker list", "err", err)
				return true
			}
			fenced = f
		}
		s.mu.Lock()
		s.fenced = fenced
		s.notifyLocked()
		s.mu.Unlock()
		return true
	})
	s.watchData(electionPath, nil, func(data []byte, stat *zk.Stat, exists bool) bool {
		var reqs []electionRequest
		if exists {
			r, err := decodeElections(data)
			if err != nil {
				s.log.Warn("ignoring the leader elections asked for", "err", err)
			}
			reqs = r
		}
		s.mu.Lock()
		s.elections, s.electionsVersion = reqs, -1
		if exists {
			s.electionsVersion = stat.Version
		}
		s.notifyLocked()
		s.mu.Unlock()
		return true
	})
	s.watchBrokerConfigs()
	s.watchChildren(topicsPath, s.applyTopics)
	s.watchChildren(deleteTopicsPath, func(children []string) {
		s.mu.Lock()
		s.deleting = map[string]bool{}
		for _, c := range children {
			s.deleting[c] = true
		}
		s.notifyLocked()
		s.mu.Unlock()
	})
}

// applyBrokers re-reads every registration when the broker list changes.
func (s *Store) applyBrokers(children []string) {
	next := map[int32]brokerEntry{}
	for _, c := range children {
		id, err := strconv.ParseInt(c, 10, 32)
		if err != nil {
			continue
		}
		data, stat, err := s.conn.Get(s.p(brokerPath(int32(id))))
		if err != nil {
			continue // gone meanwhile; the next event brings the list again
		}
		b, err := decodeBroker(int32(id), data, s.cfg.InterBrokerListener)
		if err != nil {
			s.log.Warn("ignoring a broker registration", "err", err)
			continue
		}
		next[int32(id)] = brokerEntry{broker: b, epoch: stat.Czxid}
	}
	s.mu.Lock()
	s.brokers = next
	s.notifyLocked()
	s.mu.Unlock()
}

// applyTopics starts following new topics; deleted ones leave the image when their
// assignment znode goes.
func (s *Store) applyTopics(children []string) {
	for _, name := range children {
		s.mu.Lock()
		_, known := s.topics[name]
		if !known {
			s.topics[name] = &topicEntry{states: map[int32]partitionState{}, gone: make(chan struct{})}
		}
		s.mu.Unlock()
		if !known {
			s.followTopic(name)
		}
	}
}

// followTopic watches a topic's assignment and config, and its partitions' states as they
// appear.
func (s *Store) followTopic(name string) {
	s.mu.RLock()
	entry := s.topics[name]
	s.mu.RUnlock()
	s.watchData(topicPath(name), entry.gone, func(data []byte, stat *zk.Stat, exists bool) bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.topics[name] != entry {
			return false
		}
		if !exists {
			delete(s.topics, name)
			close(entry.gone)
			s.notifyLocked()
			return false
		}
		ta, err := decodeTopic(name, data)
		if err != nil {
			s.log.Warn("ignoring a topic assignment", "err", err)
			return true
		}
		a := ta.Replicas
		entry.id, entry.assign, entry.moves, entry.version = ta.ID, a, ta, stat.Version
		for i := len(entry.watched); i < len(a); i++ {
			entry.watched = append(entry.watched, true)
			s.followPartition(name, entry, int32(i))
		}
		s.notifyLocked()
		return true
	})
	s.watchData(topicConfigPath(name), entry.gone, func(data []byte, _ *zk.Stat, exists bool) bool {
		var configs map[string]string
		if exists {
			c, err := decodeConfig(data)
			if err != nil {
				s.log.Warn("ignoring a topic config", "topic", name, "err", err)
				return true
			}
			configs = c
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.topics[name] != entry {
			return false
		}
		entry.configs = configs
		s.notifyLocked()
		return true
	})
}

// followPartition watches one partition's state; s.mu is held by the caller (it only starts
// the goroutine).
func (s *Store) followPartition(name string, entry *topicEntry, p int32) {
	s.watchData(partitionStatePath(name, p), entry.gone, func(data []byte, stat *zk.Stat, exists bool) bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.topics[name] != entry {
			return false
		}
		if !exists {
			if _, had := entry.states[p]; had {
				delete(entry.states, p)
				s.notifyLocked()
			}
			return true
		}
		st, err := decodePartitionState(data, stat.Version)
		if err != nil {
			s.log.Warn("ignoring a partition state", "topic", name, "partition", p, "err", err)
			return true
		}
		if old, ok := entry.states[p]; ok && old.ZkVersion == st.ZkVersion && old.LeaderEpoch == st.LeaderEpoch && slices.Equal(old.ISR, st.ISR) {
			return true
		}
		entry.states[p] = st
		s.notifyLocked()
		return true
	})
}

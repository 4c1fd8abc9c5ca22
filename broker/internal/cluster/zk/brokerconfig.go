package zk

// Dynamic broker configs (/config/brokers/<id> and /config/brokers/<default>, Kafka's znodes
// and encoding, the same as a topic's config znode). A broker follows its own and the default
// through watches; another broker's are read on demand.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"

	"github.com/go-zookeeper/zk"
)

// watchBrokerConfigs follows this broker's and the default's dynamic configs.
func (s *Store) watchBrokerConfigs() {
	for _, broker := range []string{"", strconv.Itoa(int(s.self.NodeID))} {
		s.watchData(brokerConfigPath(broker), nil, func(data []byte, _ *zk.Stat, exists bool) bool {
			var configs map[string]string
			if exists {
				c, err := decodeConfig(data)
				if err != nil {
					s.log.Warn("ignoring a broker config", "broker", broker, "err", err)
					return true
				}
				configs = c
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.brokerCfg == nil {
				s.brokerCfg = map[string]map[string]string{}
			}
			s.brokerCfg[broker] = configs
			s.notifyLocked()
			return true
		})
	}
}

// BrokerConfigs implements cluster.Metadata.
func (s *Store) BrokerConfigs(broker string) map[string]string {
	s.mu.RLock()
	c, ok := s.brokerCfg[broker]
	s.mu.RUnlock()
	if ok {
		return maps.Clone(c)
	}
	data, _, err := s.conn.Get(s.p(brokerConfigPath(broker)))
	if err != nil {
		return nil
	}
	c, _ = decodeConfig(data)
	return c
}

// DynamicBrokerConfigs implements cluster.Metadata: this broker's and the default's, which
// it follows (those whose znode it has read; another broker's are read by BrokerConfigs).
func (s *Store) DynamicBrokerConfigs() map[string]map[string]string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[string]map[string]string, len(s.brokerCfg))
	for b, c := range s.brokerCfg {
		out[b] = maps.Clone(c)
	}
	return out
}

// SetBrokerConfigs implements cluster.Metadata.
func (s *Store) SetBrokerConfigs(ctx context.Context, broker string, configs map[string]string) error {
	path := s.p(brokerConfigPath(broker))
	_, err := s.conn.Set(path, encodeConfig(configs), -1)
	if errors.Is(err, zk.ErrNoNode) {
		_, err = s.conn.Create(path, encodeConfig(configs), 0, zk.WorldACL(zk.PermAll))
	}
	if err != nil {
		return fmt.Errorf("writing the dynamic configs of broker %q: %w", broker, err)
	}
	if broker != "" && broker != strconv.Itoa(int(s.self.NodeID)) {
		return nil
	}
	return s.waitFor(ctx, "the dynamic configs of broker "+broker, func() bool {
		s.mu.RLock()
		defer s.mu.RUnlock()
		return maps.Equal(s.brokerCfg[broker], configs) || len(configs) == 0 && len(s.brokerCfg[broker]) == 0
	})
}

package server

// Dynamic broker configs: the broker configs IncrementalAlterConfigs may change at run time.
// Spool's broker configs are static (file and flags) except the replication throttles, which
// Kafka's kafka-reassign-partitions.sh sets before a move (--throttle) and clears after
// (--verify), per broker or for every broker (resource name ""). They are kept in the
// metadata store (ZooKeeper's /config/brokers/<id>, as Kafka keeps them).

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// dynamicBrokerConfigs are the broker configs that may be altered at run time.
var dynamicBrokerConfigs = []string{"leader.replication.throttled.rate", "follower.replication.throttled.rate", "replica.alter.log.dirs.io.max.bytes.per.second"}

func (s *Server) alterBrokerConfigs(ctx context.Context, res wire.IncrementalAlterConfigsRequestAlterConfigsResource, validateOnly bool) error {
	broker := res.ResourceName
	if broker != "" {
		if _, err := strconv.ParseInt(broker, 10, 32); err != nil {
			return fmt.Errorf("%w: broker resource %q is not a node id", wire.ErrInvalidRequest, broker)
		}
	}
	configs := maps.Clone(s.md.BrokerConfigs(broker))
	if configs == nil {
		configs = map[string]string{}
	}
	for _, c := range res.Configs {
		if !slices.Contains(dynamicBrokerConfigs, c.Name) {
			return fmt.Errorf("%w: broker config %s is static; set it in the properties file or with --set (dynamic: %v)", wire.ErrInvalidRequest, c.Name, dynamicBrokerConfigs)
		}
		switch c.ConfigOperation {
		case opSet:
			if c.Value == nil {
				return fmt.Errorf("%w: %s needs a value", wire.ErrInvalidConfig, c.Name)
			}
			if n, err := strconv.ParseInt(*c.Value, 10, 64); err != nil || n < 0 {
				return fmt.Errorf("%w: %s=%q: want bytes per second, a number >= 0", wire.ErrInvalidConfig, c.Name, *c.Value)
			}
			configs[c.Name] = *c.Value
		case opDelete:
			delete(configs, c.Name)
		default:
			return fmt.Errorf("%w: %s is not a list", wire.ErrInvalidConfig, c.Name)
		}
	}
	if validateOnly {
		return nil
	}
	if err := s.md.SetBrokerConfigs(ctx, broker, configs); err != nil {
		return protocolError(err)
	}
	return nil
}

// followerThrottleRate is this broker's follower.replication.throttled.rate: its own dynamic
// value, else the cluster default's, else none (0).
func (s *Server) followerThrottleRate() int64 {
	for _, broker := range []string{strconv.Itoa(int(s.self.NodeID)), ""} {
		if v, ok := s.md.BrokerConfigs(broker)["follower.replication.throttled.rate"]; ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// throttledReplica reports whether list (a follower.replication.throttled.replicas value: "*",
// or PARTITION:BROKER pairs separated by commas) names the replica of partition on broker.
func throttledReplica(list string, partition, broker int32) bool {
	if strings.TrimSpace(list) == "*" {
		return true
	}
	want := fmt.Sprintf("%d:%d", partition, broker)
	for _, item := range strings.Split(list, ",") {
		if strings.TrimSpace(item) == want {
			return true
		}
	}
	return false
}

package spool

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"
)

// Balancer names accepted by Balancers; they are the protocol names Kafka clients use, so
// members of other clients in the same group can agree on one.
const (
	BalancerRange             = "range"
	BalancerRoundRobin        = "roundrobin"
	BalancerCooperativeSticky = "cooperative-sticky"
)

// PartitionsFunc is a group callback: it gets the partitions concerned, by topic. Callbacks
// run on the group's goroutine (heartbeats go on meanwhile); a rebalance waits for them, so
// OnRevoked must return within RebalanceTimeout. They must not call Close or LeaveGroup,
// which wait for that goroutine.
type PartitionsFunc func(ctx context.Context, partitions map[string][]int32)

// groupConfig holds the group consumer options; it is only used when ConsumerGroup is set.
type groupConfig struct {
	id                string
	topics            []string
	patterns          []string
	regexps           []*regexp.Regexp
	balancers         []string
	sessionTimeout    time.Duration
	rebalanceTimeout  time.Duration
	heartbeatInterval time.Duration
	instanceID        string
	autoCommit        bool
	autoCommitEvery   time.Duration
	onAssigned        PartitionsFunc
	onRevoked         PartitionsFunc
	onLost            PartitionsFunc

	// set records which group options were given, to reject them without a group.
	set []string
}

func defaultGroupConfig() groupConfig {
	return groupConfig{
		balancers:         []string{BalancerRange, BalancerCooperativeSticky},
		sessionTimeout:    45 * time.Second,
		rebalanceTimeout:  60 * time.Second,
		heartbeatInterval: 3 * time.Second,
		autoCommit:        true,
		autoCommitEvery:   5 * time.Second,
	}
}

// groupOpt wraps a group option so that validation can name it when no group is set.
func groupOpt(name string, fn func(g *groupConfig) error) Opt {
	return func(c *config) error {
		c.group.set = append(c.group.set, name)
		if err := fn(&c.group); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	}
}

// groupTimeout is a group option setting a timeout the coordinator accepts: 1ms to 1h.
func groupTimeout(name string, d time.Duration, set func(g *groupConfig)) Opt {
	return groupOpt(name, func(g *groupConfig) error {
		if d < time.Millisecond || d > time.Hour {
			return fmt.Errorf("%v outside [1ms, 1h]", d)
		}
		set(g)
		return nil
	})
}

// ConsumerGroup makes the Client a member of group id: it joins in the background after
// NewClient, consumes the partitions the group assigns it and commits offsets to the group.
// It needs ConsumeTopics or ConsumeRegex. The group decides the partitions: Assign,
// AssignTopic and Unassign return ErrGroupManaged. Default: no group.
func ConsumerGroup(id string) Opt {
	return func(c *config) error {
		if id == "" {
			return errors.New("ConsumerGroup: empty group id")
		}
		c.group.id = id
		return nil
	}
}

// ConsumeTopics subscribes the group member to topics by name; a topic created later is picked
// up on the next metadata refresh (MetadataMaxAge). Conflicts with ConsumeRegex. Default: none.
func ConsumeTopics(names ...string) Opt {
	return groupOpt("ConsumeTopics", func(g *groupConfig) error {
		if len(names) == 0 {
			return errors.New("at least one topic is required")
		}
		for _, n := range names {
			if n == "" {
				return errors.New("empty topic name")
			}
		}
		g.topics = append(g.topics, names...)
		return nil
	})
}

// ConsumeRegex subscribes the group member to every topic whose name matches one of the
// patterns (Go regexp syntax, unanchored, as Kafka's pattern subscription). The cluster's topic
// list is matched again every MetadataMaxAge; a new match makes the member rejoin.
// Conflicts with ConsumeTopics. Default: none.
func ConsumeRegex(patterns ...string) Opt {
	return groupOpt("ConsumeRegex", func(g *groupConfig) error {
		if len(patterns) == 0 {
			return errors.New("at least one pattern is required")
		}
		for _, p := range patterns {
			re, err := regexp.Compile(p)
			if err != nil {
				return fmt.Errorf("pattern %q: %w", p, err)
			}
			g.patterns = append(g.patterns, p)
			g.regexps = append(g.regexps, re)
		}
		return nil
	})
}

// Balancers sets the assignors this member offers, most preferred first: BalancerRange,
// BalancerRoundRobin, BalancerCooperativeSticky. The coordinator picks one every member
// offers (most first choices wins); the member then rebalances eagerly (range, roundrobin:
// revoke all, rejoin) or cooperatively (cooperative-sticky: give up only what moves), as the
// chosen one requires. Default: range, cooperative-sticky (as the Java client, so groups
// mixed with librdkafka, Java or sarama members settle on range).
func Balancers(names ...string) Opt {
	return groupOpt("Balancers", func(g *groupConfig) error {
		if len(names) == 0 {
			return errors.New("at least one balancer is required")
		}
		seen := map[string]bool{}
		for _, n := range names {
			if balancerByName(n) == nil {
				return fmt.Errorf("unknown balancer %q (want %s, %s or %s)", n, BalancerRange, BalancerRoundRobin, BalancerCooperativeSticky)
			}
			if seen[n] {
				return fmt.Errorf("balancer %q given twice", n)
			}
			seen[n] = true
		}
		g.balancers = append([]string(nil), names...)
		return nil
	})
}

// SessionTimeout sets how long the coordinator waits for a heartbeat before it removes the
// member; the broker bounds it by group.min/max.session.timeout.ms. Default: 45s.
func SessionTimeout(d time.Duration) Opt {
	return groupTimeout("SessionTimeout", d, func(g *groupConfig) { g.sessionTimeout = d })
}

// RebalanceTimeout sets how long the coordinator waits for every member to rejoin during a
// rebalance, which bounds how long revoke callbacks may take. Default: 60s.
func RebalanceTimeout(d time.Duration) Opt {
	return groupTimeout("RebalanceTimeout", d, func(g *groupConfig) { g.rebalanceTimeout = d })
}

// HeartbeatInterval sets how often the member heartbeats; it must be below SessionTimeout
// (a third of it is usual). Default: 3s.
func HeartbeatInterval(d time.Duration) Opt {
	return groupOpt("HeartbeatInterval", func(g *groupConfig) error {
		if d < time.Millisecond {
			return fmt.Errorf("%v below 1ms", d)
		}
		g.heartbeatInterval = d
		return nil
	})
}

// InstanceID makes the member static (KIP-345, group.instance.id): Close does not send
// LeaveGroup, and a member that rejoins with the same id within SessionTimeout gets its
// assignment back without a rebalance. Default: dynamic membership.
func InstanceID(id string) Opt {
	return groupOpt("InstanceID", func(g *groupConfig) error {
		if id == "" {
			return errors.New("empty instance id")
		}
		g.instanceID = id
		return nil
	})
}

// AutoCommit commits, every interval, the offsets after the records Poll has returned; it
// also commits before partitions are revoked and on Close. Default: on, every 5s.
func AutoCommit(interval time.Duration) Opt {
	return groupOpt("AutoCommit", func(g *groupConfig) error {
		if interval < time.Millisecond {
			return fmt.Errorf("interval %v below 1ms", interval)
		}
		g.autoCommit, g.autoCommitEvery = true, interval
		return nil
	})
}

// DisableAutoCommit leaves committing to CommitRecords, CommitOffsets, CommitUncommitted and
// CommitAsync. Default: auto commit is on.
func DisableAutoCommit() Opt {
	return groupOpt("DisableAutoCommit", func(g *groupConfig) error {
		g.autoCommit = false
		return nil
	})
}

// OnAssigned sets a callback run, from the group's goroutine, after partitions are assigned
// to this member and before records of them are returned by Poll. Default: none.
func OnAssigned(fn PartitionsFunc) Opt {
	return groupOpt("OnAssigned", func(g *groupConfig) error { g.onAssigned = fn; return nil })
}

// OnRevoked sets a callback run, from the group's goroutine, before partitions are given up in
// a rebalance or on Close: Poll no longer returns them, and with auto commit what it returned
// is committed already; with manual commits, commit there (CommitUncommitted still covers
// them). Default: none.
func OnRevoked(fn PartitionsFunc) Opt {
	return groupOpt("OnRevoked", func(g *groupConfig) error { g.onRevoked = fn; return nil })
}

// OnLost sets a callback run when partitions are lost rather than revoked: the member was
// removed from the group (session expired, fenced by another instance with the same
// InstanceID); committing them is no longer possible. Default: none.
func OnLost(fn PartitionsFunc) Opt {
	return groupOpt("OnLost", func(g *groupConfig) error { g.onLost = fn; return nil })
}

func (g *groupConfig) validate() error {
	if g.id == "" {
		if len(g.set) > 0 {
			return fmt.Errorf("%s needs ConsumerGroup", g.set[0])
		}
		return nil
	}
	switch {
	case len(g.topics) > 0 && len(g.patterns) > 0:
		return errors.New("ConsumeTopics and ConsumeRegex conflict: use one")
	case len(g.topics) == 0 && len(g.patterns) == 0:
		return errors.New("ConsumerGroup needs ConsumeTopics or ConsumeRegex")
	case g.heartbeatInterval >= g.sessionTimeout:
		return fmt.Errorf("HeartbeatInterval %v must be below SessionTimeout %v", g.heartbeatInterval, g.sessionTimeout)
	}
	return nil
}

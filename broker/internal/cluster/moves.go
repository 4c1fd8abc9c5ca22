package cluster

import (
	"fmt"
	"slices"
)

// CheckTarget validates a reassignment target of partition p of t: at least one replica, no
// replica twice, every replica a live broker. Both stores apply it, so a single node and a
// cluster refuse the same targets.
func CheckTarget(t Topic, p int32, target []int32, live []Broker) error {
	if p < 0 || int(p) >= len(t.Partitions) {
		return fmt.Errorf("%w: %s has no partition %d", ErrUnknownTopic, t.Name, p)
	}
	if len(target) == 0 {
		return fmt.Errorf("%w: %s-%d: no replicas", ErrInvalidReplicaAssignment, t.Name, p)
	}
	for i, r := range target {
		if slices.Contains(target[:i], r) {
			return fmt.Errorf("%w: %s-%d: broker %d listed twice", ErrInvalidReplicaAssignment, t.Name, p, r)
		}
		if !slices.ContainsFunc(live, func(b Broker) bool { return b.NodeID == r }) {
			return fmt.Errorf("%w: %s-%d: broker %d is not a live broker", ErrInvalidReplicaAssignment, t.Name, p, r)
		}
	}
	return nil
}

// ElectionNeed says whether an election of typ for partition p may and need run, judged on
// the image: nil when it should run, ErrElectionNotNeeded when the partition already has
// the leader asked for, ErrPreferredLeaderNotAvailable or ErrEligibleLeadersNotAvailable when
// no replica can take the lead. alive reports whether a broker is alive.
func ElectionNeed(p Partition, typ ElectionType, alive func(int32) bool) error {
	switch typ {
	case ElectPreferred:
		if len(p.Replicas) == 0 {
			return ErrPreferredLeaderNotAvailable
		}
		pref := p.Replicas[0]
		if p.Leader == pref {
			return ErrElectionNotNeeded
		}
		if !alive(pref) || !slices.Contains(p.ISR, pref) {
			return ErrPreferredLeaderNotAvailable
		}
		return nil
	case ElectUnclean:
		if p.Leader >= 0 && alive(p.Leader) {
			return ErrElectionNotNeeded
		}
		if slices.ContainsFunc(p.Replicas, alive) {
			return nil
		}
		return ErrEligibleLeadersNotAvailable
	}
	return fmt.Errorf("%w: election type %d", ErrInvalidConfig, typ)
}

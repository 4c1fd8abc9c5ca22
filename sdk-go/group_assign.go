package spool

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// The consumer protocol: the bytes a member puts in JoinGroup's protocol metadata
// (subscription) and the leader puts in SyncGroup (assignment). Brokers pass them through
// verbatim, so every client of a group must agree on them. Their layouts are the spec's
// wire.ConsumerProtocolSubscription and wire.ConsumerProtocolAssignment (Kafka's, versions 0-3);
// the types here are the maps the assignors work with.

const consumerProtocolType = "consumer"

// subscriptionVersion is the version this client writes: v3 carries owned partitions (v1),
// the generation they were owned in (v2) and a rack (v3), which cooperative-sticky needs.
const subscriptionVersion = wire.ConsumerProtocolSubscriptionMaxVersion

// subscription is a member's JoinGroup metadata.
type subscription struct {
	version    int16
	topics     []string
	userData   []byte
	owned      map[string][]int32 // v1+
	generation int32              // v2+, -1 when unknown
	rack       *string            // v3+
}

// assignment is what SyncGroup hands one member.
type assignment struct {
	version    int16
	partitions map[string][]int32
	userData   []byte
}

var errConsumerProtocol = errors.New("spool: malformed consumer protocol bytes")

// assignedList is tps as the consumer protocol lists it, topics sorted so that equal maps give
// equal bytes.
func assignedList(tps map[string][]int32) []wire.ConsumerProtocolAssignmentTopicPartition {
	out := make([]wire.ConsumerProtocolAssignmentTopicPartition, 0, len(tps))
	for _, t := range slices.Sorted(maps.Keys(tps)) {
		out = append(out, wire.ConsumerProtocolAssignmentTopicPartition{Topic: t, Partitions: tps[t]})
	}
	return out
}

// assignedMap is the inverse of assignedList; a topic listed twice gets both lists.
func assignedMap(list []wire.ConsumerProtocolAssignmentTopicPartition) map[string][]int32 {
	out := make(map[string][]int32, len(list))
	for _, tp := range list {
		out[tp.Topic] = append(out[tp.Topic], tp.Partitions...)
	}
	return out
}

// encode appends s at s.version.
func (s *subscription) encode(b []byte) []byte {
	w := wire.ConsumerProtocolSubscription{Topics: s.topics, UserData: s.userData, GenerationId: s.generation, RackId: s.rack}
	// Both protocol structures list (topic, partitions) with the same fields, so the
	// assignment's list converts element by element.
	for _, tp := range assignedList(s.owned) {
		w.OwnedPartitions = append(w.OwnedPartitions, wire.ConsumerProtocolSubscriptionTopicPartition(tp))
	}
	return w.AppendVersioned(b, s.version)
}

func decodeSubscription(b []byte) (subscription, error) {
	var w wire.ConsumerProtocolSubscription
	v, err := w.DecodeVersioned(b)
	if err != nil {
		return subscription{version: v, generation: -1}, fmt.Errorf("%w: subscription: %w", errConsumerProtocol, err)
	}
	s := subscription{version: v, topics: w.Topics, userData: w.UserData, generation: w.GenerationId, rack: w.RackId}
	if w.OwnedPartitions != nil { // v1+
		list := make([]wire.ConsumerProtocolAssignmentTopicPartition, 0, len(w.OwnedPartitions))
		for _, tp := range w.OwnedPartitions {
			list = append(list, wire.ConsumerProtocolAssignmentTopicPartition(tp))
		}
		s.owned = assignedMap(list)
	}
	return s, nil
}

func (a *assignment) encode(b []byte) []byte {
	w := wire.ConsumerProtocolAssignment{AssignedPartitions: assignedList(a.partitions), UserData: a.userData}
	return w.AppendVersioned(b, a.version)
}

func decodeAssignment(b []byte) (assignment, error) {
	if len(b) == 0 {
		// A member the leader gave nothing may get empty bytes rather than an encoding.
		return assignment{partitions: map[string][]int32{}}, nil
	}
	var w wire.ConsumerProtocolAssignment
	v, err := w.DecodeVersioned(b)
	if err != nil {
		return assignment{version: v}, fmt.Errorf("%w: assignment: %w", errConsumerProtocol, err)
	}
	return assignment{version: v, partitions: assignedMap(w.AssignedPartitions), userData: w.UserData}, nil
}

// groupMember is one member as the leader sees it in the JoinGroup response.
type groupMember struct {
	id         string
	instanceID *string
	sub        subscription
}

// memberLess orders members as Kafka's assignors do: by instance id when both are static,
// else by member id. Ranges and round-robin turns follow this order.
func memberLess(a, b *groupMember) int {
	if a.instanceID != nil && b.instanceID != nil {
		if c := cmp.Compare(*a.instanceID, *b.instanceID); c != 0 {
			return c
		}
	}
	return cmp.Compare(a.id, b.id)
}

// plan maps member id → topic → sorted partitions.
type plan map[string]map[string][]int32

func (p plan) add(member, topic string, partition int32) {
	m := p[member]
	if m == nil {
		m = map[string][]int32{}
		p[member] = m
	}
	m[topic] = append(m[topic], partition)
}

func newPlan(members []groupMember) plan {
	p := make(plan, len(members))
	for _, m := range members {
		p[m.id] = map[string][]int32{}
	}
	return p
}

// balancer computes a group's assignment on the leader. partitions holds the partition count
// of every topic any member subscribes to that exists.
type balancer interface {
	name() string
	// cooperative reports whether members keep consuming through a rebalance and give up only
	// what the new assignment takes away.
	cooperative() bool
	assign(members []groupMember, partitions map[string]int32) plan
}

func balancerByName(name string) balancer {
	switch name {
	case BalancerRange:
		return rangeBalancer{}
	case BalancerRoundRobin:
		return roundRobinBalancer{}
	case BalancerCooperativeSticky:
		return cooperativeStickyBalancer{}
	}
	return nil
}

func subscribes(m *groupMember, topic string) bool { return slices.Contains(m.sub.topics, topic) }

// rangeBalancer is Kafka's RangeAssignor: per topic, the subscribed members in order each get a
// contiguous range; the first n%members get one extra.
type rangeBalancer struct{}

func (rangeBalancer) name() string      { return BalancerRange }
func (rangeBalancer) cooperative() bool { return false }

func (rangeBalancer) assign(members []groupMember, partitions map[string]int32) plan {
	out := newPlan(members)
	sorted := slices.Clone(members)
	slices.SortFunc(sorted, func(a, b groupMember) int { return memberLess(&a, &b) })
	for _, topic := range slices.Sorted(maps.Keys(partitions)) {
		var subs []*groupMember
		for i := range sorted {
			if subscribes(&sorted[i], topic) {
				subs = append(subs, &sorted[i])
			}
		}
		if len(subs) == 0 {
			continue
		}
		n := int(partitions[topic])
		per, extra := n/len(subs), n%len(subs)
		for i, m := range subs {
			start := per*i + min(i, extra)
			length := per
			if i < extra {
				length++
			}
			for p := start; p < start+length; p++ {
				out.add(m.id, topic, int32(p))
			}
		}
	}
	return out
}

// roundRobinBalancer is Kafka's RoundRobinAssignor: every topic-partition in (topic,
// partition) order goes to the next member in order that subscribes to its topic.
type roundRobinBalancer struct{}

func (roundRobinBalancer) name() string      { return BalancerRoundRobin }
func (roundRobinBalancer) cooperative() bool { return false }

func (roundRobinBalancer) assign(members []groupMember, partitions map[string]int32) plan {
	out := newPlan(members)
	if len(members) == 0 {
		return out
	}
	sorted := slices.Clone(members)
	slices.SortFunc(sorted, func(a, b groupMember) int { return memberLess(&a, &b) })
	next := 0
	for _, topic := range slices.Sorted(maps.Keys(partitions)) {
		for p := range partitions[topic] {
			for range sorted {
				m := &sorted[next%len(sorted)]
				next++
				if subscribes(m, topic) {
					out.add(m.id, topic, p)
					break
				}
			}
		}
	}
	return out
}

// cooperativeStickyBalancer balances partitions (counts within one where subscriptions allow)
// while leaving each owned partition with its owner where it can. A partition that must move
// is withheld from its new owner in this rebalance: its old owner revokes it and rejoins, and
// the follow-up rebalance hands it out (KIP-429), so no partition ever has two owners.
type cooperativeStickyBalancer struct{}

func (cooperativeStickyBalancer) name() string      { return BalancerCooperativeSticky }
func (cooperativeStickyBalancer) cooperative() bool { return true }

func (cooperativeStickyBalancer) assign(members []groupMember, partitions map[string]int32) plan {
	sorted := slices.Clone(members)
	slices.SortFunc(sorted, func(a, b groupMember) int { return memberLess(&a, &b) })
	exists := func(t tp) bool { n, ok := partitions[t.topic]; return ok && t.partition >= 0 && t.partition < n }

	// Who owns what now. Two claims on one partition (a member that missed a rebalance) go to
	// the higher generation.
	owner := map[tp]int{}
	ownerGen := map[tp]int32{}
	for i := range sorted {
		m := &sorted[i]
		for topic, ps := range m.sub.owned {
			for _, p := range ps {
				t := tp{topic, p}
				if !exists(t) || !subscribes(m, topic) {
					continue
				}
				if g, ok := ownerGen[t]; ok && g >= m.sub.generation {
					continue
				}
				owner[t], ownerGen[t] = i, m.sub.generation
			}
		}
	}
	held := make([][]tp, len(sorted))
	for t, i := range owner {
		held[i] = append(held[i], t)
	}
	for i := range held {
		slices.SortFunc(held[i], tpCompare)
	}

	var free []tp
	for _, topic := range slices.Sorted(maps.Keys(partitions)) {
		for p := range partitions[topic] {
			if _, ok := owner[tp{topic, p}]; !ok {
				free = append(free, tp{topic, p})
			}
		}
	}
	leastLoaded := func(topic string, except int) int {
		best := -1
		for i := range sorted {
			if i != except && subscribes(&sorted[i], topic) && (best < 0 || len(held[i]) < len(held[best])) {
				best = i
			}
		}
		return best
	}
	for _, t := range free {
		if i := leastLoaded(t.topic, -1); i >= 0 {
			held[i] = append(held[i], t)
		}
	}

	// Move partitions from the most loaded member to a member with at least two fewer that can
	// take them, newest first so that long-held partitions stay put, until none can move.
	for {
		moved := false
		order := make([]int, len(sorted))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(len(held[b]), len(held[a])) })
		for _, from := range order {
			for k := len(held[from]) - 1; k >= 0 && !moved; k-- {
				t := held[from][k]
				to := leastLoaded(t.topic, from)
				if to < 0 || len(held[to])+1 >= len(held[from]) {
					continue
				}
				held[from] = slices.Delete(held[from], k, k+1)
				held[to] = append(held[to], t)
				moved = true
			}
			if moved {
				break
			}
		}
		if !moved {
			break
		}
	}

	out := newPlan(members)
	for i, ts := range held {
		for _, t := range ts {
			if o, ok := owner[t]; ok && o != i {
				continue // revoked from its owner in this round; handed out in the next
			}
			out.add(sorted[i].id, t.topic, t.partition)
		}
	}
	for _, m := range out {
		for _, ps := range m {
			slices.Sort(ps)
		}
	}
	return out
}

func tpCompare(a, b tp) int {
	if c := cmp.Compare(a.topic, b.topic); c != 0 {
		return c
	}
	return cmp.Compare(a.partition, b.partition)
}

// assignedPartitions is the topic → partitions part of an Assignment, as admin describes it.
func assignedPartitions(b []byte) (map[string][]int32, error) {
	a, err := decodeAssignment(b)
	return a.partitions, err
}

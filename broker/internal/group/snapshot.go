package group

import (
	"sort"
)

// GroupSnapshot is a read-only copy of one group, for the metrics and the console: its state,
// members and committed offsets at the time of the call.
type GroupSnapshot struct {
	GroupID, State, ProtocolType, Protocol string
	Generation                             int32
	Members                                []MemberSnapshot
	Offsets                                []CommittedOffset // sorted by topic, partition
}

// MemberSnapshot is one member of a GroupSnapshot; Assignment is the raw bytes the leader
// assigned (the consumer protocol's, for a consumer group).
type MemberSnapshot struct {
	MemberID, ClientID, ClientHost string
	InstanceID                     *string
	Assignment                     []byte
}

// CommittedOffset is a group's committed offset of one partition.
type CommittedOffset struct {
	Topic     string
	Partition int32
	Offset    int64
}

// Snapshot copies every live group coordinated here (Dead ones left out), sorted by id. It
// takes each group's lock briefly, one at a time, as List does; the scrape and the console
// call it, never a request path.
func (c *Coordinator) Snapshot() []GroupSnapshot {
	c.mu.Lock()
	groups := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		groups = append(groups, g)
	}
	c.mu.Unlock()
	out := make([]GroupSnapshot, 0, len(groups))
	for _, g := range groups {
		g.mu.Lock()
		if g.state == Dead {
			g.mu.Unlock()
			continue
		}
		s := GroupSnapshot{GroupID: g.id, State: g.state.String(), ProtocolType: g.protocolType,
			Protocol: g.protocol, Generation: g.generation}
		for _, id := range g.order {
			m := g.members[id]
			s.Members = append(s.Members, MemberSnapshot{MemberID: m.id, ClientID: m.clientID,
				ClientHost: m.clientHost, InstanceID: m.instanceID, Assignment: m.assignment})
		}
		for k, o := range g.offsets {
			s.Offsets = append(s.Offsets, CommittedOffset{Topic: k.topic, Partition: k.partition, Offset: o.offset})
		}
		g.mu.Unlock()
		sort.Slice(s.Offsets, func(i, j int) bool {
			a, b := s.Offsets[i], s.Offsets[j]
			return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
		})
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GroupID < out[j].GroupID })
	return out
}

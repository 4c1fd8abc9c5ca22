package spool

import (
	"fmt"
	"slices"
	"sort"
)

// Move is one partition's change in a balancing plan: its replica list From and To. The
// first replica of a list is the partition's preferred leader, so a move may only reorder.
type Move struct {
	Topic     string
	Partition int32
	From, To  []int32
}

// Copies are the replicas the move adds (brokers that must copy the partition's data).
func (m Move) Copies() []int32 {
	var out []int32
	for _, r := range m.To {
		if !slices.Contains(m.From, r) {
			out = append(out, r)
		}
	}
	return out
}

// PlanBalance plans replica lists that spread replicas and preferred leaders evenly over the
// brokers (each broker within one of every other's count), keeping each partition on as many
// racks as it had (or as the racks allow), and moving as few replicas as it can: a replica
// moves only off a broker above its share or off an excluded broker, and leaders are balanced
// by reordering replica lists, which moves no data. exclude lists brokers to empty
// (decommissioning). Partitions already being moved are left as they are.
func PlanBalance(brokers []BrokerDetail, topics []TopicDetail, exclude ...int32) ([]Move, error) {
	b := newReplicaPlanner(brokers, exclude)
	if len(b.ids) == 0 {
		return nil, fmt.Errorf("spool: no broker to place replicas on")
	}
	for _, t := range topics {
		for _, p := range t.Partitions {
			if len(p.Replicas) > len(b.ids) {
				return nil, fmt.Errorf("spool: %s-%d has %d replicas but only %d brokers can hold them", t.Name, p.Partition, len(p.Replicas), len(b.ids))
			}
			b.add(t.Name, p.Partition, p.Replicas)
		}
	}
	b.placeOrphans()
	b.spreadRacks()
	b.spreadReplicas()
	b.spreadLeaders()
	return b.moves(), nil
}

type planPart struct {
	topic    string
	index    int32
	from, to []int32
}

type replicaPlanner struct {
	ids     []int32 // brokers that may hold replicas, ascending
	rack    map[int32]string
	racks   int // distinct racks among ids (brokers without one count as their own rack)
	allowed map[int32]bool
	parts   []*planPart
}

func newReplicaPlanner(brokers []BrokerDetail, exclude []int32) *replicaPlanner {
	b := &replicaPlanner{rack: map[int32]string{}, allowed: map[int32]bool{}}
	seen := map[string]bool{}
	for _, br := range brokers {
		if slices.Contains(exclude, br.NodeID) {
			continue
		}
		b.ids = append(b.ids, br.NodeID)
		b.allowed[br.NodeID] = true
		r := br.Rack
		if r == "" {
			r = fmt.Sprintf("\x00broker-%d", br.NodeID)
		}
		b.rack[br.NodeID] = r
		seen[r] = true
	}
	b.racks = len(seen)
	slices.Sort(b.ids)
	return b
}

func (b *replicaPlanner) add(topic string, index int32, replicas []int32) {
	b.parts = append(b.parts, &planPart{topic: topic, index: index, from: slices.Clone(replicas), to: slices.Clone(replicas)})
}

// load counts replicas (leaders: first replicas) per allowed broker.
func (b *replicaPlanner) load(leaders bool) map[int32]int {
	n := map[int32]int{}
	for _, id := range b.ids {
		n[id] = 0
	}
	for _, p := range b.parts {
		for i, r := range p.to {
			if b.allowed[r] && (!leaders || i == 0) {
				n[r]++
			}
		}
	}
	return n
}

// racksOf counts the distinct racks of replicas.
func (b *replicaPlanner) racksOf(replicas []int32) int {
	seen := map[string]bool{}
	for _, r := range replicas {
		seen[b.rack[r]] = true
	}
	return len(seen)
}

// fits reports whether replica slot i of p may go to broker to: not already a replica, and
// the partition keeps as many racks as it has (or as many as it can have).
func (b *replicaPlanner) fits(p *planPart, i int, to int32) bool {
	if slices.Contains(p.to, to) {
		return false
	}
	next := slices.Clone(p.to)
	next[i] = to
	return b.racksOf(next) >= min(b.racksOf(p.to), len(next), b.racks)
}

// placeOrphans moves replicas off brokers that may not hold them (excluded or gone): each to
// the broker that gives the partition the most racks, the least loaded among those.
func (b *replicaPlanner) placeOrphans() {
	for _, p := range b.parts {
		for i, r := range p.to {
			if b.allowed[r] {
				continue
			}
			n := b.load(false)
			best, bestRacks := int32(-1), 0
			for _, id := range b.ids {
				if slices.Contains(p.to, id) {
					continue
				}
				next := slices.Clone(p.to)
				next[i] = id
				racks := b.racksOf(next)
				if best < 0 || racks > bestRacks || racks == bestRacks && n[id] < n[best] {
					best, bestRacks = id, racks
				}
			}
			if best >= 0 {
				p.to[i] = best
			}
		}
	}
}

// spreadRacks moves a replica of each partition that shares a rack with another to a broker
// of a rack the partition lacks (the least loaded), while it spans fewer racks than it can.
func (b *replicaPlanner) spreadRacks() {
	for _, p := range b.parts {
		for b.racksOf(p.to) < min(len(p.to), b.racks) {
			n := b.load(false)
			slot, best := -1, int32(-1)
			for i, r := range p.to {
				if !slices.ContainsFunc(p.to, func(o int32) bool { return o != r && b.rack[o] == b.rack[r] }) {
					continue // alone in its rack
				}
				for _, id := range b.ids {
					if b.fits(p, i, id) && b.racksOf(replaced(p.to, i, id)) > b.racksOf(p.to) && (best < 0 || n[id] < n[best]) {
						slot, best = i, id
					}
				}
			}
			if slot < 0 {
				break
			}
			p.to[slot] = best
		}
	}
}

func replaced(ids []int32, i int, id int32) []int32 {
	out := slices.Clone(ids)
	out[i] = id
	return out
}

// spreadReplicas moves replicas from the most to the least loaded brokers until every
// broker is within one replica of every other, or no move fits.
func (b *replicaPlanner) spreadReplicas() {
	for {
		n := b.load(false)
		if !b.moveOne(n, func(p *planPart, i int, from, to int32) bool {
			if b.fits(p, i, to) {
				p.to[i] = to
				return true
			}
			return false
		}, false) {
			return
		}
	}
}

// spreadLeaders reorders replica lists so that preferred leaders spread the same way.
func (b *replicaPlanner) spreadLeaders() {
	for {
		n := b.load(true)
		if !b.moveOne(n, func(p *planPart, i int, from, to int32) bool {
			j := slices.Index(p.to, to)
			if i != 0 || j < 0 {
				return false
			}
			p.to[0], p.to[j] = p.to[j], p.to[0]
			return true
		}, true) {
			return
		}
	}
}

// moveOne tries one move from a broker with the highest count to one with a count at least
// two lower, preferring the lowest, through try(partition, slot, from, to). It reports
// whether a move was made. Partitions are tried in a stable order, so plans are repeatable.
func (b *replicaPlanner) moveOne(n map[int32]int, try func(p *planPart, i int, from, to int32) bool, leaders bool) bool {
	order := slices.Clone(b.ids)
	sort.SliceStable(order, func(i, j int) bool { return n[order[i]] > n[order[j]] })
	for hi := 0; hi < len(order); hi++ {
		from := order[hi]
		for lo := len(order) - 1; lo > hi; lo-- {
			to := order[lo]
			if n[from]-n[to] < 2 {
				break
			}
			for _, p := range b.parts {
				for i, r := range p.to {
					if r != from || leaders && i != 0 {
						continue
					}
					if try(p, i, from, to) {
						return true
					}
				}
			}
		}
	}
	return false
}

func (b *replicaPlanner) moves() []Move {
	var out []Move
	for _, p := range b.parts {
		if !slices.Equal(p.from, p.to) {
			out = append(out, Move{Topic: p.topic, Partition: p.index, From: p.from, To: p.to})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

package spool

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func members(subs map[string][]string) []groupMember {
	var out []groupMember
	for id, topics := range subs {
		out = append(out, groupMember{id: id, sub: subscription{topics: topics, generation: -1}})
	}
	return out
}

// TestAssignorLayouts pins the layouts of Kafka's documented examples.
func TestAssignorLayouts(t *testing.T) {
	both := []string{"t0", "t1"}
	cases := []struct {
		name    string
		bal     balancer
		members []groupMember
		parts   map[string]int32
		want    plan
	}{
		{"range, two topics of three", rangeBalancer{}, members(map[string][]string{"c0": both, "c1": both}),
			map[string]int32{"t0": 3, "t1": 3},
			plan{"c0": {"t0": {0, 1}, "t1": {0, 1}}, "c1": {"t0": {2}, "t1": {2}}}},
		{"range, seven over three", rangeBalancer{}, members(map[string][]string{"c0": {"t"}, "c1": {"t"}, "c2": {"t"}}),
			map[string]int32{"t": 7},
			plan{"c0": {"t": {0, 1, 2}}, "c1": {"t": {3, 4}}, "c2": {"t": {5, 6}}}},
		{"range, static members in instance id order",
			rangeBalancer{}, []groupMember{
				{id: "a", instanceID: strp("z"), sub: subscription{topics: []string{"t"}}},
				{id: "b", instanceID: strp("y"), sub: subscription{topics: []string{"t"}}}},
			map[string]int32{"t": 3},
			plan{"b": {"t": {0, 1}}, "a": {"t": {2}}}},
		{"roundrobin, two topics of three", roundRobinBalancer{}, members(map[string][]string{"c0": both, "c1": both}),
			map[string]int32{"t0": 3, "t1": 3},
			plan{"c0": {"t0": {0, 2}, "t1": {1}}, "c1": {"t0": {1}, "t1": {0, 2}}}},
		{"roundrobin, uneven subscriptions", roundRobinBalancer{},
			members(map[string][]string{"c0": {"t0"}, "c1": {"t0", "t1"}, "c2": {"t0", "t1", "t2"}}),
			map[string]int32{"t0": 1, "t1": 2, "t2": 3},
			plan{"c0": {"t0": {0}}, "c1": {"t1": {0}}, "c2": {"t1": {1}, "t2": {0, 1, 2}}}},
		{"range, topic nobody wants and member with nothing", rangeBalancer{},
			members(map[string][]string{"c0": {"t0"}, "c1": {"gone"}}),
			map[string]int32{"t0": 2},
			plan{"c0": {"t0": {0, 1}}, "c1": {}}},
		{"cooperative-sticky keeps owners", cooperativeStickyBalancer{}, []groupMember{
			{id: "a", sub: subscription{topics: []string{"t"}, owned: map[string][]int32{"t": {0, 1, 2}}, generation: 4}},
			{id: "b", sub: subscription{topics: []string{"t"}, owned: map[string][]int32{"t": {3, 4, 5}}, generation: 4}}},
			map[string]int32{"t": 6},
			plan{"a": {"t": {0, 1, 2}}, "b": {"t": {3, 4, 5}}}},
		{"cooperative-sticky withholds what moves", cooperativeStickyBalancer{}, []groupMember{
			{id: "a", sub: subscription{topics: []string{"t"}, owned: map[string][]int32{"t": {0, 1, 2, 3}}, generation: 4}},
			{id: "b", sub: subscription{topics: []string{"t"}, generation: -1}}},
			map[string]int32{"t": 4},
			plan{"a": {"t": {0, 1}}, "b": {}}},
		{"cooperative-sticky: the newer generation wins a double claim", cooperativeStickyBalancer{}, []groupMember{
			{id: "a", sub: subscription{topics: []string{"t"}, owned: map[string][]int32{"t": {0, 1}}, generation: 3}},
			{id: "b", sub: subscription{topics: []string{"t"}, owned: map[string][]int32{"t": {1}}, generation: 5}}},
			map[string]int32{"t": 2},
			plan{"a": {"t": {0}}, "b": {"t": {1}}}},
	}
	for _, c := range cases {
		got := c.bal.assign(c.members, c.parts)
		for id := range got {
			for t, ps := range got[id] {
				if len(ps) == 0 {
					delete(got[id], t)
				}
			}
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

// randomGroup returns n members subscribed to every topic of parts.
func randomGroup(rng *rand.Rand) ([]groupMember, map[string]int32) {
	parts := map[string]int32{}
	var topics []string
	for i := range 1 + rng.IntN(8) {
		name := fmt.Sprintf("t%d", i)
		parts[name] = int32(1 + rng.IntN(24))
		topics = append(topics, name)
	}
	var ms []groupMember
	for i := range 1 + rng.IntN(16) {
		ms = append(ms, groupMember{id: fmt.Sprintf("m%02d", i), sub: subscription{topics: topics, generation: -1}})
	}
	return ms, parts
}

// checkExactlyOnce fails unless every partition has at most one owner, and exactly one when
// complete holds.
func checkExactlyOnce(t *testing.T, p plan, parts map[string]int32, complete bool) {
	t.Helper()
	seen := map[tp]string{}
	for id, ts := range p {
		for topic, ps := range ts {
			for _, q := range ps {
				if q < 0 || q >= parts[topic] {
					t.Fatalf("%s got %s[%d], which does not exist", id, topic, q)
				}
				if o, dup := seen[tp{topic, q}]; dup {
					t.Fatalf("%s[%d] given to %s and %s", topic, q, o, id)
				}
				seen[tp{topic, q}] = id
			}
		}
	}
	total := 0
	for _, n := range parts {
		total += int(n)
	}
	if complete && len(seen) != total {
		t.Fatalf("%d of %d partitions assigned", len(seen), total)
	}
}

func counts(p plan) map[string]int {
	out := map[string]int{}
	for id, ts := range p {
		for _, ps := range ts {
			out[id] += len(ps)
		}
	}
	return out
}

func checkBalanced(t *testing.T, p plan, ms []groupMember) {
	t.Helper()
	c := counts(p)
	lo, hi := -1, 0
	for _, m := range ms {
		n := c[m.id]
		if lo < 0 || n < lo {
			lo = n
		}
		hi = max(hi, n)
	}
	if hi-lo > 1 {
		t.Fatalf("unbalanced: %v", c)
	}
}

// TestAssignorProperties: for random groups, every partition is assigned exactly once and
// round-robin and cooperative-sticky are balanced within one; range is balanced per topic.
func TestAssignorProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		ms, parts := randomGroup(rng)
		for _, b := range []balancer{rangeBalancer{}, roundRobinBalancer{}, cooperativeStickyBalancer{}} {
			p := b.assign(ms, parts)
			checkExactlyOnce(t, p, parts, true)
			if b.name() != BalancerRange {
				checkBalanced(t, p, ms)
				continue
			}
			for topic := range parts {
				sub := plan{}
				for id := range p {
					sub[id] = map[string][]int32{topic: p[id][topic]}
				}
				checkBalanced(t, sub, ms)
			}
		}
	}
}

// TestCooperativeStickyProperties: members leave and join a group that owns partitions. The
// first round never gives a partition to a new owner while its owner still holds it, and
// leaves every survivor with as much of what it owned as balance allows; the follow-up round
// (after the owners revoked) completes a balanced assignment without revoking anything.
func TestCooperativeStickyProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	bal := cooperativeStickyBalancer{}
	for range 300 {
		ms, parts := randomGroup(rng)
		prev := bal.assign(ms, parts)
		checkExactlyOnce(t, prev, parts, true)

		// Some leave, some join; survivors report what they own.
		var next []groupMember
		for _, m := range ms {
			if rng.IntN(4) > 0 {
				m.sub.owned, m.sub.generation = prev[m.id], 1
				next = append(next, m)
			}
		}
		for i := range rng.IntN(5) {
			next = append(next, groupMember{id: fmt.Sprintf("new%d", i), sub: subscription{topics: ms[0].sub.topics, generation: -1}})
		}
		if len(next) == 0 {
			continue
		}
		round := bal.assign(next, parts)
		checkExactlyOnce(t, round, parts, false)
		total := 0
		for _, n := range parts {
			total += int(n)
		}
		quota := (total + len(next) - 1) / len(next)
		for _, m := range next {
			for topic, ps := range round[m.id] {
				for _, q := range ps {
					for _, o := range next {
						if o.id != m.id && slices.Contains(o.sub.owned[topic], q) {
							t.Fatalf("%s[%d] given to %s while %s still owns it", topic, q, m.id, o.id)
						}
					}
				}
			}
			kept, owned := 0, 0
			for topic, ps := range m.sub.owned {
				owned += len(ps)
				for _, q := range ps {
					if slices.Contains(round[m.id][topic], q) {
						kept++
					}
				}
			}
			if kept < min(owned, quota-1) {
				t.Fatalf("%s kept %d of its %d partitions, quota %d", m.id, kept, owned, quota)
			}
		}

		// Follow-up: owners have revoked what they lost.
		for i := range next {
			next[i].sub.owned, next[i].sub.generation = round[next[i].id], 2
		}
		final := bal.assign(next, parts)
		checkExactlyOnce(t, final, parts, true)
		checkBalanced(t, final, next)
		for _, m := range next {
			for topic, ps := range m.sub.owned {
				for _, q := range ps {
					if !slices.Contains(final[m.id][topic], q) {
						t.Fatalf("follow-up round revoked %s[%d] from %s", topic, q, m.id)
					}
				}
			}
		}
	}
}

// TestConsumerProtocolAgreesWithKmsg: our subscription and assignment bytes are franz-go's,
// at every version, in both directions.
func TestConsumerProtocolAgreesWithKmsg(t *testing.T) {
	rack := "r1"
	for v := int16(0); v <= 3; v++ {
		s := subscription{version: v, topics: []string{"a", "b"}, userData: []byte{1, 2}, generation: -1}
		if v >= 1 {
			s.owned = map[string][]int32{"a": {0, 2}, "b": {1}}
		}
		if v >= 2 {
			s.generation = 7
		}
		if v >= 3 {
			s.rack = &rack
		}
		ours := s.encode(nil)
		k := kmsg.NewConsumerMemberMetadata()
		if err := k.ReadFrom(ours); err != nil {
			t.Fatalf("v%d: kmsg cannot read ours: %v", v, err)
		}
		if theirs := k.AppendTo(nil); !bytes.Equal(ours, theirs) {
			t.Fatalf("v%d subscription:\nours   %x\ntheirs %x", v, ours, theirs)
		}
		back, err := decodeSubscription(ours)
		if err != nil || !reflect.DeepEqual(back, s) {
			t.Fatalf("v%d round trip: %+v, %v; want %+v", v, back, err, s)
		}
		for n := range len(ours) {
			if _, err := decodeSubscription(ours[:n]); err == nil {
				t.Fatalf("v%d subscription cut to %d bytes decoded without error", v, n)
			}
		}

		a := assignment{version: v, partitions: map[string][]int32{"a": {1}, "b": {0, 3}}, userData: []byte{9}}
		ours = a.encode(nil)
		ka := kmsg.NewConsumerMemberAssignment()
		if err := ka.ReadFrom(ours); err != nil {
			t.Fatalf("v%d: kmsg cannot read our assignment: %v", v, err)
		}
		if theirs := ka.AppendTo(nil); !bytes.Equal(ours, theirs) {
			t.Fatalf("v%d assignment:\nours   %x\ntheirs %x", v, ours, theirs)
		}
		backA, err := decodeAssignment(ours)
		if err != nil || !reflect.DeepEqual(backA, a) {
			t.Fatalf("v%d assignment round trip: %+v, %v", v, backA, err)
		}
		for n := 1; n < len(ours); n++ {
			if _, err := decodeAssignment(ours[:n]); err == nil {
				t.Fatalf("v%d assignment cut to %d bytes decoded without error", v, n)
			}
		}
	}
	if _, err := decodeSubscription([]byte{0xff, 0xff}); err == nil {
		t.Fatal("negative version decoded")
	}
}

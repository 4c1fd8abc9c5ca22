package spool

import (
	"slices"
	"testing"
)

// apply returns topics with the plan's replica lists.
func applyPlan(topics []TopicDetail, moves []Move) []TopicDetail {
	out := make([]TopicDetail, len(topics))
	for i, t := range topics {
		out[i] = TopicDetail{Name: t.Name}
		for _, p := range t.Partitions {
			q := p
			for _, m := range moves {
				if m.Topic == t.Name && m.Partition == p.Partition {
					q.Replicas = m.To
				}
			}
			out[i].Partitions = append(out[i].Partitions, q)
		}
	}
	return out
}

func placementCounts(topics []TopicDetail) (replicas, leaders map[int32]int) {
	replicas, leaders = map[int32]int{}, map[int32]int{}
	for _, t := range topics {
		for _, p := range t.Partitions {
			for i, r := range p.Replicas {
				replicas[r]++
				if i == 0 {
					leaders[r]++
				}
			}
		}
	}
	return replicas, leaders
}

func spread(n map[int32]int, ids []int32) (lo, hi int) {
	lo, hi = 1<<30, 0
	for _, id := range ids {
		lo, hi = min(lo, n[id]), max(hi, n[id])
	}
	return lo, hi
}

func brokersOf(racks ...string) []BrokerDetail {
	var out []BrokerDetail
	for i, r := range racks {
		out = append(out, BrokerDetail{NodeID: int32(i + 1), Rack: r})
	}
	return out
}

// topicsOn places n partitions of rf replicas round-robin over brokers 1..k.
func topicsOn(name string, n, rf, k int) TopicDetail {
	t := TopicDetail{Name: name}
	for p := 0; p < n; p++ {
		var rs []int32
		for r := 0; r < rf; r++ {
			rs = append(rs, int32((p+r)%k+1))
		}
		t.Partitions = append(t.Partitions, PartitionDetail{Partition: int32(p), Replicas: rs, Leader: rs[0]})
	}
	return t
}

func TestPlanBalanceOntoNewBroker(t *testing.T) {
	topics := []TopicDetail{topicsOn("orders", 12, 3, 3), topicsOn("payments", 5, 2, 3)}
	brokers := brokersOf("", "", "", "")
	moves, err := PlanBalance(brokers, topics)
	if err != nil {
		t.Fatal(err)
	}
	after := applyPlan(topics, moves)
	reps, leads := placementCounts(after)
	ids := []int32{1, 2, 3, 4}
	if lo, hi := spread(reps, ids); hi-lo > 1 {
		t.Errorf("replicas per broker %v: spread %d..%d", reps, lo, hi)
	}
	if lo, hi := spread(leads, ids); hi-lo > 1 {
		t.Errorf("leaders per broker %v: spread %d..%d", leads, lo, hi)
	}
	// Only what broker 4 needs is copied: 46 replicas over 4 brokers, so 11 or 12 copies.
	copies := 0
	for _, m := range moves {
		for _, c := range m.Copies() {
			if c != 4 {
				t.Errorf("%s-%d: copies to broker %d, which had its share", m.Topic, m.Partition, c)
			}
			copies++
		}
	}
	if copies < 11 || copies > 12 {
		t.Errorf("%d replicas copied, want 11 or 12", copies)
	}
	// A balanced cluster plans nothing.
	if again, err := PlanBalance(brokers, after); err != nil || len(again) != 0 {
		t.Errorf("second plan: %v %v", again, err)
	}
}

func TestPlanDecommission(t *testing.T) {
	topics := []TopicDetail{topicsOn("orders", 8, 3, 4)}
	moves, err := PlanBalance(brokersOf("", "", "", ""), topics, 2)
	if err != nil {
		t.Fatal(err)
	}
	after := applyPlan(topics, moves)
	reps, leads := placementCounts(after)
	if reps[2] != 0 || leads[2] != 0 {
		t.Fatalf("broker 2 keeps %d replicas, %d leaders", reps[2], leads[2])
	}
	if lo, hi := spread(reps, []int32{1, 3, 4}); hi-lo > 1 {
		t.Errorf("replicas per broker %v", reps)
	}
	if _, err := PlanBalance(brokersOf("", "", ""), topics, 2, 3); err == nil {
		t.Error("RF 3 on one broker planned")
	}
}

func TestPlanKeepsRacks(t *testing.T) {
	// Six brokers in racks a, b, c (two each), topics placed without regard to racks.
	brokers := brokersOf("a", "a", "b", "b", "c", "c")
	topics := []TopicDetail{topicsOn("orders", 12, 3, 4)}
	moves, err := PlanBalance(brokers, topics)
	if err != nil {
		t.Fatal(err)
	}
	rackOf := func(id int32) string { return brokers[id-1].Rack }
	for _, tp := range applyPlan(topics, moves) {
		for _, p := range tp.Partitions {
			before := topics[0].Partitions[p.Partition].Replicas
			racks := map[string]bool{}
			for _, r := range p.Replicas {
				racks[rackOf(r)] = true
			}
			beforeRacks := map[string]bool{}
			for _, r := range before {
				beforeRacks[rackOf(r)] = true
			}
			if len(racks) < len(beforeRacks) {
				t.Errorf("%s-%d: %v spans fewer racks than %v", tp.Name, p.Partition, p.Replicas, before)
			}
		}
	}
	// Partitions placed with two replicas in one rack are spread over three.
	for _, tp := range applyPlan(topics, moves) {
		for _, p := range tp.Partitions {
			racks := map[string]bool{}
			for _, r := range p.Replicas {
				racks[rackOf(r)] = true
			}
			if len(racks) != 3 {
				t.Errorf("%s-%d spans %d racks: %v", tp.Name, p.Partition, len(racks), p.Replicas)
			}
		}
	}
	// Decommissioning rack c's brokers leaves every partition on racks a and b.
	moves, err = PlanBalance(brokers, topics, 5, 6)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range applyPlan(topics, moves) {
		for _, p := range tp.Partitions {
			if slices.Contains(p.Replicas, 5) || slices.Contains(p.Replicas, 6) {
				t.Errorf("%s-%d still on rack c: %v", tp.Name, p.Partition, p.Replicas)
			}
			racks := map[string]bool{}
			for _, r := range p.Replicas {
				racks[rackOf(r)] = true
			}
			if len(racks) < 2 {
				t.Errorf("%s-%d on one rack: %v", tp.Name, p.Partition, p.Replicas)
			}
		}
	}

}

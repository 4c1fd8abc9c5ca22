package zk

import (
	"testing"

	"github.com/spoolmq/spool/broker/internal/cluster"
)

func rack(r string) *string { return &r }

func TestAssignSpreadsReplicasLeadersAndRacks(t *testing.T) {
	brokers := []cluster.Broker{
		{NodeID: 1, Rack: rack("a")}, {NodeID: 2, Rack: rack("a")},
		{NodeID: 3, Rack: rack("b")}, {NodeID: 4, Rack: rack("b")},
		{NodeID: 5, Rack: rack("c")}, {NodeID: 6, Rack: rack("c")},
	}
	racks := map[int32]string{1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
	a, err := Assign(brokers, 0, 12, 3, 7)
	if err != nil {
		t.Fatal(err)
	}
	leaders, replicas := map[int32]int{}, map[int32]int{}
	for p, rs := range a {
		if len(rs) != 3 {
			t.Fatalf("partition %d: %d replicas", p, len(rs))
		}
		seenRack, seen := map[string]bool{}, map[int32]bool{}
		for _, r := range rs {
			if seen[r] {
				t.Fatalf("partition %d: broker %d twice in %v", p, r, rs)
			}
			seen[r] = true
			if seenRack[racks[r]] {
				t.Errorf("partition %d: replicas %v share rack %s though three racks exist", p, rs, racks[r])
			}
			seenRack[racks[r]] = true
			replicas[r]++
		}
		leaders[rs[0]]++
	}
	for id := int32(1); id <= 6; id++ {
		if leaders[id] != 2 || replicas[id] != 6 {
			t.Errorf("broker %d leads %d and holds %d replicas; want 2 and 6 (12 partitions, RF 3, 6 brokers)", id, leaders[id], replicas[id])
		}
	}
	// Racks of unequal size (a: 1,2; b: 3,4; c: 5): still one replica per rack.
	for start := 0; start < 5; start++ {
		a, err := Assign(brokers[:5], 0, 10, 3, start)
		if err != nil {
			t.Fatal(err)
		}
		for p, rs := range a {
			seen := map[string]bool{}
			for _, r := range rs {
				if seen[racks[r]] {
					t.Errorf("start %d, partition %d: replicas %v share rack %s", start, p, rs, racks[r])
				}
				seen[racks[r]] = true
			}
		}
	}
	if _, err := Assign(brokers[:2], 0, 1, 3, 0); err == nil {
		t.Error("RF 3 on two brokers was accepted")
	}
}

func TestParseConnect(t *testing.T) {
	servers, chroot, err := ParseConnect("zk1:2181,zk2,zk3:2182/kafka/prod")
	if err != nil || len(servers) != 3 || servers[1] != "zk2:2181" || servers[2] != "zk3:2182" || chroot != "/kafka/prod" {
		t.Fatalf("got %v %q %v", servers, chroot, err)
	}
	if _, _, err := ParseConnect("/chroot-only"); err == nil {
		t.Error("a connect string without servers was accepted")
	}
}

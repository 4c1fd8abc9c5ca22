package conformance

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// Cluster cases: a target of several brokers (Case.Brokers), reached through its bootstrap
// address and then, as clients do, through the brokers Metadata lists. SPEC.md §8.1, §8.4,
// §7 (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS).

// BrokerCount asks the broker at addr for Metadata and returns how many brokers it lists:
// how a test waits for a cluster to form.
func BrokerCount(addr string) (int, error) {
	c, err := dialWire(nil, addr, 2*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	req := def[wire.MetadataRequest]()
	req.Topics = []wire.MetadataRequestTopic{}
	var resp wire.MetadataResponse
	if err := c.Do(req, &resp, maxV(wire.KeyMetadata)); err != nil {
		return 0, err
	}
	return len(resp.Brokers), nil
}

// brokerCount asks the target how many brokers it has.
func (t *T) brokerCount() int {
	return len(t.metadata(t.Conn(), false).Brokers)
}

// replicatedTopic creates a topic of n partitions with rf replicas each (and configs) and
// waits until Metadata shows every partition with a leader and its whole replica set in sync:
// the state a cluster reaches once every follower has caught up.
func (t *T) replicatedTopic(n int32, rf int16, configs ...string) (string, wire.MetadataResponse) {
	name := t.Name("t")
	if r := t.createTopic(t.ControllerConn(), name, n, rf, false, configs...); r.ErrorCode != 0 {
		t.Fatalf("creating topic %s with %d replicas: %s", name, rf, codeName(r.ErrorCode))
	}
	// Every broker's view, not only the bootstrap's: brokers learn metadata from the
	// controller one by one, and one that has not yet answers UNKNOWN_TOPIC_OR_PARTITION.
	c := t.Conn()
	md := t.metadata(c, false)
	conns := map[int32]*Conn{}
	for _, b := range md.Brokers {
		conns[b.NodeId] = t.brokerConn(md, b.NodeId)
	}
	t.waitFor(fmt.Sprintf("every broker to see every partition of %s led with %d replicas in sync", name, rf), func() (bool, string) {
		for id, bc := range conns {
			view := t.metadata(bc, false, name)
			tp := findTopic(view, name)
			if tp == nil || tp.ErrorCode != 0 || len(tp.Partitions) != int(n) {
				return false, fmt.Sprintf("broker %d: topic %+v", id, tp)
			}
			for _, p := range tp.Partitions {
				if p.ErrorCode != 0 || p.LeaderId < 0 || len(p.ReplicaNodes) != int(rf) || len(p.IsrNodes) != int(rf) {
					return false, fmt.Sprintf("broker %d: partition %d: %s leader %d replicas %v isr %v", id, p.PartitionIndex, codeName(p.ErrorCode), p.LeaderId, p.ReplicaNodes, p.IsrNodes)
				}
			}
		}
		return true, ""
	})
	md = t.metadata(c, false, name)
	t.mu.Lock()
	if t.partitions == nil {
		t.partitions = map[string]int32{}
	}
	t.partitions[name] = n
	t.mu.Unlock()
	return name, md
}

// brokerConn opens a raw connection to broker id as Metadata lists it.
func (t *T) brokerConn(md wire.MetadataResponse, id int32) *Conn {
	for _, b := range md.Brokers {
		if b.NodeId == id {
			c, err := dialWire(t.sec, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), 10*time.Second)
			if err != nil {
				t.Fatalf("broker %d: %v", id, err)
			}
			t.Cleanup(func() { c.Close() })
			return c
		}
	}
	t.Fatalf("broker %d is not in the Metadata answer (%d brokers)", id, len(md.Brokers))
	return nil
}

func init() {
	register(&Case{ID: "cluster/replicas-and-isr", Brokers: 3, Spec: "§8.4",
		Desc: "a topic created with replication factor 3 is reported with 3 distinct replicas per partition, all of them listed brokers, the leader among them, and all in sync once followers caught up",
		Run: func(t *T) {
			name, md := t.replicatedTopic(6, 3)
			brokers := map[int32]bool{}
			for _, b := range md.Brokers {
				brokers[b.NodeId] = true
			}
			leaders := map[int32]int{}
			for _, p := range findTopic(md, name).Partitions {
				reps := slices.Clone(p.ReplicaNodes)
				slices.Sort(reps)
				if len(slices.Compact(reps)) != 3 {
					t.Errorf("partition %d: replicas %v are not 3 distinct brokers", p.PartitionIndex, p.ReplicaNodes)
				}
				for _, r := range p.ReplicaNodes {
					if !brokers[r] {
						t.Errorf("partition %d: replica %d is not a listed broker", p.PartitionIndex, r)
					}
				}
				isr := slices.Clone(p.IsrNodes)
				slices.Sort(isr)
				if !slices.Equal(isr, reps) {
					t.Errorf("partition %d: ISR %v, want the replicas %v", p.PartitionIndex, p.IsrNodes, p.ReplicaNodes)
				}
				if !slices.Contains(p.ReplicaNodes, p.LeaderId) {
					t.Errorf("partition %d: leader %d is not a replica (%v)", p.PartitionIndex, p.LeaderId, p.ReplicaNodes)
				}
				leaders[p.LeaderId]++
			}
			if len(leaders) < 2 {
				t.Errorf("every partition of 6 is led by one broker (%v): leadership is not spread", leaders)
			}
		}})
	register(&Case{ID: "cluster/produce-to-leader", Brokers: 3, Spec: "§8.1, §8.4",
		Desc: "the leader Metadata reports for each partition takes acks=all produce, and reading it back from that leader gives the records, with the high watermark at the log end",
		Run: func(t *T) {
			name, md := t.replicatedTopic(3, 3)
			for _, p := range findTopic(md, name).Partitions {
				c := t.brokerConn(md, p.LeaderId)
				want := values(fmt.Sprintf("p%d-", p.PartitionIndex), 5)
				r := t.produce(c, name, p.PartitionIndex, -1, t.makeBatch(plain, want...), maxV(wire.KeyProduce))
				if r.ErrorCode != 0 || r.BaseOffset != 0 {
					t.Fatalf("partition %d: produce to leader %d: %s at %d, want offset 0", p.PartitionIndex, p.LeaderId, codeName(r.ErrorCode), r.BaseOffset)
				}
				t.sameRecords(t.fetchAll(c, name, p.PartitionIndex, 0, len(want)), want)
				if f := t.fetch(c, name, p.PartitionIndex, int64(len(want))); f.ErrorCode != 0 || f.HighWatermark != int64(len(want)) {
					t.Errorf("partition %d: fetch at the end: %s, high watermark %d, want %d", p.PartitionIndex, codeName(f.ErrorCode), f.HighWatermark, len(want))
				}
			}
		}})
	register(&Case{ID: "cluster/not-leader-from-follower", Brokers: 3, Spec: "§7, §8.1, §8.3",
		Desc: "a follower refuses Produce and ListOffsets for a partition it does not lead with NOT_LEADER_OR_FOLLOWER, and nothing of the refused batch reaches the log",
		Run: func(t *T) {
			name, md := t.replicatedTopic(1, 3)
			p := findTopic(md, name).Partitions[0]
			for _, f := range p.ReplicaNodes {
				if f == p.LeaderId {
					continue
				}
				c := t.brokerConn(md, f)
				r := t.produce(c, name, 0, -1, t.makeBatch(plain, values("refused", 3)...), maxV(wire.KeyProduce))
				t.wantCode(fmt.Sprintf("produce to follower %d", f), r.ErrorCode, wire.ErrNotLeaderOrFollower)
				lo := t.listOffset(c, name, 0, -1)
				t.wantCode(fmt.Sprintf("ListOffsets on follower %d", f), lo.ErrorCode, wire.ErrNotLeaderOrFollower)
			}
			t.wantLogEnd(t.brokerConn(md, p.LeaderId), name, 0, 0, "produce refused by the followers")
		}})
	register(&Case{ID: "cluster/acks-all-min-isr", Brokers: 3, Spec: "§8.1",
		Desc: "with 3 replicas and min.insync.replicas=2, acks=all is acknowledged, and the acknowledged records are below the high watermark at once (every in-sync replica has them)",
		Run: func(t *T) {
			name, md := t.replicatedTopic(1, 3, "min.insync.replicas", "2")
			p := findTopic(md, name).Partitions[0]
			c := t.brokerConn(md, p.LeaderId)
			for i := range 3 {
				r := t.produce(c, name, 0, -1, t.makeBatch(plain, values(fmt.Sprintf("b%d-", i), 4)...), maxV(wire.KeyProduce))
				if r.ErrorCode != 0 || r.BaseOffset != int64(4*i) {
					t.Fatalf("batch %d: %s at %d, want offset %d", i, codeName(r.ErrorCode), r.BaseOffset, 4*i)
				}
				if f := t.fetch(c, name, 0, 0); f.HighWatermark != int64(4*(i+1)) {
					t.Errorf("after acks=all of batch %d: high watermark %d, want %d", i, f.HighWatermark, 4*(i+1))
				}
			}
		}})
}

// crash kills broker id through Config.Faults and restarts it when the case ends.
// The cleanup waits until the bootstrap broker lists as many brokers as it did before the
// crash, so that the next case finds the whole cluster again.
func (t *T) crash(id int32) {
	before, err := BrokerCount(t.Bootstrap) // the bootstrap broker may be down already: then no wait
	if err != nil {
		before = 0
	}
	if err := t.faults.Kill(id); err != nil {
		t.Fatalf("killing broker %d: %v", id, err)
	}
	t.Cleanup(func() {
		if err := t.faults.Restart(id); err != nil {
			t.Errorf("restarting broker %d: %v", id, err)
			return
		}
		if before == 0 {
			return // the bootstrap broker was down at the crash: another cleanup restarts it
		}
		deadline := time.Now().Add(2 * time.Minute)
		for {
			n, err := BrokerCount(t.Bootstrap)
			if err == nil && n >= before {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("2 minutes after broker %d restarted, the target lists %d brokers (%v), had %d", id, n, err, before)
				return
			}
			time.Sleep(100 * time.Millisecond) // a cleanup's poll: the case's context may be over
		}
	})
}

// produceWithin is produce with the broker's wait for acks=all bounded by timeoutMs.
func (t *T) produceWithin(c *Conn, topic string, p int32, acks int16, records []byte, timeoutMs int32) int16 {
	req := produceReq(topic, p, acks, records)
	req.TimeoutMs = timeoutMs
	var resp wire.ProduceResponse
	t.Do(c, req, &resp, maxV(wire.KeyProduce))
	if len(resp.Responses) != 1 || len(resp.Responses[0].PartitionResponses) != 1 {
		t.Fatalf("Produce: want one partition in the response, got %+v", resp.Responses)
	}
	return resp.Responses[0].PartitionResponses[0].ErrorCode
}

func init() {
	register(&Case{ID: "cluster/leader-failover", Brokers: 3, Faults: true, Spec: "§7, §8.1, §8.4",
		Desc: "when the leader crashes, Metadata names a new leader among the other replicas, which holds every record acknowledged with acks=all and takes new ones; with min.insync.replicas=2 and a second replica down, acks=all gets NOT_ENOUGH_REPLICAS once the ISR shrinks, while acks=1 is still taken",
		Run: func(t *T) {
			name, md := t.replicatedTopic(1, 3, "min.insync.replicas", "2")
			p := findTopic(md, name).Partitions[0]
			old := p.LeaderId
			c := t.brokerConn(md, old)
			var acked []rec
			for i := range 3 {
				batch := values(fmt.Sprintf("acked%d-", i), 5)
				r := t.produce(c, name, 0, -1, t.makeBatch(plain, batch...), maxV(wire.KeyProduce))
				if r.ErrorCode != 0 || r.BaseOffset != int64(len(acked)) {
					t.Fatalf("acks=all batch %d before the crash: %s at %d", i, codeName(r.ErrorCode), r.BaseOffset)
				}
				acked = append(acked, batch...)
			}
			var survivors []int32
			for _, r := range p.ReplicaNodes {
				if r != old {
					survivors = append(survivors, r)
				}
			}
			t.crash(old)
			sc := t.brokerConn(md, survivors[0])
			var leader int32
			t.waitFor(fmt.Sprintf("a new leader of %s after broker %d crashed", name, old), func() (bool, string) {
				tp := findTopic(t.metadata(sc, false, name), name)
				if tp == nil || len(tp.Partitions) != 1 {
					return false, fmt.Sprintf("topic %+v", tp)
				}
				leader = tp.Partitions[0].LeaderId
				return leader >= 0 && leader != old, fmt.Sprintf("leader %d, ISR %v", leader, tp.Partitions[0].IsrNodes)
			})
			if leader != survivors[0] && leader != survivors[1] {
				t.Fatalf("new leader %d is not one of the other replicas %v", leader, survivors)
			}
			lc := t.brokerConn(md, leader)
			t.waitFor("acks=all taken by the new leader", func() (bool, string) {
				code := t.produceWithin(lc, name, 0, -1, t.makeBatch(plain, rec{value: []byte("after-failover")}), 5000)
				return code == 0, codeName(code)
			})
			got := t.fetchAll(lc, name, 0, 0, len(acked)+1)
			t.sameRecords(got[:len(acked)], acked)

			follower := survivors[0]
			if follower == leader {
				follower = survivors[1]
			}
			t.crash(follower)
			t.waitFor("acks=all refused with NOT_ENOUGH_REPLICAS once the ISR is the leader alone", func() (bool, string) {
				code := t.produceWithin(lc, name, 0, -1, t.makeBatch(plain, rec{value: []byte("below-min-isr")}), 2000)
				return code == wire.ErrNotEnoughReplicas.Code, codeName(code)
			})
			if code := t.produceWithin(lc, name, 0, 1, t.makeBatch(plain, rec{value: []byte("acks-1")}), 5000); code != 0 {
				t.Errorf("acks=1 with the ISR below min.insync.replicas: %s, want it taken", codeName(code))
			}
		}})
}

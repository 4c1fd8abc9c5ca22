package conformance

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// Fault cases beyond the leader's crash (cases_cluster.go): the group coordinator's crash,
// the high watermark while a follower lags, and a client SDK that meets
// NOT_LEADER_OR_FOLLOWER and finds the new leader through Metadata. SPEC.md §7, §8.2, §8.4,
// §8.6, §8.7.

// survivorConn opens a connection to a listed broker other than down.
func (t *T) survivorConn(md wire.MetadataResponse, down int32) (*Conn, int32) {
	for _, b := range md.Brokers {
		if b.NodeId != down {
			return t.brokerConn(md, b.NodeId), b.NodeId
		}
	}
	t.Fatalf("no broker but %d listed", down)
	return nil, 0
}

// replicaLagMaxMs is replica.lag.time.max.ms of broker id, as it reports it (DescribeConfigs
// goes to that broker: Kafka answers only for itself).
func (t *T) replicaLagMaxMs(md wire.MetadataResponse, id int32) int64 {
	var resp wire.DescribeConfigsResponse
	t.Do(t.brokerConn(md, id), &wire.DescribeConfigsRequest{Resources: []wire.DescribeConfigsRequestResource{{ResourceType: 4,
		ResourceName: strconv.Itoa(int(id)), ConfigurationKeys: []string{"replica.lag.time.max.ms"}}}}, &resp, maxV(wire.KeyDescribeConfigs))
	if len(resp.Results) == 1 && resp.Results[0].ErrorCode == 0 {
		for _, e := range resp.Results[0].Configs {
			if e.Value != nil {
				if v, err := strconv.ParseInt(*e.Value, 10, 64); err == nil {
					return v
				}
			}
		}
	}
	t.Fatalf("DescribeConfigs replica.lag.time.max.ms of broker %d: %+v", id, resp.Results)
	return 0
}

func init() {
	register(&Case{ID: "cluster/coordinator-failover", Brokers: 3, Faults: true, Spec: "§8.5, §8.6, §8.7",
		Desc: "when a group's coordinator crashes, FindCoordinator names another broker, which serves the offsets committed before the crash",
		Run: func(t *T) {
			topic, md := t.replicatedTopic(1, 3)
			group := t.Name("g")
			c := t.Conn()
			old := int32(-1)
			// The coordinator is wherever FindCoordinator says, not the bootstrap broker.
			t.waitFor("the group's coordinator to take a commit", func() (bool, string) {
				var fc wire.FindCoordinatorResponse
				t.Do(c, &wire.FindCoordinatorRequest{Key: group}, &fc, maxV(wire.KeyFindCoordinator))
				if fc.ErrorCode != 0 {
					return false, "FindCoordinator: " + codeName(fc.ErrorCode)
				}
				code := t.commit(t.brokerConn(md, fc.NodeId), commitReq(group, -1, "", topic, 0, 42, "before-crash"))
				old = fc.NodeId
				return code == 0, fmt.Sprintf("commit at coordinator %d: %s", fc.NodeId, codeName(code))
			})
			t.crash(old)
			sc, _ := t.survivorConn(md, old)
			t.waitFor(fmt.Sprintf("a new coordinator of %s, other than crashed broker %d, serving its offsets", group, old), func() (bool, string) {
				var fc wire.FindCoordinatorResponse
				t.Do(sc, &wire.FindCoordinatorRequest{Key: group}, &fc, maxV(wire.KeyFindCoordinator))
				if fc.ErrorCode != 0 || fc.NodeId == old || fc.NodeId < 0 {
					return false, fmt.Sprintf("FindCoordinator: %s, node %d", codeName(fc.ErrorCode), fc.NodeId)
				}
				nc, err := dialWire(t.sec, net.JoinHostPort(fc.Host, strconv.Itoa(int(fc.Port))), 5*time.Second)
				if err != nil {
					return false, err.Error()
				}
				defer nc.Close()
				var of wire.OffsetFetchResponse
				if err := nc.Do(&wire.OffsetFetchRequest{GroupId: group, Topics: []wire.OffsetFetchRequestTopic{{Name: topic, PartitionIndexes: []int32{0}}}}, &of, maxV(wire.KeyOffsetFetch)); err != nil {
					return false, err.Error()
				}
				if coordinatorMoving(of.ErrorCode) {
					return false, "OffsetFetch: " + codeName(of.ErrorCode)
				}
				if of.ErrorCode != 0 || len(of.Topics) != 1 || len(of.Topics[0].Partitions) != 1 {
					t.Fatalf("OffsetFetch from new coordinator %d: %s %+v", fc.NodeId, codeName(of.ErrorCode), of.Topics)
				}
				p := of.Topics[0].Partitions[0]
				if coordinatorMoving(p.ErrorCode) {
					return false, "OffsetFetch partition: " + codeName(p.ErrorCode)
				}
				if p.ErrorCode != 0 || p.CommittedOffset != 42 || p.Metadata == nil || *p.Metadata != "before-crash" {
					t.Fatalf("the offset committed before the crash, from new coordinator %d: %d with metadata %v (%s); want 42 with its metadata", fc.NodeId, p.CommittedOffset, p.Metadata, codeName(p.ErrorCode))
				}
				return true, ""
			})
		}})

	register(&Case{ID: "cluster/high-watermark-follower-lags", Brokers: 3, Faults: true, Spec: "§8.2, §8.4",
		Desc: "while a crashed follower is still in the ISR, records taken with acks=1 stay above the high watermark and no fetch returns them; once the ISR drops the follower, the high watermark reaches the log end and they are read",
		Run: func(t *T) {
			topic, md := t.replicatedTopic(1, 3)
			p := findTopic(md, topic).Partitions[0]
			lc := t.brokerConn(md, p.LeaderId)
			for i := range 2 {
				if r := t.produce(lc, topic, 0, -1, t.makeBatch(plain, values(fmt.Sprintf("all%d-", i), 5)...), maxV(wire.KeyProduce)); r.ErrorCode != 0 {
					t.Fatalf("acks=all batch %d: %s", i, codeName(r.ErrorCode))
				}
			}
			var follower int32 = -1
			for _, r := range p.ReplicaNodes {
				if r != p.LeaderId {
					follower = r
					break
				}
			}
			lagMax := time.Duration(t.replicaLagMaxMs(md, p.LeaderId)) * time.Millisecond
			t.crash(follower)
			crashed := time.Now()
			if r := t.produce(lc, topic, 0, 1, t.makeBatch(plain, values("one-", 5)...), maxV(wire.KeyProduce)); r.ErrorCode != 0 || r.BaseOffset != 10 {
				t.Fatalf("acks=1 batch with a follower down: %s at %d, want taken at 10", codeName(r.ErrorCode), r.BaseOffset)
			}
			// Until replica.lag.time.max.ms has passed since the crash the follower cannot
			// have left the ISR, so the high watermark must still be 10.
			first := t.fetchWith(lc, fetchReq(topic, 0, 0, 0, 1, 1<<20, 1<<20), maxV(wire.KeyFetch))
			if time.Since(crashed) < lagMax/2 && first.HighWatermark != 10 {
				t.Errorf("high watermark %d within %v of the follower's crash (replica.lag.time.max.ms %v), want 10: the crashed follower is still in the ISR", first.HighWatermark, time.Since(crashed).Round(time.Millisecond), lagMax)
			}
			check := func(d wire.FetchResponsePartitionData) []fetchedRecord {
				recs := t.records(d.Records)
				for _, r := range recs {
					if r.offset >= d.HighWatermark {
						t.Fatalf("fetch returned offset %d at or above its high watermark %d (log end 15)", r.offset, d.HighWatermark)
					}
				}
				return recs
			}
			check(first)
			var n int
			t.waitFor("the ISR to drop the crashed follower and the high watermark to reach 15", func() (bool, string) {
				d := t.fetchWith(lc, fetchReq(topic, 0, 0, 0, 1, 1<<20, 1<<20), maxV(wire.KeyFetch))
				if d.ErrorCode != 0 {
					return false, codeName(d.ErrorCode)
				}
				n = len(check(d))
				return d.HighWatermark == 15 && n == 15, fmt.Sprintf("high watermark %d, %d records", d.HighWatermark, n)
			})
		}})

	register(&Case{ID: "client/leader-moves", Level: Client, Brokers: 3, Faults: true, Spec: "§7, §8.1, §8.4",
		Desc: "a client SDK producing with acks=all to a partition whose leader crashes gets NOT_LEADER_OR_FOLLOWER or a lost connection, refreshes its metadata and writes to the new leader: every record it acknowledged is read back from there",
		Run: func(t *T) {
			topic, md := t.replicatedTopic(1, 3, "min.insync.replicas", "2")
			old := findTopic(md, topic).Partitions[0].LeaderId
			s := t.Client(Request{Partitioner: "manual", Acks: "all", Idempotent: ptr(true)})
			before := driverRecords(topic, 10, "before")
			t.produceVia(s, before)
			t.crash(old)
			after := driverRecords(topic, 10, "after")
			res := t.produceVia(s, after)
			sc, _ := t.survivorConn(md, old)
			var leader int32
			t.waitFor("Metadata to name a new leader", func() (bool, string) {
				tp := findTopic(t.metadata(sc, false, topic), topic)
				if tp == nil || len(tp.Partitions) != 1 {
					return false, fmt.Sprintf("%+v", tp)
				}
				leader = tp.Partitions[0].LeaderId
				return leader >= 0 && leader != old, fmt.Sprintf("leader %d", leader)
			})
			for i, r := range res {
				if r.Offset != int64(10+i) {
					t.Errorf("record %d after the crash acknowledged at offset %d, want %d", i, r.Offset, 10+i)
				}
			}
			got := t.fetchAll(t.brokerConn(t.metadata(sc, false), leader), topic, 0, 0, 20)
			for i, r := range got {
				want := append(before, after...)[i]
				if string(r.value) != string(want.Value) {
					t.Errorf("offset %d on the new leader %d holds %q, want %q", r.offset, leader, r.value, want.Value)
				}
			}
		}})
}

package server

import (
	"testing"

	"github.com/spoolmq/spool/broker/internal/cluster"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// A Metadata answer never points a client at a node id it does not list: a leader whose
// registration is gone is LEADER_NOT_AVAILABLE with leader -1, and a live leader without the
// client's listener is LISTENER_NOT_FOUND from v6 (LEADER_NOT_AVAILABLE before), as Kafka's
// metadata cache answers.
func TestMetadataLeaderNotListed(t *testing.T) {
	topic := cluster.Topic{Name: "t", Partitions: []cluster.Partition{
		{Index: 0, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}},
		{Index: 1, Leader: 2, Replicas: []int32{2}, ISR: []int32{2}},
		{Index: 2, Leader: 3, Replicas: []int32{3}, ISR: []int32{3}},
		{Index: 3, Leader: -1, Replicas: []int32{3}, ISR: []int32{3}},
	}}
	alive := map[int32]bool{1: true, 2: true} // 3's registration is gone
	listed := map[int32]bool{1: true}         // 2 lacks the client's listener
	type want struct {
		leader int32
		code   int16
	}
	for _, c := range []struct {
		listenerErrors bool
		want           []want
	}{
		{false, []want{{1, 0}, {-1, wire.ErrLeaderNotAvailable.Code}, {-1, wire.ErrLeaderNotAvailable.Code}, {-1, wire.ErrLeaderNotAvailable.Code}}},
		{true, []want{{1, 0}, {-1, wire.ErrListenerNotFound.Code}, {-1, wire.ErrLeaderNotAvailable.Code}, {-1, wire.ErrLeaderNotAvailable.Code}}},
	} {
		got := leaderView{alive: alive, listed: listed, listenerErrors: c.listenerErrors}.topic(topic)
		for i, p := range got.Partitions {
			if p.LeaderId != c.want[i].leader || p.ErrorCode != c.want[i].code {
				t.Errorf("v6+=%v partition %d: leader %d code %d, want leader %d code %d",
					c.listenerErrors, i, p.LeaderId, p.ErrorCode, c.want[i].leader, c.want[i].code)
			}
		}
	}
}

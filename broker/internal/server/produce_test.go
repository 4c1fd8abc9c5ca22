package server_test

import (
	"testing"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// TestProduceManyPartitionsOneRequest sends one acks=all request to six partitions of one topic
// and three of a topic whose min.insync.replicas (2) exceeds its replication factor (1): each
// partition of the first is acknowledged at its own offsets and is, by then, durable (its high
// watermark, which is the durable end, covers the records); the second's are acknowledged
// too, as Kafka does (its effective min.insync.replicas is capped at the replica count), with
// their high watermark at the end: a single node never answers NOT_ENOUGH_REPLICAS.
func TestProduceManyPartitionsOneRequest(t *testing.T) {
	parallel(t)
	b := startBroker(t, map[string]string{"auto.create.topics.enable": "false"})
	c := dial(t, b.Addr)
	createTopic(t, c, "many", 6, nil)
	createTopic(t, c, "strict", 3, map[string]string{"min.insync.replicas": "2"})
	for round := range 2 {
		req := produceRequest("many", 0, -1, buildBatch(t, 3, nil))
		for p := int32(1); p < 6; p++ {
			req.TopicData[0].PartitionData = append(req.TopicData[0].PartitionData, wire.ProduceRequestPartitionProduceData{Index: p, Records: buildBatch(t, 3, nil)})
		}
		strict := wire.ProduceRequestTopicProduceData{Name: "strict"}
		for p := int32(0); p < 3; p++ {
			strict.PartitionData = append(strict.PartitionData, wire.ProduceRequestPartitionProduceData{Index: p, Records: buildBatch(t, 2, nil)})
		}
		req.TopicData = append(req.TopicData, strict)
		resp := &wire.ProduceResponse{}
		c.roundTrip(req, resp, 9)
		if len(resp.Responses) != 2 || len(resp.Responses[0].PartitionResponses) != 6 || len(resp.Responses[1].PartitionResponses) != 3 {
			t.Fatalf("round %d: response shape %+v", round, resp.Responses)
		}
		for _, pr := range resp.Responses[0].PartitionResponses {
			if pr.ErrorCode != 0 || pr.BaseOffset != int64(3*round) {
				t.Fatalf("round %d, many-%d: error %v, base offset %d, want %d", round, pr.Index, wire.ErrorForCode(pr.ErrorCode), pr.BaseOffset, 3*round)
			}
			fr := fetch(t, c, 12, fetchRequest("many", pr.Index, 0, 0, 1, 1<<20))
			if fr.HighWatermark != int64(3*round+3) {
				t.Fatalf("round %d, many-%d: high watermark %d right after the ack, want %d", round, pr.Index, fr.HighWatermark, 3*round+3)
			}
		}
		for _, pr := range resp.Responses[1].PartitionResponses {
			if pr.ErrorCode != 0 || pr.BaseOffset != int64(2*round) {
				t.Fatalf("round %d, strict-%d: error %v, base offset %d, want %d", round, pr.Index, wire.ErrorForCode(pr.ErrorCode), pr.BaseOffset, 2*round)
			}
			if fr := fetch(t, c, 12, fetchRequest("strict", pr.Index, 0, 0, 1, 1<<20)); fr.HighWatermark != int64(2*round+2) {
				t.Fatalf("round %d, strict-%d: high watermark %d, want %d", round, pr.Index, fr.HighWatermark, 2*round+2)
			}
		}
	}
}

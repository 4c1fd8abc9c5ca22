package server

// WriteTxnMarkers (key 27), versions 0-1; flexible from 1. Inter-broker: never advertised
// to clients (18_api_versions.go leaves it out).
//
// A transaction coordinator asks this broker, the leader of the named partitions, to append
// each marker (a control batch: COMMIT when TransactionResult, else ABORT, with the producer
// id and epoch and the coordinator epoch) and answers per partition once the marker is
// committed: NOT_LEADER_OR_FOLLOWER (not led here), UNKNOWN_TOPIC_OR_PARTITION,
// INVALID_PRODUCER_EPOCH (the partition has seen a newer epoch of the producer), or the
// storage's error. On a single node the coordinator appends markers through the partition
// manager itself (server/txn.go) and never sends this; it is served for the cluster.
//
// Authorization (with authorizer.class.name set): ClusterAction on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED for every partition.

import (
	"context"
	"time"

	"github.com/spoolmq/spool/broker/internal/partition"
	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleWriteTxnMarkers(s *Server, ctx context.Context, req *request) *pending {
	r := req.msg.(*wire.WriteTxnMarkersRequest)
	resp := &wire.WriteTxnMarkersResponse{}
	resp.Default()
	allowed := s.allowedCluster(req, security.OpClusterAction)
	var waits []partition.Appended
	var slots []*int16
	now := time.Now()
	resp.Markers = make([]wire.WriteTxnMarkersResponseWritableTxnMarkerResult, len(r.Markers))
	for i, m := range r.Markers {
		mr := &resp.Markers[i]
		mr.ProducerId = m.ProducerId
		mr.Topics = make([]wire.WriteTxnMarkersResponseWritableTxnMarkerTopicResult, len(m.Topics))
		for j, t := range m.Topics {
			tr := &mr.Topics[j]
			tr.Name = t.Name
			tr.Partitions = make([]wire.WriteTxnMarkersResponseWritableTxnMarkerPartitionResult, len(t.PartitionIndexes))
			for k, idx := range t.PartitionIndexes {
				pr := &tr.Partitions[k]
				pr.PartitionIndex = idx
				if !allowed {
					pr.ErrorCode = wire.ErrClusterAuthorizationFailed.Code
					continue
				}
				part, err := s.leaderPart(t.Name, idx)
				if err == nil {
					var a partition.Appended
					_, a, err = part.AppendMarker(m.ProducerId, m.ProducerEpoch, m.TransactionResult, m.CoordinatorEpoch, true, now)
					if err == nil {
						waits, slots = append(waits, a), append(slots, &pr.ErrorCode)
						continue
					}
					err = storageError(err)
				}
				pr.ErrorCode = errCode(err)
			}
		}
	}
	if len(waits) == 0 {
		return ready(reply{msg: resp})
	}
	p := later()
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		partition.Commit(wctx, waits, func(i int, err error) { *slots[i] = errCode(storageError(err)) })
		p.complete(reply{msg: resp})
	}()
	return p
}

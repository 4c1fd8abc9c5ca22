package server

// WriteTxnMarkers (key 27), versions 0-1; flexible from 1. Inter-broker: never advertised
// to clients (18_api_versions.go leaves it out).
//
// A transaction coordinator on another broker (txn_markers.go) asks this broker, the leader
// of the named partitions, to append each marker (a control batch: COMMIT when
// TransactionResult, else ABORT, with the producer id and epoch and the coordinator epoch)
// and answers per partition once the marker is committed (acks=all: durable and on every
// in-sync replica): NOT_LEADER_OR_FOLLOWER (not led here; the coordinator retries with fresh
// metadata), UNKNOWN_TOPIC_OR_PARTITION, INVALID_PRODUCER_EPOCH (the partition has seen a
// newer epoch of the producer), NOT_ENOUGH_REPLICAS, or the storage's error. A
// __consumer_offsets partition settles the group coordinator's pending transactional offsets
// of the producer. The partition manager does the appending and the waiting
// (Server.writeMarkersHere, shared with a coordinator's markers for partitions led here).
//
// Authorization (with authorizer.class.name set): ClusterAction on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED for every partition.

import (
	"context"
	"sync"
	"time"

	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/broker/internal/txn"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// markerWaitTimeout bounds how long a WriteTxnMarkers request waits for its markers.
const markerWaitTimeout = 30 * time.Second

func handleWriteTxnMarkers(s *Server, ctx context.Context, req *request) *pending {
	r := req.msg.(*wire.WriteTxnMarkersRequest)
	resp := &wire.WriteTxnMarkersResponse{}
	resp.Default()
	allowed := s.allowedCluster(req, security.OpClusterAction)
	resp.Markers = make([]wire.WriteTxnMarkersResponseWritableTxnMarkerResult, len(r.Markers))
	type job struct {
		m     wire.WriteTxnMarkersRequestWritableTxnMarker
		parts []txn.TopicPartition
		slots []*int16
	}
	var jobs []job
	for i, m := range r.Markers {
		mr := &resp.Markers[i]
		mr.ProducerId = m.ProducerId
		mr.Topics = make([]wire.WriteTxnMarkersResponseWritableTxnMarkerTopicResult, len(m.Topics))
		j := job{m: m}
		for ti, t := range m.Topics {
			tr := &mr.Topics[ti]
			tr.Name = t.Name
			tr.Partitions = make([]wire.WriteTxnMarkersResponseWritableTxnMarkerPartitionResult, len(t.PartitionIndexes))
			for k, idx := range t.PartitionIndexes {
				pr := &tr.Partitions[k]
				pr.PartitionIndex = idx
				if !allowed {
					pr.ErrorCode = wire.ErrClusterAuthorizationFailed.Code
					continue
				}
				j.parts = append(j.parts, txn.TopicPartition{Topic: t.Name, Partition: idx})
				j.slots = append(j.slots, &pr.ErrorCode)
			}
		}
		if len(j.parts) > 0 {
			jobs = append(jobs, j)
		}
	}
	if len(jobs) == 0 {
		return ready(reply{msg: resp})
	}
	p := later()
	go func() {
		wctx, cancel := context.WithTimeout(ctx, markerWaitTimeout)
		defer cancel()
		var wg sync.WaitGroup
		for _, j := range jobs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs := s.writeMarkersHere(wctx, j.m.ProducerId, j.m.ProducerEpoch, j.m.TransactionResult, j.m.CoordinatorEpoch, j.parts)
				for i, err := range errs {
					*j.slots[i] = errCode(err)
				}
			}()
		}
		wg.Wait()
		p.complete(reply{msg: resp})
	}()
	return p
}

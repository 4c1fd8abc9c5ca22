package server

// Writing a transaction's markers (Kafka's TransactionMarkerChannelManager, and the leader's
// side of KafkaApis.handleWriteTxnMarkers).
//
// The transaction coordinator hands markerWriter a decided transaction. It groups the
// transaction's partitions by leader, as the current metadata image names them: partitions
// led here get their markers through the partition manager (writeMarkersHere), every other
// leader one WriteTxnMarkers request on the inter-broker connection, all leaders at once. A
// leader answers once its markers are committed (acks=all: durable and on every in-sync
// replica). Any partition that fails (NOT_LEADER_OR_FOLLOWER after a leader change, a broker
// down, NOT_ENOUGH_REPLICAS, a timeout) makes WriteMarkers return an error; the coordinator
// retries the whole transaction with backoff and fresh metadata for as long as it leads the
// transaction's __transaction_state partition. A marker written twice for the same producer
// epoch is harmless: the second one closes no transaction. A partition whose topic was
// deleted is skipped, as Kafka does; one that answers INVALID_PRODUCER_EPOCH has seen a newer
// epoch of the producer (the transaction was ended by a later coordinator) and is done.
//
// A __consumer_offsets partition in a transaction holds the group's transactional offsets
// (TxnOffsetCommit wrote them there as the producer's transactional batch): its leader, the
// group coordinator, appends the marker like any other partition and, once it is committed,
// settles the pending offsets (group/txn_offsets.go); if the group coordinator has not loaded
// the partition yet, the answer is COORDINATOR_LOAD_IN_PROGRESS and the marker is retried (the
// load replays the first one).

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/spoolmq/spool/broker/internal/group"
	"github.com/spoolmq/spool/broker/internal/partition"
	"github.com/spoolmq/spool/broker/internal/txn"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// writeTxnMarkersVersion is the WriteTxnMarkers version brokers send each other (flexible).
const writeTxnMarkersVersion = 1

// markerWriter writes a transaction's markers for the coordinator (see the file comment).
type markerWriter struct{ s *Server }

func (w markerWriter) WriteMarkers(ctx context.Context, m txn.Markers) error {
	s := w.s
	byLeader := map[int32][]txn.TopicPartition{}
	var failed error
	for _, tp := range m.Partitions {
		t, ok := s.md.Topic(tp.Topic)
		if !ok || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
			continue // deleted meanwhile: nothing to mark (Kafka skips it too)
		}
		leader := t.Partitions[tp.Partition].Leader
		if leader < 0 {
			failed = errors.Join(failed, fmt.Errorf("marker for %s-%d: %w: no leader", tp.Topic, tp.Partition, wire.ErrNotLeaderOrFollower))
			continue
		}
		byLeader[leader] = append(byLeader[leader], tp)
	}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for leader, parts := range byLeader {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if leader == s.self.NodeID {
				err = errors.Join(s.writeMarkersHere(ctx, m.ProducerID, m.Epoch, m.Commit, m.CoordinatorEpoch, parts)...)
			} else {
				err = w.writeRemote(ctx, leader, m, parts)
			}
			if err != nil {
				mu.Lock()
				failed = errors.Join(failed, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return failed
}

// writeRemote sends one WriteTxnMarkers for parts to their leader, broker id, and checks its
// answer partition by partition.
func (w markerWriter) writeRemote(ctx context.Context, id int32, m txn.Markers, parts []txn.TopicPartition) error {
	mk := wire.WriteTxnMarkersRequestWritableTxnMarker{ProducerId: m.ProducerID, ProducerEpoch: m.Epoch, TransactionResult: m.Commit, CoordinatorEpoch: m.CoordinatorEpoch}
	for _, tp := range parts {
		if n := len(mk.Topics); n == 0 || mk.Topics[n-1].Name != tp.Topic {
			mk.Topics = append(mk.Topics, wire.WriteTxnMarkersRequestWritableTxnMarkerTopic{Name: tp.Topic})
		}
		t := &mk.Topics[len(mk.Topics)-1]
		t.PartitionIndexes = append(t.PartitionIndexes, tp.Partition)
	}
	req := &wire.WriteTxnMarkersRequest{Markers: []wire.WriteTxnMarkersRequestWritableTxnMarker{mk}}
	resp := &wire.WriteTxnMarkersResponse{}
	if err := w.s.txn.peers.roundTrip(ctx, id, req, resp, writeTxnMarkersVersion); err != nil {
		return fmt.Errorf("markers of producer %d: %w", m.ProducerID, err)
	}
	answered := 0
	var failed error
	for _, mr := range resp.Markers {
		if mr.ProducerId != m.ProducerID {
			continue
		}
		for _, t := range mr.Topics {
			for _, p := range t.Partitions {
				answered++
				switch e := wire.ErrorForCode(p.ErrorCode); e {
				case nil:
				case wire.ErrInvalidProducerEpoch:
					w.s.log.Warn("a partition has seen a newer epoch of a transaction's producer; its marker is not needed", "topic", t.Name, "partition", p.PartitionIndex, "producer_id", m.ProducerID, "epoch", m.Epoch)
				default:
					failed = errors.Join(failed, fmt.Errorf("marker for %s-%d on broker %d: %w", t.Name, p.PartitionIndex, id, e))
				}
			}
		}
	}
	if failed == nil && answered < len(parts) {
		failed = fmt.Errorf("broker %d answered %d of %d markers", id, answered, len(parts))
	}
	return failed
}

// writeMarkersHere appends a transaction's marker to each of parts, which this broker should
// lead, and returns once they are committed: one error (nil: written) per partition. The
// markers of __consumer_offsets partitions then settle the group coordinator's pending
// offsets of the producer. It blocks; the WriteTxnMarkers handler runs it on a goroutine.
func (s *Server) writeMarkersHere(ctx context.Context, pid int64, epoch int16, commit bool, coordinatorEpoch int32, parts []txn.TopicPartition) []error {
	errs := make([]error, len(parts))
	now := time.Now()
	var waits []partition.Appended
	var slots []int
	for i, tp := range parts {
		part, err := s.leaderPart(tp.Topic, tp.Partition)
		if err == nil {
			var a partition.Appended
			_, a, err = part.AppendMarker(pid, epoch, commit, coordinatorEpoch, true, now)
			if err == nil {
				waits, slots = append(waits, a), append(slots, i)
				continue
			}
			err = storageError(err)
		}
		errs[i] = fmt.Errorf("marker for %s-%d: %w", tp.Topic, tp.Partition, err)
	}
	partition.Commit(ctx, waits, func(i int, err error) {
		if err != nil {
			tp := parts[slots[i]]
			errs[slots[i]] = fmt.Errorf("marker for %s-%d: %w", tp.Topic, tp.Partition, storageError(err))
		}
	})
	// The markers of __consumer_offsets partitions settle the group coordinator's pending
	// transactional offsets, once committed (group/txn_offsets.go).
	for i, tp := range parts {
		if tp.Topic == group.Topic && errs[i] == nil {
			if err := s.groups.CompleteTxn(pid, tp.Partition, commit); err != nil {
				errs[i] = fmt.Errorf("settling the transaction's offsets in %s-%d: %w", tp.Topic, tp.Partition, wire.ErrCoordinatorLoadInProgress)
				s.log.Debug("settling transactional offsets", "partition", tp.Partition, "producer_id", pid, "err", err)
			}
		}
	}
	return errs
}

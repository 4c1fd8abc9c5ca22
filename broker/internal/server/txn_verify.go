package server

// KIP-890 part 1 on the partition leader: a transactional batch is verified with its
// transactional id's coordinator before it is appended, so a stray or late write cannot open
// a transaction the coordinator does not know (one that would hold the partition's last
// stable offset forever). The coordinator runs here (txn.Coordinator.Verify) or on the broker
// leading the id's __transaction_state partition, asked with AddPartitionsToTxn v4
// verify-only on the inter-broker connection (txn_peers.go). As Kafka's ReplicaManager does,
// a partition where the producer already has an open transaction needs no verification: that
// transaction was verified when it started here.
//
// Known gap: Kafka also keeps a verification guard in the producer state, so a transaction
// that ends between the verification and the append cannot be reopened by it; here the
// window is one produce round trip's append.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spoolmq/spool/broker/internal/partition"
	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/broker/internal/txn"
	"github.com/spoolmq/spool/protocol-spec/wire"
	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

// verifyTimeout bounds a remote verification; the produce handler waits for it.
const verifyTimeout = 5 * time.Second

// addPartitionsVerifyVersion is the AddPartitionsToTxn version brokers verify with.
const addPartitionsVerifyVersion = 4

// verifyTransactional applies the rules of a transactional batch (see 00_produce.go).
func (s *Server) verifyTransactional(ctx context.Context, req *request, id *string, raw batch.Raw, part *partition.Partition) error {
	if id == nil || *id == "" {
		return fmt.Errorf("%w: a transactional batch without a transactional id", wire.ErrInvalidRecord)
	}
	if !s.allowed(req, security.OpWrite, security.ResourceTransactionalID, *id) {
		return wire.ErrTransactionalIdAuthorizationFailed
	}
	pid, epoch := raw.ProducerID(), raw.ProducerEpoch()
	tp := txn.TopicPartition{Topic: part.Topic, Partition: part.Index}
	e := s.txn.coord.Verify(*id, pid, epoch, tp)
	if e == wire.ErrNotCoordinator {
		if part.HasOngoingTransaction(pid) {
			return nil // verified when the transaction started here; the log fences epochs
		}
		vctx, cancel := context.WithTimeout(ctx, verifyTimeout)
		var err error
		e, err = s.verifyRemote(vctx, *id, pid, epoch, tp)
		cancel()
		if err != nil {
			return fmt.Errorf("%w: verifying the transaction of producer %d with its coordinator: %v", wire.ErrNotEnoughReplicas, pid, err)
		}
	}
	switch e {
	case nil:
		return nil
	case wire.ErrNotCoordinator, wire.ErrCoordinatorLoadInProgress, wire.ErrCoordinatorNotAvailable, wire.ErrConcurrentTransactions:
		return fmt.Errorf("%w: the transaction coordinator of %q cannot verify now (%s)", wire.ErrNotEnoughReplicas, *id, e.Name)
	case wire.ErrProducerFenced, wire.ErrInvalidProducerEpoch:
		return fmt.Errorf("%w: producer %d epoch %d is not the transactional id's current one", wire.ErrInvalidProducerEpoch, pid, epoch)
	default:
		return fmt.Errorf("%w: %s-%d is not in an open transaction of producer %d epoch %d (%s)", wire.ErrInvalidTxnState, tp.Topic, tp.Partition, pid, epoch, e.Name)
	}
}

// verifyRemote asks the broker leading id's __transaction_state partition whether tp is in
// the producer's open transaction; it returns the coordinator's verdict, or err when it could
// not be asked.
func (s *Server) verifyRemote(ctx context.Context, id string, pid int64, epoch int16, tp txn.TopicPartition) (*wire.Error, error) {
	t, ok := s.md.Topic(txn.Topic)
	if !ok || len(t.Partitions) == 0 {
		return wire.ErrCoordinatorNotAvailable, nil
	}
	leader := t.Partitions[txn.PartitionFor(id, int32(len(t.Partitions)))].Leader
	if leader < 0 || leader == s.self.NodeID {
		// No leader, or led here but not loaded yet (Verify said NOT_COORDINATOR first).
		return wire.ErrCoordinatorNotAvailable, nil
	}
	req := &wire.AddPartitionsToTxnRequest{Transactions: []wire.AddPartitionsToTxnRequestTransaction{{
		TransactionalId: id, ProducerId: pid, ProducerEpoch: epoch, VerifyOnly: true,
		Topics: []wire.AddPartitionsToTxnRequestTopic{{Name: tp.Topic, Partitions: []int32{tp.Partition}}},
	}}}
	resp := &wire.AddPartitionsToTxnResponse{}
	if err := s.txn.peers.roundTrip(ctx, leader, req, resp, addPartitionsVerifyVersion); err != nil {
		return nil, err
	}
	if resp.ErrorCode != 0 {
		return nil, fmt.Errorf("broker %d: %w", leader, wire.ErrorForCode(resp.ErrorCode))
	}
	for _, r := range resp.ResultsByTransaction {
		for _, t := range r.TopicResults {
			for _, p := range t.ResultsByPartition {
				if r.TransactionalId == id && t.Name == tp.Topic && p.PartitionIndex == tp.Partition {
					var we *wire.Error
					if err := wire.ErrorForCode(p.PartitionErrorCode); err != nil && !errors.As(err, &we) {
						return nil, err
					}
					return we, nil
				}
			}
		}
	}
	return nil, fmt.Errorf("broker %d did not answer for %s-%d", leader, tp.Topic, tp.Partition)
}

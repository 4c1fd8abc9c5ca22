package server

// Wiring of the transaction coordinator (internal/txn): its __transaction_state logs, created
// on first use as a compacted internal topic with transaction.state.log.num.partitions
// partitions, and the marker writer the coordinator calls.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/broker/internal/config"
	"github.com/spoolmq/spool/broker/internal/group"
	"github.com/spoolmq/spool/broker/internal/partition"
	"github.com/spoolmq/spool/broker/internal/txn"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// txnSide is the server's transaction state: the coordinator and the creation of its topic.
type txnSide struct {
	coord *txn.Coordinator
	mu    sync.Mutex  // serialises the creation of __transaction_state
	ready atomic.Bool // __transaction_state exists
}

// startTxnCoordinator creates the coordinator; it serves the ids of the __transaction_state
// partitions this broker leads, as reconcile hands them over.
func (s *Server) startTxnCoordinator() {
	s.txn.coord = txn.New(txn.Config{
		MaxTimeout:    time.Duration(s.conf.Int64(config.TxnMaxTimeoutMs)) * time.Millisecond,
		AbortInterval: time.Duration(s.conf.Int64(config.TxnAbortIntervalMs)) * time.Millisecond,
		NewProducerID: s.producers.allocate,
		Markers:       markerWriter{s},
		Log:           s.log.With("component", "txn-coordinator"),
	})
}

// txnElected hands a __transaction_state partition led here to the coordinator.
func (s *Server) txnElected(index, partitions int32, part *partition.Partition, epoch int32) {
	if err := s.txn.coord.OnElection(index, partitions, epoch, offsetsPartition{part: part, epoch: epoch}); err != nil {
		s.log.Error("loading transactional ids", "partition", index, "err", err)
	}
}

// ensureTxnTopic creates __transaction_state on first use, as Kafka does: compacted,
// transaction.state.log.num.partitions partitions, replication factor 1 on a single node.
func (s *Server) ensureTxnTopic(ctx context.Context) error {
	if s.txn.ready.Load() {
		return nil
	}
	s.txn.mu.Lock()
	defer s.txn.mu.Unlock()
	if _, ok := s.md.Topic(txn.Topic); ok {
		s.txn.ready.Store(true)
		return nil
	}
	n := int32(s.conf.Int(config.TxnStateLogNumPartitions))
	rf := int16(1)
	if s.clustered {
		rf = int16(min(3, len(s.md.Brokers())))
	}
	_, err := s.createTopic(ctx, txn.Topic, n, rf, map[string]string{"cleanup.policy": "compact"}, false)
	if err != nil && !errors.Is(err, wire.ErrTopicAlreadyExists) {
		return fmt.Errorf("creating %s: %w", txn.Topic, err)
	}
	s.txn.ready.Store(true)
	return nil
}

// txnCoordinatorFor finds the broker coordinating a transactional id: the leader of its
// __transaction_state partition.
func (s *Server) txnCoordinatorFor(ctx context.Context, id string, listener string) (nodeID int32, host string, port int32, err error) {
	if err := s.ensureTxnTopic(ctx); err != nil {
		return -1, "", -1, err
	}
	t, ok := s.md.Topic(txn.Topic)
	if !ok || len(t.Partitions) == 0 {
		return -1, "", -1, fmt.Errorf("%s is being deleted", txn.Topic)
	}
	p := t.Partitions[txn.PartitionFor(id, int32(len(t.Partitions)))]
	for _, b := range s.md.Brokers() {
		if b.NodeID == p.Leader {
			host, port, _ := b.Addr(listener)
			return b.NodeID, host, port, nil
		}
	}
	return -1, "", -1, fmt.Errorf("%s-%d has no live leader", txn.Topic, p.Index)
}

// markerWriter writes a transaction's markers for the coordinator. On a single node (and for
// partitions led here) it appends them through the partition manager and waits for the
// commit, all partitions in one round; a partition led by another broker is an error the
// coordinator retries (sending WriteTxnMarkers to remote leaders is the cluster's part).
// A __consumer_offsets partition in the transaction settles the group coordinator's pending
// transactional offsets instead.
type markerWriter struct{ s *Server }

func (w markerWriter) WriteMarkers(ctx context.Context, m txn.Markers) error {
	s := w.s
	now := time.Now()
	var waits []partition.Appended
	var offsets []int32
	for _, tp := range m.Partitions {
		if tp.Topic == group.Topic {
			// The group coordinator keeps a transaction's offsets pending in memory (see
			// group/txn_offsets.go); they are settled below, with no marker in its log.
			offsets = append(offsets, tp.Partition)
			continue
		}
		if _, ok := s.md.Topic(tp.Topic); !ok {
			continue // deleted meanwhile: nothing to mark (Kafka skips it too)
		}
		part, err := s.leaderPart(tp.Topic, tp.Partition)
		if err != nil {
			return fmt.Errorf("marker for %s-%d: %w", tp.Topic, tp.Partition, err)
		}
		_, a, err := part.AppendMarker(m.ProducerID, m.Epoch, m.Commit, m.CoordinatorEpoch, true, now)
		if err != nil {
			return fmt.Errorf("marker for %s-%d: %w", tp.Topic, tp.Partition, err)
		}
		waits = append(waits, a)
	}
	var failed error
	partition.Commit(ctx, waits, func(i int, err error) { failed = errors.Join(failed, err) })
	if failed != nil {
		return failed
	}
	if len(offsets) > 0 {
		if err := s.groups.CompleteTxn(m.ProducerID, m.Commit); err != nil {
			return fmt.Errorf("settling the transaction's offsets: %w", err)
		}
	}
	return nil
}

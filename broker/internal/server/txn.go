package server

// Wiring of the transaction coordinator (internal/txn): its __transaction_state logs, created
// on first use as a compacted internal topic with transaction.state.log.num.partitions
// partitions, and the marker writer the coordinator calls.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/broker/internal/config"
	"github.com/spoolmq/spool/broker/internal/partition"
	"github.com/spoolmq/spool/broker/internal/txn"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// txnSide is the server's transaction state: the coordinator and the creation of its topic.
type txnSide struct {
	coord *txn.Coordinator
	peers *peerPool   // connections to the other brokers (markers, verification)
	mu    sync.Mutex  // serialises the creation of __transaction_state
	ready atomic.Bool // __transaction_state exists
}

// startTxnCoordinator creates the coordinator; it serves the ids of the __transaction_state
// partitions this broker leads, as reconcile hands them over.
func (s *Server) startTxnCoordinator() {
	sec, err := s.peerSecurity()
	if err != nil {
		// New checked it already; a failure now leaves the peers on PLAINTEXT, which the
		// other brokers refuse (logged, retried by the coordinator).
		s.log.Error("inter-broker security for transactions", "err", err)
	}
	s.txn.peers = newPeerPool(s, sec)
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
// transaction.state.log.num.partitions partitions, transaction.state.log.replication.factor
// replicas (capped by the live brokers; 1 on a single node) and
// transaction.state.log.min.isr as its min.insync.replicas (capped by the replicas).
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
		want := s.conf.Int(config.TxnStateLogReplication)
		live := len(s.md.Brokers())
		rf = int16(min(want, live))
		if live < want {
			s.log.Warn("creating "+txn.Topic+" with fewer replicas than transaction.state.log.replication.factor: not enough live brokers",
				"replication_factor", rf, "transaction.state.log.replication.factor", want)
		}
	}
	minISR := min(s.conf.Int(config.TxnStateLogMinISR), int(rf))
	_, err := s.createTopic(ctx, txn.Topic, n, rf, map[string]string{"cleanup.policy": "compact", "min.insync.replicas": strconv.Itoa(minISR)}, false)
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

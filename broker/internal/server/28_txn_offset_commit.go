package server

// TxnOffsetCommit (key 28), versions 0-4; flexible from 3.
//
// Offsets a transactional producer commits for a group inside its transaction (after
// AddOffsetsToTxn): the group coordinator appends them to the group's __consumer_offsets
// partition as the producer's transactional batch, answers once that is committed, and keeps
// them pending; they become the group's committed offsets only when the transaction's COMMIT
// marker is committed in that partition (dropped at ABORT), also after a failover, whose load
// replays both (group/txn_offsets.go). Meanwhile OffsetFetch with RequireStable answers
// UNSTABLE_OFFSET_COMMIT for those partitions.
//
// First the transaction coordinator (here, or on its broker through AddPartitionsToTxn
// verify-only: txn_verify.go) confirms that the producer is the id's current one
// (PRODUCER_FENCED; INVALID_PRODUCER_EPOCH before v2) with the group's __consumer_offsets
// partition in its open transaction (INVALID_TXN_STATE otherwise); a coordinator that cannot
// answer now is COORDINATOR_NOT_AVAILABLE or COORDINATOR_LOAD_IN_PROGRESS (retriable). The log
// also refuses an epoch older than it has seen (PRODUCER_FENCED). v3+ (KIP-447) carries the
// member's generation, member id and instance id, checked as for OffsetCommit
// (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID), so a zombie member cannot
// commit. NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS when the group is not coordinated
// here; UNKNOWN_TOPIC_OR_PARTITION for a partition of an unknown topic;
// OFFSET_METADATA_TOO_LARGE past 4096 bytes of metadata.
//
// Authorization (with authorizer.class.name set): Write on the transactional id, else
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED; Read on the group, else GROUP_AUTHORIZATION_FAILED;
// Read on each topic, else TOPIC_AUTHORIZATION_FAILED for its partitions.

import (
	"context"

	"github.com/spoolmq/spool/broker/internal/group"
	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/broker/internal/txn"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleTxnOffsetCommit(s *Server, ctx context.Context, req *request) *pending {
	s.ensureOffsetsTopic(ctx) // on failure the coordinator answers NOT_COORDINATOR
	r := req.msg.(*wire.TxnOffsetCommitRequest)
	resp := &wire.TxnOffsetCommitResponse{}
	resp.Default()
	cr := group.TxnCommitRequest{GroupID: r.GroupId, ProducerID: r.ProducerId, ProducerEpoch: r.ProducerEpoch, Generation: -1}
	if req.version >= 3 {
		cr.Generation, cr.MemberID, cr.InstanceID = r.GenerationId, r.MemberId, r.GroupInstanceId
	}
	type slot struct{ t, p int }
	var slots []slot
	topLevel := int16(0)
	switch {
	case !s.allowed(req, security.OpWrite, security.ResourceTransactionalID, r.TransactionalId):
		topLevel = wire.ErrTransactionalIdAuthorizationFailed.Code
	case !s.allowed(req, security.OpRead, security.ResourceGroup, r.GroupId):
		topLevel = wire.ErrGroupAuthorizationFailed.Code
	}
	for ti, t := range r.Topics {
		rt := wire.TxnOffsetCommitResponseTopic{Name: t.Name}
		_, known := s.md.Topic(t.Name)
		topicOK := s.allowed(req, security.OpRead, security.ResourceTopic, t.Name)
		for pi, p := range t.Partitions {
			rp := wire.TxnOffsetCommitResponsePartition{PartitionIndex: p.PartitionIndex}
			switch {
			case topLevel != 0:
				rp.ErrorCode = topLevel
			case !topicOK:
				rp.ErrorCode = wire.ErrTopicAuthorizationFailed.Code
			case !known:
				rp.ErrorCode = wire.ErrUnknownTopicOrPartition.Code
			default:
				cr.Commits = append(cr.Commits, group.Commit{Topic: t.Name, Partition: p.PartitionIndex, Offset: p.CommittedOffset, LeaderEpoch: p.CommittedLeaderEpoch, Metadata: clonePtr(p.CommittedMetadata)})
				slots = append(slots, slot{ti, pi})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(cr.Commits) == 0 {
		return ready(reply{msg: resp})
	}
	p := later()
	commit := func() {
		s.groups.TxnCommit(cr, func(codes []int16) {
			for i, sl := range slots {
				code := codes[i]
				if code == wire.ErrProducerFenced.Code && req.version < 2 {
					code = wire.ErrInvalidProducerEpoch.Code // what clients before PRODUCER_FENCED know
				}
				resp.Topics[sl.t].Partitions[sl.p].ErrorCode = code
			}
			p.complete(reply{msg: resp})
		})
	}
	fail := func(code int16) {
		for _, sl := range slots {
			resp.Topics[sl.t].Partitions[sl.p].ErrorCode = code
		}
		p.complete(reply{msg: resp})
	}
	// The producer must be the id's current one with the group's offsets partition in its
	// open transaction (AddOffsetsToTxn): asked of the transaction coordinator, here or on
	// its broker (KIP-890 part 1, txn_verify.go).
	t, ok := s.md.Topic(group.Topic)
	if !ok || len(t.Partitions) == 0 {
		commit() // the group coordinator answers NOT_COORDINATOR
		return p
	}
	tp := txn.TopicPartition{Topic: group.Topic, Partition: group.PartitionFor(r.GroupId, int32(len(t.Partitions)))}
	verdict := func(e *wire.Error) {
		switch e {
		case nil:
			commit()
		case wire.ErrNotCoordinator, wire.ErrCoordinatorNotAvailable, wire.ErrConcurrentTransactions:
			fail(wire.ErrCoordinatorNotAvailable.Code) // retriable: the client tries again
		case wire.ErrCoordinatorLoadInProgress:
			fail(wire.ErrCoordinatorLoadInProgress.Code)
		default:
			fail(txnErrorCode(e, req.version < 2))
		}
	}
	if e := s.txn.coord.Verify(r.TransactionalId, r.ProducerId, r.ProducerEpoch, tp); e != wire.ErrNotCoordinator {
		verdict(e)
		return p
	}
	go func() {
		vctx, cancel := context.WithTimeout(ctx, verifyTimeout)
		defer cancel()
		e, err := s.verifyRemote(vctx, r.TransactionalId, r.ProducerId, r.ProducerEpoch, tp)
		if err != nil {
			s.log.Debug("verifying a TxnOffsetCommit with the transaction coordinator", "transactional_id", r.TransactionalId, "err", err)
			e = wire.ErrCoordinatorNotAvailable
		}
		verdict(e)
	}()
	return p
}

package server

// Produce (key 0), versions 0-9 advertised, 3-9 served; flexible from 9.
//
// Versions 0-2 are advertised only because librdkafka compresses nothing unless Produce 0 is in
// range (KAFKA-18659); they cannot carry record batch v2, so such a request closes the
// connection, as Kafka 4 does. Each partition's records must be exactly one batch of magic 2
// (older magic: UNSUPPORTED_FOR_MESSAGE_FORMAT); the log validates it (CRC: CORRUPT_MESSAGE,
// layout: INVALID_RECORD, size: MESSAGE_TOO_LARGE, more than segment.bytes: RECORD_LIST_TOO_LARGE), assigns offsets in place and checks
// idempotent sequences (a retried duplicate is acknowledged with its original offset; a gap is
// OUT_OF_ORDER_SEQUENCE_NUMBER; an old epoch INVALID_PRODUCER_EPOCH). A transactional batch
// needs the request's TransactionalId (else INVALID_RECORD) and Write on it
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), and is verified with the transaction coordinator
// (KIP-890 part 1; here or, through AddPartitionsToTxn verify-only, on the broker leading the
// id's __transaction_state partition: txn_verify.go): the producer must be the id's current
// one (INVALID_PRODUCER_EPOCH otherwise) with an open transaction holding the partition
// (INVALID_TXN_STATE otherwise), so a stray or late write cannot open a transaction that holds
// the last stable offset forever; a coordinator that cannot answer now is
// NOT_ENOUGH_REPLICAS (retriable, as Kafka answers); zstd needs v7+ (UNSUPPORTED_COMPRESSION_TYPE). A
// topic whose compression.type names another codec than the batch's gets the batch rebuilt in
// that codec before the append (recompress.go); "producer" keeps it as sent. An
// unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION: Produce never creates topics
// (clients create them through Metadata, as with Kafka); a refusal for a topic that does not
// exist is logged at info once per topic per spool.log.summary.interval.ms (loglines.go). Each
// partition fails on its own.
//
// Appends happen in request order on the connection's reader goroutine, and only on the
// partition's leader: a partition led elsewhere (or leaderless) is NOT_LEADER_OR_FOLLOWER, so
// the client refreshes its metadata. With acks 1 or -1 the reply waits, on another goroutine,
// until the appended data is durable by the flush policy (fsync with group commit by default:
// the partitions of every request waiting meanwhile, on any connection, share one sync round);
// the wait is the partition manager's (partition.Commit), shared with the group coordinator.
// acks=-1 also needs the ISR at min.insync.replicas or more before the append
// (NOT_ENOUGH_REPLICAS), and waits until the high watermark covers the append, that is until
// every ISR member holds it on disk (NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrinks below
// the minimum meanwhile, NOT_LEADER_OR_FOLLOWER if leadership moves, REQUEST_TIMED_OUT past
// the deadline). acks=0 sends no response at all; if a partition failed, the connection is
// closed instead, as Kafka does.
//
// Authorization (with authorizer.class.name set): Write on the topic, else
// TOPIC_AUTHORIZATION_FAILED for each of its partitions.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spoolmq/spool/broker/internal/group"
	"github.com/spoolmq/spool/broker/internal/partition"
	"github.com/spoolmq/spool/broker/internal/replication"
	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/broker/internal/txn"
	"github.com/spoolmq/spool/protocol-spec/wire"
	"github.com/spoolmq/spool/protocol-spec/wire/batch"
	"github.com/spoolmq/spool/protocol-spec/wire/compress"
)

func handleProduce(s *Server, ctx context.Context, req *request) *pending {
	if req.version < 3 {
		return ready(reply{close: true})
	}
	r := req.msg.(*wire.ProduceRequest)
	resp := &wire.ProduceResponse{}
	resp.Default()
	var waits []partition.Appended
	var slots []*wire.ProduceResponsePartitionProduceResponse
	failed := false
	for _, rt := range r.TopicData {
		tr := wire.ProduceResponseTopicProduceResponse{Name: rt.Name}
		tr.PartitionResponses = make([]wire.ProduceResponsePartitionProduceResponse, len(rt.PartitionData))
		var denied error
		if !s.allowed(req, security.OpWrite, security.ResourceTopic, rt.Name) {
			denied = wire.ErrTopicAuthorizationFailed
		}
		for i, rp := range rt.PartitionData {
			slot := &tr.PartitionResponses[i]
			slot.Default()
			slot.Index = rp.Index
			var res partition.AppendResult
			var appended partition.Appended
			err := denied
			if err == nil {
				err = zstdNeedsV7(req.version, rp.Records)
			}
			if err == nil {
				res, appended, err = s.produceOne(ctx, req, r, rt.Name, rp)
			}
			if err != nil {
				if errors.Is(err, wire.ErrUnknownTopicOrPartition) {
					if _, exists := s.md.Topic(rt.Name); !exists {
						s.logMissingTopic(req, rt.Name) // once per topic per interval (loglines.go)
					}
				}
				failed = true
				slot.ErrorCode = errCode(err)
				slot.BaseOffset = -1
				if req.version >= 8 {
					slot.ErrorMessage = errMessage(err)
				}
				continue
			}
			slot.BaseOffset = res.BaseOffset
			slot.LogAppendTimeMs = res.LogAppendTime
			slot.LogStartOffset = res.LogStartOffset
			// acks=0 waits too, in the background: the high watermark (what consumers see)
			// is the durable end, so unflushed acks=0 data would stay invisible.
			waits, slots = append(waits, appended), append(slots, slot)
		}
		resp.Responses = append(resp.Responses, tr)
	}
	if r.Acks == 0 {
		if failed {
			return ready(reply{close: true})
		}
		s.commitInBackground(waits)
		return nil
	}
	if len(waits) == 0 || (!s.syncBeforeAck() && r.Acks != -1) {
		return ready(reply{msg: resp})
	}
	p := waitingFor(&s.waitingProduce)
	timeout := time.Duration(max(r.TimeoutMs, 0)) * time.Millisecond
	go func() {
		wctx, cancel := context.WithTimeout(ctx, max(timeout, 30*time.Second))
		defer cancel()
		// Durable, then (acks=-1) replicated: the partition manager's one commit wait.
		partition.Commit(wctx, waits, func(i int, err error) {
			slot := slots[i]
			switch {
			case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
				slot.ErrorCode = wire.ErrRequestTimedOut.Code
			case errors.Is(err, replication.ErrNotLeader) || errors.Is(err, replication.ErrNotEnoughReplicasAfterAppend):
				slot.ErrorCode = errCode(storageError(err))
			default:
				slot.ErrorCode = wire.ErrKafkaStorageError.Code
			}
			slot.BaseOffset = -1
		})
		p.complete(reply{msg: resp})
	}()
	return p
}

// commitInBackground makes appends durable (and so visible to consumers) without anyone
// waiting for them (acks=0).
func (s *Server) commitInBackground(waits []partition.Appended) {
	if len(waits) == 0 || !s.syncBeforeAck() {
		return
	}
	go partition.Commit(s.ctx, waits, func(int, error) {})
}

// produceOne appends one partition's records.
func (s *Server) produceOne(ctx context.Context, req *request, r *wire.ProduceRequest, topic string, rp wire.ProduceRequestPartitionProduceData) (partition.AppendResult, partition.Appended, error) {
	var none partition.AppendResult
	var noWait partition.Appended
	if r.Acks != 0 && r.Acks != 1 && r.Acks != -1 {
		return none, noWait, fmt.Errorf("%w: acks must be 0, 1 or -1, not %d", wire.ErrInvalidRequiredAcks, r.Acks)
	}
	if topic == group.Topic || topic == txn.Topic {
		// Only the coordinators write their internal topics, as in Kafka.
		return none, noWait, fmt.Errorf("%w: clients cannot produce to %s", wire.ErrInvalidTopicException, topic)
	}
	part, err := s.partitionForWrite(ctx, topic, rp.Index)
	if err != nil {
		return none, noWait, err
	}
	if err := checkProduceBatch(rp.Records); err != nil {
		return none, noWait, err
	}
	if raw := batch.Raw(rp.Records); raw.Attributes().Transactional() {
		if err := s.verifyTransactional(ctx, req, r.TransactionalId, raw, part); err != nil {
			return none, noWait, err
		}
	}
	records, rc, err := recompress(part, rp.Records) // compression.type: see recompress.go
	if err != nil {
		return none, noWait, err
	}
	defer rc.release()
	res, appended, err := part.AppendAsLeader(records, r.Acks == -1, time.Now())
	if err != nil {
		return none, noWait, storageError(err)
	}
	if !res.Duplicate {
		s.metrics.Produced(topic, int64(len(rp.Records)), res.LastOffset-res.BaseOffset+1)
	}
	return res, appended, nil
}

// checkProduceBatch applies the request-level rules before the log validates the batch:
// exactly one batch, magic 2.
func checkProduceBatch(records []byte) error {
	if len(records) < batch.HeaderSize {
		if len(records) > 16 && int8(records[16]) < 2 {
			return fmt.Errorf("%w: message format v%d", wire.ErrUnsupportedForMessageFormat, records[16])
		}
		return fmt.Errorf("%w: the records hold no complete batch", wire.ErrInvalidRecord)
	}
	raw := batch.Raw(records)
	if raw.Magic() != 2 {
		return fmt.Errorf("%w: message format v%d", wire.ErrUnsupportedForMessageFormat, raw.Magic())
	}
	if size := raw.TotalSize(); size != len(records) {
		if size > batch.HeaderSize && size < len(records) {
			return fmt.Errorf("%w: a produce request carries exactly one batch per partition", wire.ErrInvalidRecord)
		}
		return fmt.Errorf("%w: batch length %d does not match the %d bytes sent", wire.ErrCorruptMessage, size, len(records))
	}
	return nil
}

// partitionForWrite finds a partition this broker leads. Produce never creates topics
// (SPEC.md §8.1; Kafka neither): clients create them through Metadata.
func (s *Server) partitionForWrite(_ context.Context, topic string, index int32) (*partition.Partition, error) {
	return s.leaderPart(topic, index)
}

// zstdNeedsV7 refuses a zstd batch in Produce v3-6, as Kafka does (SPEC.md §5.6).
func zstdNeedsV7(version int16, records []byte) error {
	if version < 7 && len(records) >= batch.HeaderSize && batch.Raw(records).Attributes().Codec() == compress.Zstd {
		return fmt.Errorf("%w: zstd needs Produce v7 or later, this request is v%d", wire.ErrUnsupportedCompressionType, version)
	}
	return nil
}

// storageErrors maps the log's errors to protocol errors.
var storageErrors = []errMapping{
	{partition.ErrCorruptMessage, wire.ErrCorruptMessage},
	{partition.ErrInvalidRecord, wire.ErrInvalidRecord},
	{partition.ErrUnsupportedMagic, wire.ErrUnsupportedForMessageFormat},
	{partition.ErrMessageTooLarge, wire.ErrMessageTooLarge},
	{partition.ErrRecordListTooLarge, wire.ErrRecordListTooLarge},
	{partition.ErrOffsetOutOfRange, wire.ErrOffsetOutOfRange},
	{partition.ErrOutOfOrderSequence, wire.ErrOutOfOrderSequenceNumber},
	{partition.ErrInvalidProducerEpoch, wire.ErrInvalidProducerEpoch},
	{partition.ErrInvalidTimestamp, wire.ErrInvalidTimestamp},
	{partition.ErrClosed, wire.ErrNotLeaderOrFollower},
	{replication.ErrNotLeader, wire.ErrNotLeaderOrFollower},
	{replication.ErrNotEnoughReplicas, wire.ErrNotEnoughReplicas},
	{replication.ErrNotEnoughReplicasAfterAppend, wire.ErrNotEnoughReplicasAfterAppend},
}

func storageError(err error) error { return mapError(err, storageErrors, wire.ErrKafkaStorageError) }

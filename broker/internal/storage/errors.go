package storage

import (
	"errors"
	"fmt"

	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

// Sentinel errors. Every error the package returns about a request wraps at most one of them;
// errors.Is picks the Kafka error code. I/O failures wrap the os error instead
// (KAFKA_STORAGE_ERROR).
var (
	// ErrCorruptMessage: a CRC mismatch, inconsistent framing, an unknown codec, records that
	// do not decompress, or a truncated batch (CORRUPT_MESSAGE).
	ErrCorruptMessage = errors.New("storage: corrupt message")
	// ErrInvalidRecord: counts that disagree, a malformed record, a control batch from a client,
	// a record without key in a compacted log (INVALID_RECORD).
	ErrInvalidRecord = errors.New("storage: invalid record")
	// ErrUnsupportedMagic: a batch of another format than v2 (UNSUPPORTED_FOR_MESSAGE_FORMAT).
	ErrUnsupportedMagic = errors.New("storage: unsupported message format")
	// ErrMessageTooLarge: a batch larger than max.message.bytes, or one decompressing beyond
	// MaxUncompressedBatchBytes (MESSAGE_TOO_LARGE).
	ErrMessageTooLarge = errors.New("storage: message too large")
	// ErrRecordListTooLarge: an append larger than segment.bytes, which no segment can hold
	// (RECORD_LIST_TOO_LARGE, as Kafka answers it).
	ErrRecordListTooLarge = errors.New("storage: record list too large")
	// ErrOffsetOutOfRange: a read or DeleteRecordsBefore outside [log start, log end]
	// (OFFSET_OUT_OF_RANGE).
	ErrOffsetOutOfRange = errors.New("storage: offset out of range")
	// ErrOutOfOrderSequence: an idempotent producer's sequence gap, or a new epoch that does not
	// start at sequence 0 (OUT_OF_ORDER_SEQUENCE_NUMBER).
	ErrOutOfOrderSequence = errors.New("storage: out of order sequence number")
	// ErrInvalidProducerEpoch: a batch from an older producer epoch, fenced (INVALID_PRODUCER_EPOCH).
	ErrInvalidProducerEpoch = errors.New("storage: invalid producer epoch")
	// ErrInvalidTimestamp: a CreateTime record timestamp outside message.timestamp.before.max.ms
	// or after.max.ms of the broker's clock (INVALID_TIMESTAMP). The defaults check nothing.
	ErrInvalidTimestamp = errors.New("storage: invalid timestamp")
	// ErrUnexpectedAppendOffset: a follower append (AssignOffsets false) whose batches do not
	// follow the log end offset in increasing order.
	ErrUnexpectedAppendOffset = errors.New("storage: unexpected append offset")
	// ErrClosed: the log or manager is closed.
	ErrClosed = errors.New("storage: closed")
)

// batchError maps an error of package batch to this package's sentinel, keeping both in the
// chain so that errors.Is finds either.
func batchError(what string, err error) error {
	var sentinel error
	switch {
	case errors.Is(err, batch.ErrUnsupportedMagic):
		sentinel = ErrUnsupportedMagic
	case errors.Is(err, batch.ErrTooLarge):
		sentinel = ErrMessageTooLarge
	case errors.Is(err, batch.ErrInvalidRecord):
		sentinel = ErrInvalidRecord
	default: // ErrCorrupt, ErrTruncated, anything else
		sentinel = ErrCorruptMessage
	}
	return fmt.Errorf("%w: %s: %w", sentinel, what, err)
}

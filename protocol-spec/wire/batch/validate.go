package batch

import (
	"errors"
	"fmt"
	"sync"

	"github.com/spoolmq/spool/protocol-spec/wire/compress"
)

// Sentinel errors. Every error of this package wraps exactly one of them; the comment names the
// Kafka error a broker answers with.
var (
	// ErrTruncated: the bytes end before the batch does. In a Fetch response or at a log's end
	// this is a partial last batch, not corruption. (Produce: CORRUPT_MESSAGE.)
	ErrTruncated = errors.New("batch: truncated")
	// ErrUnsupportedMagic: the magic byte is not 2 (UNSUPPORTED_FOR_MESSAGE_FORMAT).
	ErrUnsupportedMagic = errors.New("batch: unsupported magic")
	// ErrCorrupt: the framing is inconsistent, the CRC does not match, the codec is unknown or
	// the records do not decompress (CORRUPT_MESSAGE).
	ErrCorrupt = errors.New("batch: corrupt")
	// ErrInvalidRecord: the counts disagree or a record does not parse (INVALID_RECORD).
	ErrInvalidRecord = errors.New("batch: invalid record")
	// ErrTooLarge: the records decompress to more than the caller's limit; the error also wraps
	// compress.ErrLimit (RECORD_LIST_TOO_LARGE or MESSAGE_TOO_LARGE).
	ErrTooLarge = errors.New("batch: records too large")
)

// minRecordSize is the smallest encoded record: a one-byte length, attributes, timestamp
// delta, offset delta, key length, value length and header count of one byte each.
const minRecordSize = 7

// Validate checks that b holds exactly one well-formed v2 batch and returns its header. It
// checks, in order: the magic byte (ErrUnsupportedMagic), that b holds the header and the
// batchLength it declares (ErrTruncated), batchLength at least 49 and no bytes after the batch
// (ErrCorrupt), the CRC-32C (ErrCorrupt), a known codec (ErrCorrupt), and that the counts can
// be right (ErrInvalidRecord): recordsCount >= 0, lastOffsetDelta >= 0, recordsCount <=
// lastOffsetDelta+1 (compaction may remove records but never adds offsets), and, uncompressed,
// room for recordsCount records. It reads no record: ValidateRecords does. It does not
// allocate unless it fails.
func Validate(b []byte) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, err
	}
	if h.BatchLength < MinBatchLength {
		return h, fmt.Errorf("%w: batchLength %d below the minimum %d", ErrCorrupt, h.BatchLength, MinBatchLength)
	}
	total := h.TotalSize()
	if total > len(b) {
		return h, fmt.Errorf("%w: batch of %d bytes, have %d", ErrTruncated, total, len(b))
	}
	if total < len(b) {
		return h, fmt.Errorf("%w: %d bytes after a batch of %d", ErrCorrupt, len(b)-total, total)
	}
	if sum := Checksum(b); sum != h.CRC {
		return h, fmt.Errorf("%w: CRC-32C is %#08x, batch says %#08x", ErrCorrupt, sum, h.CRC)
	}
	if c := h.Attributes.Codec(); !c.Valid() {
		return h, fmt.Errorf("%w: compression codec %d", ErrCorrupt, int8(c))
	}
	if err := checkCounts(&h); err != nil {
		return h, err
	}
	return h, nil
}

func checkCounts(h *Header) error {
	switch {
	case h.RecordsCount < 0:
		return fmt.Errorf("%w: recordsCount %d", ErrInvalidRecord, h.RecordsCount)
	case h.LastOffsetDelta < 0:
		return fmt.Errorf("%w: lastOffsetDelta %d", ErrInvalidRecord, h.LastOffsetDelta)
	case int64(h.RecordsCount) > int64(h.LastOffsetDelta)+1:
		return fmt.Errorf("%w: %d records in an offset range of %d", ErrInvalidRecord, h.RecordsCount, int64(h.LastOffsetDelta)+1)
	case h.Attributes.Codec() == compress.None && int64(h.RecordsCount)*minRecordSize > int64(h.TotalSize()-HeaderSize):
		return fmt.Errorf("%w: %d records cannot fit in %d bytes", ErrInvalidRecord, h.RecordsCount, h.TotalSize()-HeaderSize)
	}
	return nil
}

// ValidateProduce is Validate plus the rules Kafka applies to batches that clients produce:
// at least one record, recordsCount equal to lastOffsetDelta+1 (no gaps), and no control
// batch (only the broker writes those). Violations wrap ErrInvalidRecord.
func ValidateProduce(b []byte) (Header, error) {
	h, err := Validate(b)
	if err != nil {
		return h, err
	}
	switch {
	case h.RecordsCount == 0:
		return h, fmt.Errorf("%w: batch has no records", ErrInvalidRecord)
	case int64(h.RecordsCount) != int64(h.LastOffsetDelta)+1:
		return h, fmt.Errorf("%w: %d records but lastOffsetDelta %d", ErrInvalidRecord, h.RecordsCount, h.LastOffsetDelta)
	case h.Attributes.Control():
		return h, fmt.Errorf("%w: clients may not produce control batches", ErrInvalidRecord)
	}
	return h, nil
}

var iterators = sync.Pool{New: func() any { return new(Iterator) }}

// ValidateRecords is Validate plus a full parse: it decompresses the records (producing at most
// limit bytes, else ErrTooLarge), parses every record (ErrInvalidRecord), and checks that there
// are exactly recordsCount records, with offset deltas strictly increasing within
// [0, lastOffsetDelta], and nothing after the last. It reuses pooled buffers: after warm-up it
// does not allocate unless it fails.
func ValidateRecords(b []byte, limit int) (Header, error) {
	it := iterators.Get().(*Iterator)
	defer iterators.Put(it)
	defer it.release()
	if err := it.Reset(b, limit); err != nil {
		return it.h, err
	}
	for it.Next() {
	}
	return it.h, it.Err()
}

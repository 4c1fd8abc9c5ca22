package batch

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/spoolmq/spool/protocol-spec/wire/compress"
)

// Sizes and field offsets of the v2 batch header.
const (
	// HeaderSize is the size of the header before the records.
	HeaderSize = 61
	// LogOverhead is the size of baseOffset and batchLength, the bytes batchLength does not count.
	LogOverhead = 12
	// MinBatchLength is the smallest valid batchLength: a header without records.
	MinBatchLength = HeaderSize - LogOverhead
	// Magic is the format version this package handles.
	Magic = 2

	offBaseOffset      = 0
	offBatchLength     = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordsCount    = 57

	// crcStart is where the CRC's range begins (the attributes).
	crcStart = offAttributes
)

// castagnoli is the CRC-32C table; hash/crc32 uses the CPU's CRC32 instruction for it.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Attributes is the batch attributes field.
type Attributes int16

// Attribute bits.
const (
	AttrCodecMask        Attributes = 0x07
	AttrLogAppendTime    Attributes = 0x08
	AttrTransactional    Attributes = 0x10
	AttrControl          Attributes = 0x20
	AttrHasDeleteHorizon Attributes = 0x40
)

// Codec is the compression codec of the records (bits 0-2); values 5-7 are not valid codecs.
func (a Attributes) Codec() compress.Codec { return compress.Codec(a & AttrCodecMask) }

// LogAppendTime reports the timestamp type: true when the broker's append time (maxTimestamp)
// is every record's timestamp, false for CreateTime.
func (a Attributes) LogAppendTime() bool { return a&AttrLogAppendTime != 0 }

// Transactional reports whether the batch belongs to a transaction.
func (a Attributes) Transactional() bool { return a&AttrTransactional != 0 }

// Control reports whether the batch holds a control record (transaction marker).
func (a Attributes) Control() bool { return a&AttrControl != 0 }

// HasDeleteHorizon reports whether baseTimestamp is a delete horizon set by compaction.
func (a Attributes) HasDeleteHorizon() bool { return a&AttrHasDeleteHorizon != 0 }

// Header is a decoded batch header.
type Header struct {
	BaseOffset           int64
	BatchLength          int32
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           Attributes
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	RecordsCount         int32
}

// TotalSize is the batch's size in bytes, header included: batchLength + 12.
func (h Header) TotalSize() int { return int(h.BatchLength) + LogOverhead }

// LastOffset is the offset of the batch's last record (or last offset before compaction).
func (h Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset that follows the batch.
func (h Header) NextOffset() int64 { return h.LastOffset() + 1 }

// ParseHeader decodes the header at the start of b. It checks only what it needs to decode:
// at least 17 bytes to see the magic byte (else ErrTruncated), magic 2 (else
// ErrUnsupportedMagic), then at least 61 bytes (else ErrTruncated). Validate checks the rest.
func ParseHeader(b []byte) (Header, error) {
	if err := checkMagic(b); err != nil {
		return Header{}, err
	}
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("%w: batch header needs %d bytes, have %d", ErrTruncated, HeaderSize, len(b))
	}
	r := Raw(b)
	return Header{
		BaseOffset:           r.BaseOffset(),
		BatchLength:          r.BatchLength(),
		PartitionLeaderEpoch: r.PartitionLeaderEpoch(),
		Magic:                r.Magic(),
		CRC:                  r.CRC(),
		Attributes:           r.Attributes(),
		LastOffsetDelta:      r.LastOffsetDelta(),
		BaseTimestamp:        r.BaseTimestamp(),
		MaxTimestamp:         r.MaxTimestamp(),
		ProducerID:           r.ProducerID(),
		ProducerEpoch:        r.ProducerEpoch(),
		BaseSequence:         r.BaseSequence(),
		RecordsCount:         r.RecordsCount(),
	}, nil
}

func checkMagic(b []byte) error {
	if len(b) <= offMagic {
		return fmt.Errorf("%w: %d bytes do not reach the magic byte", ErrTruncated, len(b))
	}
	if m := int8(b[offMagic]); m != Magic {
		return fmt.Errorf("%w: magic %d", ErrUnsupportedMagic, m)
	}
	return nil
}

// Raw reads and writes header fields in place. Its methods need at least HeaderSize bytes
// (they panic on a shorter slice, like an index out of range): use them on slices that
// ParseHeader, Validate or a Scanner accepted.
type Raw []byte

// BaseOffset is the offset of the first record.
func (r Raw) BaseOffset() int64 { return int64(binary.BigEndian.Uint64(r[offBaseOffset:])) }

// BatchLength is the number of bytes after the batchLength field.
func (r Raw) BatchLength() int32 { return int32(binary.BigEndian.Uint32(r[offBatchLength:])) }

// TotalSize is batchLength + 12, the whole batch's size (it may be negative on a corrupt batch).
func (r Raw) TotalSize() int { return int(r.BatchLength()) + LogOverhead }

// PartitionLeaderEpoch is the leader epoch the broker stamped, -1 from producers.
func (r Raw) PartitionLeaderEpoch() int32 {
	return int32(binary.BigEndian.Uint32(r[offLeaderEpoch:]))
}

// Magic is the format version byte.
func (r Raw) Magic() int8 { return int8(r[offMagic]) }

// CRC is the stored CRC-32C.
func (r Raw) CRC() uint32 { return binary.BigEndian.Uint32(r[offCRC:]) }

// Attributes is the attributes field.
func (r Raw) Attributes() Attributes {
	return Attributes(binary.BigEndian.Uint16(r[offAttributes:]))
}

// LastOffsetDelta is the last offset minus the base offset.
func (r Raw) LastOffsetDelta() int32 {
	return int32(binary.BigEndian.Uint32(r[offLastOffsetDelta:]))
}

// LastOffset is BaseOffset + LastOffsetDelta.
func (r Raw) LastOffset() int64 { return r.BaseOffset() + int64(r.LastOffsetDelta()) }

// BaseTimestamp is the first record's timestamp.
func (r Raw) BaseTimestamp() int64 { return int64(binary.BigEndian.Uint64(r[offBaseTimestamp:])) }

// MaxTimestamp is the largest record timestamp, or the append time under LogAppendTime.
func (r Raw) MaxTimestamp() int64 { return int64(binary.BigEndian.Uint64(r[offMaxTimestamp:])) }

// ProducerID is the idempotent producer's id, -1 if none.
func (r Raw) ProducerID() int64 { return int64(binary.BigEndian.Uint64(r[offProducerID:])) }

// ProducerEpoch is the idempotent producer's epoch, -1 if none.
func (r Raw) ProducerEpoch() int16 { return int16(binary.BigEndian.Uint16(r[offProducerEpoch:])) }

// BaseSequence is the first record's sequence number, -1 if none.
func (r Raw) BaseSequence() int32 { return int32(binary.BigEndian.Uint32(r[offBaseSequence:])) }

// RecordsCount is the number of records.
func (r Raw) RecordsCount() int32 { return int32(binary.BigEndian.Uint32(r[offRecordsCount:])) }

// Records is the records region, compressed or not: bytes [61, total size), clipped to the
// slice.
func (r Raw) Records() []byte {
	end := min(max(r.TotalSize(), HeaderSize), len(r))
	return r[HeaderSize:end:end]
}

// Checksum computes the CRC-32C of bytes [21, len(b)) of a whole batch b, the value its crc
// field must hold. It returns 0 for a slice shorter than the header.
func Checksum(b []byte) uint32 {
	if len(b) < HeaderSize {
		return 0
	}
	return crc32.Checksum(b[crcStart:], castagnoli)
}

// SetBaseOffset rewrites the base offset in place. The CRC does not cover it. b must hold at
// least the header.
func SetBaseOffset(b []byte, offset int64) {
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(offset))
}

// SetPartitionLeaderEpoch rewrites the partition leader epoch in place. The CRC does not cover
// it. b must hold at least the header.
func SetPartitionLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(epoch))
}

// SetLogAppendTime switches the whole batch at the start of b to LogAppendTime with append time
// ts: it sets the timestamp-type attribute and maxTimestamp, then recomputes the CRC over the
// batch (its batchLength says where it ends). The CRC is recomputed from the bytes as they are,
// so call it only on a batch that Validate accepted.
func SetLogAppendTime(b []byte, ts int64) error {
	if len(b) < HeaderSize {
		return fmt.Errorf("%w: batch header needs %d bytes, have %d", ErrTruncated, HeaderSize, len(b))
	}
	total := Raw(b).TotalSize()
	if total < HeaderSize || total > len(b) {
		return fmt.Errorf("%w: batch of %d bytes in %d", ErrCorrupt, total, len(b))
	}
	b = b[:total]
	attrs := Raw(b).Attributes() | AttrLogAppendTime
	binary.BigEndian.PutUint16(b[offAttributes:], uint16(attrs))
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint32(b[offCRC:], Checksum(b))
	return nil
}

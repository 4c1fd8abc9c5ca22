// Package batch reads, checks, rewrites and builds Kafka record batches of format v2 (magic 2),
// the unit in which producers send records, brokers store them and consumers fetch them.
//
// # Layout
//
// A batch is a 61-byte header followed by its records. Integers are big-endian; offsets are
// from the start of the batch:
//
//	 0  int64   baseOffset            first offset; producers send 0, the broker assigns it
//	 8  int32   batchLength           bytes after this field: total size - 12
//	12  int32   partitionLeaderEpoch  set by the broker; -1 from producers
//	16  int8    magic                 2 (the same byte holds magic 0 and 1 in older formats)
//	17  uint32  crc                   CRC-32C (Castagnoli) of bytes [21, end)
//	21  int16   attributes            see below
//	23  int32   lastOffsetDelta       last offset - baseOffset; count-1 unless compacted
//	27  int64   baseTimestamp         timestamp of the first record
//	35  int64   maxTimestamp          largest timestamp, or the broker's time (LogAppendTime)
//	43  int64   producerId            -1 when not idempotent
//	51  int16   producerEpoch         -1 when not idempotent
//	53  int32   baseSequence          sequence of the first record, -1 when not idempotent
//	57  int32   recordsCount          number of records, never compressed
//	61  ...     records               one compressed blob when attributes name a codec
//
// baseOffset, batchLength and partitionLeaderEpoch lie before the CRC's range, so a broker
// assigns offsets and epochs in place without touching the CRC (SetBaseOffset,
// SetPartitionLeaderEpoch). Switching to LogAppendTime changes the attributes and maxTimestamp,
// which the CRC covers, so SetLogAppendTime recomputes it.
//
// Attribute bits: 0-2 compression codec (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd; see package
// compress), 3 timestamp type (1 = LogAppendTime), 4 transactional, 5 control,
// 6 hasDeleteHorizonMs (set by compaction, KIP-534); the others are zero.
//
// Each record is varint-framed; "varint" is a zig-zag varint of at most 32 bits and "varlong"
// one of at most 64 bits:
//
//	varint   length          bytes of the record after this field
//	int8     attributes      unused, 0
//	varlong  timestampDelta  timestamp - baseTimestamp
//	varint   offsetDelta     offset - baseOffset
//	varint   keyLength       -1 for a null key
//	bytes    key
//	varint   valueLength     -1 for a null value (a tombstone)
//	bytes    value
//	varint   headerCount
//	headers: varint keyLength, key bytes (never null), varint valueLength (-1 null), value bytes
//
// A control batch (control and transactional bits set) holds one record whose key is
// int16 version (0) + int16 type (0 ABORT, 1 COMMIT) and whose value is int16 version (0) +
// int32 coordinatorEpoch.
//
// # Use
//
// Scanner splits a region of concatenated batches (a Produce request's records, a log segment,
// a Fetch response) without copying and reports a truncated last batch apart from corruption.
// Validate checks one batch's framing, CRC and counts; ValidateRecords also decompresses it
// (bounded) and parses every record. Iterator walks the records of a batch without allocating
// per record: keys, values and headers alias the batch or the iterator's decompression buffer.
// Builder assembles batches, compressed or not, reusing its buffers.
//
// Errors wrap one of the sentinels ErrTruncated, ErrUnsupportedMagic, ErrCorrupt,
// ErrInvalidRecord and ErrTooLarge, so that errors.Is picks the Kafka error code to answer.
package batch

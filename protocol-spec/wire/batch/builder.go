package batch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/spoolmq/spool/protocol-spec/wire"
	"github.com/spoolmq/spool/protocol-spec/wire/compress"
)

// CompressFunc appends src compressed to dst, as compress.Compress does for one codec.
type CompressFunc func(dst, src []byte) ([]byte, error)

// Builder assembles one batch at a time. Records are encoded as they are appended, behind room
// left for the header, so that Finish writes an uncompressed batch's header (and CRC) in place
// and never copies the records; AppendBatch copies the batch into a caller's buffer, and a
// compressed batch is written once, compressed, into a buffer of its own. Reset makes the Builder
// ready for the next batch and keeps its buffers, so a reused Builder allocates nothing once its
// buffers have grown. A Builder is not safe for concurrent use.
//
// A new Builder, and one after Reset, has no records, codec None, producer id, epoch and base
// sequence -1, partition leader epoch -1, base offset 0, CreateTime timestamps, and neither
// the transactional nor the control bit.
type Builder struct {
	codec           compress.Codec
	level           int // the codec's Kafka compression level; 0: its default
	compressor      CompressFunc
	skipIneffective bool

	baseOffset    int64
	leaderEpoch   int32
	attrs         Attributes // timestamp type, transactional, control
	producerID    int64
	producerEpoch int16
	baseSequence  int32
	appendTime    int64

	count         int32
	lastDelta     int32
	baseTimestamp int64
	maxTimestamp  int64

	// buf is HeaderSize bytes of room for the header, then the encoded records, uncompressed.
	buf []byte
	out []byte // Finish's result when the records are compressed
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder {
	b := new(Builder)
	b.Reset()
	return b
}

// Grow makes room for n more bytes of encoded records without reallocating, so a caller that
// knows roughly how large its batch will be pays for one allocation instead of a doubling
// series (each step copying everything so far).
func (b *Builder) Grow(n int) {
	if len(b.buf) < HeaderSize {
		b.buf = b.headerRoom()
	}
	if n > 0 {
		b.buf = slices.Grow(b.buf, n)
	}
}

// Reset discards the records and settings and keeps the buffers. A batch returned by Finish
// stays valid until the next Reset or Finish; appending more records does not change it.
func (b *Builder) Reset() {
	*b = Builder{
		leaderEpoch:   -1,
		producerID:    -1,
		producerEpoch: -1,
		baseSequence:  -1,
		lastDelta:     -1,
		buf:           b.headerRoom(),
		out:           b.out,
	}
}

// headerRoom is buf emptied down to the room for the header.
func (b *Builder) headerRoom() []byte {
	if cap(b.buf) < HeaderSize {
		return make([]byte, HeaderSize, 4<<10)
	}
	return b.buf[:HeaderSize]
}

// records is the encoded records appended so far.
func (b *Builder) records() []byte { return b.buf[HeaderSize:] }

// SetCodec selects the codec that Finish compresses the records with, in Spool's framing (see
// package compress).
func (b *Builder) SetCodec(c compress.Codec) { b.SetCodecLevel(c, 0) }

// SetCodecLevel is SetCodec at a compression level in Kafka's terms (compress.CompressLevel;
// 0: the codec's default). A level out of the codec's range makes Finish fail.
func (b *Builder) SetCodecLevel(c compress.Codec, level int) {
	b.codec = c
	b.level = level
	b.compressor = nil
}

// SetCompressor selects codec c for the attributes but compresses with fn: for tests and
// vectors that need another framing of the same codec (xerial snappy, LZ4 frame variants).
func (b *Builder) SetCompressor(c compress.Codec, fn CompressFunc) {
	b.codec = c
	b.compressor = fn
}

// SetSkipIneffectiveCompression makes Finish write the records uncompressed (codec None) when
// compressing does not make them smaller, as librdkafka, franz-go and kafka-python do.
func (b *Builder) SetSkipIneffectiveCompression(skip bool) { b.skipIneffective = skip }

// SetProducer sets the idempotent producer's id, epoch and the sequence of the first record.
func (b *Builder) SetProducer(id int64, epoch int16, baseSequence int32) {
	b.producerID, b.producerEpoch, b.baseSequence = id, epoch, baseSequence
}

// SetTransactional sets or clears the transactional bit.
func (b *Builder) SetTransactional(on bool) { b.setAttr(AttrTransactional, on) }

// SetBaseOffset sets the base offset (producers send 0).
func (b *Builder) SetBaseOffset(offset int64) { b.baseOffset = offset }

// SetPartitionLeaderEpoch sets the partition leader epoch (producers send -1).
func (b *Builder) SetPartitionLeaderEpoch(epoch int32) { b.leaderEpoch = epoch }

// SetLogAppendTime makes the batch a LogAppendTime batch with append time ts, which becomes
// maxTimestamp and every record's timestamp for readers.
func (b *Builder) SetLogAppendTime(ts int64) {
	b.setAttr(AttrLogAppendTime, true)
	b.appendTime = ts
}

func (b *Builder) setAttr(bit Attributes, on bool) {
	if on {
		b.attrs |= bit
	} else {
		b.attrs &^= bit
	}
}

// NumRecords is the number of records appended so far.
func (b *Builder) NumRecords() int { return int(b.count) }

// Size is the size the batch would have uncompressed: header plus encoded records.
func (b *Builder) Size() int { return max(len(b.buf), HeaderSize) }

// Uncompressed is the batch's records as appended, after HeaderSize bytes of room for the
// header (sealed only by an uncompressed Finish): the builder's own buffer, which keeps the
// records uncompressed when Finish compresses them into another. Valid until the next
// Append or Reset, which may reuse or move it.
func (b *Builder) Uncompressed() []byte { return b.buf }

// Append adds a record with the next offset delta (0, 1, 2, ...). A nil key or value is
// written as null; a non-nil empty one as empty. A header with a nil Value has a null value.
func (b *Builder) Append(timestamp int64, key, value []byte, headers []RecordHeader) {
	b.appendRecord(b.lastDelta+1, timestamp, key, value, headers)
}

// AppendAt adds a record with an explicit offset delta, which must exceed the previous one:
// gaps are what compaction leaves. lastOffsetDelta becomes offsetDelta.
func (b *Builder) AppendAt(offsetDelta int32, timestamp int64, key, value []byte, headers []RecordHeader) error {
	if offsetDelta <= b.lastDelta {
		return fmt.Errorf("batch: offset delta %d does not follow %d", offsetDelta, b.lastDelta)
	}
	b.appendRecord(offsetDelta, timestamp, key, value, headers)
	return nil
}

// AppendControl makes the batch a control batch (control and transactional bits) holding the
// one control record of type t (ABORT or COMMIT) with the coordinator's epoch. The Builder must
// have no record yet; set the producer id and epoch of the transaction.
func (b *Builder) AppendControl(t ControlType, coordinatorEpoch int32, timestamp int64) error {
	if b.count != 0 {
		return errors.New("batch: a control batch holds only its control record")
	}
	var key [4]byte
	binary.BigEndian.PutUint16(key[2:], uint16(t)) // version 0
	var value [6]byte
	binary.BigEndian.PutUint32(value[2:], uint32(coordinatorEpoch)) // version 0
	b.attrs |= AttrControl | AttrTransactional
	b.Append(timestamp, key[:], value[:], nil)
	return nil
}

func nullableLen(v []byte) int32 {
	if v == nil {
		return -1
	}
	return int32(len(v))
}

func (b *Builder) appendRecord(offsetDelta int32, ts int64, key, value []byte, headers []RecordHeader) {
	if b.count == 0 {
		b.baseTimestamp, b.maxTimestamp = ts, ts
	}
	b.maxTimestamp = max(b.maxTimestamp, ts)
	tsDelta := ts - b.baseTimestamp

	// The body's size first, for the length prefix.
	size := 1 + wire.VarintLen(tsDelta) + wire.VarintLen(int64(offsetDelta)) +
		wire.VarintLen(int64(nullableLen(key))) + len(key) +
		wire.VarintLen(int64(nullableLen(value))) + len(value) +
		wire.VarintLen(int64(len(headers)))
	for _, h := range headers {
		size += wire.VarintLen(int64(len(h.Key))) + len(h.Key) +
			wire.VarintLen(int64(nullableLen(h.Value))) + len(h.Value)
	}
	if size > math.MaxInt32 {
		panic(fmt.Sprintf("batch: record of %d bytes", size))
	}
	if len(b.buf) < HeaderSize {
		b.buf = b.headerRoom() // a zero Builder, not made by NewBuilder
	}
	r := b.buf
	if need := size + binary.MaxVarintLen32; cap(r)-len(r) < need {
		// Double at least: append grows large slices by about 1.25x, which for a batch of
		// a megabyte leaves several times its size as garbage and copies it as often.
		r = slices.Grow(r, max(need, cap(r)))
	}
	r = wire.AppendVarint(r, int32(size))
	r = append(r, 0) // attributes
	r = wire.AppendVarlong(r, tsDelta)
	r = wire.AppendVarint(r, offsetDelta)
	r = wire.AppendVarint(r, nullableLen(key))
	r = append(r, key...)
	r = wire.AppendVarint(r, nullableLen(value))
	r = append(r, value...)
	r = wire.AppendVarint(r, int32(len(headers)))
	for _, h := range headers {
		r = wire.AppendVarint(r, int32(len(h.Key)))
		r = append(r, h.Key...)
		r = wire.AppendVarint(r, nullableLen(h.Value))
		r = append(r, h.Value...)
	}
	b.buf = r
	b.count++
	b.lastDelta = offsetDelta
}

// Finish builds the batch and returns it. Uncompressed, it is the Builder's record buffer with
// the header written in place; compressed, a buffer of the Builder's own. It stays valid until
// the next Reset or Finish. The records are kept: Finish may be called again, also after more
// records were appended.
func (b *Builder) Finish() ([]byte, error) {
	if err := b.checkNotEmpty(); err != nil {
		return nil, err
	}
	if b.codec != compress.None {
		out, codec, err := b.appendCompressed(b.out[:0])
		if err != nil {
			return nil, err
		}
		b.out = out
		if codec != compress.None {
			if err := b.seal(out, codec); err != nil {
				return nil, err
			}
			return out, nil
		}
	}
	if err := b.seal(b.buf, compress.None); err != nil {
		return nil, err
	}
	return b.buf, nil
}

var zeroHeader [HeaderSize]byte

// AppendBatch appends the batch to dst: header, records compressed with the codec, lengths and
// CRC. It fails on an empty Builder (Kafka has no use for empty batches from producers) and
// when compression fails.
func (b *Builder) AppendBatch(dst []byte) ([]byte, error) {
	if err := b.checkNotEmpty(); err != nil {
		return dst, err
	}
	start := len(dst)
	codec := compress.None
	if b.codec != compress.None {
		var err error
		if dst, codec, err = b.appendCompressed(dst); err != nil {
			return dst, err
		}
	}
	if codec == compress.None {
		// The header room is overwritten by seal.
		dst = append(dst, b.buf...)
	}
	if err := b.seal(dst[start:], codec); err != nil {
		return dst[:start], err
	}
	return dst, nil
}

func (b *Builder) checkNotEmpty() error {
	if b.count == 0 {
		return errors.New("batch: no records to build a batch from")
	}
	return nil
}

// appendCompressed appends room for the header and the records compressed with the codec to
// dst. When compressing does not pay and the Builder skips ineffective compression, it
// returns dst unchanged and codec None.
func (b *Builder) appendCompressed(dst []byte) ([]byte, compress.Codec, error) {
	start := len(dst)
	dst = append(dst, zeroHeader[:]...)
	recs := b.records()
	var err error
	if b.compressor != nil {
		dst, err = b.compressor(dst, recs)
	} else {
		dst, err = compress.CompressLevel(dst, recs, b.codec, b.level)
	}
	if err != nil {
		return dst[:start], compress.None, fmt.Errorf("batch: compressing records: %w", err)
	}
	if b.skipIneffective && len(dst)-start-HeaderSize >= len(recs) {
		return dst[:start], compress.None, nil
	}
	return dst, b.codec, nil
}

// seal writes the header of batch h, whose body follows the header room, and its CRC.
func (b *Builder) seal(h []byte, codec compress.Codec) error {
	if len(h)-LogOverhead > math.MaxInt32 {
		return fmt.Errorf("batch: %d bytes do not fit a batch", len(h))
	}
	maxTS := b.maxTimestamp
	if b.attrs.LogAppendTime() {
		maxTS = b.appendTime
	}
	be := binary.BigEndian
	be.PutUint64(h[offBaseOffset:], uint64(b.baseOffset))
	be.PutUint32(h[offBatchLength:], uint32(len(h)-LogOverhead))
	be.PutUint32(h[offLeaderEpoch:], uint32(b.leaderEpoch))
	h[offMagic] = Magic
	be.PutUint16(h[offAttributes:], uint16(b.attrs|Attributes(codec)))
	be.PutUint32(h[offLastOffsetDelta:], uint32(b.lastDelta))
	be.PutUint64(h[offBaseTimestamp:], uint64(b.baseTimestamp))
	be.PutUint64(h[offMaxTimestamp:], uint64(maxTS))
	be.PutUint64(h[offProducerID:], uint64(b.producerID))
	be.PutUint16(h[offProducerEpoch:], uint16(b.producerEpoch))
	be.PutUint32(h[offBaseSequence:], uint32(b.baseSequence))
	be.PutUint32(h[offRecordsCount:], uint32(b.count))
	be.PutUint32(h[offCRC:], Checksum(h))
	return nil
}

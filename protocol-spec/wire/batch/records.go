package batch

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/spoolmq/spool/protocol-spec/wire"
	"github.com/spoolmq/spool/protocol-spec/wire/compress"
)

// Record is one record of a batch. Key, Value and the headers alias the batch (uncompressed) or
// the Iterator's decompression buffer (compressed): they stay valid until the Iterator is Reset
// and the batch is changed; copy them to keep them longer.
type Record struct {
	// Offset is baseOffset + OffsetDelta.
	Offset int64
	// Timestamp is baseTimestamp + TimestampDelta, or the batch's maxTimestamp when the batch
	// uses LogAppendTime.
	Timestamp      int64
	TimestampDelta int64
	OffsetDelta    int32
	Attributes     int8
	// Key and Value are nil when null, non-nil (maybe empty) otherwise.
	Key   []byte
	Value []byte
	// NumHeaders is the number of headers; Headers iterates them.
	NumHeaders int
	headers    []byte
}

// RecordHeader is one record header. Value is nil when null. The key is never null.
type RecordHeader struct {
	Key   []byte
	Value []byte
}

// Headers returns an iterator over the record's headers, which allocates nothing.
func (r Record) Headers() HeaderIterator {
	var h HeaderIterator
	h.r.Reset(r.headers)
	h.left = r.NumHeaders
	return h
}

// AppendHeaders appends the record's headers to dst (their bytes alias the record's).
func (r Record) AppendHeaders(dst []RecordHeader) []RecordHeader {
	for it := r.Headers(); it.Next(); {
		dst = append(dst, it.Header())
	}
	return dst
}

// HeaderIterator walks a record's headers, already checked by the Iterator that produced the
// record.
type HeaderIterator struct {
	r    wire.Reader
	left int
	cur  RecordHeader
}

// Next advances to the next header and reports whether there is one.
func (h *HeaderIterator) Next() bool {
	if h.left <= 0 {
		return false
	}
	h.left--
	h.cur.Key = h.r.Raw(int(h.r.Varint()))
	h.cur.Value = nullableRaw(&h.r)
	return h.r.Err() == nil
}

// Header is the current header.
func (h *HeaderIterator) Header() RecordHeader { return h.cur }

func nullableRaw(r *wire.Reader) []byte {
	n := r.Varint()
	if n == -1 {
		return nil
	}
	return r.Raw(int(n))
}

// Iterator walks the records of one batch without allocating per record. The zero value is
// ready for Reset; an Iterator reuses its decompression buffer across Resets. It is not safe
// for concurrent use.
//
//	var it batch.Iterator
//	if err := it.Reset(b, limit); err != nil { ... }
//	for it.Next() {
//		rec := it.Record()
//		...
//	}
//	if err := it.Err(); err != nil { ... }
type Iterator struct {
	h         Header
	buf       []byte // decompression buffer, reused
	r         wire.Reader
	rr        wire.Reader
	rec       Record
	index     int32
	prevDelta int64
	err       error
	// region is what r reads: the uncompressed records region.
	region []byte
	// keyAt and valueAt are where the current record's key and value start in region.
	keyAt, valueAt int
}

// maxPooledBuffer is the largest decompression buffer kept for reuse by ValidateRecords.
const maxPooledBuffer = 16 << 20

// Reset points the iterator at the batch b: it runs Validate on b, then decompresses the records
// into the iterator's buffer, producing at most limit bytes (ErrTooLarge beyond). limit does not
// matter for uncompressed batches. On error the iterator yields nothing.
func (it *Iterator) Reset(b []byte, limit int) error {
	it.rec = Record{}
	it.index = 0
	it.prevDelta = -1
	it.r.Reset(nil)
	it.region = nil
	h, err := Validate(b)
	it.h = h
	if err != nil {
		it.err = err
		return err
	}
	records := b[HeaderSize:]
	if c := h.Attributes.Codec(); c != compress.None {
		it.buf, err = compress.Decompress(it.buf[:0], records, c, limit)
		if err != nil {
			if errors.Is(err, compress.ErrLimit) {
				err = fmt.Errorf("%w: %w", ErrTooLarge, err)
			} else {
				err = fmt.Errorf("%w: records: %w", ErrCorrupt, err)
			}
			it.err = err
			return err
		}
		records = it.buf
		if int64(h.RecordsCount)*minRecordSize > int64(len(records)) {
			it.err = fmt.Errorf("%w: %d records cannot fit in %d decompressed bytes", ErrInvalidRecord, h.RecordsCount, len(records))
			return it.err
		}
	}
	it.r.Reset(records)
	it.region = records
	it.err = nil
	return nil
}

// release drops the references to the last batch, and a buffer too large to keep pooled.
func (it *Iterator) release() {
	it.r.Reset(nil)
	it.region = nil
	it.rr.Reset(nil)
	it.rec = Record{}
	if cap(it.buf) > maxPooledBuffer {
		it.buf = nil
	}
}

// Header is the header of the batch the iterator was Reset to.
func (it *Iterator) Header() Header { return it.h }

// Err is the first error met by Reset or Next, nil if the batch was read to its end and all
// its records were well formed.
func (it *Iterator) Err() error { return it.err }

// Record is the current record. It is a small struct whose slices alias the batch (see Record).
func (it *Iterator) Record() Record { return it.rec }

// Region is the uncompressed records region of the batch: a part of the batch, or the
// iterator's decompression buffer, which the next Reset to a compressed batch overwrites (take
// it and Reset a fresh Iterator to keep it). With Positions it lets a reader keep the records
// as offsets into one buffer instead of as slices, which the garbage collector would trace.
func (it *Iterator) Region() []byte { return it.region }

// Positions is where the current record's key and value start in Region: Key is
// Region()[key:key+len(Key)], and likewise Value. A null key or value has position 0.
func (it *Iterator) Positions() (key, value int) { return it.keyAt, it.valueAt }

// Next parses the next record and reports whether there is one. At the end it checks that the
// records region held exactly recordsCount records.
func (it *Iterator) Next() bool {
	if it.err != nil {
		return false
	}
	if it.index >= it.h.RecordsCount {
		if n := it.r.Remaining(); n > 0 {
			it.err = fmt.Errorf("%w: %d bytes after the last of %d records", ErrInvalidRecord, n, it.h.RecordsCount)
		}
		return false
	}
	if err := it.parse(); err != nil {
		it.err = fmt.Errorf("%w: record %d of %d: %w", ErrInvalidRecord, it.index, it.h.RecordsCount, err)
		return false
	}
	it.index++
	return true
}

var (
	errRecordSize  = errors.New("record length disagrees with its fields")
	errNegativeLen = errors.New("negative length")
	errOffsetDelta = errors.New("offset delta out of order or out of range")
)

func (it *Iterator) parse() error {
	r := &it.r
	length := r.Varint()
	at := r.Offset()
	body := r.Raw(int(length))
	if err := r.Err(); err != nil {
		return err
	}
	rr := &it.rr
	rr.Reset(body)
	rec := &it.rec
	rec.Attributes = rr.Int8()
	rec.TimestampDelta = rr.Varlong()
	rec.OffsetDelta = rr.Varint()
	keyLen := rr.Varint()
	if keyLen < -1 {
		return fmt.Errorf("key: %w %d", errNegativeLen, keyLen)
	}
	rec.Key, it.keyAt = nil, 0
	if keyLen >= 0 {
		it.keyAt = at + rr.Offset()
		rec.Key = rr.Raw(int(keyLen))
	}
	valueLen := rr.Varint()
	if valueLen < -1 {
		return fmt.Errorf("value: %w %d", errNegativeLen, valueLen)
	}
	rec.Value, it.valueAt = nil, 0
	if valueLen >= 0 {
		it.valueAt = at + rr.Offset()
		rec.Value = rr.Raw(int(valueLen))
	}
	count := rr.Varint()
	if err := rr.Err(); err != nil {
		return err
	}
	// Each header takes at least two bytes: a hostile count fails here, not in a long loop.
	if count < 0 || int(count) > rr.Remaining()/2 {
		return fmt.Errorf("header count %d with %d bytes left", count, rr.Remaining())
	}
	start := rr.Offset()
	for i := int32(0); i < count; i++ {
		kl := rr.Varint()
		if kl < 0 {
			return fmt.Errorf("header %d key: %w %d", i, errNegativeLen, kl)
		}
		rr.Skip(int(kl))
		vl := rr.Varint()
		if vl < -1 {
			return fmt.Errorf("header %d value: %w %d", i, errNegativeLen, vl)
		}
		if vl > 0 {
			rr.Skip(int(vl))
		}
	}
	if err := rr.Err(); err != nil {
		return err
	}
	if rr.Remaining() != 0 {
		return fmt.Errorf("%w: %d bytes unread of %d", errRecordSize, rr.Remaining(), length)
	}
	rec.NumHeaders = int(count)
	rec.headers = body[start:len(body):len(body)]
	d := int64(rec.OffsetDelta)
	if d <= it.prevDelta || d > int64(it.h.LastOffsetDelta) {
		return fmt.Errorf("%w: %d after %d, last %d", errOffsetDelta, d, it.prevDelta, it.h.LastOffsetDelta)
	}
	it.prevDelta = d
	rec.Offset = it.h.BaseOffset + d
	if it.h.Attributes.LogAppendTime() {
		rec.Timestamp = it.h.MaxTimestamp
	} else {
		rec.Timestamp = it.h.BaseTimestamp + rec.TimestampDelta
	}
	return nil
}

// ControlType is the type of a control record.
type ControlType int16

// Control record types (Kafka's ControlRecordType).
const (
	ControlAbort  ControlType = 0
	ControlCommit ControlType = 1
)

// String returns Kafka's name of the type.
func (t ControlType) String() string {
	switch t {
	case ControlAbort:
		return "ABORT"
	case ControlCommit:
		return "COMMIT"
	}
	return fmt.Sprintf("UNKNOWN(%d)", int16(t))
}

// ControlRecord is a decoded control record. For ABORT and COMMIT the value is an end
// transaction marker (ValueVersion, CoordinatorEpoch); for other types those stay zero.
type ControlRecord struct {
	Version          int16
	Type             ControlType
	ValueVersion     int16
	CoordinatorEpoch int32
}

// ParseControlRecord decodes the key and value of a record from a control batch. As Kafka
// does, it accepts longer keys and values than version 0 defines and ignores the rest.
func ParseControlRecord(key, value []byte) (ControlRecord, error) {
	var c ControlRecord
	if len(key) < 4 {
		return c, fmt.Errorf("%w: control record key of %d bytes, need 4", ErrInvalidRecord, len(key))
	}
	c.Version = int16(binary.BigEndian.Uint16(key))
	c.Type = ControlType(binary.BigEndian.Uint16(key[2:]))
	if c.Type != ControlAbort && c.Type != ControlCommit {
		return c, nil
	}
	if len(value) < 6 {
		return c, fmt.Errorf("%w: end transaction marker of %d bytes, need 6", ErrInvalidRecord, len(value))
	}
	c.ValueVersion = int16(binary.BigEndian.Uint16(value))
	c.CoordinatorEpoch = int32(binary.BigEndian.Uint32(value[2:]))
	return c, nil
}

package txn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf16"
)

// Topic is the internal topic holding the coordinator's state.
const Topic = "__transaction_state"

// PartitionFor is the __transaction_state partition of a transactional id, as Kafka computes
// it: abs(String.hashCode(id)) % partitions, with Kafka's Utils.abs (the sign bit cleared).
func PartitionFor(id string, partitions int32) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(id)) {
		h = 31*h + int32(u)
	}
	return int32(uint32(h)&0x7fffffff) % partitions
}

// Records of __transaction_state, in Kafka's layout (TransactionLogKey and
// TransactionLogValue version 0): the key is int16 version 0 and the transactional id; the
// value is int16 version 0, int64 producer id, int16 epoch, int32 timeout ms, int8 state,
// the partitions (int32 count; per topic a string and an int32 array), int64 last update and
// int64 start timestamps. A null value (tombstone) forgets the id.

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// Key is the record key of a transactional id.
func Key(id string) []byte {
	b := binary.BigEndian.AppendUint16(make([]byte, 0, 4+len(id)), 0)
	return appendString(b, id)
}

// Value is the record value of a transactional id's metadata.
func Value(m Meta) []byte {
	be := binary.BigEndian
	b := be.AppendUint16(nil, 0)
	b = be.AppendUint64(b, uint64(m.ProducerID))
	b = be.AppendUint16(b, uint16(m.Epoch))
	b = be.AppendUint32(b, uint32(m.TimeoutMs))
	b = append(b, byte(m.State))
	// Partitions grouped by topic (they are sorted).
	var topics int
	for i, tp := range m.Partitions {
		if i == 0 || m.Partitions[i-1].Topic != tp.Topic {
			topics++
		}
	}
	b = be.AppendUint32(b, uint32(topics))
	for i := 0; i < len(m.Partitions); {
		j := i
		for j < len(m.Partitions) && m.Partitions[j].Topic == m.Partitions[i].Topic {
			j++
		}
		b = appendString(b, m.Partitions[i].Topic)
		b = be.AppendUint32(b, uint32(j-i))
		for _, tp := range m.Partitions[i:j] {
			b = be.AppendUint32(b, uint32(tp.Partition))
		}
		i = j
	}
	b = be.AppendUint64(b, uint64(m.UpdateMs))
	return be.AppendUint64(b, uint64(m.StartMs))
}

var errRecord = errors.New("invalid __transaction_state record")

type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil || n < 0 || len(r.b) < n {
		r.err = errRecord
		return make([]byte, max(n, 0))
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}
func (r *reader) i16() int16 { return int16(binary.BigEndian.Uint16(r.take(2))) }
func (r *reader) i32() int32 { return int32(binary.BigEndian.Uint32(r.take(4))) }
func (r *reader) i64() int64 { return int64(binary.BigEndian.Uint64(r.take(8))) }
func (r *reader) str() string {
	n := int(r.i16())
	return string(r.take(n))
}

// DecodeKey returns the transactional id of a record key.
func DecodeKey(k []byte) (string, error) {
	r := reader{b: k}
	if v := r.i16(); v != 0 {
		return "", fmt.Errorf("%w: key version %d", errRecord, v)
	}
	id := r.str()
	if r.err != nil {
		return "", r.err
	}
	return id, nil
}

// DecodeValue returns the metadata of a record value (version 0).
func DecodeValue(id string, v []byte) (Meta, error) {
	r := reader{b: v}
	if ver := r.i16(); ver != 0 {
		return Meta{}, fmt.Errorf("%w: value version %d", errRecord, ver)
	}
	m := Meta{ID: id, LastProducerID: -1, LastEpoch: -1}
	m.ProducerID = r.i64()
	m.Epoch = r.i16()
	m.TimeoutMs = r.i32()
	m.State = State(r.take(1)[0])
	n := int(r.i32())
	if n < 0 || n > len(r.b) {
		return Meta{}, fmt.Errorf("%w: %d topics", errRecord, n)
	}
	for range n {
		topic := r.str()
		np := int(r.i32())
		if np < 0 || np > len(r.b)/4 {
			return Meta{}, fmt.Errorf("%w: %d partitions", errRecord, np)
		}
		for range np {
			m.Partitions = append(m.Partitions, TopicPartition{Topic: topic, Partition: r.i32()})
		}
	}
	m.UpdateMs = r.i64()
	m.StartMs = r.i64()
	if r.err != nil {
		return Meta{}, r.err
	}
	return m, nil
}

package group

// Records of the internal topic __consumer_offsets, in Kafka's byte layouts (non-flexible
// versions: int16 string lengths, int32 byte and array lengths, -1 for null):
//
//	offset commit key v1:      version int16 = 1, group string, topic string, partition int32
//	offset commit value v1:    version int16 = 1, offset int64, metadata string,
//	                           commit_timestamp int64, expire_timestamp int64
//	offset commit value v3:    version int16 = 3, offset int64, leader_epoch int32,
//	                           metadata string, commit_timestamp int64
//	group metadata key v2:     version int16 = 2, group string
//	group metadata value v3:   version int16 = 3, protocol_type string, generation int32,
//	                           protocol string?, leader string?, current_state_timestamp int64,
//	                           members [member_id string, group_instance_id string?,
//	                           client_id string, client_host string, rebalance_timeout int32,
//	                           session_timeout int32, subscription bytes, assignment bytes]
//
// A null value is a tombstone: the offset or group is deleted. The coordinator partition of a
// group is abs(String.hashCode(group)) % partitions, as Kafka computes it.

import (
	"encoding/binary"
	"errors"
	"unicode/utf16"
)

// partitionFor is Kafka's Utils.abs(groupId.hashCode()) % n.
func partitionFor(group string, n int32) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(group)) {
		h = 31*h + int32(u)
	}
	return int32(uint32(h)&0x7fffffff) % n
}

type enc []byte

func (e enc) i16(v int16) enc { return binary.BigEndian.AppendUint16(e, uint16(v)) }
func (e enc) i32(v int32) enc { return binary.BigEndian.AppendUint32(e, uint32(v)) }
func (e enc) i64(v int64) enc { return binary.BigEndian.AppendUint64(e, uint64(v)) }
func (e enc) str(s string) enc {
	return append(e.i16(int16(len(s))), s...)
}
func (e enc) nstr(s *string) enc {
	if s == nil {
		return e.i16(-1)
	}
	return e.str(*s)
}
func (e enc) bytes(b []byte) enc {
	if b == nil {
		return e.i32(-1)
	}
	return append(e.i32(int32(len(b))), b...)
}

var errShort = errors.New("__consumer_offsets record too short")

type dec struct {
	b   []byte
	err error
}

func (d *dec) take(n int) []byte {
	if d.err != nil || n < 0 || len(d.b) < n {
		d.err = errShort
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}
func (d *dec) i16() int16 {
	b := d.take(2)
	if b == nil {
		return 0
	}
	return int16(binary.BigEndian.Uint16(b))
}
func (d *dec) i32() int32 {
	b := d.take(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}
func (d *dec) i64() int64 {
	b := d.take(8)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}
func (d *dec) nstr() *string {
	n := d.i16()
	if n < 0 {
		return nil
	}
	s := string(d.take(int(n)))
	return &s
}
func (d *dec) str() string {
	if s := d.nstr(); s != nil {
		return *s
	}
	return ""
}
func (d *dec) bytes() []byte {
	n := d.i32()
	if n < 0 {
		return nil
	}
	return append([]byte{}, d.take(int(n))...)
}

func offsetKey(group, topic string, partition int32) []byte {
	return enc(nil).i16(1).str(group).str(topic).i32(partition)
}

func offsetValue(o offsetEntry) []byte {
	if o.expireTime >= 0 {
		return enc(nil).i16(1).i64(o.offset).str(o.metadata).i64(o.commitTime).i64(o.expireTime)
	}
	return enc(nil).i16(3).i64(o.offset).i32(o.leaderEpoch).str(o.metadata).i64(o.commitTime)
}

func groupKey(group string) []byte { return enc(nil).i16(2).str(group) }

// groupSnapshot is the persisted part of a group.
type groupSnapshot struct {
	protocolType string
	generation   int32
	protocol     *string
	leader       *string
	stateTime    int64
	members      []memberSnapshot
}

type memberSnapshot struct {
	id, clientID, clientHost         string
	instanceID                       *string
	rebalanceTimeout, sessionTimeout int32
	subscription, assignment         []byte
}

func groupValue(s groupSnapshot) []byte {
	e := enc(nil).i16(3).str(s.protocolType).i32(s.generation).nstr(s.protocol).nstr(s.leader).i64(s.stateTime)
	e = e.i32(int32(len(s.members)))
	for _, m := range s.members {
		sub, asg := m.subscription, m.assignment
		if sub == nil {
			sub = []byte{}
		}
		if asg == nil {
			asg = []byte{}
		}
		e = e.str(m.id).nstr(m.instanceID).str(m.clientID).str(m.clientHost).i32(m.rebalanceTimeout).i32(m.sessionTimeout).bytes(sub).bytes(asg)
	}
	return e
}

// parsedKey is a decoded record key: an offset (topic set) or a group.
type parsedKey struct {
	version   int16
	group     string
	topic     string
	partition int32
}

func parseKey(b []byte) (parsedKey, error) {
	d := dec{b: b}
	k := parsedKey{version: d.i16()}
	switch k.version {
	case 0, 1:
		k.group, k.topic, k.partition = d.str(), d.str(), d.i32()
	case 2:
		k.group = d.str()
	default:
		return k, errors.New("unknown __consumer_offsets key version")
	}
	return k, d.err
}

func parseOffsetValue(b []byte) (offsetEntry, error) {
	d := dec{b: b}
	o := offsetEntry{leaderEpoch: -1, expireTime: -1}
	v := d.i16()
	o.offset = d.i64()
	if v >= 3 {
		o.leaderEpoch = d.i32()
	}
	o.metadata = d.str()
	o.commitTime = d.i64()
	if v == 1 {
		o.expireTime = d.i64()
	}
	if v < 0 || v > 3 {
		return o, errors.New("unknown offset value version")
	}
	return o, d.err
}

func parseGroupValue(b []byte) (groupSnapshot, error) {
	d := dec{b: b}
	v := d.i16()
	if v < 0 || v > 3 {
		return groupSnapshot{}, errors.New("unknown group value version")
	}
	s := groupSnapshot{protocolType: d.str(), generation: d.i32(), protocol: d.nstr(), leader: d.nstr()}
	if v >= 2 {
		s.stateTime = d.i64()
	}
	n := d.i32()
	for i := int32(0); i < n && d.err == nil; i++ {
		m := memberSnapshot{id: d.str()}
		if v >= 3 {
			m.instanceID = d.nstr()
		}
		m.clientID, m.clientHost = d.str(), d.str()
		if v >= 1 {
			m.rebalanceTimeout = d.i32()
		}
		m.sessionTimeout = d.i32()
		m.subscription, m.assignment = d.bytes(), d.bytes()
		if v == 0 {
			m.rebalanceTimeout = m.sessionTimeout
		}
		s.members = append(s.members, m)
	}
	return s, d.err
}

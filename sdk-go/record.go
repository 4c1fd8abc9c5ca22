package spool

import (
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

// Header is a record header. Value nil is a null value.
type Header = batch.RecordHeader

// Record is one record, produced or consumed.
type Record struct {
	// Topic is the record's topic; required to produce.
	Topic string
	// Partition is set by the partitioner when producing (read it in the callback), or used
	// as given with ManualPartitioner.
	Partition int32
	// Offset is set once the record is acknowledged (-1 with acks=0) and on consumed records.
	Offset int64
	// Key and Value; nil is null, non-nil empty is empty.
	Key   []byte
	Value []byte
	// Headers are the record's headers.
	Headers []Header
	// Timestamp is the record's time; zero when producing means now.
	Timestamp time.Time
	// LeaderEpoch is the partition leader epoch of a consumed record's batch.
	LeaderEpoch int32
}

// StringRecord returns a record for topic with a string value and no key.
func StringRecord(topic, value string) *Record {
	return &Record{Topic: topic, Value: []byte(value)}
}

// KeyStringRecord returns a record for topic with a string key and value.
func KeyStringRecord(topic, key, value string) *Record {
	return &Record{Topic: topic, Key: []byte(key), Value: []byte(value)}
}

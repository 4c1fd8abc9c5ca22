package txn

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRecordsKafkaLayout checks our __transaction_state records against kmsg's
// TxnMetadataKey/Value (franz-go's description of Kafka's layout) byte for byte.
func TestRecordsKafkaLayout(t *testing.T) {
	m := Meta{ID: "orders-tx", ProducerID: 4001, Epoch: 7, TimeoutMs: 60000, State: Ongoing, LastProducerID: -1, LastEpoch: -1,
		Partitions: []TopicPartition{{"a", 0}, {"a", 3}, {"b", 1}}, UpdateMs: 1700000000123, StartMs: 1700000000000}
	k := Key(m.ID)
	var kk kmsg.TxnMetadataKey
	if err := kk.ReadFrom(k); err != nil || kk.TransactionalID != m.ID || !bytes.Equal(kk.AppendTo(nil), k) {
		t.Fatalf("key %x: kmsg reads %+v, %v", k, kk, err)
	}
	v := Value(m)
	var kv kmsg.TxnMetadataValue
	if err := kv.ReadFrom(v); err != nil {
		t.Fatalf("kmsg cannot read our value %x: %v", v, err)
	}
	if kv.ProducerID != 4001 || kv.ProducerEpoch != 7 || kv.TimeoutMillis != 60000 || int8(kv.State) != int8(Ongoing) ||
		len(kv.Topics) != 2 || kv.Topics[0].Topic != "a" || len(kv.Topics[0].Partitions) != 2 || kv.StartTimestamp != m.StartMs || kv.LastUpdateTimestamp != m.UpdateMs {
		t.Fatalf("kmsg reads %+v", kv)
	}
	if back := kv.AppendTo(nil); !bytes.Equal(back, v) {
		t.Fatalf("kmsg re-encodes differently\nours: %x\nkmsg: %x", v, back)
	}
	id, err := DecodeKey(k)
	if err != nil || id != m.ID {
		t.Fatalf("DecodeKey = %q, %v", id, err)
	}
	got, err := DecodeValue(id, v)
	if err != nil || !reflect.DeepEqual(got, m) {
		t.Fatalf("DecodeValue = %+v, %v; want %+v", got, err, m)
	}
	for i := 1; i < len(v); i++ {
		if _, err := DecodeValue(id, v[:i]); err == nil {
			t.Fatalf("a value cut to %d bytes decoded", i)
		}
	}
}

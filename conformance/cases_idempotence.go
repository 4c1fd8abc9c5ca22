package conformance

import (
	"fmt"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// Idempotent produce: SPEC.md §8.1 (idempotence), §8.13.

// producerID gets a new idempotent producer id and epoch, retrying retriable errors as
// clients do (Kafka answers COORDINATOR_LOAD_IN_PROGRESS until it can hand out ids).
func (t *T) producerID(c *Conn, v int16) (int64, int16) {
	req := def[wire.InitProducerIdRequest]()
	req.TransactionTimeoutMs = 60000
	var resp wire.InitProducerIdResponse
	t.waitFor("a producer id", func() (bool, string) {
		resp = wire.InitProducerIdResponse{}
		t.Do(c, req, &resp, v)
		if err := wire.ErrorForCode(resp.ErrorCode); err != nil && !wire.IsRetriable(err) {
			t.Fatalf("InitProducerId v%d: %s", v, codeName(resp.ErrorCode))
		}
		return resp.ErrorCode == 0, codeName(resp.ErrorCode)
	})
	return resp.ProducerId, resp.ProducerEpoch
}

// idempotent creates a topic with n partitions and gets a producer id for it.
func (t *T) idempotent(n int32) (topic string, c *Conn, pid int64, epoch int16) {
	topic, c = t.Topic(n), t.Conn()
	pid, epoch = t.producerID(c, maxV(wire.KeyInitProducerId))
	return topic, c, pid, epoch
}

func idem(pid int64, epoch int16, seq int32) batchOpts {
	return batchOpts{producerID: pid, epoch: epoch, sequence: seq}
}

func init() {
	for _, v := range []int16{0, maxV(wire.KeyInitProducerId)} {
		register(&Case{ID: fmt.Sprintf("idempotence/init-producer-id-v%d", v), Spec: "§8.13",
			Desc: fmt.Sprintf("InitProducerId v%d without a transactional id returns a producer id >= 0 and an epoch >= 0, new each time", v),
			Run: func(t *T) {
				c := t.Conn()
				a, ea := t.producerID(c, v)
				b, eb := t.producerID(c, v)
				if a < 0 || ea < 0 || b < 0 || eb < 0 {
					t.Errorf("producer ids %d/%d epochs %d/%d, want all >= 0", a, b, ea, eb)
				}
				if a == b && ea == eb {
					t.Errorf("two calls returned the same producer id and epoch %d/%d", a, ea)
				}
			}})
	}
	register(&Case{ID: "idempotence/sequence-continues", Spec: "§8.1",
		Desc: "idempotent batches with following sequences are appended in order",
		Run: func(t *T) {
			topic, c, pid, epoch := t.idempotent(1)
			if o := t.produceOK(c, topic, 0, idem(pid, epoch, 0), values("a", 3)...); o != 0 {
				t.Errorf("first batch at %d, want 0", o)
			}
			if o := t.produceOK(c, topic, 0, idem(pid, epoch, 3), values("b", 2)...); o != 3 {
				t.Errorf("second batch at %d, want 3", o)
			}
		}})
	register(&Case{ID: "idempotence/duplicate-acknowledged", Spec: "§8.1",
		Desc: "a retried batch (same producer, epoch and sequences) is acknowledged with its original offset and not appended again",
		Run: func(t *T) {
			topic, c, pid, epoch := t.idempotent(1)
			t.produceOK(c, topic, 0, idem(pid, epoch, 0), values("x", 2)...)
			b := t.makeBatch(idem(pid, epoch, 2), values("dup", 3)...)
			first := t.produce(c, topic, 0, 1, b, maxV(wire.KeyProduce))
			again := t.produce(c, topic, 0, 1, b, maxV(wire.KeyProduce))
			t.wantCode("first send", first.ErrorCode, nil)
			t.wantCode("duplicate", again.ErrorCode, nil)
			if first.BaseOffset != 2 || again.BaseOffset != 2 {
				t.Errorf("base offsets %d and %d, want 2 and 2", first.BaseOffset, again.BaseOffset)
			}
			t.wantLogEnd(c, topic, 0, 5, "a duplicate")
		}})
	register(&Case{ID: "idempotence/gap-rejected", Spec: "§8.1",
		Desc: "a batch whose sequence skips ahead gets OUT_OF_ORDER_SEQUENCE_NUMBER and is not appended",
		Run: func(t *T) {
			topic, c, pid, epoch := t.idempotent(1)
			t.produceOK(c, topic, 0, idem(pid, epoch, 0), values("x", 2)...)
			r := t.produce(c, topic, 0, 1, t.makeBatch(idem(pid, epoch, 7), values("gap", 1)...), maxV(wire.KeyProduce))
			t.wantCode("sequence 7 after 0-1", r.ErrorCode, wire.ErrOutOfOrderSequenceNumber)
			t.wantLogEnd(c, topic, 0, 2, "a refused batch")
		}})
	register(&Case{ID: "idempotence/new-epoch-starts-at-zero", Spec: "§8.1",
		Desc: "a producer's new epoch must start at sequence 0: another start gets OUT_OF_ORDER_SEQUENCE_NUMBER, 0 is accepted",
		Run: func(t *T) {
			topic, c, pid, epoch := t.idempotent(1)
			t.produceOK(c, topic, 0, idem(pid, epoch, 0), values("x", 2)...)
			r := t.produce(c, topic, 0, 1, t.makeBatch(idem(pid, epoch+1, 5), values("e", 1)...), maxV(wire.KeyProduce))
			t.wantCode("epoch+1 at sequence 5", r.ErrorCode, wire.ErrOutOfOrderSequenceNumber)
			r = t.produce(c, topic, 0, 1, t.makeBatch(idem(pid, epoch+1, 0), values("e", 1)...), maxV(wire.KeyProduce))
			t.wantCode("epoch+1 at sequence 0", r.ErrorCode, nil)
		}})
	register(&Case{ID: "idempotence/old-epoch-fenced", Spec: "§8.1",
		Desc: "once a producer id wrote with a newer epoch, its older epoch gets INVALID_PRODUCER_EPOCH",
		Run: func(t *T) {
			topic, c, pid, epoch := t.idempotent(1)
			t.produceOK(c, topic, 0, idem(pid, epoch+1, 0), values("new", 1)...)
			r := t.produce(c, topic, 0, 1, t.makeBatch(idem(pid, epoch, 0), values("old", 1)...), maxV(wire.KeyProduce))
			t.wantCode("the old epoch", r.ErrorCode, wire.ErrInvalidProducerEpoch)
		}})
	register(&Case{ID: "idempotence/partitions-independent", Spec: "§8.1",
		Desc: "sequences are per partition: one producer starts at 0 on each partition",
		Run: func(t *T) {
			topic, c, pid, epoch := t.idempotent(2)
			t.produceOK(c, topic, 0, idem(pid, epoch, 0), values("p0-", 3)...)
			if o := t.produceOK(c, topic, 1, idem(pid, epoch, 0), values("p1-", 1)...); o != 0 {
				t.Errorf("partition 1 base offset %d, want 0", o)
			}
		}})
}

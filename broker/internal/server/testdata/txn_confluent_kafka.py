"""Drives librdkafka's transactions (python3-confluent-kafka) against a broker.

init_transactions, begin/produce/commit, begin/produce/abort, send_offsets_to_transaction with
a group's metadata, then a read_committed consumer that must see exactly the committed records.
Prints "OK"; any failure raises (exit 1).

Usage: txn_confluent_kafka.py BOOTSTRAP TOPIC GROUP
"""
import sys

from confluent_kafka import Consumer, Producer, TopicPartition


def main():
    bootstrap, topic, group = sys.argv[1:4]
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "py-tx", "linger.ms": 5})
    p.init_transactions(30)

    def txn(prefix, n, commit, offset=None):
        p.begin_transaction()
        for i in range(n):
            p.produce(topic, value=("%s-%d" % (prefix, i)).encode(), partition=i % 2)
        if offset is not None:
            meta = Consumer({"bootstrap.servers": bootstrap, "group.id": group}).consumer_group_metadata()
            p.send_offsets_to_transaction([TopicPartition(topic, 0, offset)], meta, 30)
        if commit:
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)

    txn("pc1", 8, True, offset=4)
    txn("pa", 5, False, offset=77)
    txn("pc2", 3, True)

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group + "-reader", "isolation.level": "read_committed",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False, "enable.partition.eof": True})
    c.assign([TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])
    seen, eof = [], set()
    while len(eof) < 2:
        m = c.poll(30)
        if m is None:
            raise AssertionError("no message or end of partition within 30s; have %r" % seen)
        if m.error():
            if m.error().code() == -191:  # _PARTITION_EOF
                eof.add(m.partition())
                continue
            raise AssertionError("consume: %s" % m.error())
        seen.append(m.value().decode())
    count = lambda pre: sum(1 for v in seen if v.startswith(pre + "-"))
    if count("pc1") != 8 or count("pc2") != 3 or count("pa") != 0 or len(seen) != 11:
        raise AssertionError("read_committed saw %r" % seen)
    c.close()

    g = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    got = g.committed([TopicPartition(topic, 0)], 30)
    if got[0].offset != 4:
        raise AssertionError("the group's committed offset is %d, want 4 (the aborted 77 must not count)" % got[0].offset)
    g.close()
    print("OK")


main()

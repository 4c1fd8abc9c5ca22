"""confluent-kafka (Debian python3-confluent-kafka, librdkafka) against a secured Spool listener.

usage: security_confluent_kafka.py BOOTSTRAP TOPIC ok|refused SETTINGS_JSON
SETTINGS_JSON holds librdkafka's settings (security.protocol, ssl.ca.location, sasl.mechanisms,
sasl.username, sasl.password).

ok: reads [[key_hex, value_hex], ...] on stdin, produces those records to TOPIC with acks=all,
reads TOPIC back from the beginning of every partition and prints what it read in the same
form, one JSON document. Exits 1 on any error.

refused: produces one record and prints {"errors": [[name, text], ...], "delivered": bool}: the
errors librdkafka reported through error_cb until the first one, or the record's delivery (or a
minute, a bound on a hang).
"""
import json
import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition


def ok(addr, topic, settings):
    records = [(bytes.fromhex(k), bytes.fromhex(v)) for k, v in json.load(sys.stdin)]
    failed = []

    def delivered(err, msg):
        if err is not None:
            failed.append(str(err))

    producer = Producer(dict(settings, **{"bootstrap.servers": addr, "acks": "all"}))
    for k, v in records:
        producer.produce(topic, key=k, value=v, on_delivery=delivered)
    if producer.flush(30) != 0 or failed:
        raise SystemExit("not delivered: %s" % failed)

    consumer = Consumer(dict(settings, **{"bootstrap.servers": addr, "group.id": "security-matrix",
                                          "enable.auto.commit": False}))
    md = consumer.list_topics(topic, timeout=30)
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(md.topics[topic].partitions)])
    got = []
    deadline = time.time() + 30  # a bound on a hang, not on the broker's speed
    while len(got) < len(records) and time.time() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                continue
            raise SystemExit("consume: %s" % msg.error())
        got.append([msg.key().hex(), msg.value().hex()])
    consumer.close()
    print(json.dumps(got))


def refused(addr, topic, settings):
    errors, delivered = [], []
    producer = Producer(dict(settings, **{"bootstrap.servers": addr,
                                          "error_cb": lambda err: errors.append([err.name(), err.str()])}))
    producer.produce(topic, value=b"refused", on_delivery=lambda err, msg: delivered.append(err is None))
    deadline = time.time() + 60  # a bound on a hang, not on the broker's speed
    while not errors and not delivered and time.time() < deadline:
        producer.poll(0.2)
    producer.purge()  # the refused record, so that exiting does not wait for it
    print(json.dumps({"errors": errors, "delivered": any(delivered)}))


def main():
    addr, topic, mode, settings = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
    if mode == "ok":
        ok(addr, topic, settings)
    else:
        refused(addr, topic, settings)


main()

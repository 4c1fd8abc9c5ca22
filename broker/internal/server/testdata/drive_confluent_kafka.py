"""Drive a Spool broker with confluent-kafka (Debian python3-confluent-kafka, librdkafka).

usage: drive_confluent_kafka.py HOST:PORT TOPIC CODEC[,CODEC...]
Creates TOPIC with 3 partitions, produces 50 keyed and 50 unkeyed records per codec with the
idempotent producer, consumes everything back and checks it byte for byte. Prints OK on
success, exits 1 otherwise.
"""
import sys

from confluent_kafka import Consumer, OFFSET_BEGINNING, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def main():
    addr, topic, codecs = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    admin = AdminClient({"bootstrap.servers": addr})
    for f in admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)]).values():
        f.result(30)

    want = set()
    errors = []

    def delivered(err, msg):
        if err is not None:
            errors.append(err)

    for codec in codecs:
        producer = Producer({"bootstrap.servers": addr, "compression.type": codec, "linger.ms": 20,
                             "enable.idempotence": True, "partitioner": "murmur2_random"})
        for i in range(100):
            key = ("key%d" % (i % 5)).encode() if i < 50 else None
            value = ("%s-%04d-%s" % (codec, i, "c" * 40)).encode()
            want.add((key, value))
            producer.produce(topic, key=key, value=value, on_delivery=delivered)
        if producer.flush(30) != 0:
            print("flush left messages undelivered")
            sys.exit(1)
    if errors:
        print("delivery errors: %s" % errors[:5])
        sys.exit(1)

    consumer = Consumer({"bootstrap.servers": addr, "group.id": "spool-test", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(3)])
    got = []
    idle = 0
    while len(got) < len(want) and idle < 30:
        msg = consumer.poll(1.0)
        if msg is None:
            idle += 1
            continue
        if msg.error():
            print("consume error: %s" % msg.error())
            sys.exit(1)
        got.append((msg.key(), msg.value()))
    consumer.close()
    if len(got) != len(want) or set(got) != want:
        print("mismatch: consumed %d, produced %d" % (len(got), len(want)))
        sys.exit(1)
    print("OK")


main()

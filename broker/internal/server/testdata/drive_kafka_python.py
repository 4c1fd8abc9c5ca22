"""Drive a Spool broker with kafka-python (Debian python3-kafka 2.0.2).

usage: drive_kafka_python.py HOST:PORT TOPIC CODEC[,CODEC...]
Creates TOPIC with 3 partitions, produces 50 keyed and 50 unkeyed records per codec, consumes
everything back and checks it byte for byte. Prints OK on success, exits 1 otherwise.
"""
import sys

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic


def main():
    addr, topic, codecs = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    admin = KafkaAdminClient(bootstrap_servers=addr)
    admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])
    admin.close()

    want = set()
    for codec in codecs:
        producer = KafkaProducer(bootstrap_servers=addr, compression_type=None if codec == "none" else codec,
                                 linger_ms=20, acks="all")
        futures = []
        for i in range(100):
            key = ("key%d" % (i % 5)).encode() if i < 50 else None
            value = ("%s-%04d-%s" % (codec, i, "b" * 40)).encode()
            want.add((key, value))
            futures.append(producer.send(topic, key=key, value=value))
        producer.flush()
        for f in futures:
            f.get(timeout=30)
        producer.close()

    consumer = KafkaConsumer(bootstrap_servers=addr, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest", consumer_timeout_ms=15000)
    parts = [TopicPartition(topic, p) for p in range(3)]
    consumer.assign(parts)
    consumer.seek_to_beginning(*parts)
    got = []
    for msg in consumer:
        got.append((msg.key, msg.value))
        if len(got) == len(want):
            break
    consumer.close()
    if len(got) != len(want) or set(got) != want:
        print("mismatch: consumed %d, produced %d; missing %s" % (len(got), len(want), sorted(want - set(got))[:5]))
        sys.exit(1)
    print("OK")


main()

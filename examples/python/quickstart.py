"""quickstart.py: produce three records with Spool's Python binding, then read them back in
a consumer group. As with confluent-kafka-python, but `from spool import ...`.

    pip install ./sdk-cgo/bindings/python
    python3 examples/python/quickstart.py 127.0.0.1:9092

The first run creates the topic; a second run reads only its own three records.
"""
import sys

from spool import Consumer, KafkaError, KafkaException, Producer

brokers = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:9092"
topic = "py-quickstart"


def on_delivery(err, msg):
    if err is not None:
        sys.exit("delivery of %s failed: %s" % (msg.key(), err))
    print("delivered %s to %s[%d]" % (msg.key().decode(), msg.topic(), msg.partition()))


with Producer({"bootstrap.servers": brokers}) as p:
    try:
        p.create_topic(topic, 3)
    except KafkaException as e:
        if e.error().code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise
    for name in ("alice", "bob", "carol"):
        p.produce(topic, "hello " + name, key=name, on_delivery=on_delivery)
    p.flush(10)  # runs on_delivery for each record, here

with Consumer({"bootstrap.servers": brokers, "group.id": topic, "auto.offset.reset": "earliest"}) as c:
    c.subscribe([topic])
    got = 0
    for msg in c:
        if msg.error():
            sys.exit("poll: %s" % msg.error())
        print("consumed %s=%s" % (msg.key().decode(), msg.value().decode()))
        got += 1
        if got == 3:
            break
# leaving the with block closes the consumer: it commits and leaves the group

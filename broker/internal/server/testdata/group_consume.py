"""A consumer group member for the broker's group tests.

usage: group_consume.py kafka-python|confluent-kafka BROKER TOPIC GROUP

Joins GROUP, consumes TOPIC, commits each polled batch synchronously and only then prints its
values (one a line), so a value printed is a value committed. Closing stdin makes it leave the
group cleanly and exit.
"""
import sys
import threading

kind, broker, topic, group = sys.argv[1:5]
stop = threading.Event()


def wait_stdin():
    sys.stdin.read()
    stop.set()


threading.Thread(target=wait_stdin, daemon=True).start()

if kind == "kafka-python":
    from kafka import KafkaConsumer

    c = KafkaConsumer(topic, bootstrap_servers=broker, group_id=group, client_id=kind,
                      enable_auto_commit=False, auto_offset_reset="earliest",
                      session_timeout_ms=6000, heartbeat_interval_ms=300)
    while not stop.is_set():
        recs = c.poll(timeout_ms=100)
        vals = [r.value.decode() for rs in recs.values() for r in rs]
        if vals:
            c.commit()
            print("\n".join(vals), flush=True)
    c.close()
else:
    from confluent_kafka import Consumer

    c = Consumer({"bootstrap.servers": broker, "group.id": group, "client.id": kind,
                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                  "session.timeout.ms": 6000, "heartbeat.interval.ms": 300,
                  "partition.assignment.strategy": "range,roundrobin"})
    c.subscribe([topic])
    while not stop.is_set():
        msgs = [m for m in c.consume(num_messages=1000, timeout=0.1) if m.error() is None]
        if msgs:
            c.commit(asynchronous=False)
            print("\n".join(m.value().decode() for m in msgs), flush=True)
    c.close()

"""kafka-python (Debian python3-kafka 2.0.2) against a secured Spool listener.

usage: security_kafka_python.py BOOTSTRAP TOPIC ok|refused SETTINGS_JSON
SETTINGS_JSON holds kafka-python's own settings (security_protocol, ssl_cafile, sasl_mechanism,
sasl_plain_username, sasl_plain_password).

ok: reads [[key_hex, value_hex], ...] on stdin, produces those records to TOPIC with acks=all,
reads TOPIC back from the beginning of every partition and prints what it read in the same
form, one JSON document. Exits 1 on any error.

refused: opens one connection with the settings and prints {"states": [...], "errors":
[[exception, text], ...]}: the connection states it went through and the errors kafka-python
logged on the way (the exception's class name, or "" for none, and the record's text). With
SaslHandshake v0 (the only one kafka-python 2.0.2 speaks) a refused token closes the
connection, as in Kafka, so those are all a client can tell of a wrong password.
"""
import json
import logging
import socket
import sys

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.conn import BrokerConnection


class Errors(logging.Handler):
    """Keeps the error records logged by kafka.conn: exception class name and text."""

    def __init__(self):
        super().__init__(logging.ERROR)
        self.seen = []

    def emit(self, record):
        self.seen.append([record.exc_info[0].__name__ if record.exc_info else "", self.format(record)])


def ok(addr, topic, settings):
    records = [(bytes.fromhex(k), bytes.fromhex(v)) for k, v in json.load(sys.stdin)]
    producer = KafkaProducer(bootstrap_servers=addr, acks="all", **settings)
    futures = [producer.send(topic, key=k, value=v) for k, v in records]
    producer.flush()
    for f in futures:
        f.get(timeout=30)
    producer.close()

    consumer = KafkaConsumer(bootstrap_servers=addr, group_id=None, enable_auto_commit=False,
                             consumer_timeout_ms=30000, **settings)
    parts = consumer.partitions_for_topic(topic)
    if not parts:
        raise SystemExit("no partitions for %s" % topic)
    tps = [TopicPartition(topic, p) for p in sorted(parts)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    got = []
    for msg in consumer:
        got.append([msg.key.hex(), msg.value.hex()])
        if len(got) == len(records):
            break
    consumer.close()
    print(json.dumps(got))


def refused(addr, settings):
    host, port = addr.rsplit(":", 1)
    errors = Errors()
    logging.getLogger("kafka.conn").addHandler(errors)
    states = []
    conn = BrokerConnection(host, int(port), socket.AF_UNSPEC, api_version=(1, 0, 0),
                            state_change_callback=lambda node_id, sock, c: states.append(c.state), **settings)
    conn.connect_blocking(timeout=60)  # a bound on a hang, not on the broker's speed
    print(json.dumps({"states": states, "errors": errors.seen}))


def main():
    addr, topic, mode, settings = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
    if mode == "ok":
        ok(addr, topic, settings)
    else:
        refused(addr, settings)


main()

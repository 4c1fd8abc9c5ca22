"""SASL_SSL with SCRAM-SHA-512, configured with librdkafka's keys, against the secured broker
sdk-cgo's TestPython starts ($SPOOL_SECURE_BROKERS, $SPOOL_SECURE_CA, $SPOOL_SECURE_USER,
$SPOOL_SECURE_PASSWORD): a round trip, and a wrong password refused with
SASL_AUTHENTICATION_FAILED."""
import os
import uuid

import pytest

import spool
from spool import Consumer, KafkaError, KafkaException, Producer, TopicPartition

ENV = ("SPOOL_SECURE_BROKERS", "SPOOL_SECURE_CA", "SPOOL_SECURE_USER", "SPOOL_SECURE_PASSWORD")


def secure_conf(password=None):
    missing = [k for k in ENV if not os.environ.get(k)]
    if missing:
        pytest.fail("%s not set: run these tests through `go test` in sdk-cgo (TestPython)" % ", ".join(missing))
    return {
        "bootstrap.servers": os.environ["SPOOL_SECURE_BROKERS"],
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": os.environ["SPOOL_SECURE_CA"],
        "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": os.environ["SPOOL_SECURE_USER"],
        "sasl.password": os.environ["SPOOL_SECURE_PASSWORD"] if password is None else password,
    }


def test_sasl_ssl_round_trip():
    topic, n = "py-secure-" + uuid.uuid4().hex[:10], 30
    reports = []
    with Producer(dict(secure_conf(), **{"on_delivery": lambda err, msg: reports.append((err, msg.value()))})) as p:
        p.create_topic(topic, 2)
        for i in range(n):
            p.produce(topic, b"secure-%d" % i, key=b"k%d" % (i % 5))
        assert p.flush(30) == 0
    assert [err for err, _ in reports] == [None] * n
    assert sorted(v for _, v in reports) == sorted(b"secure-%d" % i for i in range(n))

    with Consumer(secure_conf()) as c:
        c.assign([TopicPartition(topic, part, spool.OFFSET_BEGINNING) for part in range(2)])
        got = []
        while len(got) < n:
            msg = c.poll(10)
            assert msg is not None, "timed out after %d records" % len(got)
            assert msg.error() is None, msg.error()
            got.append(msg.value())
    assert sorted(got) == sorted(b"secure-%d" % i for i in range(n))


def test_wrong_password_is_refused():
    conf = secure_conf(password="not-" + os.environ.get("SPOOL_SECURE_PASSWORD", ""))
    reports = []
    with Producer(dict(conf, **{"on_delivery": lambda err, msg: reports.append(err)})) as p:
        # An admin call raises; a record fails in its delivery report.
        with pytest.raises(KafkaException) as e:
            p.create_topic("py-secure-refused", 1)
        assert e.value.error().code() == KafkaError.SASL_AUTHENTICATION_FAILED, e.value
        assert e.value.error().name() == "SASL_AUTHENTICATION_FAILED"
        try:
            p.produce("py-secure-refused", b"x")
        except KafkaException as refused:  # refused at once: the producer knows already
            assert refused.error().code() == KafkaError.SASL_AUTHENTICATION_FAILED
        else:
            p.flush(30)
            assert len(reports) == 1 and reports[0] is not None
            assert reports[0].code() == KafkaError.SASL_AUTHENTICATION_FAILED, reports[0]

    with Consumer(conf) as c:
        c.assign([TopicPartition("py-secure-refused", 0, spool.OFFSET_BEGINNING)])
        msg = c.poll(10)
        assert msg is not None and msg.error() is not None
        assert msg.error().code() == KafkaError.SASL_AUTHENTICATION_FAILED, msg.error()

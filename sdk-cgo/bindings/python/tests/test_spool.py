import os
import threading
import time

import pytest

import spool
from spool import Consumer, KafkaError, KafkaException, Producer, TopicPartition


def make_topic(brokers, name, partitions):
    p = Producer({"bootstrap.servers": brokers})
    p.create_topic(name, partitions)
    p.close()
    return name


def produce_records(brokers, topic, n, **conf):
    """Produces n records (keys k0..k9, every third without a key, two headers) and returns
    the delivery reports as {value: (err, partition, offset)}."""
    reports = {}

    def on_delivery(err, msg):
        reports[msg.value()] = (err, msg.partition(), msg.offset())

    with Producer(dict({"bootstrap.servers": brokers, "linger.ms": 2}, **conf)) as p:
        for i in range(n):
            key = None if i % 3 == 2 else "k%d" % (i % 10)
            p.produce(topic, value=b"v%d" % i, key=key, on_delivery=on_delivery,
                      headers=[("idx", str(i).encode()), ("null", None)])
            if i % 50 == 0:
                p.poll(0)
        assert p.flush(30) == 0
        assert len(p) == 0
    return reports


def test_versions():
    assert spool.libversion()[0] == "0.1.0"
    assert spool.version()[0] == "0.1.0"


def test_roundtrip(brokers, topic_name):
    n = 200
    make_topic(brokers, topic_name, 3)
    reports = produce_records(brokers, topic_name, n, **{"compression.type": "zstd"})
    assert len(reports) == n
    for value, (err, partition, offset) in reports.items():
        assert err is None, value
        assert 0 <= partition < 3 and offset >= 0

    c = Consumer({"bootstrap.servers": brokers})
    c.assign([TopicPartition(topic_name, p, spool.OFFSET_BEGINNING) for p in range(3)])
    got = {}
    while len(got) < n:
        msg = c.poll(10)
        assert msg is not None, "timed out after %d records" % len(got)
        assert msg.error() is None
        got[msg.value()] = msg
    assert c.poll(0.2) is None
    assert c.consume(10, 0.2) == []
    c.seek(TopicPartition(topic_name, 0, 0))
    batch = c.consume(1000, 10)
    assert 1 <= len(batch) <= 1000
    assert [m.offset() for m in batch] == list(range(len(batch)))
    assert all(m.partition() == 0 for m in batch)
    c.close()
    for i in range(n):
        msg = got[b"v%d" % i]
        assert msg.topic() == topic_name
        assert msg.key() == (None if i % 3 == 2 else b"k%d" % (i % 10))
        assert msg.headers() == [("idx", str(i).encode()), ("null", None)]
        assert (msg.partition(), msg.offset()) == reports[b"v%d" % i][1:]
        ts_type, ts = msg.timestamp()
        assert ts_type == spool.TIMESTAMP_CREATE_TIME and ts > 1_600_000_000_000
    # records of one key share a partition
    for k in range(10):
        parts = {m.partition() for m in got.values() if m.key() == b"k%d" % k}
        assert len(parts) == 1


def test_produce_batch(brokers, topic_name):
    make_topic(brokers, topic_name, 2)
    reports, own = {}, []

    def on_delivery(err, msg):
        reports[msg.value()] = (err, msg.partition(), msg.key())

    with Producer({"bootstrap.servers": brokers, "linger.ms": 2}) as p:
        msgs = [{"value": b"b%d" % i, "key": None if i % 2 else "k%d" % i} for i in range(20)]
        msgs.append({"value": b"explicit", "partition": 1, "callback": lambda err, msg: own.append((err, msg.value()))})
        assert p.produce_batch(topic_name, msgs, on_delivery=on_delivery) == 21
        # one bad record: none of the batch is buffered
        with pytest.raises(KafkaException) as e:
            p.produce_batch(topic_name, [{"value": b"ok"}, {"value": b"bad", "partition": -5}])
        assert e.value.error().code() == KafkaError._BAD_ARG
        assert p.flush(30) == 0
    assert own == [(None, b"explicit")]
    assert set(reports) == {b"b%d" % i for i in range(20)}
    for i in range(20):
        err, partition, key = reports[b"b%d" % i]
        assert err is None and 0 <= partition < 2 and key == (None if i % 2 else b"k%d" % i)
    with Consumer({"bootstrap.servers": brokers}) as c:
        c.assign([TopicPartition(topic_name, 0), TopicPartition(topic_name, 1)])
        got = []
        for _ in range(500):
            got += [m.value() for m in c.consume(100, 0.05)]
            if len(got) >= 21:
                break
    assert sorted(got) == sorted([b"b%d" % i for i in range(20)] + [b"explicit"])


def test_group_of_two(brokers, topic_name):
    n = 120
    make_topic(brokers, topic_name, 4)
    produce_records(brokers, topic_name, n)
    conf = {"bootstrap.servers": brokers, "group.id": "g-" + topic_name, "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500, "auto.offset.reset": "earliest", "enable.auto.commit": False}
    owned = {}  # id(consumer) → partitions its rebalance callbacks say it owns
    events = []

    def on_assign(consumer, partitions):
        assert all(p.topic == topic_name for p in partitions)
        mine = owned.setdefault(id(consumer), set())
        assert not mine & {p.partition for p in partitions}, "assigned twice"
        mine.update(p.partition for p in partitions)
        events.append(("assign", id(consumer)))

    def on_revoke(consumer, partitions):
        mine = owned[id(consumer)]
        assert {p.partition for p in partitions} <= mine, "revoked what was not assigned"
        consumer.commit(asynchronous=False)  # before the partitions go: auto commit is off
        mine.difference_update(p.partition for p in partitions)
        events.append(("revoke", id(consumer)))

    with Consumer(conf) as a, Consumer(conf) as b:
        a.subscribe([topic_name], on_assign=on_assign, on_revoke=on_revoke)
        b.subscribe([topic_name], on_assign=on_assign, on_revoke=on_revoke)
        seen, by = set(), {id(a): set(), id(b): set()}
        for _ in range(3000):
            for c in (a, b):
                msg = c.poll(0.02)
                if msg is not None:
                    assert msg.error() is None
                    # the assignment reached on_assign before any record of it
                    assert msg.partition() in owned[id(c)]
                    seen.add(msg.value())
                    by[id(c)].add(msg.partition())
            if len(seen) == n and by[id(a)] and by[id(b)]:
                break
        assert len(seen) == n
        assert by[id(a)] and by[id(b)], "one consumer got nothing"
        assert owned[id(a)] and owned[id(b)] and not owned[id(a)] & owned[id(b)]
        a.commit(asynchronous=False)
        b.commit(asynchronous=False)
        # b leaves: on_revoke runs inside close, then a is given all four partitions
        b.close()
        assert owned[id(b)] == set() and ("revoke", id(b)) in events
        for _ in range(1500):
            a.poll(0.02)
            if owned[id(a)] == {0, 1, 2, 3}:
                break
        assert owned[id(a)] == {0, 1, 2, 3}


def test_rebalance_callback_exception(brokers, topic_name):
    make_topic(brokers, topic_name, 1)
    conf = {"bootstrap.servers": brokers, "group.id": "g-" + topic_name, "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500}

    def on_assign(consumer, partitions):
        raise ValueError("from on_assign")

    with Consumer(conf) as c:
        c.subscribe([topic_name], on_assign=on_assign)
        with pytest.raises(ValueError, match="from on_assign"):
            for _ in range(1500):
                c.poll(0.02)


def test_iterate_and_context_managers(brokers, topic_name):
    make_topic(brokers, topic_name, 1)
    produce_records(brokers, topic_name, 5)
    values = []
    with Consumer({"bootstrap.servers": brokers}) as c:
        c.assign([TopicPartition(topic_name, 0)])
        for msg in c:
            values.append(msg.value())
            if len(values) == 5:
                break
    assert values == [b"v%d" % i for i in range(5)]
    with pytest.raises(RuntimeError):
        c.poll(0)


def test_config_errors():
    with pytest.raises(KafkaException) as e:
        Producer({"bootstrap.servers": "127.0.0.1:9092", "no.such.key": 1})
    assert "no.such.key" in str(e.value)
    assert e.value.error().code() == KafkaError._BAD_ARG
    with pytest.raises(KafkaException) as e:
        Producer({"acks": "most"})
    assert "acks" in str(e.value)
    with pytest.raises(KafkaException) as e:
        Consumer({"group.id": "g", "session.timeout.ms": 1000, "heartbeat.interval.ms": 2000})
    assert "HeartbeatInterval" in str(e.value)
    with pytest.raises(KafkaException) as e:
        Consumer({}).subscribe(["t"])  # no group.id
    assert e.value.error().code() == KafkaError._STATE


def test_broker_down():
    errors = []
    p = Producer({"bootstrap.servers": "127.0.0.1:1", "message.timeout.ms": 1500,
                  "socket.connection.setup.timeout.ms": 200,
                  "on_delivery": lambda err, msg: errors.append((err, msg.value()))})
    for i in range(3):
        p.produce("nowhere", b"x%d" % i)
    p.flush(10)
    p.close()
    assert sorted(v for _, v in errors) == [b"x0", b"x1", b"x2"]
    assert all(err is not None and err.code() == KafkaError._TRANSPORT for err, _ in errors)


def test_callback_exception_reaches_caller(brokers, topic_name):
    make_topic(brokers, topic_name, 1)

    def boom(err, msg):
        raise ValueError("from the callback")

    p = Producer({"bootstrap.servers": brokers})
    p.produce(topic_name, b"x", on_delivery=boom)
    with pytest.raises(ValueError, match="from the callback"):
        p.flush(10)
    p.close()


def test_threads_share_a_producer(brokers, topic_name):
    make_topic(brokers, topic_name, 2)
    delivered = []
    lock = threading.Lock()

    def cb(err, msg):
        assert err is None
        with lock:
            delivered.append(msg.value())

    p = Producer({"bootstrap.servers": brokers, "on_delivery": cb})

    def work(t):
        for i in range(100):
            p.produce(topic_name, b"t%d-%d" % (t, i))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    p.flush(30)
    p.close()
    assert sorted(delivered) == sorted(b"t%d-%d" % (t, i) for t in range(4) for i in range(100))


def consume_all(brokers, topic, partitions, n, timeout=30):
    """The first n messages of topic's partitions, read with consume()."""
    got = []
    with Consumer({"bootstrap.servers": brokers}) as c:
        c.assign([TopicPartition(topic, p) for p in range(partitions)])
        deadline = time.monotonic() + timeout
        while len(got) < n and time.monotonic() < deadline:
            got += c.consume(500, 0.1)
    return got


def test_batches_and_callbacks(brokers, topic_name):
    """Records cross into libspool 1024 at a time: 2500 records, some with their own callback,
    some with headers (handed over alone), keep their order within a partition and each gets
    its callback with its own key and value."""
    make_topic(brokers, topic_name, 2)
    n = 2500
    default, own = {}, {}

    def on_default(err, msg):
        assert err is None
        default[msg.value()] = (msg.key(), msg.partition(), msg.offset(), msg.headers(), msg.topic())

    def on_own(err, msg):
        assert err is None
        own[msg.value()] = (msg.key(), msg.partition(), msg.offset(), msg.headers(), msg.topic())

    with Producer({"bootstrap.servers": brokers, "on_delivery": on_default, "linger.ms": 1000}) as p:
        for i in range(n):
            kw = {"on_delivery": on_own} if i % 3 == 0 else {}
            if i % 100 == 7:
                kw["headers"] = {"i": str(i)}
            p.produce(topic_name, b"v%d" % i, key=b"k%d" % (i % 5) if i % 2 else None, partition=i % 2, **kw)
        assert len(p) == n  # len() hands the queue over: every record is counted
        assert p.flush(30) == 0
    assert len(default) + len(own) == n
    for i in range(n):
        key, partition, offset, headers, topic = (own if i % 3 == 0 else default)[b"v%d" % i]
        assert key == (b"k%d" % (i % 5) if i % 2 else None) and partition == i % 2 and offset >= 0
        assert topic == topic_name
        assert headers == ([("i", str(i).encode())] if i % 100 == 7 else None)
    got = consume_all(brokers, topic_name, 2, n)
    assert len(got) == n
    for part in (0, 1):
        values = [m.value() for m in got if m.partition() == part]
        assert values == [b"v%d" % i for i in range(part, n, 2)]  # produce order, headers or not
    m = next(m for m in got if m.value() == b"v7")
    assert m.headers() == [("i", b"7")] and m.key() == b"k2" and len(m) == 2 and m.topic() == topic_name
    assert m != got[0] or m is got[0]  # messages compare by identity
    assert isinstance(m, spool.Message) and "offset=" in repr(m)


def test_plain_records_keep_their_place(brokers, topic_name):
    """Plain records (bytes, no key, partition or callback of their own) wait in a queue of
    their own; mixed with the others in one thread, on one partition, every record still goes
    out in produce order, with its own key and callback."""
    make_topic(brokers, topic_name, 1)
    n = 3000
    default, own = {}, {}

    def on_default(err, msg):
        default[msg.value()] = (err, msg.key(), msg.offset())

    def on_own(err, msg):
        own[msg.value()] = (err, msg.key(), msg.offset())

    with Producer({"bootstrap.servers": brokers, "on_delivery": on_default, "linger.ms": 1000}) as p:
        for i in range(n):
            kind = i % 7 if i >= 1500 else 0  # 1500 plain records, then mixed
            value = b"v%d" % i
            if kind == 3:
                p.produce(topic_name, value, key=b"k%d" % i)
            elif kind == 5:
                p.produce(topic_name, value, partition=0)
            elif kind == 6:
                p.produce(topic_name, value, on_delivery=on_own)
            else:
                p.produce(topic_name, value)
        assert p.flush(30) == 0
    got = consume_all(brokers, topic_name, 1, n)
    assert [m.value() for m in got] == [b"v%d" % i for i in range(n)]
    assert len(default) + len(own) == n
    for m in got:
        i = int(m.value()[1:])
        err, key, offset = (own if i >= 1500 and i % 7 == 6 else default)[m.value()]
        assert err is None and offset == m.offset()
        assert key == m.key() == (b"k%d" % i if i >= 1500 and i % 7 == 3 else None)


def test_produce_after_close_raises(brokers, topic_name):
    """A closed producer refuses records, plain or not, though it queued plain ones before."""
    make_topic(brokers, topic_name, 1)
    p = Producer({"bootstrap.servers": brokers})
    p.produce(topic_name, b"before")
    assert p.flush(30) == 0
    p.close()
    for kw in ({}, {"key": b"k"}):
        with pytest.raises(RuntimeError, match="closed"):
            p.produce(topic_name, b"after", **kw)


def test_commit_message_and_offsets(brokers, topic_name):
    """commit(message=...) commits the offset after that message, commit(offsets=...) the
    offsets given; the group's next member starts there. Bad offsets raise."""
    make_topic(brokers, topic_name, 2)
    with Producer({"bootstrap.servers": brokers}) as p:
        for i in range(40):
            p.produce(topic_name, b"%d" % i, partition=i % 2)
        assert p.flush(30) == 0
    conf = {"bootstrap.servers": brokers, "group.id": topic_name + "-g", "enable.auto.commit": False}

    def first_offsets():
        first = {}
        with Consumer(conf) as c:
            c.subscribe([topic_name])
            deadline = time.monotonic() + 30
            while len(first) < 2 and time.monotonic() < deadline:
                m = c.poll(0.1)
                if m is not None and m.error() is None:
                    first.setdefault(m.partition(), m.offset())
        return first

    with Consumer(conf) as c:
        c.subscribe([topic_name])
        with pytest.raises(KafkaException) as e:
            c.commit(offsets=[TopicPartition(topic_name, 0, -5)], asynchronous=False)
        assert e.value.args[0].code() == KafkaError._BAD_ARG
        m, deadline = None, time.monotonic() + 30
        while (m is None or m.partition() != 0 or m.offset() < 4) and time.monotonic() < deadline:
            m = c.poll(0.1)
        assert m is not None and m.partition() == 0 and m.offset() >= 4
        with pytest.raises(ValueError):
            c.commit(message=m, offsets=[])
        assert c.commit(offsets=[TopicPartition(topic_name, 1, 9)]) is None  # asynchronous
        done = c.commit(message=m, asynchronous=False)
        assert [(tp.topic, tp.partition, tp.offset) for tp in done] == [(topic_name, 0, m.offset() + 1)]
    assert first_offsets() == {0: m.offset() + 1, 1: 9}

    # on_commit is told of every commit, in order, inside poll() (or close()), a synchronous
    # one's too (whose call also returns or raises its outcome).
    commits = []
    with Consumer({**conf, "on_commit": lambda err, tps: commits.append(
            (err, [(tp.topic, tp.partition, tp.offset) for tp in tps]))}) as c:
        c.subscribe([topic_name])
        m, deadline = None, time.monotonic() + 30
        while m is None and time.monotonic() < deadline:
            m = c.poll(0.1)
        assert m is not None and m.error() is None
        c.commit(offsets=[TopicPartition(topic_name, 1, 12)], asynchronous=False)
        c.commit(offsets=[TopicPartition(topic_name, 1, 11)])
        c.commit(message=m)
        assert commits == []  # not from the commit calls themselves
        deadline = time.monotonic() + 30
        while len(commits) < 3 and time.monotonic() < deadline:
            c.poll(0.05)
    assert commits == [(None, [(topic_name, 1, 12)]), (None, [(topic_name, 1, 11)]),
                       (None, [(topic_name, m.partition(), m.offset() + 1)])]


def test_produce_timestamp(brokers, topic_name):
    """produce(timestamp=ms) gives the record its CreateTime, with or without headers, in
    order with the records around it; the report and the consumed message carry it."""
    make_topic(brokers, topic_name, 1)
    ts = 1700000000123
    reports = {}
    with Producer({"bootstrap.servers": brokers, "on_delivery": lambda err, msg: reports.setdefault(
            msg.value(), (err, msg.timestamp(), msg.headers()))}) as p:
        with pytest.raises(KafkaException) as e:
            p.produce(topic_name, b"bad", timestamp=-5)
        assert e.value.args[0].code() == KafkaError._BAD_ARG
        p.produce(topic_name, b"before")
        p.produce(topic_name, b"stamped", timestamp=ts)
        p.produce(topic_name, b"stamped-h", key=b"k", timestamp=ts + 1, headers={"h": b"1"})
        p.produce(topic_name, b"after")
        assert p.flush(30) == 0
    assert reports[b"stamped"] == (None, (spool.TIMESTAMP_CREATE_TIME, ts), None)
    assert reports[b"stamped-h"] == (None, (spool.TIMESTAMP_CREATE_TIME, ts + 1), [("h", b"1")])
    assert reports[b"before"][1][1] > ts + 1 and b"bad" not in reports
    got = consume_all(brokers, topic_name, 1, 4)
    assert [m.value() for m in got] == [b"before", b"stamped", b"stamped-h", b"after"]
    assert [m.timestamp()[1] for m in got[1:3]] == [ts, ts + 1]
    assert got[2].key() == b"k" and got[2].headers() == [("h", b"1")]


def test_produce_batch_headers_and_timestamps(brokers, topic_name):
    """produce_batch takes "headers" and "timestamp" per message: those records cross alone,
    in their place among the others (one partition: the log's order is the batch's), and
    their reports and consumed messages carry them; a bad timestamp or header buffers none."""
    make_topic(brokers, topic_name, 1)
    ts = 1700000000500
    reports = {}
    msgs = [{"value": b"p%d" % i} for i in range(2500)]  # runs longer than one crossing (1024)
    msgs[3] = {"value": b"h", "key": b"k", "headers": {"a": b"1", "b": None}}
    msgs[1500] = {"value": b"t", "timestamp": ts}
    msgs[1501] = {"value": b"th", "timestamp": ts + 1, "headers": [("c", b"2")]}
    msgs[2499] = {"value": b"last", "timestamp": ts + 2}
    with Producer({"bootstrap.servers": brokers}) as p:
        for bad in ({"value": b"x", "timestamp": -1}, {"value": b"x", "timestamp": 1.5},
                    {"value": b"x", "headers": {"k": 5}}):
            with pytest.raises((KafkaException, TypeError)):
                p.produce_batch(topic_name, [{"value": b"ok"}, bad])
        assert p.produce_batch(topic_name, msgs, on_delivery=lambda err, msg: reports.setdefault(
            msg.value(), (err, msg.timestamp()[1], msg.headers()))) == 2500
        assert p.flush(30) == 0
    assert len(reports) == 2500 and b"ok" not in reports and b"x" not in reports
    assert reports[b"h"][0] is None and reports[b"h"][2] == [("a", b"1"), ("b", None)]
    assert reports[b"t"][1:] == (ts, None) and reports[b"th"][1:] == (ts + 1, [("c", b"2")])
    assert reports[b"last"][1] == ts + 2 and reports[b"p0"][1] > ts + 2
    got = consume_all(brokers, topic_name, 1, 2500)
    assert [m.value() for m in got] == [m["value"] for m in msgs]
    assert got[3].key() == b"k" and got[3].headers() == [("a", b"1"), ("b", None)]
    assert [m.timestamp()[1] for m in got[1500:1502]] + [got[2499].timestamp()[1]] == [ts, ts + 1, ts + 2]
    assert got[1501].headers() == [("c", b"2")] and got[0].headers() is None


def test_threads_add_topics(brokers, topic_name):
    """Threads producing plain records each to a topic of its own and to a shared one, the
    producer learning its topics while they run: every record is delivered once."""
    topics = [topic_name] + ["%s-%d" % (topic_name, t) for t in range(4)]
    for t in topics:
        make_topic(brokers, t, 2)
    delivered = []
    lock = threading.Lock()

    def cb(err, msg):
        assert err is None
        with lock:
            delivered.append((msg.topic(), msg.value()))

    p = Producer({"bootstrap.servers": brokers, "on_delivery": cb, "linger.ms": 1})

    def work(t):
        for i in range(300):
            p.produce(topics[t + 1] if i % 2 else topic_name, b"t%d-%d" % (t, i))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert p.flush(30) == 0
    p.close()
    assert sorted(delivered) == sorted((topics[t + 1] if i % 2 else topic_name, b"t%d-%d" % (t, i))
                                       for t in range(4) for i in range(300))


def test_two_topics_interleaved(brokers, topic_name):
    """Records to two topics, interleaved, cross in one call per topic; each report names its
    own topic and each topic keeps its order."""
    other = topic_name + "-b"
    make_topic(brokers, topic_name, 1)
    make_topic(brokers, other, 1)
    reports = []
    with Producer({"bootstrap.servers": brokers, "on_delivery": lambda err, msg: reports.append(
            (err, msg.topic(), msg.value()))}) as p:
        for i in range(300):
            p.produce(topic_name if i % 2 else other, b"%d" % i)
        assert p.flush(30) == 0
    assert sorted(reports, key=lambda r: int(r[2])) == [
        (None, topic_name if i % 2 else other, b"%d" % i) for i in range(300)]
    assert [m.value() for m in consume_all(brokers, topic_name, 1, 150)] == [b"%d" % i for i in range(1, 300, 2)]
    assert [m.value() for m in consume_all(brokers, other, 1, 150)] == [b"%d" % i for i in range(0, 300, 2)]


def test_records_go_out_without_poll(brokers, topic_name):
    """A record waits in Python at most linger.ms: it is sent though nothing is produced after
    it and poll() is never called."""
    make_topic(brokers, topic_name, 1)
    p = Producer({"bootstrap.servers": brokers, "linger.ms": 20})
    p.produce(topic_name, b"alone")
    got = consume_all(brokers, topic_name, 1, 1, timeout=20)
    assert [m.value() for m in got] == [b"alone"]
    p.close()


def test_per_record_errors(brokers, topic_name):
    """As confluent-kafka: a bad argument raises at once; a partition the topic does not have
    fails in the record's delivery report; the other records are delivered."""
    make_topic(brokers, topic_name, 2)
    reports = []
    with Producer({"bootstrap.servers": brokers}) as p:
        with pytest.raises(KafkaException) as e:
            p.produce(topic_name, b"x", partition=-7)
        assert e.value.error().code() == KafkaError._BAD_ARG
        with pytest.raises(TypeError):
            p.produce(topic_name, 12)
        p.produce(topic_name, b"ok", on_delivery=lambda err, msg: reports.append((err, msg.value())))
        p.produce(topic_name, b"far", partition=5, on_delivery=lambda err, msg: reports.append((err, msg.value())))
        p.produce(topic_name, "text", key="ключ", on_delivery=lambda err, msg: reports.append((err, msg.key())))
        assert p.flush(30) == 0
    by = {v: err for err, v in reports}
    assert by[b"ok"] is None and by["ключ".encode()] is None
    assert by[b"far"] is not None and by[b"far"].code() == KafkaError.UNKNOWN_TOPIC_OR_PARTITION


def test_poll_ahead_and_seek(brokers, topic_name):
    """Without a group, poll() takes many messages per crossing and returns them one by one; a
    seek forgets those of its partition taken ahead."""
    make_topic(brokers, topic_name, 2)
    with Producer({"bootstrap.servers": brokers}) as p:
        for i in range(100):
            p.produce(topic_name, b"%d" % i, partition=i % 2)
    with Consumer({"bootstrap.servers": brokers}) as c:
        c.assign([TopicPartition(topic_name, 0), TopicPartition(topic_name, 1)])
        first = []
        while len(first) < 5:
            m = c.poll(10)
            assert m is not None and m.error() is None
            first.append(m)
        c.seek(TopicPartition(topic_name, 0, 0))
        by = {0: [], 1: []}
        for m in first:
            by[m.partition()].append(m.offset())
        rest = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(rest) < 100 - len(by[1]):
            m = c.poll(1)
            if m is not None:
                rest.append(m)
        assert c.poll(0.5) is None
    p0_after = [m.offset() for m in rest if m.partition() == 0]
    assert p0_after == list(range(50))  # from 0 again, nothing left over from before the seek
    p1 = by[1] + [m.offset() for m in rest if m.partition() == 1]
    assert p1 == list(range(50))  # partition 1 went on without a gap or a repeat


CROSS_TOPIC = os.environ.get("SPOOL_CROSS_TOPIC")


@pytest.mark.skipif(not CROSS_TOPIC, reason="the Go harness sets SPOOL_CROSS_TOPIC and checks what this writes")
def test_cross_language_produce(brokers):
    """Writes records that the Go harness then reads with the Go SDK and kcat."""
    with Producer({"bootstrap.servers": brokers}) as p:
        for i in range(60):
            p.produce(CROSS_TOPIC, value="wert-%d-é".encode() % i + bytes([0x80 + i]), key="schlüssel-%d" % (i % 12))

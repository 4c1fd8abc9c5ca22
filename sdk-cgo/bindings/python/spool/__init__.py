"""Spool's Python client: Producer and Consumer over libspool (ctypes), with the API of
confluent-kafka-python, so that code written for it ports by changing the import
(`from spool import Producer, Consumer, KafkaError, KafkaException`). Differences are listed
in README.md."""

import ctypes
import itertools
import threading

from . import _lib as L

__all__ = ["Producer", "Consumer", "Message", "KafkaError", "KafkaException", "TopicPartition", "OFFSET_INVALID",
           "OFFSET_BEGINNING", "OFFSET_END", "TIMESTAMP_NOT_AVAILABLE", "TIMESTAMP_CREATE_TIME",
           "version", "libversion"]

OFFSET_BEGINNING, OFFSET_END = L.OFFSET_BEGINNING, L.OFFSET_END
OFFSET_INVALID = -1001  # confluent-kafka's: no offset (the partitions of a rebalance callback)
TIMESTAMP_NOT_AVAILABLE, TIMESTAMP_CREATE_TIME = 0, 1


def version():
    """This binding's version, as (string, int), like confluent_kafka.version()."""
    return ("0.1.0", 0x00010000)


def libversion():
    """libspool's version, as (string, int), like confluent_kafka.libversion()."""
    s = L.spool_version().decode()
    major, minor, patch = (int(x) for x in s.split("."))
    return (s, (major << 24) | (minor << 16) | (patch << 8))


class KafkaError:
    """An error code of libspool (spool_err_t): a protocol error (the wire number, e.g.
    UNKNOWN_TOPIC_OR_PARTITION = 3) or a local one (negative, _TIMED_OUT, _TRANSPORT, ...)."""

    NO_ERROR = 0
    _BAD_ARG, _TIMED_OUT, _TRANSPORT, _CLOSED, _QUEUE_FULL, _STATE, _FAIL = range(-100, -107, -1)
    UNKNOWN_TOPIC_OR_PARTITION = 3
    TOPIC_ALREADY_EXISTS = 36
    SASL_AUTHENTICATION_FAILED = 58

    def __init__(self, code, reason=None):
        self._code = int(code)
        self._desc = L.spool_err2str(self._code).decode()
        self._reason = reason or self._desc

    def code(self):
        return self._code

    def name(self):
        return self._desc.split(":", 1)[0]

    def str(self):
        return self._reason

    def retriable(self):
        return "(retriable)" in self._desc

    def __str__(self):
        return self._reason

    def __repr__(self):
        return "KafkaError{code=%s,val=%d,str=\"%s\"}" % (self.name(), self._code, self._reason)

    def __eq__(self, other):
        if isinstance(other, KafkaError):
            return self._code == other._code
        return self._code == other

    def __hash__(self):
        return hash(self._code)


class KafkaException(Exception):
    """Raised for a failed call; args[0] is the KafkaError."""

    def __init__(self, error, *args):
        if not isinstance(error, KafkaError):
            error = KafkaError(error, *args)
        super().__init__(error)

    def error(self):
        return self.args[0]


def _check(code, what=None):
    if code != 0:
        err = KafkaError(code)
        if what:
            err = KafkaError(code, "%s: %s" % (what, err.str()))
        raise KafkaException(err)


class TopicPartition:
    """A topic, a partition and an offset, for Consumer.assign."""

    def __init__(self, topic, partition=-1, offset=OFFSET_BEGINNING):
        self.topic, self.partition, self.offset = topic, partition, offset

    def __repr__(self):
        return "TopicPartition{topic=%s,partition=%d,offset=%d}" % (self.topic, self.partition, self.offset)


class Message:
    """A consumed record, a delivery report's record, or an error. Its bytes are copied out of
    libspool, so it stays valid on its own."""

    def __init__(self, m):
        view = L.MessageView()
        L.spool_message_view(m, ctypes.byref(view), ctypes.sizeof(view))  # one call for all fields
        code = view.err
        self._error = KafkaError(code, view.errstr.decode(errors="replace")) if code else None
        self._topic = view.topic.decode() or None
        self._partition, self._offset, self._timestamp = view.partition, view.offset, view.timestamp
        self._key = None if view.key is None else ctypes.string_at(view.key, view.key_len)
        self._value = None if view.value is None else ctypes.string_at(view.value, view.value_len)
        self._opaque = view.opaque
        n = view.header_count
        self._headers = None
        if n:
            self._headers = []
            for i in range(n):
                k, kl, v, vl = ctypes.c_char_p(), ctypes.c_size_t(), ctypes.c_void_p(), ctypes.c_size_t()
                L.spool_message_header(m, i, ctypes.byref(k), ctypes.byref(kl), ctypes.byref(v), ctypes.byref(vl))
                key = ctypes.string_at(k, kl.value).decode(errors="replace")
                self._headers.append((key, None if not v.value else ctypes.string_at(v, vl.value)))

    def error(self):
        return self._error

    def topic(self):
        return self._topic

    def partition(self):
        return None if self._partition < 0 else self._partition

    def offset(self):
        return None if self._offset < 0 else self._offset

    def timestamp(self):
        if self._timestamp < 0:
            return (TIMESTAMP_NOT_AVAILABLE, 0)
        return (TIMESTAMP_CREATE_TIME, self._timestamp)

    def key(self):
        return self._key

    def value(self):
        return self._value

    def headers(self):
        return self._headers

    def __len__(self):
        return 0 if self._value is None else len(self._value)

    def __repr__(self):
        return "Message{topic=%s,partition=%s,offset=%s,error=%r}" % (self._topic, self.partition(), self.offset(), self._error)


def _bytes(v, what):
    if v is None:
        return None
    if isinstance(v, str):
        return v.encode()
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    raise TypeError("%s must be str, bytes or None, not %s" % (what, type(v).__name__))


def _timeout_ms(timeout):
    """confluent-kafka's timeouts are seconds; None and -1 are forever."""
    if timeout is None or timeout < 0:
        return -1
    return int(timeout * 1000)


def _new_conf(conf, skip):
    c = L.spool_conf_new()
    errstr = ctypes.create_string_buffer(512)
    for k, v in conf.items():
        if k in skip:
            continue
        if isinstance(v, bool):
            v = "true" if v else "false"
        res = L.spool_conf_set(c, k.encode(), str(v).encode(), errstr, len(errstr))
        if res != L.CONF_OK:
            L.spool_conf_destroy(c)
            raise KafkaException(KafkaError(KafkaError._BAD_ARG if res == L.CONF_UNKNOWN else KafkaError._FAIL,
                                            errstr.value.decode()))
    return c


def _new_handle(new, c):
    """Calls spool_producer_new or spool_consumer_new with conf handle c; on failure frees c
    (still ours then) and raises."""
    errstr = ctypes.create_string_buffer(512)
    h = new(c, errstr, len(errstr))
    if not h:
        L.spool_conf_destroy(c)
        raise KafkaException(KafkaError(KafkaError._FAIL, errstr.value.decode()))
    return h


class Producer:
    """Producer(conf): conf is a dict of librdkafka-style keys ("bootstrap.servers", "acks",
    "linger.ms", ...), plus "on_delivery" (or "delivery.report.cb"), the default delivery
    callback. Delivery callbacks, called as cb(err, msg), run inside poll() and flush()."""

    def __init__(self, conf):
        self._p = None
        conf = dict(conf)
        self._default_cb = conf.get("on_delivery") or conf.get("delivery.report.cb")
        c = _new_conf(conf, {"on_delivery", "delivery.report.cb"})
        self._topics = {}  # name → encoded name
        self._callbacks = {}  # id → callback, for records in flight that have their own
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._errors = []
        self._dr = L.DR_CB(self._on_report)  # kept alive as long as the producer
        L.spool_conf_set_dr_cb(c, self._dr)
        self._p = _new_handle(L.spool_producer_new, c)

    def _handle(self):
        if not self._p:
            raise RuntimeError("Producer has been closed")
        return self._p

    def _on_report(self, _producer, m, _opaque):
        try:
            msg = Message(m)
            if msg._opaque:
                with self._lock:
                    cb = self._callbacks.pop(msg._opaque, None)
            else:
                cb = self._default_cb  # records without their own callback carry no id
            if cb is not None:
                cb(msg.error(), msg)
        except BaseException as e:  # re-raised by poll/flush: ctypes cannot carry it
            self._errors.append(e)

    def _raise_callback_errors(self):
        if self._errors:
            e, self._errors = self._errors[0], []
            raise e

    def produce(self, topic, value=None, key=None, partition=-1, on_delivery=None, callback=None,
                timestamp=0, headers=None):
        """Buffers one record; its delivery callback runs in a later poll() or flush().
        headers: a dict or a list of (key, value) pairs."""
        if timestamp:
            raise NotImplementedError("produce(timestamp=...) is not supported by libspool yet")
        cb = on_delivery or callback
        k = key if type(key) is bytes else _bytes(key, "key")
        v = value if type(value) is bytes else _bytes(value, "value")
        t = self._topics.get(topic)
        if t is None:
            t = self._topics[topic] = topic.encode()
        ident = 0
        if cb is not None and cb is not self._default_cb:
            ident = next(self._ids)
            with self._lock:
                self._callbacks[ident] = cb
        if headers:
            hdrs = list(headers.items()) if isinstance(headers, dict) else list(headers)
            harr = (L.Header * len(hdrs))()
            keep = []  # the header bytes, alive until the call has copied them
            for i, (hk, hv) in enumerate(hdrs):
                hkb, hvb = _bytes(hk, "header key"), _bytes(hv, "header value")
                keep.append((hkb, hvb))
                harr[i].key, harr[i].key_len = hkb, len(hkb)
                harr[i].value = ctypes.cast(ctypes.c_char_p(hvb), ctypes.c_void_p) if hvb is not None else None
                harr[i].value_len = 0 if hvb is None else len(hvb)
            err = L.spool_produce_headers(self._handle(), t, partition, k, 0 if k is None else len(k),
                                          v, 0 if v is None else len(v), harr, len(hdrs), ident)
        else:
            err = L.spool_produce(self._p or self._handle(), t, partition, k, 0 if k is None else len(k),
                                  v, 0 if v is None else len(v), ident)
        if err:
            with self._lock:
                self._callbacks.pop(ident, None)
            _check(err, "produce")

    def produce_batch(self, topic, messages, partition=-1, on_delivery=None, callback=None):
        """Buffers many records with one call into libspool (spool_produce_batch), as
        confluent-kafka's produce_batch: messages is a list of dicts with "value", and
        optionally "key", "partition" and "callback" (or "on_delivery"), each called as
        cb(err, msg) in a later poll() or flush(); the call's own callback is the default.
        All are buffered or, when one is bad, none (KafkaException); returns len(messages).
        Not supported in a message: "headers", "timestamp"."""
        t = self._topics.get(topic)
        if t is None:
            t = self._topics[topic] = topic.encode()
        default = on_delivery or callback
        recs, idents = [], []
        for m in messages:
            if "headers" in m or "timestamp" in m:
                raise NotImplementedError("produce_batch with headers or timestamp is not supported by libspool yet")
            v, k = m.get("value"), m.get("key")
            k = k if k is None or type(k) is bytes else _bytes(k, "key")
            v = v if v is None or type(v) is bytes else _bytes(v, "value")
            cb = m.get("callback") or m.get("on_delivery") or default
            ident = None
            if cb is not None and cb is not self._default_cb:
                ident = next(self._ids)
                idents.append((ident, cb))
            recs.append((m.get("partition", partition), k, 0 if k is None else len(k),
                         v, 0 if v is None else len(v), None, 0, ident))
        if not recs:
            return 0
        if idents:
            with self._lock:
                self._callbacks.update(idents)
        arr = (L.Record * len(recs))(*recs)
        err = L.spool_produce_batch(self._handle(), t, arr, len(recs))
        if err:
            with self._lock:
                for ident, _ in idents:
                    self._callbacks.pop(ident, None)
            _check(err, "produce_batch")
        return len(recs)

    def poll(self, timeout=None):
        """Serves delivery callbacks, waiting up to timeout seconds for one; returns how many ran."""
        n = L.spool_producer_poll(self._handle(), _timeout_ms(timeout))
        self._raise_callback_errors()
        return n

    def flush(self, timeout=None):
        """Waits until every record has been delivered or failed (serving callbacks), at most
        timeout seconds; returns the number of records still outstanding."""
        L.spool_producer_flush(self._handle(), _timeout_ms(timeout))
        self._raise_callback_errors()
        return len(self)

    def __len__(self):
        return L.spool_producer_outq_len(self._handle())

    def create_topic(self, topic, num_partitions=1, replication_factor=-1, timeout=30):
        """Creates a topic (a libspool addition; confluent-kafka has AdminClient for this)."""
        _check(L.spool_create_topic(self._handle(), topic.encode(), num_partitions, replication_factor,
                                    _timeout_ms(timeout)), "create_topic " + topic)

    def delete_topic(self, topic, timeout=30):
        _check(L.spool_delete_topic(self._handle(), topic.encode(), _timeout_ms(timeout)), "delete_topic " + topic)

    def close(self):
        """Frees the producer (records not flushed are dropped). Also on garbage collection."""
        if self._p:
            L.spool_producer_destroy(self._p)
            self._p = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._p:
            self.flush()
        self.close()

    def __del__(self):
        self.close()


class Consumer:
    """Consumer(conf): with "group.id", subscribe() joins the group; without, assign()
    chooses partitions. Iterating yields messages until close()."""

    def __init__(self, conf):
        self._c = None
        self._on = {}  # rebalance callbacks given to subscribe
        self._errors = []
        self._held = []  # messages taken by a poll that raised a callback's exception
        c = _new_conf(conf, set())
        if "group.id" in conf:
            self._rb = L.REBALANCE_CB(self._on_rebalance)  # kept alive as long as the consumer
            L.spool_conf_set_rebalance_cb(c, self._rb)
        self._c = _new_handle(L.spool_consumer_new, c)

    def _on_rebalance(self, _consumer, what, parts, count, _opaque):
        """Runs inside poll(), consume() and close(), on their thread; the callbacks of
        subscribe() are called as cb(consumer, [TopicPartition])."""
        try:
            tps = [TopicPartition(parts[i].topic.decode(), parts[i].partition, OFFSET_INVALID) for i in range(count)]
            if what == L.REBALANCE_ASSIGN:
                cb = self._on.get("on_assign")
            elif what == L.REBALANCE_REVOKE:
                cb = self._on.get("on_revoke")
            else:  # like confluent-kafka: on_revoke when on_lost is not given
                cb = self._on.get("on_lost") or self._on.get("on_revoke")
            if cb is not None:
                cb(self, tps)
        except BaseException as e:  # re-raised by the call that served it: ctypes cannot carry it
            self._errors.append(e)

    def _raise_callback_errors(self):
        if self._errors:
            e, self._errors = self._errors[0], []
            raise e

    def _handle(self):
        if not self._c:
            raise RuntimeError("Consumer closed")
        return self._c

    def subscribe(self, topics, on_assign=None, on_revoke=None, on_lost=None):
        """Joins the group. on_assign(consumer, partitions) runs before records of newly
        assigned partitions are returned; on_revoke(consumer, partitions) before partitions go
        to another member (the group waits for it: keep polling) and on close; on_lost when
        the member left the group without a rebalance (on_revoke if on_lost is not given).
        They run inside poll(), consume() and close(). Unlike confluent-kafka, the consumer
        assigns by itself: the callbacks need not call assign()."""
        self._on = {"on_assign": on_assign, "on_revoke": on_revoke, "on_lost": on_lost}
        arr = (ctypes.c_char_p * len(topics))(*[t.encode() for t in topics])
        _check(L.spool_consumer_subscribe(self._handle(), arr, len(topics)), "subscribe")

    def assign(self, partitions):
        for tp in partitions:
            offset = OFFSET_BEGINNING if tp.offset is None or tp.offset < -2 else tp.offset
            _check(L.spool_consumer_assign(self._handle(), tp.topic.encode(), tp.partition, offset), "assign")

    def seek(self, partition):
        _check(L.spool_consumer_seek(self._handle(), partition.topic.encode(), partition.partition,
                                     partition.offset), "seek")

    def poll(self, timeout=None):
        """The next message (check msg.error()), or None after timeout seconds."""
        if self._held:
            return self._held.pop(0)
        m = L.spool_consumer_poll(self._handle(), _timeout_ms(timeout))
        if self._errors:
            if m:
                self._held.append(Message(m))  # the next poll returns it
                L.spool_message_destroy(m)
            self._raise_callback_errors()
        if not m:
            return None
        try:
            return Message(m)
        finally:
            L.spool_message_destroy(m)

    def consume(self, num_messages=1, timeout=-1):
        """Up to num_messages messages (records and errors) in one call to libspool: waits up to
        timeout seconds for the first, then takes those ready; [] on timeout."""
        if num_messages < 1:
            raise ValueError("num_messages must be at least 1")
        if self._held:
            out, self._held = self._held[:num_messages], self._held[num_messages:]
            return out
        arr = (L.P * num_messages)()
        n = L.spool_consumer_poll_batch(self._handle(), _timeout_ms(timeout), arr, num_messages)
        if self._errors:
            for i in range(n):
                self._held.append(Message(arr[i]))  # the next poll or consume returns them
                L.spool_message_destroy(arr[i])
            self._raise_callback_errors()
        out = []
        try:
            for i in range(n):
                out.append(Message(arr[i]))
        finally:
            for i in range(n):
                L.spool_message_destroy(arr[i])
        return out

    def commit(self, message=None, offsets=None, asynchronous=True):
        """Commits the offsets after the messages poll() returned (message and offsets are not
        supported: every returned message counts)."""
        if message is not None or offsets is not None:
            raise NotImplementedError("commit(message=..., offsets=...) is not supported by libspool yet")
        _check(L.spool_consumer_commit(self._handle(), 1 if asynchronous else 0), "commit")

    def close(self):
        """Commits (with enable.auto.commit), leaves the group and frees the consumer."""
        if self._c:
            try:
                _check(L.spool_consumer_close(self._c), "close")
            finally:
                L.spool_consumer_destroy(self._c)
                self._c = None
            self._raise_callback_errors()

    def __iter__(self):
        while self._c:
            m = self.poll(1.0)
            if m is not None:
                yield m

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if self._c:
            L.spool_consumer_destroy(self._c)
            self._c = None

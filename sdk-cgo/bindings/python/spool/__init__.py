"""Spool's Python client: Producer and Consumer over libspool (ctypes), with the API of
confluent-kafka-python, so that code written for it ports by changing the import
(`from spool import Producer, Consumer, KafkaError, KafkaException`). Differences are listed
in README.md."""

import bisect
import collections
import ctypes
import itertools
import struct
import threading
import time
import weakref
from array import array

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
    """A topic, a partition and an offset, for Consumer.assign and Consumer.commit."""

    def __init__(self, topic, partition=-1, offset=OFFSET_BEGINNING):
        self.topic, self.partition, self.offset = topic, partition, offset

    def __repr__(self):
        return "TopicPartition{topic=%s,partition=%d,offset=%d}" % (self.topic, self.partition, self.offset)


_tuple_new = tuple.__new__
_topics = {}  # a topic's name as bytes → as str, shared by every message


class Message(tuple):
    """A consumed record, a delivery report's record, or an error. It is a tuple underneath, so
    that making one costs one allocation (the cost per record is what a binding over ctypes
    has to save): use its methods, as with confluent-kafka's Message; it compares by
    identity. A delivery report's message holds the key and value given to produce()."""

    __slots__ = ()
    # (topic, partition, offset, timestamp, error, key, value, headers)

    def error(self):
        return self[4]

    def topic(self):
        return self[0]

    def partition(self):
        p = self[1]
        return None if p < 0 else p

    def offset(self):
        o = self[2]
        return None if o < 0 else o

    def timestamp(self):
        ts = self[3]
        if ts < 0:
            return (TIMESTAMP_NOT_AVAILABLE, 0)
        return (TIMESTAMP_CREATE_TIME, ts)

    def key(self):
        return self[5]

    def value(self):
        return self[6]

    def headers(self):
        return self[7]

    def __len__(self):
        v = self.value()
        return 0 if v is None else len(v)

    __eq__, __ne__, __hash__ = object.__eq__, object.__ne__, object.__hash__

    def __repr__(self):
        return "Message{topic=%s,partition=%s,offset=%s,error=%r}" % (self.topic(), self.partition(), self.offset(),
                                                                      self.error())


class _PackedMessage(Message):
    """A message of a block of spool_consumer_poll_packed (bytes, copied out of libspool once
    per block): (block,) + the fields of its spool_packed_message_t. The key, value, topic and
    headers are cut from the block when asked for; the block lives as long as one of its
    messages does."""

    __slots__ = ()
    # (block, err, partition, offset, timestamp, topic_off, topic_len, errstr_off, errstr_len,
    #  key_off, key_len, value_off, value_len, headers_off, header_count)

    def error(self):
        code = self[1]
        if not code:
            return None
        at = self[7]
        return KafkaError(code, self[0][at:at + self[8]].decode(errors="replace") or None)

    def topic(self):
        at, n = self[5], self[6]
        if not n:
            return None
        name = self[0][at:at + n]
        t = _topics.get(name)
        if t is None:
            t = _topics[name] = name.decode(errors="replace")
        return t

    def partition(self):
        p = self[2]
        return None if p < 0 else p

    def offset(self):
        o = self[3]
        return None if o < 0 else o

    def timestamp(self):
        ts = self[4]
        if ts < 0:
            return (TIMESTAMP_NOT_AVAILABLE, 0)
        return (TIMESTAMP_CREATE_TIME, ts)

    def key(self):
        n = self[10]
        if n < 0:
            return None
        at = self[9]
        return self[0][at:at + n]

    def value(self):
        n = self[12]
        if n < 0:
            return None
        at = self[11]
        return self[0][at:at + n]

    def __len__(self):
        n = self[12]
        return 0 if n < 0 else n

    def headers(self):
        count = self[14]
        if not count:
            return None
        block, at, out = self[0], self[13], []
        for _ in range(count):
            (kl,) = _int64.unpack_from(block, at)
            key = block[at + 8:at + 8 + kl].decode(errors="replace")
            at += 8 + kl
            (vl,) = _int64.unpack_from(block, at)
            at += 8
            if vl < 0:
                out.append((key, None))
            else:
                out.append((key, block[at:at + vl]))
                at += vl
        return out


_int64 = struct.Struct("@q")
_packed = struct.Struct(L.PACKED_MESSAGE_FORMAT)


def _unpack_messages(block, n):
    """The n messages of a block of spool_consumer_poll_packed, copied into bytes."""
    return [_tuple_new(_PackedMessage, (block,) + h) for h in _packed.iter_unpack(memoryview(block)[:n * _packed.size])]


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


_BATCH = 1024  # records handed to libspool per crossing, at most
_BIG = 16384  # a value above this many bytes is handed over at once (bounds the bytes waiting in Python)
_INDEX_BITS = 20  # a record's msg_opaque: its batch's number << _INDEX_BITS | its index in the batch
_INDEX_MASK = (1 << _INDEX_BITS) - 1
_opaque_type = "Q" if ctypes.sizeof(ctypes.c_void_p) == 8 else "I"
_report = struct.Struct(L.REPORT_FORMAT)
_repeat = itertools.repeat
_RAW = {bytes, type(None)}


class _Batch:
    """Records of one topic handed to libspool in one call, kept until their last delivery
    report: a report's message takes its key and value from here."""

    __slots__ = ("topic", "values", "keys", "cb", "cbs", "left", "headers")

    def __init__(self, topic, values, keys, cb, cbs, headers=None):
        self.topic, self.values, self.keys, self.cb, self.cbs = topic, values, keys, cb, cbs
        self.left = len(values)
        self.headers = headers  # a record produced alone with headers: its list, for its report


class _ReportMessage(Message):
    """The message of a delivery report: (batch, block, at), its spool_report_t (msg_opaque,
    offset, timestamp, partition, err) at byte at of block, read only when asked for; key and
    value are the batch's."""

    __slots__ = ()

    def _report(self):
        return _report.unpack_from(self[1], self[2])

    def error(self):
        code = self._report()[4]
        return KafkaError(code) if code else None

    def topic(self):
        return self[0].topic

    def partition(self):
        p = self._report()[3]
        return None if p < 0 else p

    def offset(self):
        o = self._report()[1]
        return None if o < 0 else o

    def timestamp(self):
        ts = self._report()[2]
        if ts < 0:
            return (TIMESTAMP_NOT_AVAILABLE, 0)
        return (TIMESTAMP_CREATE_TIME, ts)

    def _index(self):
        return self._report()[0] & _INDEX_MASK

    def key(self):
        keys = self[0].keys
        return None if keys is None else keys[self._index()]

    def value(self):
        return self[0].values[self._index()]

    def headers(self):
        return self[0].headers


def _column(items):
    """The packed column of keys or values: the lengths (-1 for None) and the bytes."""
    if None in items:
        return array("q", [-1 if v is None else len(v) for v in items]), b"".join([v for v in items if v is not None])
    return array("q", map(len, items)), b"".join(items)


def _headers(headers):
    """A record's headers (a dict or (key, value) pairs) as spool_header_t and as the
    (str, bytes) pairs its delivery report's message gives back."""
    hdrs = list(headers.items()) if isinstance(headers, dict) else list(headers)
    harr = (L.Header * len(hdrs))()
    kept = []
    for i, (hk, hv) in enumerate(hdrs):
        hkb, hvb = _bytes(hk, "header key"), _bytes(hv, "header value")
        kept.append((hk if isinstance(hk, str) else hkb.decode(errors="replace"), hvb))
        harr[i].key, harr[i].key_len = hkb, len(hkb)
        harr[i].value = ctypes.cast(ctypes.c_char_p(hvb), ctypes.c_void_p) if hvb is not None else None
        harr[i].value_len = 0 if hvb is None else len(hvb)
    return harr, kept


def _addr(a):
    """The address of an array's data, for a ctypes c_void_p argument; None stays NULL."""
    return None if a is None else a.buffer_info()[0]


def _linger(ref, wake, linger):
    """The thread of a producer that hands its waiting records to libspool linger seconds
    after the first of them came, so that records go out even when the application neither
    produces more nor polls. It holds the producer only while it works (ref is weak)."""
    while True:
        wake.wait()
        p = ref()
        if p is None or not p._p:
            return
        wake.clear()
        del p
        time.sleep(linger)
        p = ref()
        if p is None or not p._p:
            return
        p._send_all()
        if p._waiting():
            wake.set()  # a record came while sending: its produce may have seen others waiting
        del p


class Producer:
    """Producer(conf): conf is a dict of librdkafka-style keys ("bootstrap.servers", "acks",
    "linger.ms", ...), plus "on_delivery" (or "delivery.report.cb"), the default delivery
    callback. Delivery callbacks, called as cb(err, msg), run inside poll() and flush().

    produce() only queues a record in Python; the queue is handed to libspool in one call per
    topic (spool_produce_packed) when it holds 1024 records or a big value, in poll(),
    flush() and len(), and linger.ms after its first record (a thread of the producer).
    Delivery reports come back many per call (spool_producer_poll_reports)."""

    def __init__(self, conf):
        self._p = None
        conf = dict(conf)
        self._default_cb = conf.get("on_delivery") or conf.get("delivery.report.cb")
        linger = float(conf.get("linger.ms", conf.get("queue.buffering.max.ms", 5))) / 1000
        c = _new_conf(conf, {"on_delivery", "delivery.report.cb"})
        # The queues. _q: (topic, value, key, partition, callback) per record. _plain: topic →
        # the values of its plain records (bytes, no key, partition or callback of their own:
        # the most common kind, queued without a tuple each); the dict is replaced, never
        # changed, and a topic's list once made is kept. Producers only append (atomic);
        # senders take a prefix under _lock, _q's before _plain's, so that no record is lost,
        # and a record that goes to _q waits until _plain is empty, so that a thread's records
        # keep their order.
        self._q = []
        self._plain = {}
        self._names = {}  # topic → encoded name
        self._inflight = {}  # batch number → _Batch handed over with callbacks, until its last report
        self._batches = 0
        self._lock = threading.RLock()  # senders and report servers
        self._errors = []
        # Reports are kept only for a producer with a delivery callback; this one is never
        # called: the reports are taken packed (spool_producer_poll_reports).
        self._dr = L.DR_CB(lambda *_: None)
        L.spool_conf_set_dr_cb(c, self._dr)
        self._p = _new_handle(L.spool_producer_new, c)
        self._wake = threading.Event()
        threading.Thread(target=_linger, args=(weakref.ref(self), self._wake, linger), daemon=True,
                         name="spool-linger").start()

    def _handle(self):
        if not self._p:
            raise RuntimeError("Producer has been closed")
        return self._p

    def _raise_callback_errors(self):
        if self._errors:
            e, self._errors = self._errors[0], []
            raise e

    def produce(self, topic, value=None, key=None, partition=-1, on_delivery=None, callback=None,
                timestamp=0, headers=None):
        """Queues one record; its delivery callback runs in a later poll() or flush().
        headers: a dict or a list of (key, value) pairs."""
        plain = self._plain.get(topic)
        if plain is not None and key is None and partition == -1 and type(value) is bytes \
                and on_delivery is None and callback is None and not timestamp and not headers:
            plain.append(value)
            n = len(plain)
            if n >= _BATCH or len(value) > _BIG:
                self._send_all()
            elif n == 1:
                self._wake.set()
            return
        if (type(value) is not bytes and value is not None) or (type(key) is not bytes and key is not None) \
                or partition < -1 or timestamp or headers or not self._p:
            self._produce_checked(topic, value, key, partition, on_delivery or callback, timestamp, headers)
            return
        if plain is None and type(topic) is str:
            self._plain_topic(topic)
        if self._plain and any(self._plain.values()):
            self._send_all()  # the plain records before this one go first
        q = self._q
        q.append((topic, value, key, partition, on_delivery or callback))
        n = len(q)
        if n >= _BATCH or (value is not None and len(value) > _BIG):
            self._send_all()
        elif n == 1:
            self._wake.set()

    def _produce_checked(self, topic, value, key, partition, cb, timestamp, headers):
        """produce() for what its fast path does not take: conversions, errors, headers,
        timestamps."""
        self._handle()
        value, key = _bytes(value, "value"), _bytes(key, "key")
        if partition < -1:
            raise KafkaException(KafkaError(KafkaError._BAD_ARG, "produce: partition %d is below -1" % partition))
        if not isinstance(timestamp, int) or timestamp < 0:
            raise KafkaException(KafkaError(KafkaError._BAD_ARG, "produce: timestamp %r is not milliseconds since the epoch"
                                            % (timestamp,)))
        if not isinstance(topic, str):
            raise TypeError("topic must be str, not %s" % type(topic).__name__)
        # Handed over alone, after the records queued before it.
        harr, kept = _headers(headers) if headers else (None, None)
        with self._lock:
            self._send_all()
            self._submit(topic, (value,), (key,), (partition,), (cb,), harr, kept, timestamp)

    def _name(self, topic):
        name = self._names.get(topic)
        if name is None:
            name = self._names[topic] = topic.encode()
        return name

    def _track(self, b):
        """Numbers batch b and keeps it for its reports; its first msg_opaque, 0 when no
        callback wants its reports."""
        if b.cb is None and b.cbs is None:
            return 0
        self._batches += 1
        self._inflight[self._batches] = b
        return self._batches << _INDEX_BITS

    def _untrack(self, first):
        if first:
            del self._inflight[first >> _INDEX_BITS]

    def _plain_topic(self, topic):
        """Gives topic a queue of plain records, so that its next plain records take
        produce()'s first way. _plain is replaced, never changed, so that it can be read and
        iterated without the lock."""
        with self._lock:
            if topic not in self._plain:
                self._plain = {**self._plain, topic: []}

    def _waiting(self):
        """Whether records wait in the queues."""
        return bool(self._q) or any(self._plain.values())

    def _send_all(self):
        """Hands every queued record to libspool, one call per topic and up to _BATCH records."""
        if not self._waiting():
            return
        q = self._q
        with self._lock:
            while q:
                n = min(len(q), _BATCH)
                items = q[:n]
                del q[:n]
                topics, values, keys, parts, cbs = zip(*items)
                if topics.count(topics[0]) == n:
                    self._submit(topics[0], values, keys, parts, cbs)
                    continue
                by = {}  # several topics: one call each, records in order within each
                for rec in items:
                    by.setdefault(rec[0], []).append(rec)
                for topic, recs in by.items():
                    self._submit(topic, *list(zip(*recs))[1:])
            for topic, plain in self._plain.items():
                while plain:
                    n = min(len(plain), _BATCH)
                    values = plain[:n]
                    del plain[:n]
                    self._submit(topic, values)

    def _submit(self, topic, values, keys=None, parts=None, cbs=None, harr=None, kept=None, timestamp=0):
        """One spool_produce_packed call for records of one topic (columns as sequences;
        keys, parts or cbs None: every key None, every partition -1, every callback the
        default); harr and kept: the headers of a single record, as spool_header_t and as
        Python values. A single record with a timestamp goes by spool_produce_timestamp
        instead (which has no packed form)."""
        n = len(values)
        cb = None
        if cbs is not None:
            cb = cbs[0]
            if cbs.count(cb) == n:  # one callback for all: kept once
                cbs = None
            else:
                cb = None
        keyed = keys is not None and keys.count(None) != n
        b = _Batch(topic, values, keys if keyed else None, cb or self._default_cb if cbs is None else None, cbs, kept)
        first = self._track(b)
        if timestamp:
            key, value, partition = keys[0], values[0], parts[0]
            err = L.spool_produce_timestamp(self._handle(), self._name(topic), partition, timestamp,
                                            key, 0 if key is None else len(key), value, 0 if value is None else len(value),
                                            harr, 0 if harr is None else len(harr), first or None)
            if err:
                self._untrack(first)
                _check(err, "produce")
            return
        hptrs = hcounts = None
        if harr is not None:
            hptrs = (ctypes.c_void_p * 1)(ctypes.addressof(harr))
            hcounts = (ctypes.c_size_t * 1)(len(harr))
        opaques = array(_opaque_type, range(first, first + n)) if first else None
        klens, kbuf = _column(keys) if keyed else (None, None)
        vlens, vbuf = _column(values)
        partitions = None if parts is None or parts.count(-1) == n else array("i", parts)  # alive during the call
        err = L.spool_produce_packed(self._handle(), self._name(topic), n, _addr(partitions),
                                     kbuf, _addr(klens), vbuf, _addr(vlens), hptrs, hcounts, _addr(opaques))
        if err:
            self._untrack(first)
            _check(err, "produce")

    def produce_batch(self, topic, messages, partition=-1, on_delivery=None, callback=None):
        """Buffers many records with one call into libspool per 1024, as confluent-kafka's
        produce_batch: messages is a list of dicts with "value", and optionally "key",
        "partition", "timestamp" (milliseconds since the epoch), "headers" (a dict or (key,
        value) pairs) and "callback" (or "on_delivery"), each called as cb(err, msg) in a later
        poll() or flush(); the call's own callback is the default. All are buffered or, when
        one is bad, none (KafkaException); returns len(messages). A record with headers or a
        timestamp crosses alone, in its place among the others."""
        default = on_delivery or callback
        messages = list(messages)
        n = len(messages)
        # Column by column with map(), which loops in C: the fields of a dict per record are
        # what costs here.
        get, has = dict.get, dict.__contains__
        values = list(map(get, messages, _repeat("value")))
        keys = list(map(get, messages, _repeat("key")))
        for col, what in ((values, "value"), (keys, "key")):
            if not set(map(type, col)) <= _RAW:
                col[:] = [_bytes(v, what) for v in col]
        parts = list(map(get, messages, _repeat("partition"), _repeat(partition)))
        if n and min(parts) < -1:
            raise KafkaException(KafkaError(KafkaError._BAD_ARG, "produce_batch: partition %d is below -1" % min(parts)))
        if any(map(has, messages, _repeat("callback"))) or any(map(has, messages, _repeat("on_delivery"))):
            cbs = [m.get("callback") or m.get("on_delivery") or default for m in messages]
        else:
            cbs = [default] * n
        alone = {}  # index → (timestamp, headers as spool_header_t, kept), for records that cross alone
        if any(map(has, messages, _repeat("headers"))) or any(map(has, messages, _repeat("timestamp"))):
            for i, m in enumerate(messages):
                ts, hdrs = m.get("timestamp") or 0, m.get("headers")
                if type(ts) is not int or ts < 0:
                    raise KafkaException(KafkaError(KafkaError._BAD_ARG, "produce_batch: timestamp %r is not "
                                                    "milliseconds since the epoch" % (ts,)))
                if ts or hdrs:
                    alone[i] = (ts,) + (_headers(hdrs) if hdrs else (None, None))
        if not values:
            return 0
        self._handle()
        with self._lock:
            self._send_all()
            # Runs of up to _BATCH records between those that cross alone, in order.
            i = 0
            for j in sorted(alone) + [n]:
                for k in range(i, j, _BATCH):
                    s = slice(k, min(k + _BATCH, j))
                    self._submit(topic, tuple(values[s]), tuple(keys[s]), tuple(parts[s]), tuple(cbs[s]))
                if j < n:
                    ts, harr, kept = alone[j]
                    self._submit(topic, (values[j],), (keys[j],), (parts[j],), (cbs[j],), harr, kept, ts)
                i = j + 1
        return n

    def _serve(self, timeout_ms):
        """Takes the delivery reports ready (waiting up to timeout_ms for one) and calls their
        callbacks; returns how many reports there were. The reports come sorted by msg_opaque,
        so those of one batch are together: a batch's callbacks are called by map(), without
        a Python loop per report, when they share one callback and all succeeded."""
        ptr = ctypes.c_void_p()
        n = L.spool_producer_poll_reports(self._handle(), timeout_ms, ctypes.byref(ptr))
        if not n:
            return 0
        try:
            data = ctypes.string_at(ptr, n * _report.size)
        finally:
            L.spool_free(ptr)
        view = memoryview(data)
        opaques = view.cast(_opaque_type)[::_report.size // view.cast(_opaque_type).itemsize]
        codes = view.cast("i")[_report.size // 4 - 1::_report.size // 4]
        calls = []
        with self._lock:
            i = bisect.bisect_left(opaques, 1)  # reports of records nobody waits for come first (0)
            inflight = self._inflight
            while i < n:
                number = opaques[i] >> _INDEX_BITS
                j = bisect.bisect_left(opaques, (number + 1) << _INDEX_BITS, i)
                b = inflight[number]
                b.left -= j - i
                if not b.left:
                    del inflight[number]
                calls.append((b, i, j))
                i = j
        for b, i, j in calls:
            msgs = map(_tuple_new, _repeat(_ReportMessage),
                       zip(_repeat(b), _repeat(data), range(i * _report.size, j * _report.size, _report.size)))
            if b.cbs is None and not any(codes[i:j]):
                it = map(b.cb, _repeat(None), msgs)
            else:
                it = map(self._report_one, _repeat(b), msgs)
            while True:
                try:
                    collections.deque(it, 0)  # runs the callbacks
                    break
                except BaseException as e:  # re-raised by poll/flush, after the other callbacks
                    self._errors.append(e)
        return n

    def _report_one(self, b, msg):
        cb = b.cb if b.cbs is None else (b.cbs[msg._index()] or self._default_cb)
        if cb is not None:
            cb(msg.error(), msg)

    def poll(self, timeout=None):
        """Hands the queued records to libspool and serves delivery callbacks, waiting up to
        timeout seconds for one; returns how many reports were served."""
        self._send_all()
        n = self._serve(_timeout_ms(timeout))
        self._raise_callback_errors()
        return n

    def flush(self, timeout=None):
        """Waits until every record has been delivered or failed (serving callbacks), at most
        timeout seconds; returns the number of records still outstanding."""
        self._send_all()
        deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        while L.spool_producer_outq_len(self._handle()) > 0:
            left = 100 if deadline is None else min(100, int((deadline - time.monotonic()) * 1000))
            if left <= 0:
                break
            self._serve(left)
        self._serve(0)
        self._raise_callback_errors()
        return len(self)

    def __len__(self):
        self._send_all()
        return L.spool_producer_outq_len(self._handle())

    def create_topic(self, topic, num_partitions=1, replication_factor=-1, timeout=30):
        """Creates a topic (a libspool addition; confluent-kafka has AdminClient for this)."""
        _check(L.spool_create_topic(self._handle(), topic.encode(), num_partitions, replication_factor,
                                    _timeout_ms(timeout)), "create_topic " + topic)

    def delete_topic(self, topic, timeout=30):
        _check(L.spool_delete_topic(self._handle(), topic.encode(), _timeout_ms(timeout)), "delete_topic " + topic)

    def close(self):
        """Frees the producer (records not flushed are dropped). Also on garbage collection."""
        with self._lock:
            if self._p:
                L.spool_producer_destroy(self._p)
                self._p = None
                self._q.clear()
                for plain in self._plain.values():
                    plain.clear()
                self._plain = {}  # produce() then takes the way that finds the producer closed
                self._wake.set()  # the linger thread ends

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._p:
            self.flush()
        self.close()

    def __del__(self):
        if getattr(self, "_lock", None) is not None:
            self.close()


class Consumer:
    """Consumer(conf): with "group.id", subscribe() joins the group; without, assign()
    chooses partitions. Iterating yields messages until close(). conf may hold "on_commit",
    called as on_commit(err, [TopicPartition]) inside poll(), consume() and close() with the
    outcome of each commit (err None when it succeeded)."""

    def __init__(self, conf):
        self._c = None
        self._on = {}  # rebalance callbacks given to subscribe
        self._errors = []
        # Messages taken from libspool but not returned yet: those of a call that raised a
        # callback's exception, and, for a consumer without a group, those poll() took ahead.
        self._held = collections.deque()
        # Without a group nothing is committed, so poll() may take many messages per crossing
        # and return them one by one. In a group it takes one: the library commits what it
        # handed over, which must be only what the application got.
        self._ahead = 1 if "group.id" in conf else 1024
        self._on_commit = conf.get("on_commit")
        c = _new_conf(conf, {"on_commit"})
        if "group.id" in conf:
            self._rb = L.REBALANCE_CB(self._on_rebalance)  # kept alive as long as the consumer
            L.spool_conf_set_rebalance_cb(c, self._rb)
            if self._on_commit is not None:
                self._cc = L.OFFSET_COMMIT_CB(self._on_committed)
                L.spool_conf_set_offset_commit_cb(c, self._cc)
        self._c = _new_handle(L.spool_consumer_new, c)

    def _on_committed(self, _consumer, code, offsets, count, _opaque):
        """Runs inside poll(), consume() and close(), on their thread: on_commit(err, partitions)."""
        try:
            tps = [TopicPartition(offsets[i].topic.decode(), offsets[i].partition, offsets[i].offset) for i in range(count)]
            self._on_commit(KafkaError(code) if code else None, tps)
        except BaseException as e:  # re-raised by the call that served it: ctypes cannot carry it
            self._errors.append(e)

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
            self._drop_held(tp.topic, tp.partition)
            _check(L.spool_consumer_assign(self._handle(), tp.topic.encode(), tp.partition, offset), "assign")

    def seek(self, partition):
        self._drop_held(partition.topic, partition.partition)
        _check(L.spool_consumer_seek(self._handle(), partition.topic.encode(), partition.partition,
                                     partition.offset), "seek")

    def _drop_held(self, topic, partition):
        """Forgets the messages of topic[partition] taken ahead: it starts again elsewhere."""
        if self._held:
            self._held = collections.deque(m for m in self._held
                                           if m.topic() != topic or m.partition() != partition)

    def _take(self, timeout, count):
        """Up to count messages in one crossing (spool_consumer_poll_packed): waits up to
        timeout seconds for the first, then takes those ready; [] on timeout."""
        block, size = ctypes.c_void_p(), ctypes.c_size_t()
        n = L.spool_consumer_poll_packed(self._handle(), _timeout_ms(timeout), count, ctypes.byref(block),
                                         ctypes.byref(size))
        out = []
        if n:
            try:
                out = _unpack_messages(ctypes.string_at(block, size.value), n)
            finally:
                L.spool_free(block)
        if self._errors:
            self._held.extend(out)  # the next poll or consume returns them
            self._raise_callback_errors()
        return out

    def poll(self, timeout=None):
        """The next message (check msg.error()), or None after timeout seconds."""
        if not self._held:
            out = self._take(timeout, self._ahead)
            if not out:
                return None
            self._held.extend(out)
        return self._held.popleft()

    def consume(self, num_messages=1, timeout=-1):
        """Up to num_messages messages (records and errors) in one call to libspool: waits up to
        timeout seconds for the first, then takes those ready; [] on timeout."""
        if num_messages < 1:
            raise ValueError("num_messages must be at least 1")
        if self._held:
            held = self._held
            return [held.popleft() for _ in range(min(num_messages, len(held)))]
        return self._take(timeout, num_messages)

    def commit(self, message=None, offsets=None, asynchronous=True):
        """Commits, as confluent-kafka's: without arguments, for each partition the offset
        after the last message poll() or consume() returned; with message, the offset after
        that message in its partition; with offsets (a list of TopicPartition), their offsets
        as given (each the next record to read). Given message or offsets, a synchronous
        commit returns the TopicPartitions committed; otherwise it returns None. With
        enable.auto.commit on, what poll() returned is still committed later."""
        if message is None and offsets is None:
            _check(L.spool_consumer_commit(self._handle(), 1 if asynchronous else 0), "commit")
            return None
        if message is not None and offsets is not None:
            raise ValueError("commit: message and offsets are exclusive")
        if message is not None:
            if message.error() is not None:
                raise KafkaException(KafkaError(KafkaError._BAD_ARG, "commit: the message is an error, not a record"))
            offsets = [TopicPartition(message.topic(), message.partition(), message.offset() + 1)]
        offsets = list(offsets)
        arr = (L.TopicPartitionOffsetC * len(offsets))()
        for i, tp in enumerate(offsets):
            arr[i].topic, arr[i].partition, arr[i].offset = tp.topic.encode(), tp.partition, tp.offset
        _check(L.spool_consumer_commit_offsets(self._handle(), arr, len(offsets), 1 if asynchronous else 0), "commit")
        return None if asynchronous else offsets

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

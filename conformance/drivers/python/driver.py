"""The conformance driver of Spool's Python binding (sdk-cgo/bindings/python, module spool):
JSON lines on standard input, one response line per request on standard output
(conformance/DRIVERS.md). One process is one client: a Producer, and a Consumer made when
first needed (a group member at open, a consumer without a group at the first consume).

Requests the binding cannot serve are answered with "unsupported" and the reason, which the
suite reports as a skipped case: a producer timestamp (libspool's produce takes none). A
group member's assignment is what its on_assign, on_revoke and on_lost callbacks said, which
run inside poll.

Run: python3 driver.py, with the binding importable (PYTHONPATH or pip) and libspool found
($SPOOL_LIBRARY or pkg-config)."""

import base64
import json
import sys
import time

import spool


class Unsupported(Exception):
    """The binding cannot do this request at all."""


def b64(data):
    return None if data is None else base64.b64encode(data).decode()


def unb64(text):
    return None if text is None else base64.b64decode(text, validate=True)


class Client:
    def __init__(self, req):
        self.bootstrap = req["bootstrap"]
        # The open request's "config": librdkafka's security keys, as they are, for every client.
        self.base = dict(req.get("config") or {}, **{"bootstrap.servers": self.bootstrap,
                                                     "client.id": "spool-conformance-python"})
        conf = dict(self.base, acks=req.get("acks") or "all")
        if req.get("compression"):
            conf["compression.type"] = req["compression"]
        if req.get("idempotent") is not None:
            conf["enable.idempotence"] = bool(req["idempotent"])
        partitioner = req.get("partitioner") or "default"
        if partitioner not in ("default", "manual"):
            raise ValueError("open: partitioner %r" % partitioner)
        self.manual = partitioner == "manual"
        self.producer = spool.Producer(conf)
        self.consumer = None
        self.group = req.get("group") or ""
        if self.group:
            cc = dict(self.base, **{"group.id": self.group, "enable.auto.commit": False, "auto.offset.reset": "earliest"})
            if req.get("session_timeout_ms"):
                cc["session.timeout.ms"] = req["session_timeout_ms"]
                cc["heartbeat.interval.ms"] = req["session_timeout_ms"] // 10
            if req.get("balancer"):
                cc["partition.assignment.strategy"] = req["balancer"]
            self.consumer = spool.Consumer(cc)
            self.consumer.subscribe(req.get("topics") or [], on_assign=self.assigned,
                                    on_revoke=self.revoked, on_lost=self.revoked)
        self.owned, self.taken = {}, {}

    def assigned(self, consumer, partitions):
        for tp in partitions:
            self.owned.setdefault(tp.topic, set()).add(tp.partition)

    def revoked(self, consumer, partitions):
        for tp in partitions:
            self.owned.get(tp.topic, set()).discard(tp.partition)
            self.taken.setdefault(tp.topic, set()).add(tp.partition)

    def assignment(self):
        if not self.group:
            raise RuntimeError("assignment: the client is not a group member")
        as_lists = lambda m: {t: sorted(ps) for t, ps in m.items() if ps}
        return {"assignment": as_lists(self.owned), "revoked": as_lists(self.taken)}

    def produce(self, records):
        if any(r.get("timestamp_ms") for r in records):
            raise Unsupported("the binding has no producer timestamp (libspool's produce takes none)")
        results = [None] * len(records)

        def report(i):
            def cb(err, msg):
                results[i] = {"partition": msg.partition() if msg.partition() is not None else -1,
                              "offset": msg.offset() if msg.offset() is not None else -1}
                if err is not None:
                    results[i]["error"] = str(err)
            return cb

        for i, r in enumerate(records):
            partition = r.get("partition", -1)
            if not self.manual and partition < 0:
                partition = -1
            headers = [(h["key"], unb64(h.get("value"))) for h in r.get("headers") or []]
            try:
                self.producer.produce(r["topic"], value=unb64(r.get("value")), key=unb64(r.get("key")),
                                      partition=partition, on_delivery=report(i), headers=headers or None)
            except spool.KafkaException as e:
                results[i] = {"partition": partition, "offset": -1, "error": str(e)}
        self.producer.flush()
        return [r or {"partition": -1, "offset": -1, "error": "no delivery report after flush"} for r in results]

    def poll(self, count, timeout_ms):
        deadline = time.monotonic() + timeout_ms / 1000.0
        out = []
        while count == 0 or len(out) < count:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            m = self.consumer.poll(left)
            if m is None:
                continue
            if m.error() is not None:
                raise RuntimeError("poll: %s" % m.error())
            _, ts = m.timestamp()
            rec = {"topic": m.topic(), "partition": m.partition(), "offset": m.offset(), "timestamp_ms": ts,
                   "key": b64(m.key()), "value": b64(m.value())}
            if m.headers():
                rec["headers"] = [{"key": k, "value": b64(v)} for k, v in m.headers()]
            out.append(rec)
        return out

    def consume(self, req):
        if self.group:
            raise RuntimeError("consume: the client is a group member")
        partitions = req.get("partitions") or 0
        if partitions <= 0:
            raise Unsupported("consume without \"partitions\": the binding cannot look up a topic's partitions")
        if self.consumer is None:
            self.consumer = spool.Consumer(dict(self.base))
        start = req.get("from_offset", -2)
        if start < 0:
            start = spool.OFFSET_BEGINNING
        self.consumer.assign([spool.TopicPartition(req["topic"], p, start) for p in range(partitions)])
        return self.poll(req.get("count", 0), req.get("timeout_ms") or 10000)

    def commit(self):
        if not self.group:
            raise RuntimeError("commit: the client is not in a group")
        self.consumer.commit(asynchronous=False)

    def close(self):
        if self.consumer is not None:
            self.consumer.close()
            self.consumer = None
        if self.producer is not None:
            self.producer.flush(10)
            self.producer.close()
            self.producer = None


def serve(client, req):
    """Runs one request; returns the response's fields besides id and ok, and the client."""
    cmd = req.get("cmd")
    if cmd != "open" and client is None:
        raise RuntimeError("%s before open" % cmd)
    if cmd == "open":
        if client is not None:
            raise RuntimeError("open: the client is open already")
        return {"client": "spool (Python, libspool %s)" % spool.libversion()[0]}, Client(req)
    if cmd == "produce":
        return {"results": client.produce(req.get("records") or [])}, client
    if cmd == "consume":
        return {"records": client.consume(req)}, client
    if cmd == "poll":
        if not client.group:
            raise RuntimeError("poll: the client is not a group member")
        return {"records": client.poll(req.get("count", 0), req.get("timeout_ms") or 10000)}, client
    if cmd == "commit":
        client.commit()
        return {}, client
    if cmd == "assignment":
        return client.assignment(), client
    if cmd == "close":
        client.close()
        return {}, None
    raise RuntimeError("unknown command %r" % cmd)


def main():
    client = None
    for line in sys.stdin:
        resp = {"id": 0, "ok": True}
        try:
            req = json.loads(line)
            resp["id"] = req.get("id", 0)
            fields, client = serve(client, req)
            resp.update(fields)
        except Unsupported as e:
            resp.update(ok=False, unsupported=str(e))
        except Exception as e:  # every failure is an answer: the suite shows it
            resp.update(ok=False, error="%s: %s" % (type(e).__name__, e))
        sys.stdout.write(json.dumps(resp) + "\n")
        sys.stdout.flush()
    if client is not None:
        client.close()


if __name__ == "__main__":
    main()

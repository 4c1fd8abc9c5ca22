"""py_bench.py: the Python side of the benchmark; one script for both libraries, so only the
import differs: `spool` (this binding) or `confluent_kafka` (librdkafka underneath).
usage: py_bench.py spool|confluent_kafka BROKER TOPIC PARTITIONS N SIZE
With SPOOL_BENCH_BATCH=K in the environment, a library that has Producer.produce_batch (this
binding) produces K records a call with it; the other still calls produce per record. With
SPOOL_BENCH_POLL=1 both consume with poll(timeout), one message a call, instead of
consume(1024, timeout).
prints: produce_rps consume_rps peak_rss_kib"""
import importlib
import os
import sys
import time

lib, broker, topic = sys.argv[1], sys.argv[2], sys.argv[3]
partitions, n, size = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
k = importlib.import_module(lib)
value = b"v" * size
delivered = 0


def on_delivery(err, msg):
    global delivered
    if err is None:
        delivered += 1


def queue_full(e):
    """Whether e says the producer's queue is full: confluent_kafka raises BufferError, this
    binding KafkaException(QUEUE_FULL); either way, serve reports and produce again."""
    return isinstance(e, BufferError) or (e.args and getattr(e.args[0], "code", lambda: None)() == -104)


p = k.Producer({"bootstrap.servers": broker, "acks": "all", "linger.ms": 5, "batch.size": 1048576,
                "on_delivery": on_delivery})
batch = int(os.environ.get("SPOOL_BENCH_BATCH", "0"))
t0 = time.monotonic()
if batch > 0 and hasattr(p, "produce_batch"):
    msgs = [{"value": value}] * batch
    for i in range(0, n, batch):
        while True:
            try:
                p.produce_batch(topic, msgs[:min(batch, n - i)])
                break
            except Exception as e:
                if not queue_full(e):
                    raise
                p.poll(0.01)
        p.poll(0)
for i in range(n if not (batch > 0 and hasattr(p, "produce_batch")) else 0):
    while True:
        try:
            p.produce(topic, value)
            break
        except Exception as e:
            if not queue_full(e):
                raise
            p.poll(0.01)
    if i % 1024 == 0:
        p.poll(0)
p.flush(120)
produce_s = time.monotonic() - t0
if delivered != n:
    sys.exit("delivered %d of %d" % (delivered, n))
del p

conf = {"bootstrap.servers": broker}
if lib == "confluent_kafka":  # which needs a group.id even to assign; libspool refuses assign in a group
    conf.update({"group.id": "bench", "enable.auto.commit": False})
c = k.Consumer(conf)
c.assign([k.TopicPartition(topic, i, k.OFFSET_BEGINNING) for i in range(partitions)])
got = 0
t0 = time.monotonic()
last = t0
if os.environ.get("SPOOL_BENCH_POLL") == "1":  # poll(timeout), one message a call
    mark = 0
    while got < n:
        m = c.poll(0.05)
        if m is None:
            now = time.monotonic()
            if got != mark:
                mark, last = got, now
            elif now - last > 10:
                sys.exit("consumed %d of %d" % (got, n))
        elif m.error() is None:
            got += 1
while got < n:
    # librdkafka's consume waits for all num_messages or the timeout: keep the timeout short
    msgs = c.consume(1024, 0.05)
    if msgs:
        last = time.monotonic()
    elif time.monotonic() - last > 10:
        sys.exit("consumed %d of %d" % (got, n))
    got += sum(1 for m in msgs if m.error() is None)
consume_s = time.monotonic() - t0
c.close()

def peak_rss_kib():
    """VmHWM of /proc/self/status; not ru_maxrss, which Linux carries over exec from the
    process that forked (the go test binary, with a broker inside)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return -1


print("%.0f %.0f %d" % (n / produce_s, n / consume_s, peak_rss_kib()))

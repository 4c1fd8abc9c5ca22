package io.spoolmq.clients.producer;

import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import io.spoolmq.clients.internal.LibSpool;
import io.spoolmq.clients.internal.NativeConfig;
import io.spoolmq.clients.internal.Packed;
import io.spoolmq.common.KafkaException;
import io.spoolmq.common.header.Header;
import io.spoolmq.common.serialization.Serializer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * A producer with the Java client's API: {@code send} returns a {@link Future} (a
 * {@link CompletableFuture}) of the record's {@link RecordMetadata} and runs the optional
 * {@link Callback}. A thread of the producer ("spool-producer-poll") serves libspool's
 * delivery reports: callbacks run there, as on the Java client's I/O thread. Thread-safe.
 * {@link #close()} flushes, stops that thread and frees the libspool producer.
 */
public class KafkaProducer<K, V> implements AutoCloseable {
    private final Serializer<K> keySerializer;
    private final Serializer<V> valueSerializer;
    private final Pointer handle;
    private final Map<Long, Pending> pending = new ConcurrentHashMap<>();
    private final Map<String, byte[]> topicNames = new ConcurrentHashMap<>();
    private final AtomicLong nextId = new AtomicLong(1);
    // Held so JNA keeps the native callback alive as long as the producer.
    private final LibSpool.DeliveryCallback onDelivery = this::delivered;
    private final Thread poller;
    private final long maxBlockNanos;
    /** How long send waits before trying a full queue again. */
    private static final long QUEUE_FULL_PAUSE_NANOS = 100_000;
    private volatile boolean closed;
    // Calls on the handle hold the read lock; close takes the write lock, so no call can use
    // the handle after it is destroyed.
    private final ReentrantReadWriteLock lifecycle = new ReentrantReadWriteLock();

    private record Pending(String topic, CompletableFuture<RecordMetadata> future, Callback callback) {}

    public KafkaProducer(Properties props) {
        this(NativeConfig.toMap(props), null, null);
    }

    public KafkaProducer(Properties props, Serializer<K> keySerializer, Serializer<V> valueSerializer) {
        this(NativeConfig.toMap(props), keySerializer, valueSerializer);
    }

    public KafkaProducer(Map<String, Object> configs) {
        this(configs, null, null);
    }

    @SuppressWarnings("unchecked")
    public KafkaProducer(Map<String, Object> configs, Serializer<K> keySerializer, Serializer<V> valueSerializer) {
        this.keySerializer = NativeConfig.instance(configs, "key.serializer", keySerializer, Serializer.class);
        this.valueSerializer = NativeConfig.instance(configs, "value.serializer", valueSerializer, Serializer.class);
        this.maxBlockNanos = NativeConfig.millis(configs, "max.block.ms", 60_000) * 1_000_000;
        Pointer conf = NativeConfig.create(configs);
        LibSpool.LIB.spool_conf_set_dr_cb(conf, onDelivery);
        handle = NativeConfig.client(conf, LibSpool.LIB::spool_producer_new);
        // The reports come in blocks (spool_producer_poll_reports); the callback above serves
        // those flush() takes (spool_producer_flush runs it).
        poller = new Thread(() -> {
            while (!closed) {
                Packed.takeReports(handle, 100, this::reported);
            }
        }, "spool-producer-poll");
        poller.setDaemon(true);
        poller.start();
    }

    public Future<RecordMetadata> send(ProducerRecord<K, V> record) {
        return send(record, null);
    }

    /**
     * Sends record; the future completes (and callback runs) when its delivery report comes,
     * exceptionally with a {@link KafkaException} carrying libspool's code if it failed.
     */
    public Future<RecordMetadata> send(ProducerRecord<K, V> record, Callback callback) {
        CompletableFuture<RecordMetadata> future = new CompletableFuture<>();
        lifecycle.readLock().lock();
        try {
            if (closed) {
                fail(new Pending(record.topic(), future, callback), new KafkaException(KafkaException.CLOSED,
                        "Cannot perform operation after producer has been closed"));
                return future;
            }
            produce(record, future, callback);
        } finally {
            lifecycle.readLock().unlock();
        }
        return future;
    }

    private void produce(ProducerRecord<K, V> record, CompletableFuture<RecordMetadata> future, Callback callback) {
        byte[] key = keySerializer.serialize(record.topic(), record.key());
        byte[] value = valueSerializer.serialize(record.topic(), record.value());
        long id = nextId.getAndIncrement();
        Pending p = new Pending(record.topic(), future, callback);
        pending.put(id, p); // first: the poll thread may serve the report before produce returns
        List<Memory> keep = new ArrayList<>();
        Memory headers = headers(record.headers().toArray(), keep);
        int err = produceOnce(record, key, value, headers, id);
        if (err == KafkaException.QUEUE_FULL) {
            // As the Java client's send when its buffer is full: wait for room (the poll
            // thread's reports make it) up to max.block.ms, then fail.
            long since = System.nanoTime();
            while (err == KafkaException.QUEUE_FULL && System.nanoTime() - since < maxBlockNanos) {
                LockSupport.parkNanos(QUEUE_FULL_PAUSE_NANOS);
                err = produceOnce(record, key, value, headers, id);
            }
        }
        // The header memory must outlive the call (libspool copies it before returning).
        java.lang.ref.Reference.reachabilityFence(keep);
        if (err != 0) {
            pending.remove(id);
            fail(p, KafkaException.of(err, "send to " + record.topic()
                    + (err == KafkaException.QUEUE_FULL ? " (full for max.block.ms=" + maxBlockNanos / 1_000_000 + ")" : "")));
        }
    }

    /** One spool_produce_timestamp call for record, with its serialized key and value. */
    private int produceOnce(ProducerRecord<K, V> record, byte[] key, byte[] value, Memory headers, long id) {
        return Packed.spool_produce_timestamp(handle, topicName(record.topic()),
                record.partition() == null ? LibSpool.SPOOL_PARTITION_UA : record.partition(),
                record.timestamp() == null ? 0 : record.timestamp(), LibSpool.nonEmpty(key), key == null ? 0 : key.length,
                LibSpool.nonEmpty(value), value == null ? 0 : value.length, headers, record.headers().size(), id);
    }

    /** spool_header_t[] for hs; the memory it points to is added to keep. */
    private static Memory headers(Header[] hs, List<Memory> keep) {
        if (hs.length == 0) {
            return null;
        }
        int size = 4 * Native.POINTER_SIZE; // pointer, size_t, pointer, size_t
        Memory arr = new Memory((long) size * hs.length);
        for (int i = 0; i < hs.length; i++) {
            byte[] k = hs[i].key().getBytes(StandardCharsets.UTF_8);
            Memory km = LibSpool.memory(k);
            Memory vm = LibSpool.memory(hs[i].value());
            keep.add(km);
            keep.add(vm);
            long off = (long) i * size;
            arr.setPointer(off, km);
            arr.setLong(off + Native.POINTER_SIZE, k.length);
            arr.setPointer(off + 2L * Native.POINTER_SIZE, vm);
            arr.setLong(off + 3L * Native.POINTER_SIZE, hs[i].value() == null ? 0 : hs[i].value().length);
        }
        return arr;
    }

    /** A topic's name as libspool takes it (NUL-terminated UTF-8), made once per topic. */
    private byte[] topicName(String topic) {
        return topicNames.computeIfAbsent(topic, Packed::cString);
    }

    /** A report of spool_producer_poll_reports: on the poll thread. */
    private void reported(long id, long offset, long timestamp, int partition, int err) {
        complete(id, offset, timestamp, partition, err, null);
    }

    /**
     * The delivery report callback: on a thread in flush() or close(), whose
     * spool_producer_flush serves the reports ready then (the poll thread takes the others).
     */
    private void delivered(Pointer producer, Pointer msg, Pointer opaque) {
        LibSpool.MessageView v = LibSpool.MessageView.of(msg);
        complete(Pointer.nativeValue(v.opaque), v.offset, v.timestamp, v.partition, v.err, v.errstr);
    }

    /** Completes record id's send; errstr, libspool's explanation of err, may be null. */
    private void complete(long id, long offset, long timestamp, int partition, int err, String errstr) {
        Pending p = pending.remove(id);
        if (p == null) {
            return;
        }
        if (err == 0) {
            succeed(p, new RecordMetadata(p.topic(), partition, offset, timestamp));
        } else if (errstr == null) {
            fail(p, KafkaException.of(err, "delivery to " + p.topic()));
        } else {
            fail(p, new KafkaException(err, "delivery to " + p.topic() + ": " + errstr));
        }
    }

    private static void succeed(Pending p, RecordMetadata md) {
        // As the Java client: the callback runs before the future completes, so that get()
        // returns after it.
        try {
            if (p.callback() != null) {
                p.callback().onCompletion(md, null);
            }
        } finally {
            p.future().complete(md);
        }
    }

    private static void fail(Pending p, KafkaException e) {
        try {
            if (p.callback() != null) {
                p.callback().onCompletion(new RecordMetadata(p.topic(), -1, -1, -1), e);
            }
        } finally {
            p.future().completeExceptionally(e);
        }
    }

    /** Sends every buffered record and waits until each has its outcome. */
    public void flush() {
        int err = withHandle(() -> LibSpool.LIB.spool_producer_flush(handle, -1));
        if (err != 0) {
            throw KafkaException.of(err, "flush");
        }
    }

    /**
     * Creates a topic and waits until the cluster knows it (the Java client has an Admin client
     * for this); KafkaException with code TOPIC_ALREADY_EXISTS if it exists.
     */
    public void createTopic(String topic, int partitions, short replicationFactor, Duration timeout) {
        int err = withHandle(() -> LibSpool.LIB.spool_create_topic(handle, topic, partitions, replicationFactor,
                (int) timeout.toMillis()));
        if (err != 0) {
            throw KafkaException.of(err, "create topic " + topic);
        }
    }

    /** Deletes a topic; KafkaException with code UNKNOWN_TOPIC_OR_PARTITION if there is none. */
    public void deleteTopic(String topic, Duration timeout) {
        int err = withHandle(() -> LibSpool.LIB.spool_delete_topic(handle, topic, (int) timeout.toMillis()));
        if (err != 0) {
            throw KafkaException.of(err, "delete topic " + topic);
        }
    }

    /** Runs call on the live handle, or returns CLOSED. */
    private int withHandle(java.util.function.IntSupplier call) {
        lifecycle.readLock().lock();
        try {
            return closed ? KafkaException.CLOSED : call.getAsInt();
        } finally {
            lifecycle.readLock().unlock();
        }
    }

    @Override
    public void close() {
        close(Duration.ofMillis(Integer.MAX_VALUE));
    }

    /**
     * Waits up to timeout for every record's outcome, stops the poll thread and frees the
     * producer; records still without one fail with code CLOSED.
     */
    public void close(Duration timeout) {
        lifecycle.writeLock().lock();
        try {
            closeLocked(timeout);
        } finally {
            lifecycle.writeLock().unlock();
        }
    }

    private void closeLocked(Duration timeout) {
        if (closed) {
            return;
        }
        LibSpool.LIB.spool_producer_flush(handle, (int) Math.min(timeout.toMillis(), Integer.MAX_VALUE));
        closed = true;
        boolean interrupted = false;
        while (poller.isAlive()) { // it must be out of spool_producer_poll before destroy
            try {
                poller.join();
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        LibSpool.LIB.spool_producer_destroy(handle);
        for (Long id : new ArrayList<>(pending.keySet())) {
            Pending p = pending.remove(id);
            if (p != null) {
                fail(p, new KafkaException(KafkaException.CLOSED, "producer closed before the record's delivery"));
            }
        }
    }
}

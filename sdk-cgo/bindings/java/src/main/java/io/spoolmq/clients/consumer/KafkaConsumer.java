package io.spoolmq.clients.consumer;

import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import io.spoolmq.clients.internal.LibSpool;
import io.spoolmq.clients.internal.NativeConfig;
import io.spoolmq.clients.internal.Packed;
import io.spoolmq.common.KafkaException;
import io.spoolmq.common.TopicPartition;
import io.spoolmq.common.serialization.Deserializer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * A consumer with the Java client's API: {@code subscribe} (with {@code group.id}) or
 * {@code assign}, then {@code poll(Duration)}; {@code commitSync}, {@code close}. Unlike
 * the Java client's, it may be used from several threads. Its records are copied out of
 * libspool, which frees its own at once.
 */
public class KafkaConsumer<K, V> implements AutoCloseable {
    /** The most records one poll returns (the Java client's max.poll.records default). */
    private static final int MAX_POLL_RECORDS = 500;

    private final Deserializer<K> keyDeserializer;
    private final Deserializer<V> valueDeserializer;
    private final long resetOffset;
    private volatile Pointer handle;
    // Calls on the handle hold the read lock; close takes the write lock, so no call can use
    // the handle after it is destroyed.
    private final ReentrantReadWriteLock lifecycle = new ReentrantReadWriteLock();
    // An error poll met after records it returned: thrown by the next poll.
    private volatile KafkaException pendingError;
    // The listener of subscribe, and the native callback that calls it (kept reachable as long
    // as the consumer: libspool holds its address).
    private volatile ConsumerRebalanceListener listener;
    private final LibSpool.RebalanceCallback rebalanceCb = this::onRebalance;
    // An exception or error of the listener: thrown by the poll or close that ran it (JNA
    // cannot carry it through libspool).
    private volatile Throwable listenerError;
    // The commits of commitAsync with a callback, in call order, until libspool's offset
    // commit callback reports one with the same offsets (it reports every commit, in the
    // order they finished; the others, automatic or synchronous, match none).
    private final List<PendingCommit> pendingCommits = new ArrayList<>();
    private final LibSpool.OffsetCommitCallback commitCb = this::onCommit;
    // Per partition, the offset after the last record poll returned, for commitAsync with a
    // callback; a revoked or lost partition is dropped, as libspool drops it.
    private final Map<TopicPartition, OffsetAndMetadata> polled = new ConcurrentHashMap<>();

    private record PendingCommit(Map<TopicPartition, OffsetAndMetadata> offsets, OffsetCommitCallback callback) {
    }

    public KafkaConsumer(Properties props) {
        this(NativeConfig.toMap(props), null, null);
    }

    public KafkaConsumer(Properties props, Deserializer<K> keyDeserializer, Deserializer<V> valueDeserializer) {
        this(NativeConfig.toMap(props), keyDeserializer, valueDeserializer);
    }

    public KafkaConsumer(Map<String, Object> configs) {
        this(configs, null, null);
    }

    @SuppressWarnings("unchecked")
    public KafkaConsumer(Map<String, Object> configs, Deserializer<K> keyDeserializer, Deserializer<V> valueDeserializer) {
        this.keyDeserializer = NativeConfig.instance(configs, "key.deserializer", keyDeserializer, Deserializer.class);
        this.valueDeserializer = NativeConfig.instance(configs, "value.deserializer", valueDeserializer, Deserializer.class);
        Object reset = configs.get("auto.offset.reset");
        this.resetOffset = reset != null && String.valueOf(reset).matches("latest|largest|end")
                ? LibSpool.SPOOL_OFFSET_END : LibSpool.SPOOL_OFFSET_BEGINNING;
        Pointer conf = NativeConfig.create(configs);
        if (configs.get("group.id") != null) {
            LibSpool.LIB.spool_conf_set_rebalance_cb(conf, rebalanceCb);
            LibSpool.LIB.spool_conf_set_offset_commit_cb(conf, commitCb);
        }
        handle = NativeConfig.client(conf, LibSpool.LIB::spool_consumer_new);
    }

    /** spool_rebalance_cb_t: on the thread of poll or close, which hold the lifecycle lock. */
    private void onRebalance(Pointer consumer, int what, Pointer parts, long count, Pointer opaque) {
        // spool_topic_partition_t: a pointer, then an int32, padded to two pointers
        int size = 2 * com.sun.jna.Native.POINTER_SIZE;
        List<TopicPartition> tps = new ArrayList<>((int) count);
        for (long i = 0; i < count; i++) {
            Pointer tp = parts.share(i * size);
            tps.add(new TopicPartition(tp.getPointer(0).getString(0, "UTF-8"), tp.getInt(com.sun.jna.Native.POINTER_SIZE)));
        }
        if (what != LibSpool.SPOOL_REBALANCE_ASSIGN) {
            tps.forEach(polled::remove);
        }
        ConsumerRebalanceListener l = listener;
        if (l == null) {
            return;
        }
        try {
            switch (what) {
                case LibSpool.SPOOL_REBALANCE_ASSIGN -> l.onPartitionsAssigned(tps);
                case LibSpool.SPOOL_REBALANCE_REVOKE -> l.onPartitionsRevoked(tps);
                default -> l.onPartitionsLost(tps);
            }
        } catch (RuntimeException | Error e) {
            if (listenerError == null) {
                listenerError = e;
            }
        }
    }

    /**
     * spool_offset_commit_cb_t: on the thread of poll or close. Calls the callback of the
     * oldest pending commitAsync with these offsets.
     */
    private void onCommit(Pointer consumer, int err, Pointer offsets, long count, Pointer opaque) {
        Map<TopicPartition, OffsetAndMetadata> done = new HashMap<>();
        for (long i = 0; i < count; i++) {
            Pointer o = offsets.share(i * OFFSET_SIZE);
            done.put(new TopicPartition(o.getPointer(0).getString(0, "UTF-8"), o.getInt(Native.POINTER_SIZE)),
                    new OffsetAndMetadata(o.getLong(Native.POINTER_SIZE + 8)));
        }
        PendingCommit match = null;
        synchronized (pendingCommits) {
            for (int i = 0; i < pendingCommits.size() && match == null; i++) {
                if (pendingCommits.get(i).offsets().equals(done)) {
                    match = pendingCommits.remove(i);
                }
            }
        }
        if (match == null) {
            return;
        }
        try {
            match.callback().onComplete(match.offsets(), err == 0 ? null : KafkaException.of(err, "commit"));
        } catch (RuntimeException | Error e) {
            if (listenerError == null) {
                listenerError = e;
            }
        }
    }

    private void throwListenerError() {
        Throwable e = listenerError;
        if (e != null) {
            listenerError = null;
            if (e instanceof Error err) {
                throw err;
            }
            throw (RuntimeException) e;
        }
    }

    /** Runs call on the live handle; IllegalStateException after close, as the Java client. */
    private <T> T withHandle(java.util.function.Function<Pointer, T> call) {
        lifecycle.readLock().lock();
        try {
            Pointer h = handle;
            if (h == null) {
                throw new IllegalStateException("This consumer has already been closed.");
            }
            return call.apply(h);
        } finally {
            lifecycle.readLock().unlock();
        }
    }

    private static void check(int err, String what) {
        if (err != 0) {
            throw KafkaException.of(err, what);
        }
    }

    /** Joins the group ({@code group.id}) with a subscription to topics; once per consumer. */
    public void subscribe(Collection<String> topics) {
        subscribe(topics, null);
    }

    /**
     * Joins the group with a subscription to topics, telling listener of assignments and
     * revocations (inside poll and close). Unlike the Java client's, once per consumer.
     */
    public void subscribe(Collection<String> topics, ConsumerRebalanceListener listener) {
        this.listener = listener;
        String[] ts = topics.toArray(new String[0]);
        check(withHandle(h -> LibSpool.LIB.spool_consumer_subscribe(h, ts, ts.length)), "subscribe");
    }

    /**
     * Reads these partitions (a consumer without {@code group.id}), from the beginning, or from
     * the end with {@code auto.offset.reset=latest}.
     */
    public void assign(Collection<TopicPartition> partitions) {
        for (TopicPartition tp : partitions) {
            check(withHandle(h -> LibSpool.LIB.spool_consumer_assign(h, tp.topic(), tp.partition(), resetOffset)), "assign " + tp);
        }
    }

    /** Moves an assigned partition to offset. */
    public void seek(TopicPartition tp, long offset) {
        check(withHandle(h -> LibSpool.LIB.spool_consumer_seek(h, tp.topic(), tp.partition(), offset)), "seek " + tp);
    }

    public void seekToBeginning(Collection<TopicPartition> partitions) {
        for (TopicPartition tp : partitions) {
            check(withHandle(h -> LibSpool.LIB.spool_consumer_seek(h, tp.topic(), tp.partition(),
                    LibSpool.SPOOL_OFFSET_BEGINNING)), "seek " + tp);
        }
    }

    /**
     * Waits up to timeout for records and returns those ready (empty on timeout). An error the
     * consumer met is thrown as a {@link KafkaException} with libspool's code.
     */
    public ConsumerRecords<K, V> poll(Duration timeout) {
        throwListenerError(); // met by an earlier poll that returned records
        KafkaException earlier = pendingError;
        if (earlier != null) {
            pendingError = null;
            throw earlier;
        }
        List<Packed.Message> msgs = withHandle(h -> Packed.poll(h,
                (int) Math.min(timeout.toMillis(), Integer.MAX_VALUE), MAX_POLL_RECORDS));
        List<ConsumerRecord<K, V>> records = new ArrayList<>(msgs.size());
        KafkaException error = null;
        for (Packed.Message m : msgs) {
            if (m.err() != 0) {
                if (error == null) {
                    error = new KafkaException(m.err(), m.errstr());
                }
                continue;
            }
            byte[] key = m.key();
            byte[] value = m.value();
            polled.put(new TopicPartition(m.topic(), m.partition()), new OffsetAndMetadata(m.offset() + 1));
            records.add(new ConsumerRecord<>(m.topic(), m.partition(), m.offset(), m.timestamp(),
                    key == null ? -1 : key.length, value == null ? -1 : value.length,
                    keyDeserializer.deserialize(m.topic(), key), valueDeserializer.deserialize(m.topic(), value),
                    m.headers()));
        }
        if (error != null) {
            if (records.isEmpty()) {
                throw error;
            }
            pendingError = error;
        }
        if (records.isEmpty()) {
            throwListenerError(); // else thrown by the next poll
        }
        return new ConsumerRecords<>(records);
    }

    /** Commits, per partition, the offset after the last record poll returned. */
    public void commitSync() {
        check(withHandle(h -> LibSpool.LIB.spool_consumer_commit(h, 0)), "commit");
    }

    public void commitAsync() {
        check(withHandle(h -> LibSpool.LIB.spool_consumer_commit(h, 1)), "commit");
    }

    /**
     * Commits the offsets given instead of what poll returned (for committing a record once it
     * is processed, with {@code enable.auto.commit=false}), and waits for the broker's answer.
     */
    public void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets) {
        check(commitOffsets(offsets, 0), "commit");
    }

    /**
     * Commits, per partition, the offset after the last record poll returned, and calls
     * callback (if not null) inside a later poll or close once the commit has finished.
     */
    public void commitAsync(OffsetCommitCallback callback) {
        commitAsync(Map.copyOf(polled), callback);
    }

    /**
     * Commits the offsets given without waiting, and calls callback (if not null) inside a
     * later poll or close with its outcome, as the Java client's; an error of the call itself
     * (a closed consumer, no group) is thrown.
     */
    public void commitAsync(Map<TopicPartition, OffsetAndMetadata> offsets, OffsetCommitCallback callback) {
        Map<TopicPartition, OffsetAndMetadata> copy = Map.copyOf(offsets);
        if (copy.isEmpty()) { // nothing to commit: libspool reports nothing
            if (callback != null) {
                callback.onComplete(copy, null);
            }
            return;
        }
        PendingCommit pending = callback == null ? null : new PendingCommit(copy, callback);
        if (pending != null) {
            synchronized (pendingCommits) {
                pendingCommits.add(pending); // before the call: another thread's poll may report it
            }
        }
        int err = commitOffsets(copy, 1);
        if (err != 0 && pending != null) {
            synchronized (pendingCommits) {
                pendingCommits.remove(pending);
            }
        }
        check(err, "commit");
    }

    // spool_topic_partition_offset_t: a pointer, an int32 (padded to 8) and an int64.
    private static final int OFFSET_SIZE = Native.POINTER_SIZE + 8 + 8;

    /** spool_consumer_commit_offsets of offsets; its error code. */
    private int commitOffsets(Map<TopicPartition, OffsetAndMetadata> offsets, int async) {
        int n = offsets.size();
        if (n == 0) {
            return 0;
        }
        Memory arr = new Memory((long) OFFSET_SIZE * n);
        List<Memory> keep = new ArrayList<>();
        int i = 0;
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
            String topic = e.getKey().topic();
            Memory tm = new Memory(topic.getBytes(StandardCharsets.UTF_8).length + 1L);
            tm.setString(0, topic, StandardCharsets.UTF_8.name()); // NUL-terminated
            keep.add(tm);
            long off = (long) i++ * OFFSET_SIZE;
            arr.setPointer(off, tm);
            arr.setInt(off + Native.POINTER_SIZE, e.getKey().partition());
            arr.setLong(off + Native.POINTER_SIZE + 8, e.getValue().offset());
        }
        int err = withHandle(h -> LibSpool.LIB.spool_consumer_commit_offsets(h, arr, n, async));
        java.lang.ref.Reference.reachabilityFence(keep); // the topics must outlive the call
        return err;
    }

    /** Commits (with enable.auto.commit), leaves the group and frees the consumer. */
    @Override
    public void close() {
        lifecycle.writeLock().lock();
        try {
            Pointer h = handle;
            if (h == null) {
                return;
            }
            // The handle stays set during close: the listener's onPartitionsRevoked runs in it,
            // on this thread (which holds the write lock, so it may take the read lock), and
            // may commit.
            LibSpool.LIB.spool_consumer_close(h);
            handle = null;
            LibSpool.LIB.spool_consumer_destroy(h);
        } finally {
            lifecycle.writeLock().unlock();
        }
        throwListenerError();
    }

    public void close(Duration timeout) {
        close();
    }
}

package io.spoolmq.clients;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spoolmq.clients.consumer.ConsumerRebalanceListener;
import io.spoolmq.clients.consumer.ConsumerRecord;
import io.spoolmq.clients.consumer.KafkaConsumer;
import io.spoolmq.clients.consumer.OffsetAndMetadata;
import io.spoolmq.clients.internal.LibSpool;
import io.spoolmq.clients.producer.KafkaProducer;
import io.spoolmq.clients.producer.ProducerRecord;
import io.spoolmq.clients.producer.RecordMetadata;
import io.spoolmq.common.ConfigException;
import io.spoolmq.common.KafkaException;
import io.spoolmq.common.TopicPartition;
import io.spoolmq.common.header.Header;
import io.spoolmq.common.header.Headers;
import io.spoolmq.common.serialization.ByteArrayDeserializer;
import io.spoolmq.common.serialization.ByteArraySerializer;
import io.spoolmq.common.serialization.StringDeserializer;
import io.spoolmq.common.serialization.StringSerializer;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Against a real broker at $SPOOL_BROKERS (sdk-cgo's TestJava starts one): round trips, a
 * group of two consumers, error codes, a broker that is down, and no handle left.
 */
class SpoolTest {
    private static final String BROKERS = System.getenv("SPOOL_BROKERS");
    private static final Duration TEN_SECONDS = Duration.ofSeconds(10);

    static String unique(String name) {
        return name + "-" + ProcessHandle.current().pid() + "-" + System.nanoTime();
    }

    static Properties props(String... kv) {
        assertNotNull(BROKERS, "SPOOL_BROKERS: the broker to test against (sdk-cgo's TestJava sets it)");
        Properties p = new Properties();
        p.put("bootstrap.servers", BROKERS);
        for (int i = 0; i < kv.length; i += 2) {
            p.put(kv[i], kv[i + 1]);
        }
        return p;
    }

    static KafkaProducer<byte[], byte[]> producer() {
        return new KafkaProducer<>(props("linger.ms", "1"), new ByteArraySerializer(), new ByteArraySerializer());
    }

    // JUnit runs a class's tests one after another (no parallel configuration here).
    @AfterEach
    void noHandlesLeft() {
        assertEquals(0, LibSpool.LIB.spool_handle_count(), "libspool handles left after close");
    }

    @Test
    void roundTripWithKeysNullKeysHeadersAndCallbacks() throws Exception {
        String topic = unique("java-round-trip");
        byte[] binary = new byte[256];
        for (int i = 0; i < binary.length; i++) {
            binary[i] = (byte) i;
        }
        RecordMetadata first;
        RecordMetadata bin;
        RecordMetadata empty;
        AtomicReference<RecordMetadata> called = new AtomicReference<>();
        try (KafkaProducer<byte[], byte[]> p = producer()) {
            p.createTopic(topic, 3, (short) -1, TEN_SECONDS);
            Headers hs = new Headers().add("trace", "t-1".getBytes(StandardCharsets.UTF_8)).add("nothing", null);
            Future<RecordMetadata> f1 = p.send(new ProducerRecord<>(topic, null, "alice".getBytes(StandardCharsets.UTF_8),
                    "hello alice".getBytes(StandardCharsets.UTF_8), hs), (md, e) -> called.set(md));
            Future<RecordMetadata> f2 = p.send(new ProducerRecord<>(topic, 2, null, binary));
            Future<RecordMetadata> f3 = p.send(new ProducerRecord<>(topic, 1, 1700000000123L, new byte[0], new byte[0]));
            first = f1.get(10, TimeUnit.SECONDS);
            bin = f2.get(10, TimeUnit.SECONDS);
            empty = f3.get(10, TimeUnit.SECONDS);
        }
        assertEquals(first.toString(), String.valueOf(called.get()), "callback and future disagree");
        assertEquals(2, bin.partition());
        assertEquals(0, bin.offset());
        assertEquals(1, empty.partition());
        assertEquals(1700000000123L, empty.timestamp(), "the timestamp given to the record");
        assertTrue(first.timestamp() > 1700000000123L, "a record without one gets the time of its send");
        assertThrows(IllegalArgumentException.class, () -> new ProducerRecord<>(topic, 1, -1L, "k", "v"));

        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(props(), new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            c.assign(List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1), new TopicPartition(topic, 2)));
            Map<String, ConsumerRecord<byte[], byte[]>> got = new HashMap<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (got.size() < 3 && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                    assertEquals(topic, r.topic());
                    assertTrue(r.timestamp() > 0);
                    got.put(r.partition() + "@" + r.offset(), r);
                }
            }
            ConsumerRecord<byte[], byte[]> a = got.get(first.partition() + "@" + first.offset());
            assertNotNull(a, "alice's record: got " + got.keySet());
            assertEquals("alice", new String(a.key(), StandardCharsets.UTF_8));
            assertEquals("hello alice", new String(a.value(), StandardCharsets.UTF_8));
            Header[] h = a.headers().toArray();
            assertEquals(2, h.length);
            assertEquals("trace", h[0].key());
            assertArrayEquals("t-1".getBytes(StandardCharsets.UTF_8), h[0].value());
            assertEquals("nothing", h[1].key());
            assertNull(h[1].value());
            ConsumerRecord<byte[], byte[]> b = got.get("2@0");
            assertNull(b.key(), "a null key came back non-null");
            assertEquals(-1, b.serializedKeySize());
            assertArrayEquals(binary, b.value());
            ConsumerRecord<byte[], byte[]> e = got.get("1@0");
            assertArrayEquals(new byte[0], e.key());
            assertArrayEquals(new byte[0], e.value());
            assertEquals(1700000000123L, e.timestamp());

            // seek back and read alice's record again
            c.seek(new TopicPartition(topic, first.partition()), first.offset());
            ConsumerRecord<byte[], byte[]> again = null;
            while (again == null && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                    again = again == null ? r : again;
                }
            }
            assertNotNull(again);
            assertEquals(first.offset(), again.offset());
            assertEquals(first.partition(), again.partition());
        }
    }

    /** The offset of the first record of each partition a new member of conf's group reads. */
    private static Map<Integer, Long> firstOffsets(Properties conf, String topic, int partitions) {
        Map<Integer, Long> first = new HashMap<>();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(conf, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            c.subscribe(List.of(topic));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (first.size() < partitions && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                    first.putIfAbsent(r.partition(), r.offset());
                }
            }
        }
        return first;
    }

    @Test
    void commitSyncWithOffsetsIsWhereTheGroupResumes() throws Exception {
        String topic = unique("java-commit");
        try (KafkaProducer<byte[], byte[]> p = producer()) {
            p.createTopic(topic, 2, (short) -1, TEN_SECONDS);
            List<Future<RecordMetadata>> fs = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                fs.add(p.send(new ProducerRecord<>(topic, i % 2, null, ("v" + i).getBytes(StandardCharsets.UTF_8))));
            }
            for (Future<RecordMetadata> f : fs) {
                f.get(10, TimeUnit.SECONDS);
            }
        }
        Properties conf = props("group.id", topic, "enable.auto.commit", "false");
        assertEquals(Map.of(0, 0L, 1, 0L), firstOffsets(conf, topic, 2), "nothing committed yet");
        assertThrows(IllegalArgumentException.class, () -> new OffsetAndMetadata(-1));
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(conf, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            c.subscribe(List.of(topic));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (c.poll(Duration.ofMillis(200)).isEmpty() && System.nanoTime() < deadline) {
                // until it is a member of the group
            }
            c.commitSync(Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(4),
                    new TopicPartition(topic, 1), new OffsetAndMetadata(7)));
        }
        assertEquals(Map.of(0, 4L, 1, 7L), firstOffsets(conf, topic, 2), "where the commit said");

        // commitAsync's callbacks run inside a later poll, in call order, with the offsets
        // and null or the commit's exception. A short request timeout: the refused commit (a
        // partition the topic does not have) is retried until it runs out.
        conf.setProperty("request.timeout.ms", "3000");
        List<String> done = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(conf, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            c.subscribe(List.of(topic));
            Map<TopicPartition, OffsetAndMetadata> polled = new HashMap<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (polled.isEmpty() && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                    polled.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
            }
            assertFalse(polled.isEmpty());
            Map<TopicPartition, OffsetAndMetadata> missing = Map.of(new TopicPartition(topic, 9), new OffsetAndMetadata(1));
            Map<TopicPartition, OffsetAndMetadata> chosen = Map.of(new TopicPartition(topic, 1), new OffsetAndMetadata(8));
            c.commitAsync(missing, (o, e) -> done.add("missing " + o.equals(missing) + " " + (e == null ? "ok" : "failed")));
            c.commitAsync(chosen, (o, e) -> done.add("chosen " + o.equals(chosen) + " " + (e == null ? "ok" : e.getMessage())));
            c.commitAsync((o, e) -> done.add("polled " + o.equals(polled) + " " + (e == null ? "ok" : e.getMessage())));
            assertTrue(done.isEmpty(), "callbacks only inside poll");
            deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (done.size() < 3 && System.nanoTime() < deadline) {
                c.poll(Duration.ofMillis(100));
            }
        }
        assertEquals(List.of("missing true failed", "chosen true ok", "polled true ok"), done);
    }

    @Test
    @SuppressWarnings("try") // closes b inside its try, to see the revocation
    void groupOfTwoConsumersSharesPartitions() throws Exception {
        String topic = unique("java-group");
        int n = 80;
        try (KafkaProducer<String, String> p = new KafkaProducer<>(props("key.serializer", StringSerializer.class.getName(),
                "value.serializer", StringSerializer.class.getName()))) {
            p.createTopic(topic, 4, (short) -1, TEN_SECONDS);
            List<Future<RecordMetadata>> fs = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                fs.add(p.send(new ProducerRecord<>(topic, i % 4, null, "v" + i)));
            }
            for (Future<RecordMetadata> f : fs) {
                f.get(10, TimeUnit.SECONDS);
            }
        }
        Properties conf = props("group.id", topic, "session.timeout.ms", "6000", "heartbeat.interval.ms", "500",
                "enable.auto.commit", "false");
        Set<String> seen = new HashSet<>();
        List<Set<Integer>> parts = List.of(new HashSet<>(), new HashSet<>());
        try (KafkaConsumer<String, String> a = new KafkaConsumer<>(conf, new StringDeserializer(), new StringDeserializer());
             KafkaConsumer<String, String> b = new KafkaConsumer<>(conf, new StringDeserializer(), new StringDeserializer())) {
            // What each consumer's ConsumerRebalanceListener says it owns.
            List<Set<Integer>> owned = List.of(new HashSet<>(), new HashSet<>());
            List<KafkaConsumer<String, String>> cs = List.of(a, b);
            for (int i = 0; i < 2; i++) {
                Set<Integer> mine = owned.get(i);
                KafkaConsumer<String, String> c = cs.get(i);
                c.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                    @Override
                    public void onPartitionsAssigned(Collection<TopicPartition> ps) {
                        for (TopicPartition tp : ps) {
                            assertEquals(topic, tp.topic());
                            assertTrue(mine.add(tp.partition()), "assigned twice: " + tp);
                        }
                    }

                    @Override
                    public void onPartitionsRevoked(Collection<TopicPartition> ps) {
                        c.commitSync(); // before the partitions go: auto commit is off
                        for (TopicPartition tp : ps) {
                            assertTrue(mine.remove(tp.partition()), "revoked what was not assigned: " + tp);
                        }
                    }
                });
            }
            for (int round = 0; round < 3000; round++) {
                for (int i = 0; i < 2; i++) {
                    for (ConsumerRecord<String, String> r : cs.get(i).poll(Duration.ofMillis(20))) {
                        assertTrue(owned.get(i).contains(r.partition()), "a record before its assignment: " + r.partition());
                        seen.add(r.value());
                        parts.get(i).add(r.partition());
                    }
                }
                if (seen.size() == n && !parts.get(0).isEmpty() && !parts.get(1).isEmpty()) {
                    break;
                }
            }
            assertEquals(n, seen.size(), "records missing");
            assertFalse(parts.get(0).isEmpty() || parts.get(1).isEmpty(), "one consumer got nothing: " + parts);
            assertFalse(owned.get(0).isEmpty() || owned.get(1).isEmpty(), "owned: " + owned);
            a.commitSync();
            b.commitSync();
            // b leaves: its partitions are revoked inside close, and a is given all four
            b.close();
            assertTrue(owned.get(1).isEmpty(), "b still owns " + owned.get(1));
            for (int round = 0; round < 1500 && owned.get(0).size() < 4; round++) {
                a.poll(Duration.ofMillis(20));
            }
            assertEquals(Set.of(0, 1, 2, 3), owned.get(0));
        }
    }

    @Test
    @SuppressWarnings("try") // closes the producer inside its try, to send after close
    void errorsCarryLibspoolCodes() throws Exception {
        ConfigException unknown = assertThrows(ConfigException.class, () -> new KafkaProducer<>(props("no.such.key", "1"),
                new StringSerializer(), new StringSerializer()));
        assertTrue(unknown.getMessage().contains("no.such.key"), unknown.getMessage());
        assertEquals(KafkaException.BAD_ARG, unknown.code());
        ConfigException bad = assertThrows(ConfigException.class, () -> new KafkaConsumer<>(props("acks", "many"),
                new StringDeserializer(), new StringDeserializer()));
        assertTrue(bad.getMessage().contains("acks"), bad.getMessage());
        assertThrows(ConfigException.class, () -> new KafkaProducer<String, String>(props()), "no serializer");
        KafkaException combo = assertThrows(KafkaException.class, () -> new KafkaConsumer<>(props("group.id", "g",
                "session.timeout.ms", "1000", "heartbeat.interval.ms", "5000"), new StringDeserializer(), new StringDeserializer()));
        assertTrue(combo.getMessage().contains("HeartbeatInterval"), combo.getMessage());

        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(props(), new StringDeserializer(), new StringDeserializer())) {
            KafkaException state = assertThrows(KafkaException.class, () -> c.subscribe(List.of("t")));
            assertEquals(KafkaException.STATE, state.code());
            c.close();
            assertThrows(IllegalStateException.class, () -> c.poll(Duration.ZERO), "poll after close");
        }

        String t1 = unique("java-errors");
        String t2 = unique("java-errors-2");
        try (KafkaProducer<String, String> p = new KafkaProducer<>(props(), new StringSerializer(), new StringSerializer())) {
            p.createTopic(t1, 1, (short) -1, TEN_SECONDS);
            KafkaException exists = assertThrows(KafkaException.class, () -> p.createTopic(t1, 1, (short) -1, TEN_SECONDS));
            assertEquals(KafkaException.TOPIC_ALREADY_EXISTS, exists.code());
            p.deleteTopic(t1, TEN_SECONDS);
            KafkaException gone = assertThrows(KafkaException.class, () -> p.deleteTopic(t1, TEN_SECONDS));
            assertEquals(KafkaException.UNKNOWN_TOPIC_OR_PARTITION, gone.code());

            // A partition the topic does not have: the future fails, and the callback is told.
            p.createTopic(t2, 1, (short) -1, TEN_SECONDS);
            AtomicReference<Exception> told = new AtomicReference<>();
            Future<RecordMetadata> f = p.send(new ProducerRecord<>(t2, 7, "k", "v"), (md, e) -> told.set(e));
            ExecutionException ee = assertThrows(ExecutionException.class, () -> f.get(10, TimeUnit.SECONDS));
            KafkaException ke = (KafkaException) ee.getCause();
            assertEquals(KafkaException.UNKNOWN_TOPIC_OR_PARTITION, ke.code());
            assertTrue(ke.getMessage().startsWith("delivery to " + t2 + ": UNKNOWN_TOPIC_OR_PARTITION"), ke.getMessage());
            assertEquals(ke, told.get());
            p.deleteTopic(t2, TEN_SECONDS);
            p.close();
            ExecutionException closed = assertThrows(ExecutionException.class, () -> p.send(new ProducerRecord<>(t2, "v")).get());
            assertEquals(KafkaException.CLOSED, ((KafkaException) closed.getCause()).code());
        }
    }

    /**
     * A full queue makes send wait, as the Java client's does when buffer.memory is used up:
     * 3,000 records through a queue of 10 are all delivered, in order; with the broker down,
     * a send past the queue fails with QUEUE_FULL once max.block.ms has passed; a bad
     * max.block.ms is a ConfigException.
     */
    @Test
    void fullQueueBlocksSendUpToMaxBlockMs() throws Exception {
        String topic = unique("java-full-queue");
        int n = 3000;
        try (KafkaProducer<String, String> p = new KafkaProducer<>(props("queue.buffering.max.messages", "10", "linger.ms", "1"),
                new StringSerializer(), new StringSerializer())) {
            p.createTopic(topic, 1, (short) -1, TEN_SECONDS);
            List<Future<RecordMetadata>> fs = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                fs.add(p.send(new ProducerRecord<>(topic, "v" + i)));
            }
            for (int i = 0; i < n; i++) {
                assertEquals(i, fs.get(i).get(10, TimeUnit.SECONDS).offset());
            }
            p.deleteTopic(topic, TEN_SECONDS);
        }

        // A broker that never answers (a socket nobody accepts from): the first record stays
        // queued, so the second finds the queue full.
        try (ServerSocket silent = new ServerSocket(0)) {
            Properties stuck = new Properties();
            stuck.put("bootstrap.servers", "127.0.0.1:" + silent.getLocalPort());
            stuck.put("queue.buffering.max.messages", "1");
            stuck.put("max.block.ms", 200);
            stuck.put("request.timeout.ms", 5000); // an Integer, as the Java client takes it too
            try (KafkaProducer<String, String> p = new KafkaProducer<>(stuck, new StringSerializer(), new StringSerializer())) {
                Future<RecordMetadata> first = p.send(new ProducerRecord<>("stuck", "first"));
                AtomicReference<Exception> told = new AtomicReference<>();
                Future<RecordMetadata> f = p.send(new ProducerRecord<>("stuck", "second"), (md, e) -> told.set(e));
                assertFalse(first.isDone(), "the first record left the queue");
                assertTrue(f.isDone(), "send returned before max.block.ms ran out");
                ExecutionException e = assertThrows(ExecutionException.class, f::get);
                KafkaException ke = (KafkaException) e.getCause();
                assertEquals(KafkaException.QUEUE_FULL, ke.code());
                assertTrue(ke.getMessage().contains("max.block.ms=200"), ke.getMessage());
                assertEquals(ke, told.get());
                p.close(Duration.ZERO);
                ExecutionException closed = assertThrows(ExecutionException.class, first::get);
                assertEquals(KafkaException.CLOSED, ((KafkaException) closed.getCause()).code());
            }
        }
        ConfigException bad = assertThrows(ConfigException.class, () -> new KafkaProducer<>(props("max.block.ms", "soon"),
                new StringSerializer(), new StringSerializer()));
        assertTrue(bad.getMessage().contains("max.block.ms"), bad.getMessage());
    }

    @Test
    void brokerDownFailsEveryRecordWithTransport() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        Properties conf = new Properties();
        conf.put("bootstrap.servers", "127.0.0.1:" + port);
        conf.put("delivery.timeout.ms", "1500"); // the Java client's name, an alias of message.timeout.ms
        conf.put("socket.connection.setup.timeout.ms", "500");
        try (KafkaProducer<String, String> p = new KafkaProducer<>(conf, new StringSerializer(), new StringSerializer())) {
            List<Future<RecordMetadata>> fs = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                fs.add(p.send(new ProducerRecord<>("down", "k" + i, "v")));
            }
            for (Future<RecordMetadata> f : fs) {
                ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(20, TimeUnit.SECONDS));
                assertEquals(KafkaException.TRANSPORT, ((KafkaException) e.getCause()).code(), e.getCause().getMessage());
            }
        }
    }
}

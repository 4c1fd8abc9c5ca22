package io.spoolmq.clients;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spoolmq.clients.consumer.ConsumerRecord;
import io.spoolmq.clients.consumer.KafkaConsumer;
import io.spoolmq.clients.internal.LibSpool;
import io.spoolmq.clients.producer.KafkaProducer;
import io.spoolmq.clients.producer.ProducerRecord;
import io.spoolmq.clients.producer.RecordMetadata;
import io.spoolmq.common.KafkaException;
import io.spoolmq.common.TopicPartition;
import io.spoolmq.common.serialization.StringDeserializer;
import io.spoolmq.common.serialization.StringSerializer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * SASL_SSL with SCRAM-SHA-512, configured with librdkafka's keys, against the secured broker
 * sdk-cgo's TestJava starts ($SPOOL_SECURE_BROKERS, $SPOOL_SECURE_CA, $SPOOL_SECURE_USER,
 * $SPOOL_SECURE_PASSWORD): a round trip, and a wrong password refused with
 * SASL_AUTHENTICATION_FAILED.
 */
class SecurityTest {
    private static final Duration TEN_SECONDS = Duration.ofSeconds(10);

    static String env(String name) {
        String v = System.getenv(name);
        assertNotNull(v, name + " is not set: run these tests through sdk-cgo's TestJava");
        return v;
    }

    /** A SASL_SSL client's configuration, with the given password. */
    static Properties secure(String password) {
        Properties p = new Properties();
        p.put("bootstrap.servers", env("SPOOL_SECURE_BROKERS"));
        p.put("security.protocol", "SASL_SSL");
        p.put("ssl.ca.location", env("SPOOL_SECURE_CA"));
        p.put("sasl.mechanisms", "SCRAM-SHA-512");
        p.put("sasl.username", env("SPOOL_SECURE_USER"));
        p.put("sasl.password", password);
        return p;
    }

    @AfterEach
    void noHandlesLeft() {
        assertEquals(0, LibSpool.LIB.spool_handle_count(), "libspool handles left after close");
    }

    @Test
    void saslSslRoundTrip() throws Exception {
        String topic = SpoolTest.unique("java-secure");
        int n = 30;
        TreeSet<String> want = new TreeSet<>();
        try (KafkaProducer<String, String> p = new KafkaProducer<>(secure(env("SPOOL_SECURE_PASSWORD")),
                new StringSerializer(), new StringSerializer())) {
            p.createTopic(topic, 2, (short) -1, TEN_SECONDS);
            List<Future<RecordMetadata>> fs = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                want.add("secure-" + i);
                fs.add(p.send(new ProducerRecord<>(topic, "k" + (i % 5), "secure-" + i)));
            }
            for (Future<RecordMetadata> f : fs) {
                RecordMetadata md = f.get(30, TimeUnit.SECONDS);
                assertTrue(md.partition() >= 0 && md.partition() < 2 && md.offset() >= 0, md.toString());
            }
        }
        TreeSet<String> got = new TreeSet<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(secure(env("SPOOL_SECURE_PASSWORD")),
                new StringDeserializer(), new StringDeserializer())) {
            List<TopicPartition> parts = List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1));
            c.assign(parts);
            c.seekToBeginning(parts);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (got.size() < n && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(TEN_SECONDS)) {
                    got.add(r.value());
                }
            }
        }
        assertEquals(want, got);
    }

    @Test
    void wrongPasswordIsRefused() throws Exception {
        Properties wrong = secure("not-" + env("SPOOL_SECURE_PASSWORD"));
        try (KafkaProducer<String, String> p = new KafkaProducer<>(wrong, new StringSerializer(), new StringSerializer())) {
            KafkaException admin = assertThrows(KafkaException.class,
                    () -> p.createTopic("java-secure-refused", 1, (short) -1, TEN_SECONDS));
            assertEquals(KafkaException.SASL_AUTHENTICATION_FAILED, admin.code(), admin.getMessage());
            Future<RecordMetadata> f = p.send(new ProducerRecord<>("java-secure-refused", "k", "v"));
            ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(30, TimeUnit.SECONDS));
            KafkaException cause = (KafkaException) e.getCause();
            assertEquals(KafkaException.SASL_AUTHENTICATION_FAILED, cause.code(), cause.getMessage());
        }
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(wrong, new StringDeserializer(), new StringDeserializer())) {
            List<TopicPartition> parts = List.of(new TopicPartition("java-secure-refused", 0));
            KafkaException e = assertThrows(KafkaException.class, () -> {
                c.assign(parts);
                c.seekToBeginning(parts);
                c.poll(TEN_SECONDS);
            });
            assertEquals(KafkaException.SASL_AUTHENTICATION_FAILED, e.code(), e.getMessage());
        }
    }
}

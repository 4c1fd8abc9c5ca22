import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.Future;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.Utils;

/**
 * Drives a Spool broker with the Apache Kafka Java client: Admin create, describe, incrementally
 * alter and delete topics; a producer with the client's defaults (idempotence on, acks=all) in
 * every codec, keyed and unkeyed; and a group-less consumer (assign + seekToBeginning) that reads
 * everything back and compares it byte for byte. Prints "KEYED hexkey partition" for every keyed
 * record (java_test.go checks them against its own murmur2), then "OK". Any failure exits 1.
 *
 * Usage: Main BOOTSTRAP TOPIC
 */
public final class Main {
    static final int PARTITIONS = 3;
    static final String[] CODECS = {"none", "gzip", "snappy", "lz4", "zstd"};
    static final int PER_CODEC = 60;

    record Rec(byte[] key, byte[] value, String codec) {
        boolean sameAs(ConsumerRecord<byte[], byte[]> r) {
            Header h = r.headers().lastHeader("codec");
            return Arrays.equals(key, r.key()) && Arrays.equals(value, r.value())
                    && r.headers().toArray().length == 1 && h != null
                    && Arrays.equals(codec.getBytes(StandardCharsets.UTF_8), h.value());
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: Main BOOTSTRAP TOPIC");
            System.exit(2);
        }
        try {
            run(args[0], args[1]);
        } catch (Throwable e) {
            e.printStackTrace();
            System.exit(1);
        }
        System.out.println("OK");
    }

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    static void run(String bootstrap, String topic) throws Exception {
        String scratch = topic + "-scratch";
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        ap.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 20000);
        ap.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10000);
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(
                    new NewTopic(topic, PARTITIONS, (short) 1).configs(Map.of("cleanup.policy", "delete")),
                    new NewTopic(scratch, 1, (short) 1))).all().get();
            ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            Config conf = admin.describeConfigs(List.of(res)).all().get().get(res);
            check(conf != null, "describeConfigs returned nothing for " + topic);
            ConfigEntry cp = conf.get("cleanup.policy");
            check(cp != null && "delete".equals(cp.value()) && cp.source() == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG,
                    "cleanup.policy after create: " + cp);
            check(conf.get("retention.ms") != null, "describeConfigs lacks retention.ms: " + conf);

            Map<ConfigResource, Collection<AlterConfigOp>> ops = Map.of(res, List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET)));
            admin.incrementalAlterConfigs(ops).all().get();
            ConfigEntry rm = admin.describeConfigs(List.of(res)).all().get().get(res).get("retention.ms");
            check(rm != null && "3600000".equals(rm.value()) && rm.source() == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG,
                    "retention.ms after incrementalAlterConfigs: " + rm);

            admin.deleteTopics(List.of(scratch)).all().get();
            Set<String> names = admin.listTopics().names().get();
            check(names.contains(topic) && !names.contains(scratch), "topics after delete: " + names);
        }

        Map<String, Rec> want = new HashMap<>(); // "partition/offset" -> record
        for (String codec : CODECS) {
            Properties pp = new Properties();
            pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            pp.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
            pp.put(ProducerConfig.LINGER_MS_CONFIG, 20);
            pp.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 20000);
            pp.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10000);
            pp.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 30000);
            try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(pp, new ByteArraySerializer(), new ByteArraySerializer())) {
                List<Rec> recs = new ArrayList<>();
                List<Future<RecordMetadata>> acks = new ArrayList<>();
                for (int i = 0; i < PER_CODEC; i++) {
                    byte[] key = i % 2 == 0 ? ("java-key-" + (i % 14)).getBytes(StandardCharsets.UTF_8) : null;
                    Rec r = new Rec(key, value("java-" + codec, i), codec);
                    RecordHeaders hs = new RecordHeaders();
                    hs.add("codec", codec.getBytes(StandardCharsets.UTF_8));
                    recs.add(r);
                    acks.add(p.send(new ProducerRecord<>(topic, null, r.key(), r.value(), hs)));
                }
                p.flush();
                for (int i = 0; i < recs.size(); i++) {
                    RecordMetadata md = acks.get(i).get();
                    Rec r = recs.get(i);
                    if (r.key() != null) {
                        int expect = Utils.toPositive(Utils.murmur2(r.key())) % PARTITIONS;
                        check(md.partition() == expect, "key partition " + md.partition() + ", murmur2 says " + expect);
                        System.out.println("KEYED " + hex(r.key()) + " " + md.partition());
                    }
                    String at = md.partition() + "/" + md.offset();
                    check(want.put(at, r) == null, "two records acknowledged at " + at);
                }
            }
        }

        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10000);
        cp.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 20000);
        int got = 0;
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(cp, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < PARTITIONS; i++) {
                tps.add(new TopicPartition(topic, i));
            }
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            long total = end.values().stream().mapToLong(Long::longValue).sum();
            check(total == want.size(), "end offsets add up to " + total + ", produced " + want.size());
            long deadline = System.currentTimeMillis() + 30000;
            while (got < want.size()) {
                check(System.currentTimeMillis() < deadline, "consumed " + got + " of " + want.size() + " in 30s");
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                    String at = r.partition() + "/" + r.offset();
                    Rec w = want.get(at);
                    check(w != null, "unexpected record at " + at);
                    check(w.sameAs(r), "record at " + at + " differs: key " + hex(r.key()) + " value " + hex(r.value()));
                    got++;
                }
            }
        }
        check(got == want.size(), "consumed " + got + ", produced " + want.size());
    }

    /** value is compressible, yet carries every byte value, so any mangling shows. */
    static byte[] value(String prefix, int i) {
        byte[] head = String.format("%s-%04d-%s", prefix, i, "compressible ".repeat(4)).getBytes(StandardCharsets.UTF_8);
        byte[] v = Arrays.copyOf(head, head.length + 256);
        for (int b = 0; b < 256; b++) {
            v[head.length + b] = (byte) (b + i);
        }
        return v;
    }

    static String hex(byte[] b) {
        if (b == null) {
            return "null";
        }
        StringBuilder sb = new StringBuilder();
        for (byte x : b) {
            sb.append(String.format("%02x", x));
        }
        return sb.toString();
    }
}

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Drives the Java client's transactions against a broker: initTransactions,
 * beginTransaction, send, sendOffsetsToTransaction (AddOffsetsToTxn, TxnOffsetCommit),
 * commitTransaction and abortTransaction; a second producer with the same transactional.id
 * fences the first (ProducerFencedException); read_committed consumers see exactly the
 * committed records, read_uncommitted ones the aborted ones too; the offsets sent in the
 * committed transaction are the group's. Prints "OK"; any failure exits 1.
 *
 * Usage: Transactions BOOTSTRAP TOPIC GROUP   (TOPIC with 2 partitions)
 */
final class Transactions {
    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: Transactions BOOTSTRAP TOPIC GROUP");
            System.exit(2);
        }
        try {
            run(args[0], args[1], args[2]);
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

    static KafkaProducer<String, String> producer(String bootstrap, String id) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, id);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return new KafkaProducer<>(p);
    }

    static void send(KafkaProducer<String, String> p, String topic, String prefix, int n) throws Exception {
        for (int i = 0; i < n; i++) {
            p.send(new ProducerRecord<>(topic, i % 2, null, prefix + "-" + i)).get();
        }
    }

    /** Reads both partitions from the start up to the ends the isolation level defines. */
    static List<String> readAll(String bootstrap, String topic, String isolation) {
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        List<String> out = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            List<TopicPartition> tps = List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1));
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            Map<TopicPartition, Long> ends = consumer.endOffsets(tps);
            long deadline = System.currentTimeMillis() + 60_000;
            while (true) {
                boolean done = true;
                for (TopicPartition tp : tps) {
                    if (consumer.position(tp) < ends.get(tp)) {
                        done = false;
                    }
                }
                if (done) {
                    return out;
                }
                check(System.currentTimeMillis() < deadline, "reading " + isolation + ": positions never reached " + ends);
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    out.add(r.value());
                }
            }
        }
    }

    static long count(List<String> vals, String prefix) {
        return vals.stream().filter(v -> v.startsWith(prefix + "-")).count();
    }

    static void run(String bootstrap, String topic, String group) throws Exception {
        TopicPartition offsetsOf = new TopicPartition(topic, 0);
        try (KafkaProducer<String, String> p = producer(bootstrap, "java-tx")) {
            p.initTransactions();
            p.beginTransaction();
            send(p, topic, "jc1", 10);
            p.sendOffsetsToTransaction(Map.of(offsetsOf, new OffsetAndMetadata(5)), new ConsumerGroupMetadata(group));
            p.commitTransaction();

            p.beginTransaction();
            send(p, topic, "ja", 6);
            p.sendOffsetsToTransaction(Map.of(offsetsOf, new OffsetAndMetadata(99)), new ConsumerGroupMetadata(group));
            p.abortTransaction();

            p.beginTransaction();
            send(p, topic, "jc2", 4);
            p.commitTransaction();

            // A second instance fences this one.
            try (KafkaProducer<String, String> fresh = producer(bootstrap, "java-tx")) {
                fresh.initTransactions();
                boolean fenced = false;
                try {
                    p.beginTransaction();
                    send(p, topic, "jz", 1);
                    p.commitTransaction();
                } catch (Exception e) {
                    for (Throwable c = e; c != null; c = c.getCause()) {
                        fenced |= c instanceof ProducerFencedException || c instanceof InvalidProducerEpochException;
                    }
                    if (!fenced) {
                        throw e;
                    }
                }
                check(fenced, "the first producer was not fenced by the second's initTransactions");
                fresh.beginTransaction();
                send(fresh, topic, "jf", 2);
                fresh.commitTransaction();
            }
        }

        List<String> committed = readAll(bootstrap, topic, "read_committed");
        check(count(committed, "jc1") == 10 && count(committed, "jc2") == 4 && count(committed, "jf") == 2
                && count(committed, "ja") == 0 && count(committed, "jz") == 0 && committed.size() == 16,
                "read_committed saw " + committed);
        List<String> all = readAll(bootstrap, topic, "read_uncommitted");
        check(count(all, "ja") == 6 && count(all, "jc1") == 10 && count(all, "jz") == 0, "read_uncommitted saw " + all);

        Properties a = new Properties();
        a.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(a)) {
            Map<TopicPartition, OffsetAndMetadata> offs = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            OffsetAndMetadata o = offs.get(offsetsOf);
            check(o != null && o.offset() == 5, "the group's offset of " + offsetsOf + " is " + o + ", want 5 (the aborted 99 must not count)");
        }
    }
}

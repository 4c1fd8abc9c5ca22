// Bench.java: the Java side of BenchmarkJavaVsKafkaClient, written for Apache Kafka's Java
// client. The benchmark compiles it as it is against kafka-clients, and with every
// "org.apache.kafka." turned into "io.spoolmq." against this repository's binding: the one
// change its README says porting takes.
//
//     java Bench BROKER TOPIC PARTITIONS N SIZE
//
// Produces N records of SIZE bytes without keys to TOPIC (which exists), acks=all,
// linger.ms=5, batch.size=1 MiB, send() with a callback per record, then flush(); then
// reads them back by assignment from the beginning with poll(100 ms). Prints "produce_rps
// consume_rps peak_rss_kib" (peak RSS: VmHWM of /proc/self/status).
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class Bench {
    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: java Bench BROKER TOPIC PARTITIONS N SIZE");
            System.exit(2);
        }
        String broker = args[0], topic = args[1];
        int partitions = Integer.parseInt(args[2]), n = Integer.parseInt(args[3]), size = Integer.parseInt(args[4]);
        byte[] value = new byte[size];
        java.util.Arrays.fill(value, (byte) 'v');

        Properties pp = new Properties();
        pp.put("bootstrap.servers", broker);
        pp.put("acks", "all");
        pp.put("linger.ms", "5");
        pp.put("batch.size", "1048576");
        AtomicLong delivered = new AtomicLong();
        AtomicReference<Exception> failed = new AtomicReference<>();
        long t0 = System.nanoTime();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(pp, new ByteArraySerializer(), new ByteArraySerializer())) {
            for (int i = 0; i < n; i++) {
                producer.send(new ProducerRecord<>(topic, value), (md, e) -> {
                    if (e != null) failed.compareAndSet(null, e);
                    else delivered.incrementAndGet();
                });
            }
            producer.flush();
        }
        double produceRps = n / ((System.nanoTime() - t0) / 1e9);
        if (failed.get() != null) throw failed.get();
        if (delivered.get() != n) throw new IllegalStateException(delivered.get() + " of " + n + " delivered");

        Properties cp = new Properties();
        cp.put("bootstrap.servers", broker);
        cp.put("enable.auto.commit", "false");
        cp.put("auto.offset.reset", "earliest");
        long got = 0;
        t0 = System.nanoTime();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(cp, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int p = 0; p < partitions; p++) tps.add(new TopicPartition(topic, p));
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            while (got < n) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) {
                    if (r.value().length != size) throw new IllegalStateException("a record of " + r.value().length + " bytes");
                    got++;
                }
            }
        }
        double consumeRps = n / ((System.nanoTime() - t0) / 1e9);
        long hwm = 0;
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmHWM:")) hwm = Long.parseLong(line.replaceAll("[^0-9]", ""));
        }
        System.out.printf("%.0f %.0f %d%n", produceRps, consumeRps, hwm);
    }
}

import java.io.FileReader;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The Java client over a secured listener: with the client settings in PROPS (security.protocol,
 * ssl.*, sasl.*), "ok" produces COUNT records to TOPIC with acks=all and reads them back from
 * the start; "refused" expects the producer's first send to fail with an
 * AuthenticationException (a wrong password). Prints "OK"; any failure exits 1.
 *
 * Usage: SecureClient BOOTSTRAP PROPS TOPIC ok|refused
 */
final class SecureClient {
    static final int COUNT = 20;

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: SecureClient BOOTSTRAP PROPS TOPIC ok|refused");
            System.exit(2);
        }
        try {
            Properties sec = new Properties();
            try (FileReader r = new FileReader(args[1])) {
                sec.load(r);
            }
            if (args[3].equals("ok")) {
                produceConsume(args[0], sec, args[2]);
            } else {
                refused(args[0], sec, args[2]);
            }
        } catch (Throwable e) {
            e.printStackTrace();
            System.exit(1);
        }
        System.out.println("OK");
    }

    static Properties producerProps(String bootstrap, Properties sec) {
        Properties p = new Properties();
        p.putAll(sec);
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "20000");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return p;
    }

    static void produceConsume(String bootstrap, Properties sec, String topic) throws Exception {
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps(bootstrap, sec))) {
            for (int i = 0; i < COUNT; i++) {
                producer.send(new ProducerRecord<>(topic, "k" + i, "v" + i)).get();
            }
        }
        Properties c = new Properties();
        c.putAll(sec);
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        Set<String> seen = new HashSet<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            long deadline = System.currentTimeMillis() + 30000;
            while (seen.size() < COUNT && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    if (!r.value().equals("v" + r.key().substring(1))) {
                        throw new AssertionError("record " + r.key() + " has value " + r.value());
                    }
                    seen.add(r.key());
                }
            }
        }
        if (seen.size() != COUNT) {
            throw new AssertionError("read " + seen.size() + " of " + COUNT + " records");
        }
    }

    static void refused(String bootstrap, Properties sec, String topic) throws Exception {
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps(bootstrap, sec))) {
            producer.send(new ProducerRecord<>(topic, "k", "v")).get();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof AuthenticationException) {
                return;
            }
            throw e;
        } catch (AuthenticationException e) {
            return;
        }
        throw new AssertionError("a wrong password produced");
    }
}

// Quickstart: produce three keyed records with Spool's Java binding, then read them back in a
// consumer group. As with the Java client, but io.spoolmq instead of org.apache.kafka.
//
//     mvn -q -f sdk-cgo/bindings/java/pom.xml install -DskipTests
//     java -cp ~/.m2/repository/io/spoolmq/spool-clients/0.1.0/spool-clients-0.1.0.jar:$HOME/.m2/repository/net/java/dev/jna/jna/5.14.0/jna-5.14.0.jar \
//         examples/java/Quickstart.java 127.0.0.1:9092
//
// The first run creates the topic; a second run reads only its own three records.
import io.spoolmq.clients.consumer.ConsumerRecord;
import io.spoolmq.clients.consumer.KafkaConsumer;
import io.spoolmq.clients.producer.KafkaProducer;
import io.spoolmq.clients.producer.ProducerRecord;
import io.spoolmq.clients.producer.RecordMetadata;
import io.spoolmq.common.KafkaException;
import io.spoolmq.common.serialization.StringDeserializer;
import io.spoolmq.common.serialization.StringSerializer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;

public class Quickstart {
    static final String TOPIC = "java-quickstart";

    public static void main(String[] args) throws Exception {
        String brokers = args.length > 0 ? args[0] : "127.0.0.1:9092";
        List<String> names = List.of("alice", "bob", "carol");

        Properties props = new Properties();
        props.put("bootstrap.servers", brokers);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
            try {
                producer.createTopic(TOPIC, 3, (short) -1, Duration.ofSeconds(10));
            } catch (KafkaException e) {
                if (e.code() != KafkaException.TOPIC_ALREADY_EXISTS) {
                    throw e;
                }
            }
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (String name : names) {
                sent.add(producer.send(new ProducerRecord<>(TOPIC, name, "hello " + name)));
            }
            for (int i = 0; i < names.size(); i++) {
                RecordMetadata md = sent.get(i).get(); // throws ExecutionException if it failed
                System.out.printf("delivered %s to %s[%d]%n", names.get(i), md.topic(), md.partition());
            }
        } // close flushes and frees

        props.put("group.id", TOPIC);
        props.put("auto.offset.reset", "earliest");
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(TOPIC));
            int got = 0;
            while (got < names.size()) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofSeconds(1))) {
                    System.out.printf("consumed %s=%s%n", r.key(), r.value());
                    got++;
                }
            }
        } // close commits and leaves the group
    }
}

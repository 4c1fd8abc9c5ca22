// A Java producer for cluster_test.go (compiled with javac against the classpath
// testdata/java/pom.xml resolves).
//
// usage: Producer BROKERS TOPIC
//
// Sends each stdin line as a record (acks=all, idempotent, the client's default retries) and
// prints "ACK <value> <partition> <offset>" for each acknowledged one; at the end of stdin it
// flushes and exits 0 if every record was acknowledged, 1 otherwise.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

class Producer {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("client.id", "java-producer");
        p.put("acks", "all");
        p.put("enable.idempotence", "true");
        p.put("linger.ms", "5");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        AtomicInteger failed = new AtomicInteger();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
            String line;
            while ((line = in.readLine()) != null) {
                final String value = line;
                producer.send(new ProducerRecord<>(args[1], value), (md, err) -> {
                    if (err != null) {
                        failed.incrementAndGet();
                        System.err.println("FAILED " + value + ": " + err);
                        return;
                    }
                    synchronized (System.out) {
                        System.out.println("ACK " + value + " " + md.partition() + " " + md.offset());
                    }
                });
            }
            producer.flush();
        }
        System.out.flush();
        System.exit(failed.get() == 0 ? 0 : 1);
    }
}

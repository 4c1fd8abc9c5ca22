// A Java consumer group member for group_java_test.go (compiled with javac against the
// classpath testdata/java/pom.xml resolves).
//
// usage: GroupMember BROKER TOPIC GROUP ASSIGNORS
//
// Commits each polled batch synchronously and only then prints its values, one a line, and
// "ASSIGNED p,q" / "REVOKED p,q" on rebalances. Closing stdin makes it leave and exit.
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

class GroupMember {
    static String parts(Collection<TopicPartition> tps) {
        List<String> out = new ArrayList<>();
        for (TopicPartition tp : tps) out.add(Integer.toString(tp.partition()));
        return String.join(",", out);
    }

    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("group.id", args[2]);
        p.put("client.id", "java");
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("session.timeout.ms", "6000");
        p.put("heartbeat.interval.ms", "300");
        List<String> assignors = new ArrayList<>();
        for (String a : args[3].split(",")) {
            assignors.add(switch (a) {
                case "range" -> "org.apache.kafka.clients.consumer.RangeAssignor";
                case "roundrobin" -> "org.apache.kafka.clients.consumer.RoundRobinAssignor";
                case "cooperative-sticky" -> "org.apache.kafka.clients.consumer.CooperativeStickyAssignor";
                default -> a;
            });
        }
        p.put("partition.assignment.strategy", String.join(",", assignors));
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        AtomicBoolean stop = new AtomicBoolean();
        KafkaConsumer<String, String> c = new KafkaConsumer<>(p);
        Thread t = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                }
            } catch (Exception e) {
            }
            stop.set(true);
            c.wakeup();
        });
        t.setDaemon(true);
        t.start();
        c.subscribe(List.of(args[1]), new ConsumerRebalanceListener() {
            public void onPartitionsRevoked(Collection<TopicPartition> tps) {
                System.out.println("REVOKED " + parts(tps));
                System.out.flush();
            }

            public void onPartitionsAssigned(Collection<TopicPartition> tps) {
                System.out.println("ASSIGNED " + parts(tps));
                System.out.flush();
            }
        });
        try {
            while (!stop.get()) {
                List<String> vals = new ArrayList<>();
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) vals.add(r.value());
                if (!vals.isEmpty()) {
                    c.commitSync();
                    StringBuilder sb = new StringBuilder();
                    for (String v : vals) sb.append(v).append('\n');
                    System.out.print(sb);
                    System.out.flush();
                }
            }
        } catch (org.apache.kafka.common.errors.WakeupException e) {
        }
        c.close();
    }
}

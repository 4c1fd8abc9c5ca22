import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.config.ConfigResource;

/**
 * Creates TOPIC with the given topic configs through the Java AdminClient (CreateTopics), checks
 * that describeConfigs reports each as a topic override with its value, then sets them again on a
 * second topic TOPIC-altered with incrementalAlterConfigs and checks that too. Prints "OK"; any
 * failure exits 1.
 *
 * Usage: TopicConfigs BOOTSTRAP TOPIC NAME=VALUE...
 */
final class TopicConfigs {
    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: TopicConfigs BOOTSTRAP TOPIC NAME=VALUE...");
            System.exit(2);
        }
        Map<String, String> configs = new HashMap<>();
        for (int i = 2; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            configs.put(kv[0], kv[1]);
        }
        try {
            run(args[0], args[1], configs);
        } catch (Throwable e) {
            e.printStackTrace();
            System.exit(1);
        }
        System.out.println("OK");
    }

    static void run(String bootstrap, String topic, Map<String, String> configs) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(props)) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1).configs(configs))).all().get();
            check(admin, topic, configs);

            String altered = topic + "-altered";
            admin.createTopics(List.of(new NewTopic(altered, 1, (short) 1))).all().get();
            ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, altered);
            Collection<AlterConfigOp> ops = new ArrayList<>();
            for (Map.Entry<String, String> e : configs.entrySet()) {
                ops.add(new AlterConfigOp(new ConfigEntry(e.getKey(), e.getValue()), AlterConfigOp.OpType.SET));
            }
            admin.incrementalAlterConfigs(Map.of(res, ops)).all().get();
            check(admin, altered, configs);
        }
    }

    static void check(Admin admin, String topic, Map<String, String> configs) throws Exception {
        ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        Config got = admin.describeConfigs(List.of(res)).all().get().get(res);
        for (Map.Entry<String, String> e : configs.entrySet()) {
            ConfigEntry c = got.get(e.getKey());
            if (c == null || !e.getValue().equals(c.value()) || c.source() != ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG) {
                throw new AssertionError(topic + ": " + e.getKey() + " described as " + c + ", want " + e.getValue() + " from the topic");
            }
        }
    }
}

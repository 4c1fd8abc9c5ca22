import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigsOptions;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidConfigurationException;

/**
 * The Java AdminClient's (deprecated, non-incremental) alterConfigs: creates TOPIC with
 * retention.ms=1000, replaces its configs with segment.ms=60000 and max.message.bytes=5000,
 * and checks with describeConfigs that exactly those two are topic overrides; a validate-only
 * call changes nothing; a bad value fails with InvalidConfigurationException. Prints "OK";
 * any failure exits 1.
 *
 * Usage: AlterConfigs BOOTSTRAP TOPIC
 */
final class AlterConfigs {
    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: AlterConfigs BOOTSTRAP TOPIC");
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

    @SuppressWarnings("deprecation")
    static void run(String bootstrap, String topic) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(props)) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1).configs(Map.of("retention.ms", "1000")))).all().get();
            ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            Config set = new Config(List.of(new ConfigEntry("segment.ms", "60000"), new ConfigEntry("max.message.bytes", "5000")));
            admin.alterConfigs(Map.of(res, set)).all().get();
            expect(admin, res, Map.of("segment.ms", "60000", "max.message.bytes", "5000"));

            Config other = new Config(List.of(new ConfigEntry("cleanup.policy", "compact")));
            admin.alterConfigs(Map.of(res, other), new AlterConfigsOptions().validateOnly(true)).all().get();
            expect(admin, res, Map.of("segment.ms", "60000", "max.message.bytes", "5000"));

            try {
                admin.alterConfigs(Map.of(res, new Config(List.of(new ConfigEntry("compression.type", "brotli"))))).all().get();
                throw new AssertionError("compression.type=brotli was accepted");
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof InvalidConfigurationException)) {
                    throw e;
                }
            }
        }
    }

    static void expect(Admin admin, ConfigResource res, Map<String, String> want) throws Exception {
        Config got = admin.describeConfigs(List.of(res)).all().get().get(res);
        List<String> overrides = new ArrayList<>();
        for (ConfigEntry e : got.entries()) {
            if (e.source() == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG) {
                overrides.add(e.name() + "=" + e.value());
                if (!e.value().equals(want.get(e.name()))) {
                    throw new AssertionError("override " + e.name() + "=" + e.value() + ", want " + want);
                }
            }
        }
        if (overrides.size() != want.size()) {
            throw new AssertionError("overrides " + overrides + ", want " + want);
        }
    }
}

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.GroupAuthorizationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The ACL matrix through the Java Admin and the Java producer and consumer, on a broker with
 * the authorizer on and PLAIN users admin (a super user), alice and bob, each with the password
 * NAME-secret, over SASL_PLAINTEXT. Without ACLs alice is refused produce, fetch, metadata and
 * admin; the super user needs none. Admin.createAcls with a PREFIXED ALLOW lets alice write to
 * matching topics only (and still not join a group); a DENY overrides it; bob stays refused;
 * Admin.deleteAcls takes the permission back. Leaves one ACL behind, the DENY on TOPIC
 * jacl-logs-secret, for the caller to find. Prints "OK"; any failure exits 1.
 *
 * Usage: AclMatrix BOOTSTRAP
 */
final class AclMatrix {
    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: AclMatrix BOOTSTRAP");
            System.exit(2);
        }
        try {
            run(args[0]);
        } catch (Throwable e) {
            e.printStackTrace();
            System.exit(1);
        }
        System.out.println("OK");
    }

    static Properties as(String bootstrap, String user) {
        Properties p = new Properties();
        p.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SASL_PLAINTEXT");
        p.put("sasl.mechanism", "PLAIN");
        p.put("sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"" + user
                + "\" password=\"" + user + "-secret\";");
        return p;
    }

    /** Sends one record as user with a new producer (no metadata cached from an earlier send). */
    static void send(String bootstrap, String user, String topic) throws Exception {
        Properties p = as(bootstrap, user);
        // Not idempotent: a refused send fails on the topic, not on InitProducerId.
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "20000");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.send(new ProducerRecord<>(topic, user, "by " + user)).get();
        }
    }

    /** Polls topic's partition 0 as user, in group (null: no group, assigned). */
    static void poll(String bootstrap, String user, String topic, String group) {
        Properties p = as(bootstrap, user);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        if (group != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
            if (group == null) {
                consumer.assign(List.of(new TopicPartition(topic, 0)));
            } else {
                consumer.subscribe(List.of(topic));
            }
            long deadline = System.currentTimeMillis() + 30000; // a bound on a hang
            while (System.currentTimeMillis() < deadline) {
                if (!consumer.poll(Duration.ofMillis(500)).isEmpty()) {
                    return;
                }
            }
            throw new AssertionError(user + " read nothing from " + topic + " in 30 s");
        }
    }

    /** Runs what and requires it to fail with want (directly or as the cause). */
    static void refused(String what, Class<? extends Throwable> want, Callable<?> call) {
        Throwable got = null;
        try {
            call.call();
        } catch (Throwable e) {
            got = e;
        }
        for (Throwable e = got; e != null; e = e.getCause()) {
            if (want.isInstance(e)) {
                return;
            }
        }
        throw new AssertionError(what + ": want " + want.getSimpleName() + ", got " + got, got);
    }

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    static void run(String bootstrap) throws Exception {
        Properties ap = as(bootstrap, "admin");
        Properties alicep = as(bootstrap, "alice");
        for (Properties p : List.of(ap, alicep)) {
            p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 20000);
            p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10000);
        }
        try (Admin admin = Admin.create(ap); Admin alice = Admin.create(alicep)) {
            // The super user needs no ACL: it creates the topics, writes and reads.
            admin.createTopics(List.of(new NewTopic("jacl-logs-a", 1, (short) 1), new NewTopic("jacl-logs-secret", 1, (short) 1),
                    new NewTopic("jacl-other", 1, (short) 1))).all().get();
            send(bootstrap, "admin", "jacl-other");
            poll(bootstrap, "admin", "jacl-other", null);

            // No ACL: alice may not produce, fetch, see topics or administer.
            refused("alice producing without an ACL", TopicAuthorizationException.class, () -> {
                send(bootstrap, "alice", "jacl-logs-a");
                return null;
            });
            refused("alice fetching without an ACL", TopicAuthorizationException.class, () -> {
                poll(bootstrap, "alice", "jacl-other", null);
                return null;
            });
            Set<String> shown = alice.listTopics().names().get();
            check(shown.isEmpty(), "alice's listTopics without an ACL: " + shown);
            refused("alice creating a topic without an ACL", TopicAuthorizationException.class,
                    () -> alice.createTopics(List.of(new NewTopic("jacl-alices", 1, (short) 1))).all().get());
            refused("alice describing ACLs", ClusterAuthorizationException.class,
                    () -> alice.describeAcls(AclBindingFilter.ANY).values().get());
            refused("alice creating an ACL", ClusterAuthorizationException.class,
                    () -> alice.createAcls(List.of(new AclBinding(new ResourcePattern(ResourceType.TOPIC, "jacl-other", PatternType.LITERAL),
                            new AccessControlEntry("User:alice", "*", AclOperation.ALL, AclPermissionType.ALLOW)))).all().get());

            // A PREFIXED ALLOW: alice writes to jacl-logs-* and nowhere else.
            AclBinding prefixed = new AclBinding(new ResourcePattern(ResourceType.TOPIC, "jacl-logs-", PatternType.PREFIXED),
                    new AccessControlEntry("User:alice", "*", AclOperation.WRITE, AclPermissionType.ALLOW));
            admin.createAcls(List.of(prefixed)).all().get();
            send(bootstrap, "alice", "jacl-logs-a");
            refused("alice producing outside the prefix", TopicAuthorizationException.class, () -> {
                send(bootstrap, "alice", "jacl-other");
                return null;
            });
            // Write implies Describe: the prefixed topics are shown, only those.
            shown = alice.listTopics().names().get();
            check(shown.equals(Set.of("jacl-logs-a", "jacl-logs-secret")), "alice's listTopics under the prefixed ALLOW: " + shown);
            // Joining a group needs Read on the group, which alice does not have.
            refused("alice joining a group without an ACL", GroupAuthorizationException.class, () -> {
                poll(bootstrap, "alice", "jacl-logs-a", "jacl-group");
                return null;
            });
            refused("bob producing under alice's ACL", TopicAuthorizationException.class, () -> {
                send(bootstrap, "bob", "jacl-logs-a");
                return null;
            });

            // A DENY overrides the ALLOW.
            AclBinding deny = new AclBinding(new ResourcePattern(ResourceType.TOPIC, "jacl-logs-secret", PatternType.LITERAL),
                    new AccessControlEntry("User:alice", "*", AclOperation.WRITE, AclPermissionType.DENY));
            admin.createAcls(List.of(deny)).all().get();
            refused("alice producing under a DENY and an ALLOW", TopicAuthorizationException.class, () -> {
                send(bootstrap, "alice", "jacl-logs-secret");
                return null;
            });
            send(bootstrap, "alice", "jacl-logs-a");

            Collection<AclBinding> all = admin.describeAcls(AclBindingFilter.ANY).values().get();
            check(Set.copyOf(all).equals(Set.of(prefixed, deny)), "describeAcls: " + all);

            // deleteAcls takes the permission back.
            AclBindingFilter filter = new AclBindingFilter(new ResourcePatternFilter(ResourceType.TOPIC, "jacl-logs-", PatternType.PREFIXED),
                    new AccessControlEntryFilter("User:alice", null, AclOperation.WRITE, AclPermissionType.ALLOW));
            Collection<AclBinding> deleted = admin.deleteAcls(List.of(filter)).all().get();
            check(deleted.size() == 1 && deleted.contains(prefixed), "deleteAcls deleted " + deleted);
            refused("alice producing after the ALLOW was deleted", TopicAuthorizationException.class, () -> {
                send(bootstrap, "alice", "jacl-logs-a");
                return null;
            });
            List<String> left = admin.describeAcls(AclBindingFilter.ANY).values().get().stream().map(AclBinding::toString)
                    .collect(Collectors.toList());
            check(left.size() == 1, "ACLs left after deleteAcls: " + left);
        }
    }
}

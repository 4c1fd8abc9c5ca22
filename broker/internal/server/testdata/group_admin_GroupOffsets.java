import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.GroupIdNotFoundException;

/**
 * Drives the Java AdminClient's group offset calls against a broker: alterConsumerGroupOffsets,
 * listConsumerGroupOffsets, deleteConsumerGroupOffsets (OffsetDelete, API key 47),
 * listConsumerGroups, describeConsumerGroups and deleteConsumerGroups on a group without
 * members. Prints "OK"; any failure exits 1.
 *
 * Usage: GroupOffsets BOOTSTRAP TOPIC GROUP   (TOPIC must have at least two partitions)
 */
final class GroupOffsets {
    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: GroupOffsets BOOTSTRAP TOPIC GROUP");
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

    static boolean listed(Admin admin, String group) throws Exception {
        Collection<ConsumerGroupListing> all = admin.listConsumerGroups().all().get();
        return all.stream().anyMatch(l -> l.groupId().equals(group));
    }

    static void run(String bootstrap, String topic, String group) throws Exception {
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        ap.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 20000);
        ap.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10000);
        TopicPartition p0 = new TopicPartition(topic, 0), p1 = new TopicPartition(topic, 1);
        try (Admin admin = Admin.create(ap)) {
            admin.alterConsumerGroupOffsets(group, Map.of(p0, new OffsetAndMetadata(3), p1, new OffsetAndMetadata(4, "m"))).all().get();
            Map<TopicPartition, OffsetAndMetadata> got = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            check(got.size() == 2 && got.get(p0).offset() == 3 && got.get(p1).offset() == 4 && "m".equals(got.get(p1).metadata()),
                    "offsets after alterConsumerGroupOffsets: " + got);

            admin.deleteConsumerGroupOffsets(group, Set.of(p0)).all().get();
            got = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            check(got.size() == 1 && got.get(p1).offset() == 4, "offsets after deleteConsumerGroupOffsets: " + got);
            try {
                admin.deleteConsumerGroupOffsets("no-such-group", Set.of(p0)).all().get();
                check(false, "deleteConsumerGroupOffsets of an unknown group succeeded");
            } catch (ExecutionException e) {
                check(e.getCause() instanceof GroupIdNotFoundException, "deleteConsumerGroupOffsets of an unknown group: " + e.getCause());
            }

            check(listed(admin, group), "listConsumerGroups lacks " + group);
            ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
            check(d.members().isEmpty() && "Empty".equalsIgnoreCase(d.state().toString()), "describeConsumerGroups: " + d);

            admin.deleteConsumerGroups(List.of(group)).all().get();
            check(!listed(admin, group), "listConsumerGroups still has " + group + " after deleteConsumerGroups");
        }
    }
}

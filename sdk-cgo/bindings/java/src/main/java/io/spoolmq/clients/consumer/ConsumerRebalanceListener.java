package io.spoolmq.clients.consumer;

import io.spoolmq.common.TopicPartition;
import java.util.Collection;

/**
 * Told of the partitions a group consumer is given and gives up, as the Java client's
 * listener: its methods run inside {@link KafkaConsumer#poll} and {@link KafkaConsumer#close},
 * on their thread. {@code onPartitionsAssigned} runs before records of those partitions are
 * returned; {@code onPartitionsRevoked} before they go to another member (which waits for it,
 * so keep polling), and may call {@code commitSync}. An exception thrown here is thrown by the
 * poll or close that ran it.
 */
public interface ConsumerRebalanceListener {
    void onPartitionsRevoked(Collection<TopicPartition> partitions);

    void onPartitionsAssigned(Collection<TopicPartition> partitions);

    /** The member left the group without a rebalance; by default onPartitionsRevoked. */
    default void onPartitionsLost(Collection<TopicPartition> partitions) {
        onPartitionsRevoked(partitions);
    }
}

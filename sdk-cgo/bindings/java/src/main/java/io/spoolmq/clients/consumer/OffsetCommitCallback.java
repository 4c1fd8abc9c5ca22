package io.spoolmq.clients.consumer;

import io.spoolmq.common.TopicPartition;
import java.util.Map;

/**
 * What {@link KafkaConsumer#commitAsync(OffsetCommitCallback)} and
 * {@link KafkaConsumer#commitAsync(Map, OffsetCommitCallback)} call once the commit has
 * finished, as the Java client's: inside a later {@code poll} or {@code close}, on its thread,
 * with the offsets committed and null, or the exception that failed the commit.
 */
@FunctionalInterface
public interface OffsetCommitCallback {
    void onComplete(Map<TopicPartition, OffsetAndMetadata> offsets, Exception exception);
}

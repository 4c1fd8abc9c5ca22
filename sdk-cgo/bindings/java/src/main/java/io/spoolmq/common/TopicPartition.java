package io.spoolmq.common;

/** A topic and a partition of it. */
public record TopicPartition(String topic, int partition) {
    @Override
    public String toString() {
        return topic + "-" + partition;
    }
}

package io.spoolmq.clients.producer;

/** Where a record was stored: topic, partition and offset (-1 when it was not). */
public final class RecordMetadata {
    private final String topic;
    private final int partition;
    private final long offset;

    public RecordMetadata(String topic, int partition, long offset) {
        this.topic = topic;
        this.partition = partition;
        this.offset = offset;
    }

    public String topic() {
        return topic;
    }

    public int partition() {
        return partition;
    }

    public long offset() {
        return offset;
    }

    public boolean hasOffset() {
        return offset >= 0;
    }

    @Override
    public String toString() {
        return topic + "-" + partition + "@" + offset;
    }
}

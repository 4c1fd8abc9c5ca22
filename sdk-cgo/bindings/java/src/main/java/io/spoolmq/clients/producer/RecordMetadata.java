package io.spoolmq.clients.producer;

/**
 * Where a record was stored: topic, partition and offset (-1 when it was not), and its
 * timestamp (milliseconds since the epoch; -1 when it was not stored).
 */
public final class RecordMetadata {
    private final String topic;
    private final int partition;
    private final long offset;
    private final long timestamp;

    public RecordMetadata(String topic, int partition, long offset, long timestamp) {
        this.topic = topic;
        this.partition = partition;
        this.offset = offset;
        this.timestamp = timestamp;
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

    public long timestamp() {
        return timestamp;
    }

    public boolean hasOffset() {
        return offset >= 0;
    }

    @Override
    public String toString() {
        return topic + "-" + partition + "@" + offset;
    }
}

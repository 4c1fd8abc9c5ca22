package io.spoolmq.clients.consumer;

import io.spoolmq.common.header.Headers;

/** A record read by {@link KafkaConsumer#poll}. */
public final class ConsumerRecord<K, V> {
    private final String topic;
    private final int partition;
    private final long offset;
    private final long timestamp;
    private final int serializedKeySize;
    private final int serializedValueSize;
    private final K key;
    private final V value;
    private final Headers headers;

    public ConsumerRecord(String topic, int partition, long offset, long timestamp, int serializedKeySize,
                          int serializedValueSize, K key, V value, Headers headers) {
        this.topic = topic;
        this.partition = partition;
        this.offset = offset;
        this.timestamp = timestamp;
        this.serializedKeySize = serializedKeySize;
        this.serializedValueSize = serializedValueSize;
        this.key = key;
        this.value = value;
        this.headers = headers;
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

    /** Milliseconds since the Unix epoch; -1 when the record has none. */
    public long timestamp() {
        return timestamp;
    }

    /** The key's size in bytes, -1 for a null key. */
    public int serializedKeySize() {
        return serializedKeySize;
    }

    public int serializedValueSize() {
        return serializedValueSize;
    }

    public K key() {
        return key;
    }

    public V value() {
        return value;
    }

    public Headers headers() {
        return headers;
    }

    @Override
    public String toString() {
        return "ConsumerRecord(topic = " + topic + ", partition = " + partition + ", offset = " + offset + ", key = " + key
                + ", value = " + value + ")";
    }
}

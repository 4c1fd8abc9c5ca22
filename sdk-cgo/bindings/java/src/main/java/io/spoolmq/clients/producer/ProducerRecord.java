package io.spoolmq.clients.producer;

import io.spoolmq.common.header.Header;
import io.spoolmq.common.header.Headers;

/**
 * A record to send, as the Java client's: a topic, an optional partition (null: the
 * configured {@code partitioner} chooses), an optional timestamp (milliseconds since the epoch;
 * null: the time of the send), a key, a value and headers.
 */
public final class ProducerRecord<K, V> {
    private final String topic;
    private final Integer partition;
    private final Long timestamp;
    private final K key;
    private final V value;
    private final Headers headers = new Headers();

    public ProducerRecord(String topic, Integer partition, Long timestamp, K key, V value, Iterable<Header> headers) {
        if (topic == null) {
            throw new IllegalArgumentException("Topic cannot be null.");
        }
        if (partition != null && partition < 0) {
            throw new IllegalArgumentException("Invalid partition: " + partition + ". Partition number should always be non-negative or null.");
        }
        if (timestamp != null && timestamp < 0) {
            throw new IllegalArgumentException("Invalid timestamp: " + timestamp + ". Timestamp should always be non-negative or null.");
        }
        this.topic = topic;
        this.partition = partition;
        this.timestamp = timestamp;
        this.key = key;
        this.value = value;
        if (headers != null) {
            headers.forEach(this.headers::add);
        }
    }

    public ProducerRecord(String topic, Integer partition, Long timestamp, K key, V value) {
        this(topic, partition, timestamp, key, value, null);
    }

    public ProducerRecord(String topic, Integer partition, K key, V value, Iterable<Header> headers) {
        this(topic, partition, null, key, value, headers);
    }

    public ProducerRecord(String topic, Integer partition, K key, V value) {
        this(topic, partition, null, key, value, null);
    }

    public ProducerRecord(String topic, K key, V value) {
        this(topic, null, null, key, value, null);
    }

    public ProducerRecord(String topic, V value) {
        this(topic, null, null, null, value, null);
    }

    public String topic() {
        return topic;
    }

    public Integer partition() {
        return partition;
    }

    /** The record's timestamp, or null: the time of the send. */
    public Long timestamp() {
        return timestamp;
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
}

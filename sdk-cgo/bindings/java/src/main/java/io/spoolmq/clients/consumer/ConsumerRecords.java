package io.spoolmq.clients.consumer;

import io.spoolmq.common.TopicPartition;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** The records of one {@link KafkaConsumer#poll}, in the order they came. */
public final class ConsumerRecords<K, V> implements Iterable<ConsumerRecord<K, V>> {
    private final List<ConsumerRecord<K, V>> records;

    public ConsumerRecords(List<ConsumerRecord<K, V>> records) {
        this.records = Collections.unmodifiableList(records);
    }

    public int count() {
        return records.size();
    }

    public boolean isEmpty() {
        return records.isEmpty();
    }

    /** The records of one partition. */
    public List<ConsumerRecord<K, V>> records(TopicPartition tp) {
        return records.stream().filter(r -> r.topic().equals(tp.topic()) && r.partition() == tp.partition()).toList();
    }

    public Set<TopicPartition> partitions() {
        Map<TopicPartition, Boolean> m = new LinkedHashMap<>();
        records.forEach(r -> m.put(new TopicPartition(r.topic(), r.partition()), true));
        return m.keySet();
    }

    @Override
    public Iterator<ConsumerRecord<K, V>> iterator() {
        return records.iterator();
    }
}

package io.spoolmq.common.serialization;

/** Turns bytes (null for a null key or value) into a key or value. */
@FunctionalInterface
public interface Deserializer<T> {
    T deserialize(String topic, byte[] data);
}

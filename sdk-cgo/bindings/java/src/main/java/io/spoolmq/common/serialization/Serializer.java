package io.spoolmq.common.serialization;

/** Turns a key or value into bytes (null stays null). */
@FunctionalInterface
public interface Serializer<T> {
    byte[] serialize(String topic, T data);
}

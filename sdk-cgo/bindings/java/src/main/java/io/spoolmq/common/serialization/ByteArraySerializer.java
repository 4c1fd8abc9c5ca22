package io.spoolmq.common.serialization;

/** byte[] to bytes (UTF-8 for strings). */
public class ByteArraySerializer implements Serializer<byte[]> {
    @Override
    public byte[] serialize(String topic, byte[] data) {
        return data;
    }
}

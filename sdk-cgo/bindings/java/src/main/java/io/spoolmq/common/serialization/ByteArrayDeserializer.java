package io.spoolmq.common.serialization;

/** Bytes to byte[]. */
public class ByteArrayDeserializer implements Deserializer<byte[]> {
    @Override
    public byte[] deserialize(String topic, byte[] data) {
        return data;
    }
}

package io.spoolmq.common.serialization;

import java.nio.charset.StandardCharsets;

/** Bytes to String. */
public class StringDeserializer implements Deserializer<String> {
    @Override
    public String deserialize(String topic, byte[] data) {
        return data == null ? null : new String(data, StandardCharsets.UTF_8);
    }
}

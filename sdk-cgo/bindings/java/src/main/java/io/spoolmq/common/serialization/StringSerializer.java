package io.spoolmq.common.serialization;

import java.nio.charset.StandardCharsets;

/** String to bytes (UTF-8 for strings). */
public class StringSerializer implements Serializer<String> {
    @Override
    public byte[] serialize(String topic, String data) {
        return data == null ? null : data.getBytes(StandardCharsets.UTF_8);
    }
}

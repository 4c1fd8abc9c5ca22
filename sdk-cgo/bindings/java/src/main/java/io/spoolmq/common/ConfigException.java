package io.spoolmq.common;

/** A configuration key libspool does not know or a value it does not take (code BAD_ARG). */
public class ConfigException extends KafkaException {
    private static final long serialVersionUID = 1L;

    public ConfigException(String message) {
        super(BAD_ARG, message);
    }
}

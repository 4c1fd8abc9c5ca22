package io.spoolmq.common;

import io.spoolmq.clients.internal.LibSpool;

/**
 * Every error of this binding, as the Java client's {@code KafkaException}; {@link #code()} is
 * libspool's error code: Kafka's protocol error number, or a local code below zero.
 */
public class KafkaException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public static final int UNKNOWN_TOPIC_OR_PARTITION = 3;
    public static final int TOPIC_ALREADY_EXISTS = 36;
    public static final int SASL_AUTHENTICATION_FAILED = 58;
    public static final int BAD_ARG = -100;
    public static final int TIMED_OUT = -101;
    public static final int TRANSPORT = -102;
    public static final int CLOSED = -103;
    public static final int QUEUE_FULL = -104;
    public static final int STATE = -105;
    public static final int FAIL = -106;

    private final int code;

    public KafkaException(int code, String message) {
        super(message);
        this.code = code;
    }

    /** The exception for a libspool error code returned by a call. */
    public static KafkaException of(int code, String what) {
        return new KafkaException(code, what + ": " + LibSpool.LIB.spool_err2str(code));
    }

    /** libspool's error code. */
    public int code() {
        return code;
    }
}

package io.spoolmq.clients.producer;

/** Called once per record with its metadata, or with the exception that failed it. */
@FunctionalInterface
public interface Callback {
    void onCompletion(RecordMetadata metadata, Exception exception);
}

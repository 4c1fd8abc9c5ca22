package io.spoolmq.clients.consumer;

/**
 * An offset to commit, as the Java client's: the offset of the next record to read (the last
 * one processed + 1). libspool commits no metadata with it, so there is no metadata here.
 */
public record OffsetAndMetadata(long offset) {
    public OffsetAndMetadata {
        if (offset < 0) {
            throw new IllegalArgumentException("Invalid negative offset " + offset);
        }
    }
}

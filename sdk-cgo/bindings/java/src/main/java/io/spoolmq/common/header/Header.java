package io.spoolmq.common.header;

/** A record header: a key and a value that may be null. */
public record Header(String key, byte[] value) {}

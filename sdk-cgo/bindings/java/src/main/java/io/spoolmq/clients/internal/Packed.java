package io.spoolmq.clients.internal;

import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import io.spoolmq.common.header.Headers;
import java.util.ArrayList;
import java.util.List;

/**
 * The calls of the hot paths: a record's produce, and spool.h's packed calls (many delivery
 * reports or messages per crossing, read from one block). They are JNA direct mappings (static
 * native methods), several times cheaper per call than {@link LibSpool}'s interface mapping,
 * and a block is read through one {@link ByteBuffer} rather than a JNA Structure per report
 * or message. Opaque pointers are passed as {@code long}s (64-bit platforms only, as the rest
 * of the binding). Not part of the API.
 */
public final class Packed {
    static {
        Native.register(Packed.class, NativeLibrary.getInstance(LibSpool.Locate.path()));
    }

    private Packed() {}

    /** spool_produce_timestamp; topic is NUL-terminated UTF-8 ({@link #cString}). */
    public static native int spool_produce_timestamp(Pointer producer, byte[] topic, int partition, long timestampMs,
                                                     byte[] key, long keyLen, byte[] value, long valueLen,
                                                     Pointer headers, long headerCount, long msgOpaque);

    private static native long spool_producer_poll_reports(Pointer producer, int timeoutMs, long[] reports);

    private static native long spool_consumer_poll_packed(Pointer consumer, int timeoutMs, long max, long[] block,
                                                          long[] blockSize);

    private static native void spool_free(long block);

    /** s as a NUL-terminated UTF-8 string. */
    public static byte[] cString(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        byte[] z = new byte[b.length + 1];
        System.arraycopy(b, 0, z, 0, b.length);
        return z;
    }

    /** One spool_report_t, as {@link #takeReports} hands it. */
    @FunctionalInterface
    public interface ReportHandler {
        void report(long msgOpaque, long offset, long timestamp, int partition, int err);
    }

    private static final int REPORT_SIZE = 32; // msg_opaque, offset, timestamp, partition, err
    private static final int MESSAGE_SIZE = 104; // spool_packed_message_t

    /**
     * Waits up to timeoutMs for delivery reports (spool_producer_poll_reports), hands each to
     * handler in msg_opaque order, frees their block and returns their number.
     */
    public static int takeReports(Pointer producer, int timeoutMs, ReportHandler handler) {
        long[] out = new long[1];
        int n = (int) spool_producer_poll_reports(producer, timeoutMs, out);
        if (n == 0) {
            return 0;
        }
        try {
            ByteBuffer b = new Pointer(out[0]).getByteBuffer(0, (long) n * REPORT_SIZE).order(ByteOrder.nativeOrder());
            for (int i = 0, o = 0; i < n; i++, o += REPORT_SIZE) {
                handler.report(b.getLong(o), b.getLong(o + 8), b.getLong(o + 16), b.getInt(o + 24), b.getInt(o + 28));
            }
        } finally {
            spool_free(out[0]);
        }
        return n;
    }

    /** A message of a spool_consumer_poll_packed block, its bytes copied out. */
    public record Message(int err, String errstr, String topic, int partition, long offset, long timestamp,
                          byte[] key, byte[] value, Headers headers) {}

    /**
     * Waits up to timeoutMs for messages and takes up to max of those ready in one block
     * (spool_consumer_poll_packed); their bytes are copied out and the block freed.
     */
    public static List<Message> poll(Pointer consumer, int timeoutMs, int max) {
        long[] block = new long[1];
        long[] size = new long[1];
        int n = (int) spool_consumer_poll_packed(consumer, timeoutMs, max, block, size);
        if (n == 0) {
            return List.of();
        }
        try {
            ByteBuffer b = new Pointer(block[0]).getByteBuffer(0, size[0]).order(ByteOrder.nativeOrder());
            List<Message> out = new ArrayList<>(n);
            long topicOff = -1; // messages of one topic in a row share its bytes: decoded once
            String topic = null;
            for (int i = 0, o = 0; i < n; i++, o += MESSAGE_SIZE) {
                if (b.getLong(o + 24) != topicOff) {
                    topicOff = b.getLong(o + 24);
                    topic = text(b, topicOff, b.getLong(o + 32));
                }
                Headers headers = new Headers();
                long at = b.getLong(o + 88);
                for (long h = 0, count = b.getLong(o + 96); h < count; h++) {
                    long kl = b.getLong((int) at);
                    String key = text(b, at + 8, kl);
                    long vl = b.getLong((int) (at + 8 + kl));
                    headers.add(key, bytes(b, at + 16 + kl, vl));
                    at += 16 + kl + Math.max(vl, 0);
                }
                out.add(new Message(b.getInt(o), text(b, b.getLong(o + 40), b.getLong(o + 48)), topic, b.getInt(o + 4),
                        b.getLong(o + 8), b.getLong(o + 16), bytes(b, b.getLong(o + 56), b.getLong(o + 64)),
                        bytes(b, b.getLong(o + 72), b.getLong(o + 80)), headers));
            }
            return out;
        } finally {
            spool_free(block[0]);
        }
    }

    /** len bytes of b at off; null for a negative len (a null key or value). */
    private static byte[] bytes(ByteBuffer b, long off, long len) {
        if (len < 0) {
            return null;
        }
        byte[] out = new byte[(int) len];
        b.get((int) off, out);
        return out;
    }

    private static String text(ByteBuffer b, long off, long len) {
        byte[] raw = new byte[(int) len];
        b.get((int) off, raw);
        return new String(raw, StandardCharsets.UTF_8);
    }
}

package io.spoolmq.clients.internal;

import com.sun.jna.Callback;
import com.sun.jna.Library;
import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import com.sun.jna.Structure;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * The functions of spool.h, for JNA. Handles and messages are opaque {@link Pointer}s; an
 * opaque pointer a record carries is an id ({@code new Pointer(id)}), never a Java object.
 * Not part of the API.
 */
public interface LibSpool extends Library {
    /** The library: $SPOOL_LIBRARY, else pkg-config's libdir of spool, else the loader's path. */
    LibSpool LIB = Native.load(Locate.path(), LibSpool.class);

    int SPOOL_PARTITION_UA = -1;
    long SPOOL_OFFSET_BEGINNING = -2;
    long SPOOL_OFFSET_END = -1;

    /** spool_dr_cb_t: called inside spool_producer_poll/flush, on the calling thread. */
    interface DeliveryCallback extends Callback {
        void invoke(Pointer producer, Pointer msg, Pointer opaque);
    }

    /** spool_rebalance_cb_t: called inside spool_consumer_poll_packed/close, on the calling thread. */
    interface RebalanceCallback extends Callback {
        void invoke(Pointer consumer, int what, Pointer partitions, long count, Pointer opaque);
    }

    /** spool_offset_commit_cb_t. */
    interface OffsetCommitCallback extends Callback {
        void invoke(Pointer consumer, int err, Pointer offsets, long count, Pointer opaque);
    }

    int SPOOL_REBALANCE_ASSIGN = 1;
    int SPOOL_REBALANCE_REVOKE = 2;
    int SPOOL_REBALANCE_LOST = 3;

    String spool_version();
    int spool_handle_count();
    String spool_err2str(int err);

    Pointer spool_conf_new();
    int spool_conf_set(Pointer conf, String key, String value, byte[] errstr, long errstrSize);
    void spool_conf_set_dr_cb(Pointer conf, DeliveryCallback cb);
    void spool_conf_set_rebalance_cb(Pointer conf, RebalanceCallback cb);
    void spool_conf_set_offset_commit_cb(Pointer conf, OffsetCommitCallback cb);
    void spool_conf_destroy(Pointer conf);

    Pointer spool_producer_new(Pointer conf, byte[] errstr, long errstrSize);
    int spool_producer_flush(Pointer producer, int timeoutMs);
    int spool_producer_outq_len(Pointer producer);
    int spool_create_topic(Pointer producer, String topic, int partitions, short replicationFactor, int timeoutMs);
    int spool_delete_topic(Pointer producer, String topic, int timeoutMs);
    void spool_producer_destroy(Pointer producer);

    Pointer spool_consumer_new(Pointer conf, byte[] errstr, long errstrSize);
    int spool_consumer_subscribe(Pointer consumer, String[] topics, long topicCount);
    int spool_consumer_assign(Pointer consumer, String topic, int partition, long offset);
    int spool_consumer_seek(Pointer consumer, String topic, int partition, long offset);
    int spool_consumer_commit(Pointer consumer, int async);
    int spool_consumer_commit_offsets(Pointer consumer, Pointer offsets, long count, int async);
    int spool_consumer_close(Pointer consumer);
    void spool_consumer_destroy(Pointer consumer);

    int spool_message_view(Pointer msg, MessageView view, long viewSize);

    /** spool_message_view_t: every field of a message in one call. */
    @Structure.FieldOrder({"err", "partition", "offset", "timestamp", "topic", "errstr", "key", "keyLen",
            "value", "valueLen", "headerCount", "opaque"})
    class MessageView extends Structure {
        public int err;
        public int partition;
        public long offset;
        public long timestamp;
        public String topic;
        public String errstr;
        public Pointer key;
        public long keyLen;
        public Pointer value;
        public long valueLen;
        public long headerCount;
        public Pointer opaque;

        /** Reads msg's fields (msg must stay alive while the pointers are read). */
        public static MessageView of(Pointer msg) {
            MessageView v = new MessageView();
            LIB.spool_message_view(msg, v, v.size());
            v.read();
            return v;
        }
    }

    /** A one-byte array passed, with length 0, for an empty key or value (JNA may pass an empty array as NULL). */
    byte[] ONE_BYTE = new byte[1];

    /** b as passed to libspool: an empty array as {@link #ONE_BYTE} (length 0), null as NULL. */
    static byte[] nonEmpty(byte[] b) {
        return b != null && b.length == 0 ? ONE_BYTE : b;
    }

    /**
     * Native memory holding b, or NULL for null. An empty array gets one byte of memory (and
     * length 0): libspool reads NULL as a null key or value.
     */
    static Memory memory(byte[] b) {
        if (b == null) {
            return null;
        }
        Memory m = new Memory(Math.max(1, b.length));
        m.write(0, b, 0, b.length);
        return m;
    }

    /** The NUL-terminated text libspool wrote into errstr. */
    static String text(byte[] errstr) {
        int n = 0;
        while (n < errstr.length && errstr[n] != 0) {
            n++;
        }
        return new String(errstr, 0, n, StandardCharsets.UTF_8);
    }

    /** Where the library is. */
    final class Locate {
        private Locate() {}

        static String path() {
            String env = System.getenv("SPOOL_LIBRARY");
            if (env != null && !env.isEmpty()) {
                return env;
            }
            try {
                Process p = new ProcessBuilder("pkg-config", "--variable=libdir", "spool").redirectErrorStream(false).start();
                try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                    String dir = r.readLine();
                    if (p.waitFor() == 0 && dir != null && !dir.isBlank()) {
                        return Path.of(dir.trim(), "libspool.so.0").toString();
                    }
                }
            } catch (java.io.IOException e) {
                // no pkg-config: the loader's path
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return "spool";
        }
    }
}

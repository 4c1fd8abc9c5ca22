package io.spoolmq.clients.internal;

import com.sun.jna.Pointer;
import io.spoolmq.common.ConfigException;
import io.spoolmq.common.KafkaException;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

/** Client properties to a libspool configuration. Not part of the API. */
public final class NativeConfig {
    /** Keys of this binding (serializers, the producer's max.block.ms), not passed to libspool. */
    private static final Set<String> OWN_KEYS = Set.of("key.serializer", "value.serializer", "key.deserializer",
            "value.deserializer", "max.block.ms");

    private NativeConfig() {}

    /** A new spool_conf_t with every key of props set; throws ConfigException naming a bad key. */
    public static Pointer create(Map<String, Object> props) {
        Pointer conf = LibSpool.LIB.spool_conf_new();
        byte[] errstr = new byte[512];
        for (Map.Entry<String, Object> e : props.entrySet()) {
            if (OWN_KEYS.contains(e.getKey()) || e.getValue() == null) {
                continue;
            }
            if (LibSpool.LIB.spool_conf_set(conf, e.getKey(), String.valueOf(e.getValue()), errstr, errstr.length) != 0) {
                LibSpool.LIB.spool_conf_destroy(conf);
                throw new ConfigException(LibSpool.text(errstr));
            }
        }
        return conf;
    }

    /** A client made by newFn, which takes conf only when it succeeds. */
    public static Pointer client(Pointer conf, ClientFactory newFn) {
        byte[] errstr = new byte[512];
        Pointer h = newFn.create(conf, errstr, errstr.length);
        if (h == null) {
            LibSpool.LIB.spool_conf_destroy(conf);
            throw new KafkaException(KafkaException.BAD_ARG, LibSpool.text(errstr));
        }
        return h;
    }

    /** spool_producer_new or spool_consumer_new. */
    @FunctionalInterface
    public interface ClientFactory {
        Pointer create(Pointer conf, byte[] errstr, long errstrSize);
    }

    /** props[key] as milliseconds (a number or its text, 0 or more), or fallback when unset. */
    public static long millis(Map<String, Object> props, String key, long fallback) {
        Object v = props.get(key);
        if (v == null) {
            return fallback;
        }
        try {
            long ms = v instanceof Number n ? n.longValue() : Long.parseLong(String.valueOf(v).trim());
            if (ms >= 0 && ms <= Long.MAX_VALUE / 1_000_000) {
                return ms;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new ConfigException("Invalid value " + v + " for configuration " + key + ": milliseconds, 0 or more");
    }

    /**
     * Properties as a map of strings to values: the string ones with their defaults, and, as
     * the Java client takes them, those put with other values (an Integer, a Class).
     */
    public static Map<String, Object> toMap(Properties props) {
        Map<String, Object> m = new java.util.HashMap<>();
        for (String k : props.stringPropertyNames()) {
            m.put(k, props.getProperty(k));
        }
        for (Map.Entry<Object, Object> e : props.entrySet()) {
            if (e.getKey() instanceof String k) {
                m.put(k, e.getValue());
            }
        }
        return m;
    }

    /** An instance of the class named by props[key] (a serializer), or fallback when unset. */
    public static <T> T instance(Map<String, Object> props, String key, T fallback, Class<T> type) {
        Object v = props.get(key);
        if (v == null) {
            if (fallback == null) {
                throw new ConfigException("Missing required configuration \"" + key + "\" which has no default value.");
            }
            return fallback;
        }
        if (fallback != null) {
            return fallback; // given to the constructor: it wins, as in the Java client
        }
        try {
            Class<?> c = v instanceof Class<?> cls ? cls : Class.forName(String.valueOf(v));
            return type.cast(c.getDeclaredConstructor().newInstance());
        } catch (ReflectiveOperationException | ClassCastException e) {
            throw new ConfigException("Invalid value " + v + " for configuration " + key + ": " + e);
        }
    }
}

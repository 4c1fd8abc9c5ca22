// Driver.java: the conformance driver of the official Apache Kafka Java client
// (org.apache.kafka:kafka-clients): JSON lines on standard input, one response line per
// request on standard output (conformance/DRIVERS.md). One JVM is one client: a
// KafkaProducer, and a KafkaConsumer made when first needed (a group member at open, a
// consumer without a group at the first consume). It depends on kafka-clients and its own
// dependencies only, so its JSON reader and writer are the few lines below.
//
// The open request's "config" holds librdkafka's security keys; javaSecurity maps them to
// the Java client's (sasl.jaas.config, PEM trust and key stores).
//
// Build: javac -cp 'KAFKA_LIBS/*' -d classes Driver.java; run: java -cp 'classes:KAFKA_LIBS/*' Driver

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class Driver {
    private KafkaProducer<byte[], byte[]> producer;
    private KafkaConsumer<byte[], byte[]> consumer;
    private String bootstrap;
    private Properties security = new Properties(); // the Java client's security properties of the session
    private boolean group;
    private boolean manual;
    // The partitions the group member owns and every one revoked or lost so far, from the
    // rebalance listener (which runs inside poll, on this thread).
    private final Map<String, TreeSet<Integer>> owned = new TreeMap<>();
    private final Map<String, TreeSet<Integer>> revoked = new TreeMap<>();

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 20);
        // Responses go to the real standard output; anything a library prints goes to stderr.
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        Driver d = new Driver();
        String line;
        while ((line = in.readLine()) != null) {
            Map<String, Object> resp = new LinkedHashMap<>();
            resp.put("id", 0L);
            resp.put("ok", true);
            try {
                @SuppressWarnings("unchecked")
                Map<String, Object> req = (Map<String, Object>) new Json(line).value();
                resp.put("id", req.getOrDefault("id", 0L));
                d.serve(req, resp);
            } catch (Exception e) {
                resp.put("ok", false);
                resp.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
            }
            StringBuilder sb = new StringBuilder();
            Json.write(sb, resp);
            out.print(sb.append('\n'));
            out.flush();
        }
        d.close();
    }

    private void serve(Map<String, Object> req, Map<String, Object> resp) throws Exception {
        String cmd = str(req, "cmd", "");
        if (!cmd.equals("open") && producer == null) throw new IllegalStateException(cmd + " before open");
        switch (cmd) {
            case "open" -> {
                open(req);
                resp.put("client", "kafka-clients " + org.apache.kafka.common.utils.AppInfoParser.getVersion());
            }
            case "produce" -> resp.put("results", produce(list(req, "records")));
            case "consume" -> resp.put("records", consume(req));
            case "poll" -> {
                if (!group) throw new IllegalStateException("poll: the client is not a group member");
                resp.put("records", poll(num(req, "count", 0), num(req, "timeout_ms", 10000)));
            }
            case "commit" -> {
                if (!group) throw new IllegalStateException("commit: the client is not in a group");
                consumer.commitSync();
            }
            case "assignment" -> {
                resp.put("assignment", owned);
                resp.put("revoked", revoked);
            }
            case "close" -> close();
            default -> throw new IllegalArgumentException("unknown command " + cmd);
        }
    }

    private void open(Map<String, Object> req) {
        if (producer != null) throw new IllegalStateException("open: the client is open already");
        bootstrap = str(req, "bootstrap", "");
        security = javaSecurity(req.get("config") instanceof Map<?, ?> m ? m : Map.of());
        Properties p = new Properties();
        p.putAll(security);
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", "spool-conformance-java");
        p.put("acks", str(req, "acks", "all"));
        p.put("compression.type", str(req, "compression", "none"));
        p.put("max.block.ms", "30000");
        if (req.get("idempotent") instanceof Boolean b) p.put("enable.idempotence", b.toString());
        String partitioner = str(req, "partitioner", "default");
        if (!partitioner.equals("default") && !partitioner.equals("manual")) {
            throw new IllegalArgumentException("open: partitioner " + partitioner);
        }
        manual = partitioner.equals("manual");
        producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
        String g = str(req, "group", "");
        if (g.isEmpty()) return;
        group = true;
        Properties c = consumerProps();
        c.put("group.id", g);
        c.put("enable.auto.commit", "false");
        c.put("auto.offset.reset", "earliest");
        long session = num(req, "session_timeout_ms", 0);
        if (session > 0) {
            c.put("session.timeout.ms", Long.toString(session));
            c.put("heartbeat.interval.ms", Long.toString(session / 10));
        }
        String balancer = str(req, "balancer", "");
        if (!balancer.isEmpty()) {
            c.put("partition.assignment.strategy", switch (balancer) {
                case "range" -> "org.apache.kafka.clients.consumer.RangeAssignor";
                case "roundrobin" -> "org.apache.kafka.clients.consumer.RoundRobinAssignor";
                case "cooperative-sticky" -> "org.apache.kafka.clients.consumer.CooperativeStickyAssignor";
                default -> throw new IllegalArgumentException("open: balancer " + balancer);
            });
        }
        consumer = new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        List<String> topics = new ArrayList<>();
        for (Object t : list(req, "topics")) topics.add((String) t);
        consumer.subscribe(topics, new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> parts) {
                for (TopicPartition tp : parts) owned.computeIfAbsent(tp.topic(), k -> new TreeSet<>()).add(tp.partition());
            }

            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> parts) {
                drop(parts);
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> parts) {
                drop(parts);
            }
        });
    }

    private void drop(Collection<TopicPartition> parts) {
        for (TopicPartition tp : parts) {
            revoked.computeIfAbsent(tp.topic(), k -> new TreeSet<>()).add(tp.partition());
            TreeSet<Integer> s = owned.get(tp.topic());
            if (s != null) {
                s.remove(tp.partition());
                if (s.isEmpty()) owned.remove(tp.topic());
            }
        }
    }

    private Properties consumerProps() {
        Properties c = new Properties();
        c.putAll(security);
        c.put("bootstrap.servers", bootstrap);
        c.put("client.id", "spool-conformance-java");
        return c;
    }

    private List<Object> produce(List<Object> records) throws InterruptedException {
        int n = records.size();
        List<Map<String, Object>> results = new ArrayList<>();
        CountDownLatch done = new CountDownLatch(n);
        for (int i = 0; i < n; i++) {
            @SuppressWarnings("unchecked")
            Map<String, Object> r = (Map<String, Object>) records.get(i);
            Map<String, Object> res = new LinkedHashMap<>();
            results.add(res);
            long part = num(r, "partition", -1);
            Integer partition = part >= 0 ? Integer.valueOf((int) part) : null;
            long ts = num(r, "timestamp_ms", 0);
            List<Header> headers = new ArrayList<>();
            for (Object ho : list(r, "headers")) {
                @SuppressWarnings("unchecked")
                Map<String, Object> h = (Map<String, Object>) ho;
                headers.add(new RecordHeader(str(h, "key", ""), bytes(h, "value")));
            }
            ProducerRecord<byte[], byte[]> rec = new ProducerRecord<>(str(r, "topic", ""), partition,
                    ts == 0 ? null : ts, bytes(r, "key"), bytes(r, "value"), headers);
            try {
                producer.send(rec, (md, err) -> {
                    synchronized (res) {
                        res.put("partition", md != null ? md.partition() : -1);
                        res.put("offset", md != null ? md.offset() : -1);
                        if (err != null) res.put("error", err.toString());
                    }
                    done.countDown();
                });
            } catch (RuntimeException e) {
                synchronized (res) {
                    res.put("partition", -1);
                    res.put("offset", -1);
                    res.put("error", e.toString());
                }
                done.countDown();
            }
        }
        producer.flush();
        if (!done.await(60, TimeUnit.SECONDS)) throw new IllegalStateException("produce: no acknowledgement after 60s");
        List<Object> out = new ArrayList<>();
        for (Map<String, Object> res : results) {
            synchronized (res) {
                out.add(new LinkedHashMap<>(res));
            }
        }
        return out;
    }

    private List<Object> consume(Map<String, Object> req) {
        if (group) throw new IllegalStateException("consume: the client is a group member");
        if (consumer == null) {
            consumer = new KafkaConsumer<>(consumerProps(), new ByteArrayDeserializer(), new ByteArrayDeserializer());
        }
        String topic = str(req, "topic", "");
        List<TopicPartition> parts = new ArrayList<>();
        for (PartitionInfo pi : consumer.partitionsFor(topic, Duration.ofSeconds(30))) {
            parts.add(new TopicPartition(topic, pi.partition()));
        }
        consumer.assign(parts);
        long from = num(req, "from_offset", -2);
        if (from < 0) consumer.seekToBeginning(parts);
        else for (TopicPartition tp : parts) consumer.seek(tp, from);
        return poll(num(req, "count", 0), num(req, "timeout_ms", 10000));
    }

    private List<Object> poll(long count, long timeoutMs) {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        List<Object> out = new ArrayList<>();
        while (count == 0 || out.size() < count) {
            long left = (deadline - System.nanoTime()) / 1_000_000L;
            if (left <= 0) break;
            for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(left))) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("topic", r.topic());
                m.put("partition", r.partition());
                m.put("offset", r.offset());
                m.put("timestamp_ms", r.timestamp());
                m.put("key", b64(r.key()));
                m.put("value", b64(r.value()));
                List<Object> hs = new ArrayList<>();
                for (Header h : r.headers()) {
                    Map<String, Object> hm = new LinkedHashMap<>();
                    hm.put("key", h.key());
                    hm.put("value", b64(h.value()));
                    hs.add(hm);
                }
                if (!hs.isEmpty()) m.put("headers", hs);
                out.add(m);
            }
        }
        return out;
    }

    private void close() {
        if (consumer != null) consumer.close(Duration.ofSeconds(10));
        if (producer != null) producer.close(Duration.ofSeconds(10));
        consumer = null;
        producer = null;
        group = false;
    }

    private static String b64(byte[] b) {
        return b == null ? null : Base64.getEncoder().encodeToString(b);
    }

    private static byte[] bytes(Map<String, Object> m, String key) {
        Object v = m.get(key);
        return v == null ? null : Base64.getDecoder().decode((String) v);
    }

    /**
     * The Java client's properties for librdkafka's security keys: security.protocol as it is,
     * sasl.mechanisms as sasl.mechanism with the user in sasl.jaas.config, ssl.ca.location as a
     * PEM trust store, the client certificate and key as an inline PEM key store, and
     * ssl.endpoint.identification.algorithm=none as the Java client's empty value.
     */
    static Properties javaSecurity(Map<?, ?> keys) {
        Properties p = new Properties();
        for (Map.Entry<?, ?> e : keys.entrySet()) {
            String k = (String) e.getKey(), v = (String) e.getValue();
            switch (k) {
                case "security.protocol" -> p.put(k, v.toUpperCase());
                case "sasl.mechanisms", "sasl.mechanism" -> p.put("sasl.mechanism", v.toUpperCase());
                case "sasl.username", "sasl.password" -> { } // in sasl.jaas.config below
                case "ssl.ca.location" -> {
                    p.put("ssl.truststore.type", "PEM");
                    p.put("ssl.truststore.location", v);
                }
                case "ssl.certificate.location" -> {
                    p.put("ssl.keystore.type", "PEM");
                    p.put("ssl.keystore.certificate.chain", read(v));
                }
                case "ssl.key.location" -> {
                    p.put("ssl.keystore.type", "PEM");
                    p.put("ssl.keystore.key", read(v));
                }
                case "ssl.endpoint.identification.algorithm" -> p.put(k, v.equals("none") ? "" : v);
                default -> throw new IllegalArgumentException("open: config " + k + ": the Java driver does not map it");
            }
        }
        if (keys.get("sasl.username") instanceof String user) {
            String pass = keys.get("sasl.password") instanceof String s ? s : "";
            String module = p.getProperty("sasl.mechanism", "").equals("PLAIN")
                    ? "org.apache.kafka.common.security.plain.PlainLoginModule"
                    : "org.apache.kafka.common.security.scram.ScramLoginModule";
            p.put("sasl.jaas.config", module + " required username=\"" + jaasEscape(user) + "\" password=\"" + jaasEscape(pass) + "\";");
        }
        return p;
    }

    private static String jaasEscape(String s) {
        return s.replace("\\", "\\\\").replace("\"", "\\\"");
    }

    private static String read(String path) {
        try {
            return java.nio.file.Files.readString(java.nio.file.Path.of(path));
        } catch (java.io.IOException e) {
            throw new IllegalArgumentException("open: reading " + path + ": " + e.getMessage(), e);
        }
    }

    private static String str(Map<String, Object> m, String key, String def) {
        return m.get(key) instanceof String s ? s : def;
    }

    private static long num(Map<String, Object> m, String key, long def) {
        return m.get(key) instanceof Number n ? n.longValue() : def;
    }

    @SuppressWarnings("unchecked")
    private static List<Object> list(Map<String, Object> m, String key) {
        return m.get(key) instanceof List<?> l ? (List<Object>) l : List.of();
    }

    /** The JSON of the protocol: objects, arrays, strings, integers, booleans and null. */
    static final class Json {
        private final String s;
        private int i;

        Json(String s) {
            this.s = s;
        }

        Object value() {
            Object v = parse();
            ws();
            if (i != s.length()) throw new IllegalArgumentException("bad request line: trailing data at " + i);
            return v;
        }

        private void ws() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++;
        }

        private Object parse() {
            ws();
            if (i >= s.length()) throw new IllegalArgumentException("bad request line: unexpected end");
            char c = s.charAt(i);
            if (c == '{') {
                i++;
                Map<String, Object> m = new LinkedHashMap<>();
                ws();
                if (s.charAt(i) == '}') {
                    i++;
                    return m;
                }
                for (;;) {
                    ws();
                    if (s.charAt(i) != '"') throw new IllegalArgumentException("bad request line: expected a name at " + i);
                    i++;
                    String k = string();
                    ws();
                    if (s.charAt(i++) != ':') throw new IllegalArgumentException("bad request line: expected ':' at " + i);
                    m.put(k, parse());
                    ws();
                    char d = s.charAt(i++);
                    if (d == '}') return m;
                    if (d != ',') throw new IllegalArgumentException("bad request line: expected ',' at " + i);
                }
            }
            if (c == '[') {
                i++;
                List<Object> l = new ArrayList<>();
                ws();
                if (s.charAt(i) == ']') {
                    i++;
                    return l;
                }
                for (;;) {
                    l.add(parse());
                    ws();
                    char d = s.charAt(i++);
                    if (d == ']') return l;
                    if (d != ',') throw new IllegalArgumentException("bad request line: expected ',' at " + i);
                }
            }
            if (c == '"') {
                i++;
                return string();
            }
            for (String w : new String[] {"null", "true", "false"}) {
                if (s.startsWith(w, i)) {
                    i += w.length();
                    return w.equals("null") ? null : Boolean.valueOf(w.equals("true"));
                }
            }
            int start = i;
            while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) i++;
            String num = s.substring(start, i);
            if (num.isEmpty()) throw new IllegalArgumentException("bad request line: unexpected character at " + i);
            if (num.matches("-?\\d+")) return Long.parseLong(num);
            return (long) Double.parseDouble(num);
        }

        private String string() {
            StringBuilder sb = new StringBuilder();
            for (;;) {
                char c = s.charAt(i++);
                if (c == '"') return sb.toString();
                if (c != '\\') {
                    sb.append(c);
                    continue;
                }
                char e = s.charAt(i++);
                switch (e) {
                    case 'b' -> sb.append('\b');
                    case 'f' -> sb.append('\f');
                    case 'n' -> sb.append('\n');
                    case 'r' -> sb.append('\r');
                    case 't' -> sb.append('\t');
                    case 'u' -> {
                        sb.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        i += 4;
                    }
                    default -> sb.append(e);
                }
            }
        }

        static void write(StringBuilder sb, Object v) {
            if (v == null) {
                sb.append("null");
            } else if (v instanceof String str) {
                sb.append('"');
                for (int k = 0; k < str.length(); k++) {
                    char c = str.charAt(k);
                    if (c == '"' || c == '\\') sb.append('\\').append(c);
                    else if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
                    else sb.append(c);
                }
                sb.append('"');
            } else if (v instanceof Map<?, ?> m) {
                sb.append('{');
                boolean first = true;
                for (Map.Entry<?, ?> e : m.entrySet()) {
                    if (!first) sb.append(',');
                    first = false;
                    write(sb, e.getKey().toString());
                    sb.append(':');
                    write(sb, e.getValue());
                }
                sb.append('}');
            } else if (v instanceof Iterable<?> l) {
                sb.append('[');
                boolean first = true;
                for (Object o : l) {
                    if (!first) sb.append(',');
                    first = false;
                    write(sb, o);
                }
                sb.append(']');
            } else {
                sb.append(v);
            }
        }
    }
}

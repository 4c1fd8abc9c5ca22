/* driver.c: the conformance driver of libspool's C API (conformance/DRIVERS.md): JSON lines
 * on standard input, one response line per request on standard output, logs on standard
 * error. One process is one client: a producer, and a consumer made when first needed (a
 * group member at open, a consumer without a group at the first consume).
 *
 * Requests the C API cannot serve are answered with "unsupported" and the reason, which the
 * suite reports as a skipped case: a producer timestamp (spool_produce takes none). A group
 * member's assignment is what its rebalance callback was told, inside spool_consumer_poll.
 * The open request's "config" keys (librdkafka's security keys: security.protocol,
 * ssl.ca.location, sasl.*) go to spool_conf_set as they are, for every client of the session.
 *
 * Build: cc -std=c11 -o spool-driver-c driver.c json.c $(pkg-config --cflags --libs spool) */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <spool.h>

#include "json.h"

/* The client of this session. */
static struct {
    char group[512];
    spool_conf_t *base; /* bootstrap.servers, client.id and the open request's "config" keys */
    spool_producer_t *producer;
    spool_consumer_t *consumer;
    int manual; /* partitioner "manual": records go to their partition */
} cl;

/* The outcome of each record of the produce request being served: its delivery report's
 * msg_opaque is its index + 1. */
typedef struct {
    int done;
    int32_t partition;
    int64_t offset;
    char error[256];
} result_t;

static result_t *results;
static size_t nresults;

static char errbuf[1024];

static void on_delivery(spool_producer_t *p, const spool_message_t *msg, void *opaque) {
    (void)p;
    (void)opaque;
    size_t i = (size_t)(uintptr_t)spool_message_opaque(msg);
    if (i == 0 || i > nresults) return;
    result_t *r = &results[i - 1];
    r->done = 1;
    r->partition = spool_message_partition(msg);
    r->offset = spool_message_offset(msg);
    if (spool_message_err(msg) != SPOOL_ERR_NO_ERROR) {
        const char *s = spool_message_errstr(msg);
        snprintf(r->error, sizeof r->error, "%s", s[0] ? s : spool_err2str(spool_message_err(msg)));
    }
}

/* A failed request: the message goes into errbuf, and the return value says whether the SDK
 * cannot do it at all (1: "unsupported") or failed (0: "error"). */
typedef enum { R_OK, R_ERROR, R_UNSUPPORTED } outcome_t;

static outcome_t fail(const char *fmt, const char *arg) {
    snprintf(errbuf, sizeof errbuf, fmt, arg);
    return R_ERROR;
}

static outcome_t unsupported(const char *why) {
    snprintf(errbuf, sizeof errbuf, "%s", why);
    return R_UNSUPPORTED;
}

static int set(spool_conf_t *c, const char *key, const char *value) {
    char err[256];
    if (spool_conf_set(c, key, value, err, sizeof err) != SPOOL_CONF_OK) {
        snprintf(errbuf, sizeof errbuf, "open: %.100s=%.300s: %.255s", key, value, err);
        return -1;
    }
    return 0;
}

/* base_conf is a new copy of the session's base configuration. */
static spool_conf_t *base_conf(void) { return spool_conf_dup(cl.base); }

/* make_base sets the session's base configuration from the open request. */
static int make_base(const jval_t *req) {
    spool_conf_t *c = spool_conf_new();
    if (set(c, "bootstrap.servers", json_str(req, "bootstrap", "")) < 0 || set(c, "client.id", "spool-conformance-c") < 0) {
        spool_conf_destroy(c);
        return -1;
    }
    const jval_t *config = json_get(req, "config");
    for (size_t i = 0; config != NULL && config->type == J_OBJ && i < config->len; i++) {
        const jval_t *kv = &config->kids[i];
        if (kv->type != J_STR || set(c, kv->key, kv->s) < 0) {
            if (kv->type != J_STR) snprintf(errbuf, sizeof errbuf, "open: config %.100s: not a string", kv->key);
            spool_conf_destroy(c);
            return -1;
        }
    }
    cl.base = c;
    return 0;
}

/* The partitions the rebalance callback named: owned now, and revoked or lost so far. */
typedef struct {
    char *topic;
    int32_t partition;
    int owned, revoked;
} slot_t;

static struct {
    slot_t *slots;
    size_t len, cap;
} rb;

static slot_t *slot(const char *topic, int32_t partition) {
    for (size_t i = 0; i < rb.len; i++) {
        if (rb.slots[i].partition == partition && strcmp(rb.slots[i].topic, topic) == 0) return &rb.slots[i];
    }
    if (rb.len == rb.cap) {
        size_t cap = rb.cap ? 2 * rb.cap : 16;
        slot_t *grown = realloc(rb.slots, cap * sizeof *grown);
        if (grown == NULL) return NULL;
        rb.slots = grown;
        rb.cap = cap;
    }
    slot_t *s = &rb.slots[rb.len];
    s->topic = strdup(topic);
    if (s->topic == NULL) return NULL;
    s->partition = partition;
    s->owned = s->revoked = 0;
    rb.len++;
    return s;
}

static void on_rebalance(spool_consumer_t *consumer, spool_rebalance_t what, const spool_topic_partition_t *parts,
                         size_t count, void *opaque) {
    (void)consumer;
    (void)opaque;
    for (size_t i = 0; i < count; i++) {
        slot_t *s = slot(parts[i].topic, parts[i].partition);
        if (s == NULL) continue; /* out of memory: the assignment answer will say less */
        s->owned = what == SPOOL_REBALANCE_ASSIGN;
        if (what != SPOOL_REBALANCE_ASSIGN) s->revoked = 1;
    }
}

/* write_partitions writes {"topic":[p,...],...} of the slots whose field (owned or revoked)
 * is set, partitions in increasing order. */
static void write_partitions(FILE *out, int revoked) {
    fputc('{', out);
    int first_topic = 1;
    for (size_t i = 0; i < rb.len; i++) {
        const char *t = rb.slots[i].topic;
        int seen = 0; /* the topic was written already, at an earlier slot */
        for (size_t j = 0; j < i && !seen; j++) seen = strcmp(rb.slots[j].topic, t) == 0;
        if (seen) continue;
        int first = 1;
        for (int32_t p = 0;; p++) { /* partitions in order: scan for each next one */
            int32_t next = INT32_MAX;
            for (size_t j = 0; j < rb.len; j++) {
                const slot_t *s = &rb.slots[j];
                if ((revoked ? s->revoked : s->owned) && s->partition >= p && s->partition < next && strcmp(s->topic, t) == 0) next = s->partition;
            }
            if (next == INT32_MAX) break;
            if (first) {
                fputs(first_topic ? "" : ",", out);
                json_write_str(out, t, strlen(t));
                fputs(":[", out);
                first = first_topic = 0;
            } else {
                fputc(',', out);
            }
            fprintf(out, "%" PRId32, next);
            p = next;
        }
        if (!first) fputc(']', out);
    }
    fputc('}', out);
}

/* open: the producer now; with a group, the consumer too, subscribed. */
static outcome_t do_open(const jval_t *req) {
    if (cl.producer != NULL) return fail("open: the client is open already%s", "");
    if (cl.base != NULL) spool_conf_destroy(cl.base); /* of an open that failed */
    cl.base = NULL;
    if (make_base(req) < 0) return R_ERROR;
    spool_conf_t *pc = base_conf();
    if (pc == NULL) return R_ERROR;
    const char *acks = json_str(req, "acks", "all");
    const char *compression = json_str(req, "compression", "");
    const char *partitioner = json_str(req, "partitioner", "default");
    const jval_t *idem = json_get(req, "idempotent");
    if (strcmp(partitioner, "manual") != 0 && strcmp(partitioner, "default") != 0) {
        spool_conf_destroy(pc);
        return fail("open: partitioner %s", partitioner);
    }
    cl.manual = strcmp(partitioner, "manual") == 0;
    if (set(pc, "acks", acks) < 0 || (compression[0] && set(pc, "compression.type", compression) < 0) ||
        (idem != NULL && idem->type == J_BOOL && set(pc, "enable.idempotence", idem->b ? "true" : "false") < 0)) {
        spool_conf_destroy(pc);
        return R_ERROR;
    }
    spool_conf_set_dr_cb(pc, on_delivery);
    char err[256];
    cl.producer = spool_producer_new(pc, err, sizeof err);
    if (cl.producer == NULL) {
        spool_conf_destroy(pc);
        return fail("open: spool_producer_new: %s", err);
    }
    const char *group = json_str(req, "group", "");
    if (group[0] == '\0') return R_OK;
    snprintf(cl.group, sizeof cl.group, "%s", group);
    spool_conf_t *cc = base_conf();
    if (cc == NULL) return R_ERROR;
    char session[32], heartbeat[32];
    int64_t session_ms = json_int(req, "session_timeout_ms", 0);
    snprintf(session, sizeof session, "%" PRId64, session_ms);
    snprintf(heartbeat, sizeof heartbeat, "%" PRId64, session_ms / 10);
    const char *balancer = json_str(req, "balancer", "");
    if (set(cc, "group.id", group) < 0 || set(cc, "enable.auto.commit", "false") < 0 ||
        set(cc, "auto.offset.reset", "earliest") < 0 ||
        (session_ms > 0 && (set(cc, "session.timeout.ms", session) < 0 || set(cc, "heartbeat.interval.ms", heartbeat) < 0)) ||
        (balancer[0] && set(cc, "partition.assignment.strategy", balancer) < 0)) {
        spool_conf_destroy(cc);
        return R_ERROR;
    }
    spool_conf_set_rebalance_cb(cc, on_rebalance);
    cl.consumer = spool_consumer_new(cc, err, sizeof err);
    if (cl.consumer == NULL) {
        spool_conf_destroy(cc);
        return fail("open: spool_consumer_new: %s", err);
    }
    const jval_t *topics = json_get(req, "topics");
    size_t n = topics != NULL && topics->type == J_ARR ? topics->len : 0;
    const char **names = calloc(n + 1, sizeof *names);
    for (size_t i = 0; i < n; i++) names[i] = topics->kids[i].s ? topics->kids[i].s : "";
    spool_err_t e = spool_consumer_subscribe(cl.consumer, names, n);
    free(names);
    if (e != SPOOL_ERR_NO_ERROR) return fail("open: subscribe: %s", spool_err2str(e));
    return R_OK;
}

static void free_decoded(unsigned char **bufs, size_t n) {
    for (size_t i = 0; i < n; i++) free(bufs[i]);
    free(bufs);
}

/* Decodes base64 member key of rec; *data NULL for a JSON null. bufs collects what to free. */
static int field_bytes(const jval_t *rec, const char *key, unsigned char **data, size_t *len) {
    const jval_t *m = json_get(rec, key);
    *data = NULL;
    *len = 0;
    if (m == NULL || m->type == J_NULL) return 0;
    if (m->type != J_STR || b64_decode(m->s, m->len, data, len) < 0) {
        snprintf(errbuf, sizeof errbuf, "produce: %s is not base64", key);
        return -1;
    }
    return 0;
}

static outcome_t do_produce(const jval_t *req, FILE *out, int64_t id) {
    const jval_t *recs = json_get(req, "records");
    size_t n = recs != NULL && recs->type == J_ARR ? recs->len : 0;
    for (size_t i = 0; i < n; i++) {
        if (json_int(&recs->kids[i], "timestamp_ms", 0) != 0) {
            return unsupported("the C API has no producer timestamp (spool_produce takes none)");
        }
    }
    results = calloc(n + 1, sizeof *results);
    nresults = n;
    for (size_t i = 0; i < n; i++) {
        const jval_t *r = &recs->kids[i];
        unsigned char *key, *value;
        size_t klen, vlen;
        if (field_bytes(r, "key", &key, &klen) < 0 || field_bytes(r, "value", &value, &vlen) < 0) {
            free(results);
            return R_ERROR;
        }
        int32_t partition = (int32_t)json_int(r, "partition", -1);
        if (!cl.manual && partition < 0) partition = SPOOL_PARTITION_UA;
        const jval_t *hs = json_get(r, "headers");
        size_t nh = hs != NULL && hs->type == J_ARR ? hs->len : 0;
        spool_header_t *h = calloc(nh + 1, sizeof *h);
        unsigned char **hv = calloc(nh + 1, sizeof *hv);
        for (size_t j = 0; j < nh; j++) {
            const jval_t *hj = &hs->kids[j];
            h[j].key = json_str(hj, "key", "");
            h[j].key_len = strlen(h[j].key);
            if (field_bytes(hj, "value", &hv[j], &h[j].value_len) < 0) {
                free_decoded(hv, nh);
                free(h);
                free(results);
                return R_ERROR;
            }
            h[j].value = hv[j];
        }
        /* A non-NULL pointer with length 0 is an empty key or value, NULL a null one. */
        static const char empty[1];
        const void *k = key == NULL ? NULL : klen ? (const void *)key : (const void *)empty;
        const void *v = value == NULL ? NULL : vlen ? (const void *)value : (const void *)empty;
        for (size_t j = 0; j < nh; j++) {
            if (hv[j] != NULL && h[j].value_len == 0) h[j].value = empty;
        }
        spool_err_t e = spool_produce_headers(cl.producer, json_str(r, "topic", ""), partition, k, klen, v, vlen, h,
                                              nh, (void *)(uintptr_t)(i + 1));
        free_decoded(hv, nh);
        free(h);
        free(key);
        free(value);
        if (e != SPOOL_ERR_NO_ERROR) {
            results[i].done = 1;
            snprintf(results[i].error, sizeof results[i].error, "%s", spool_err2str(e));
        }
    }
    spool_err_t e = spool_producer_flush(cl.producer, -1);
    if (e != SPOOL_ERR_NO_ERROR) {
        free(results);
        return fail("produce: flush: %s", spool_err2str(e));
    }
    fprintf(out, "{\"id\":%" PRId64 ",\"ok\":true,\"results\":[", id);
    for (size_t i = 0; i < n; i++) {
        result_t *r = &results[i];
        if (!r->done) snprintf(r->error, sizeof r->error, "no delivery report after flush");
        fprintf(out, "%s{\"partition\":%" PRId32 ",\"offset\":%" PRId64, i ? "," : "", r->partition, r->offset);
        if (r->error[0]) {
            fputs(",\"error\":", out);
            json_write_str(out, r->error, strlen(r->error));
        }
        fputc('}', out);
    }
    fputs("]}\n", out);
    free(results);
    results = NULL;
    nresults = 0;
    return R_OK;
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void write_record(FILE *out, const spool_message_t *m) {
    size_t klen, vlen;
    const void *k = spool_message_key(m, &klen);
    const void *v = spool_message_value(m, &vlen);
    const char *topic = spool_message_topic(m);
    fputs("{\"topic\":", out);
    json_write_str(out, topic, strlen(topic));
    fprintf(out, ",\"partition\":%" PRId32 ",\"offset\":%" PRId64 ",\"timestamp_ms\":%" PRId64 ",\"key\":",
            spool_message_partition(m), spool_message_offset(m), spool_message_timestamp(m));
    json_write_b64(out, k, klen);
    fputs(",\"value\":", out);
    json_write_b64(out, v, vlen);
    size_t nh = spool_message_header_count(m);
    if (nh > 0) {
        fputs(",\"headers\":[", out);
        for (size_t j = 0; j < nh; j++) {
            const char *hk;
            const void *hv;
            size_t hkl, hvl;
            spool_message_header(m, j, &hk, &hkl, &hv, &hvl);
            fputs(j ? ",{\"key\":" : "{\"key\":", out);
            json_write_str(out, hk, hkl);
            fputs(",\"value\":", out);
            json_write_b64(out, hv, hvl);
            fputc('}', out);
        }
        fputc(']', out);
    }
    fputc('}', out);
}

/* Polls until count records came or timeout_ms passed, and writes the response. */
static outcome_t poll_records(int64_t id, int64_t count, int64_t timeout_ms, FILE *out) {
    int64_t deadline = now_ms() + timeout_ms;
    /* The records go to a memory stream first: an error midway answers with the error only. */
    char *body = NULL;
    size_t bodylen = 0;
    FILE *mem = open_memstream(&body, &bodylen);
    int64_t got = 0;
    while (got < count || count == 0) {
        int64_t left = deadline - now_ms();
        if (left <= 0) break;
        spool_message_t *m = spool_consumer_poll(cl.consumer, (int)left);
        if (m == NULL) continue;
        if (spool_message_err(m) != SPOOL_ERR_NO_ERROR) {
            snprintf(errbuf, sizeof errbuf, "poll: %s", spool_message_errstr(m));
            spool_message_destroy(m);
            fclose(mem);
            free(body);
            return R_ERROR;
        }
        if (got > 0) fputc(',', mem);
        write_record(mem, m);
        spool_message_destroy(m);
        got++;
    }
    fclose(mem);
    fprintf(out, "{\"id\":%" PRId64 ",\"ok\":true,\"records\":[", id);
    fwrite(body, 1, bodylen, out);
    fputs("]}\n", out);
    free(body);
    return R_OK;
}

static outcome_t do_consume(const jval_t *req, int64_t id, FILE *out) {
    if (cl.group[0]) return fail("consume: the client is a group member%s", "");
    int64_t partitions = json_int(req, "partitions", 0);
    if (partitions <= 0) {
        return unsupported("consume without \"partitions\": the C API cannot look up a topic's partitions");
    }
    if (cl.consumer == NULL) {
        spool_conf_t *cc = base_conf();
        if (cc == NULL) return R_ERROR;
        char err[256];
        cl.consumer = spool_consumer_new(cc, err, sizeof err);
        if (cl.consumer == NULL) {
            spool_conf_destroy(cc);
            return fail("consume: spool_consumer_new: %s", err);
        }
    }
    const char *topic = json_str(req, "topic", "");
    int64_t from = json_int(req, "from_offset", SPOOL_OFFSET_BEGINNING);
    for (int32_t p = 0; p < partitions; p++) {
        spool_err_t e = spool_consumer_assign(cl.consumer, topic, p, from < 0 ? SPOOL_OFFSET_BEGINNING : from);
        if (e != SPOOL_ERR_NO_ERROR) return fail("consume: assign: %s", spool_err2str(e));
    }
    return poll_records(id, json_int(req, "count", 0), json_int(req, "timeout_ms", 10000), out);
}

static void close_client(void) {
    if (cl.consumer != NULL) {
        spool_consumer_close(cl.consumer);
        spool_consumer_destroy(cl.consumer);
    }
    if (cl.producer != NULL) {
        spool_producer_flush(cl.producer, 10000);
        spool_producer_destroy(cl.producer);
    }
    if (cl.base != NULL) spool_conf_destroy(cl.base);
    memset(&cl, 0, sizeof cl);
    for (size_t i = 0; i < rb.len; i++) free(rb.slots[i].topic);
    free(rb.slots);
    memset(&rb, 0, sizeof rb);
}

/* Serves one request; R_OK when it wrote its own response line, else the outcome. */
static outcome_t serve(const jval_t *req, int64_t id, const char *cmd, FILE *out, int *wrote) {
    *wrote = 0;
    if (strcmp(cmd, "open") != 0 && cl.producer == NULL) return fail("%s before open", cmd);
    if (strcmp(cmd, "open") == 0) return do_open(req);
    if (strcmp(cmd, "produce") == 0) {
        *wrote = 1;
        return do_produce(req, out, id);
    }
    if (strcmp(cmd, "consume") == 0) {
        *wrote = 1;
        return do_consume(req, id, out);
    }
    if (strcmp(cmd, "poll") == 0) {
        if (!cl.group[0]) return fail("poll: the client is not a group member%s", "");
        *wrote = 1;
        return poll_records(id, json_int(req, "count", 0), json_int(req, "timeout_ms", 10000), out);
    }
    if (strcmp(cmd, "commit") == 0) {
        if (!cl.group[0]) return fail("commit: the client is not in a group%s", "");
        spool_err_t e = spool_consumer_commit(cl.consumer, 0);
        return e == SPOOL_ERR_NO_ERROR ? R_OK : fail("commit: %s", spool_err2str(e));
    }
    if (strcmp(cmd, "assignment") == 0) {
        if (!cl.group[0]) return fail("assignment: the client is not a group member%s", "");
        *wrote = 1;
        fprintf(out, "{\"id\":%" PRId64 ",\"ok\":true,\"assignment\":", id);
        write_partitions(out, 0);
        fputs(",\"revoked\":", out);
        write_partitions(out, 1);
        fputs("}\n", out);
        return R_OK;
    }
    if (strcmp(cmd, "close") == 0) {
        close_client();
        return R_OK;
    }
    return fail("unknown command %s", cmd);
}

int main(void) {
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    while ((n = getline(&line, &cap, stdin)) > 0) {
        char perr[256];
        jval_t *req = json_parse(line, (size_t)n, perr, sizeof perr);
        int64_t id = json_int(req, "id", 0);
        outcome_t o;
        int wrote = 0;
        if (req == NULL) {
            o = fail("bad request line: %s", perr);
        } else {
            errbuf[0] = '\0';
            o = serve(req, id, json_str(req, "cmd", ""), stdout, &wrote);
        }
        if (o == R_OK && !wrote) {
            printf("{\"id\":%" PRId64 ",\"ok\":true%s}\n", id,
                   strcmp(json_str(req, "cmd", ""), "open") == 0 ? ",\"client\":\"libspool (C)\"" : "");
        } else if (o != R_OK) {
            printf("{\"id\":%" PRId64 ",\"ok\":false,\"%s\":", id, o == R_UNSUPPORTED ? "unsupported" : "error");
            json_write_str(stdout, errbuf, strlen(errbuf));
            fputs("}\n", stdout);
        }
        fflush(stdout);
        json_free(req);
    }
    free(line);
    close_client();
    return 0;
}

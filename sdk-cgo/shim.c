/* shim.c: the public functions of spool.h. They check their arguments, unwrap handles and
 * call the Go side (_cgo_export.h, functions spoolgo_*); callbacks are called from here, on
 * the caller's thread, never from Go. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "_cgo_export.h"
#include "spool_impl.h"

static void set_errstr(char *errstr, size_t errstr_size, const char *msg) {
    if (errstr == NULL || errstr_size == 0) return;
    size_t n = strlen(msg);
    if (n >= errstr_size) n = errstr_size - 1;
    memcpy(errstr, msg, n);
    errstr[n] = '\0';
}

const char *spool_version(void) { return SPOOL_VERSION_STR; }

/* spool_err2str's strings, made once per code by the Go side and kept here, in C, so that
 * leak checkers see them reachable. Codes outside the table share one string. */
#define ERR2STR_MIN (-128)
#define ERR2STR_MAX 1023
static char *err2str_cache[ERR2STR_MAX - ERR2STR_MIN + 1];

const char *spool_err2str(spool_err_t err) {
    if (err < ERR2STR_MIN || err > ERR2STR_MAX) return "unknown error code";
    char **slot = &err2str_cache[err - ERR2STR_MIN];
    char *s = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (s != NULL) return s;
    char *made = spoolgo_err2str(err);
    if (__atomic_compare_exchange_n(slot, &s, made, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return made;
    free(made); /* another thread stored it first */
    return s;
}

int spool_handle_count(void) { return spoolgo_handle_count(); }

/* configuration */

spool_conf_t *spool_conf_new(void) {
    spool_conf_t *conf = calloc(1, sizeof *conf);
    if (conf == NULL) return NULL;
    conf->h = spoolgo_conf_new();
    return conf;
}

spool_conf_t *spool_conf_dup(const spool_conf_t *conf) {
    if (conf == NULL) return NULL;
    spool_conf_t *dup = calloc(1, sizeof *dup);
    if (dup == NULL) return NULL;
    dup->dr_cb = __atomic_load_n(&conf->dr_cb, __ATOMIC_ACQUIRE);
    dup->rebalance_cb = __atomic_load_n(&conf->rebalance_cb, __ATOMIC_ACQUIRE);
    dup->offset_commit_cb = __atomic_load_n(&conf->offset_commit_cb, __ATOMIC_ACQUIRE);
    dup->opaque = __atomic_load_n(&conf->opaque, __ATOMIC_ACQUIRE);
    dup->h = spoolgo_conf_dup(conf->h);
    return dup;
}

spool_conf_res_t spool_conf_set(spool_conf_t *conf, const char *key, const char *value,
                                char *errstr, size_t errstr_size) {
    if (conf == NULL || key == NULL || value == NULL) {
        set_errstr(errstr, errstr_size, "spool_conf_set: conf, key and value must not be NULL");
        return SPOOL_CONF_INVALID;
    }
    return (spool_conf_res_t)spoolgo_conf_set(conf->h, (char *)key, (char *)value, errstr,
                                              errstr_size);
}

spool_conf_res_t spool_conf_get(const spool_conf_t *conf, const char *key, char *dest,
                                size_t *dest_size) {
    if (conf == NULL || key == NULL || dest_size == NULL) return SPOOL_CONF_INVALID;
    return (spool_conf_res_t)spoolgo_conf_get(conf->h, (char *)key, dest, dest_size);
}

/* The callback and opaque are read and written atomically, so that a conf may be shared by
 * threads like every handle. */
void spool_conf_set_dr_cb(spool_conf_t *conf, spool_dr_cb_t dr_cb) {
    if (conf != NULL) __atomic_store_n(&conf->dr_cb, dr_cb, __ATOMIC_RELEASE);
}

void spool_conf_set_rebalance_cb(spool_conf_t *conf, spool_rebalance_cb_t rebalance_cb) {
    if (conf != NULL) __atomic_store_n(&conf->rebalance_cb, rebalance_cb, __ATOMIC_RELEASE);
}

void spool_conf_set_offset_commit_cb(spool_conf_t *conf, spool_offset_commit_cb_t offset_commit_cb) {
    if (conf != NULL) __atomic_store_n(&conf->offset_commit_cb, offset_commit_cb, __ATOMIC_RELEASE);
}

void spool_conf_set_opaque(spool_conf_t *conf, void *opaque) {
    if (conf != NULL) __atomic_store_n(&conf->opaque, opaque, __ATOMIC_RELEASE);
}

void spool_conf_destroy(spool_conf_t *conf) {
    if (conf == NULL) return;
    spoolgo_handle_delete(conf->h);
    free(conf);
}

/* producer */

/* alloc_handle checks the conf given to fn and allocates a zeroed handle of size bytes; NULL
 * with errstr written when either fails. */
static void *alloc_handle(const spool_conf_t *conf, size_t size, const char *fn, char *errstr,
                          size_t errstr_size) {
    char msg[64];
    void *h = NULL;
    if (conf == NULL)
        snprintf(msg, sizeof msg, "%s: conf must not be NULL", fn);
    else if ((h = calloc(1, size)) == NULL)
        snprintf(msg, sizeof msg, "%s: out of memory", fn);
    if (h == NULL) set_errstr(errstr, errstr_size, msg);
    return h;
}

spool_producer_t *spool_producer_new(spool_conf_t *conf, char *errstr, size_t errstr_size) {
    spool_producer_t *p = alloc_handle(conf, sizeof *p, "spool_producer_new", errstr, errstr_size);
    if (p == NULL) return NULL;
    p->dr_cb = __atomic_load_n(&conf->dr_cb, __ATOMIC_ACQUIRE);
    p->opaque = __atomic_load_n(&conf->opaque, __ATOMIC_ACQUIRE);
    spoolring_init(&p->ring);
    p->h = spoolgo_producer_new(conf->h, p->dr_cb != NULL, &p->ring, errstr, errstr_size);
    if (p->h == 0) {
        spoolring_destroy(&p->ring);
        free(p);
        return NULL;
    }
    spool_conf_destroy(conf);
    return p;
}

spool_err_t spool_produce_timestamp(spool_producer_t *p, const char *topic, int32_t partition,
                                    int64_t timestamp_ms, const void *key, size_t key_len,
                                    const void *value, size_t value_len,
                                    const spool_header_t *headers, size_t header_count,
                                    void *msg_opaque) {
    if (p == NULL || topic == NULL || (headers == NULL && header_count > 0) ||
        partition < SPOOL_PARTITION_UA || timestamp_ms < 0)
        return SPOOL_ERR__BAD_ARG;
    for (size_t i = 0; i < header_count; i++)
        if (headers[i].key == NULL && headers[i].key_len > 0) return SPOOL_ERR__BAD_ARG;
    return spoolring_produce(p, topic, partition, timestamp_ms, key, key_len, value, value_len,
                             headers, header_count, msg_opaque);
}

spool_err_t spool_produce_headers(spool_producer_t *p, const char *topic, int32_t partition,
                                  const void *key, size_t key_len, const void *value,
                                  size_t value_len, const spool_header_t *headers,
                                  size_t header_count, void *msg_opaque) {
    return spool_produce_timestamp(p, topic, partition, 0, key, key_len, value, value_len, headers,
                                   header_count, msg_opaque);
}

spool_err_t spool_produce_batch(spool_producer_t *p, const char *topic,
                                const spool_record_t *records, size_t count) {
    if (p == NULL || topic == NULL || (records == NULL && count > 0)) return SPOOL_ERR__BAD_ARG;
    for (size_t i = 0; i < count; i++) {
        const spool_record_t *r = &records[i];
        if (r->partition < SPOOL_PARTITION_UA || (r->headers == NULL && r->header_count > 0))
            return SPOOL_ERR__BAD_ARG;
        for (size_t j = 0; j < r->header_count; j++)
            if (r->headers[j].key == NULL && r->headers[j].key_len > 0) return SPOOL_ERR__BAD_ARG;
    }
    if (count == 0) return SPOOL_ERR_NO_ERROR;
    return spoolring_produce_batch(p, topic, records, count);
}

spool_err_t spool_produce(spool_producer_t *p, const char *topic, int32_t partition,
                          const void *key, size_t key_len, const void *value, size_t value_len,
                          void *msg_opaque) {
    return spool_produce_headers(p, topic, partition, key, key_len, value, value_len, NULL, 0,
                                 msg_opaque);
}

int spool_producer_poll(spool_producer_t *p, int timeout_ms) {
    if (p == NULL) return -1;
    /* reports is one block: the pointers, then the messages they point to */
    spool_message_t **reports = NULL;
    size_t n = spoolgo_producer_take(p->h, timeout_ms, &reports);
    for (size_t i = 0; i < n; i++)
        if (p->dr_cb != NULL) p->dr_cb(p, reports[i], p->opaque);
    if (n > 0) spoolgo_producer_release(p->h, reports); /* the keys and values were Go's, pinned */
    free(reports);
    return (int)n;
}

spool_err_t spool_producer_flush(spool_producer_t *p, int timeout_ms) {
    if (p == NULL) return SPOOL_ERR__BAD_ARG;
    spool_err_t err = spoolgo_producer_flush(p->h, timeout_ms);
    while (spool_producer_poll(p, 0) > 0) {
    }
    return err;
}

int spool_producer_outq_len(spool_producer_t *p) {
    if (p == NULL) return 0;
    return (int)__atomic_load_n(&p->ring.outq, __ATOMIC_SEQ_CST);
}

spool_err_t spool_create_topic(spool_producer_t *p, const char *topic, int32_t partitions,
                               int16_t replication_factor, int timeout_ms) {
    if (p == NULL || topic == NULL || partitions == 0 || partitions < -1 || replication_factor == 0 ||
        replication_factor < -1)
        return SPOOL_ERR__BAD_ARG;
    return spoolgo_create_topic(p->h, (char *)topic, partitions, replication_factor, timeout_ms);
}

spool_err_t spool_delete_topic(spool_producer_t *p, const char *topic, int timeout_ms) {
    if (p == NULL || topic == NULL) return SPOOL_ERR__BAD_ARG;
    return spoolgo_delete_topic(p->h, (char *)topic, timeout_ms);
}

void spool_producer_destroy(spool_producer_t *p) {
    if (p == NULL) return;
    spoolring_close(&p->ring);
    spoolgo_producer_close(p->h); /* returns once the drainer is done with the ring */
    spoolgo_handle_delete(p->h);
    spoolring_destroy(&p->ring);
    free(p);
}

/* consumer */

spool_consumer_t *spool_consumer_new(spool_conf_t *conf, char *errstr, size_t errstr_size) {
    spool_consumer_t *c = alloc_handle(conf, sizeof *c, "spool_consumer_new", errstr, errstr_size);
    if (c == NULL) return NULL;
    c->rebalance_cb = __atomic_load_n(&conf->rebalance_cb, __ATOMIC_ACQUIRE);
    c->offset_commit_cb = __atomic_load_n(&conf->offset_commit_cb, __ATOMIC_ACQUIRE);
    c->opaque = __atomic_load_n(&conf->opaque, __ATOMIC_ACQUIRE);
    c->h = spoolgo_consumer_new(conf->h, c->rebalance_cb != NULL, c->offset_commit_cb != NULL,
                                errstr, errstr_size);
    if (c->h == 0) {
        free(c);
        return NULL;
    }
    spool_conf_destroy(conf);
    return c;
}

spool_err_t spool_consumer_subscribe(spool_consumer_t *c, const char **topics,
                                     size_t topic_count) {
    if (c == NULL || topics == NULL || topic_count == 0) return SPOOL_ERR__BAD_ARG;
    for (size_t i = 0; i < topic_count; i++)
        if (topics[i] == NULL) return SPOOL_ERR__BAD_ARG;
    return spoolgo_consumer_subscribe(c->h, (char **)topics, topic_count);
}

spool_err_t spool_consumer_assign(spool_consumer_t *c, const char *topic, int32_t partition,
                                  int64_t offset) {
    if (c == NULL || topic == NULL || partition < 0 || offset < SPOOL_OFFSET_BEGINNING)
        return SPOOL_ERR__BAD_ARG;
    return spoolgo_consumer_assign(c->h, (char *)topic, partition, offset, 0);
}

spool_err_t spool_consumer_seek(spool_consumer_t *c, const char *topic, int32_t partition,
                                int64_t offset) {
    if (c == NULL || topic == NULL || partition < 0 || offset < SPOOL_OFFSET_BEGINNING)
        return SPOOL_ERR__BAD_ARG;
    return spoolgo_consumer_assign(c->h, (char *)topic, partition, offset, 1);
}

/* serve_rebalance calls the rebalance callback for every event the Go side queued, on this
 * thread. The Go side hands events to one thread at a time, in order; a revocation waits on
 * the group's goroutine until spoolgo_consumer_rebalance_done. */
static void serve_rebalance(spool_consumer_t *c) {
    if (c->rebalance_cb == NULL) return;
    for (;;) {
        spool_topic_partition_t *parts = NULL; /* one block: the array, then the names */
        size_t count = 0;
        int what = 0;
        uintptr_t id = spoolgo_consumer_take_rebalance(c->h, &what, &parts, &count);
        if (id == 0) return;
        c->rebalance_cb(c, (spool_rebalance_t)what, parts, count, c->opaque);
        free(parts);
        spoolgo_consumer_rebalance_done(c->h, id);
    }
}

/* serve_commits calls the offset commit callback for every commit outcome the Go side
 * queued, in the order the commits were made, on this thread. */
static void serve_commits(spool_consumer_t *c) {
    if (c->offset_commit_cb == NULL) return;
    for (;;) {
        spool_topic_partition_offset_t *offsets = NULL; /* one block: the array, then the names */
        size_t count = 0;
        int err = 0;
        if (!spoolgo_consumer_take_commit(c->h, &err, &offsets, &count)) return;
        c->offset_commit_cb(c, err, offsets, count, c->opaque);
        free(offsets);
    }
}

/* serve_events serves what the Go side queued for the callbacks. */
static void serve_events(spool_consumer_t *c) {
    serve_rebalance(c);
    serve_commits(c);
}

/* now_ms is a monotonic clock in milliseconds, for what is left of a poll's timeout. */
static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* left is what remains of timeout_ms (-1: no limit) started at start, at least 0. */
static int left_ms(int timeout_ms, int64_t start) {
    if (timeout_ms < 0) return -1;
    int64_t left = (int64_t)timeout_ms - (now_ms() - start);
    return left > 0 ? (int)left : 0;
}

/* Events are served before the wait and again after it, so that an assignment made during
 * the wait reaches the callback before its records reach the caller. A wait ended early by
 * a rebalance event (woken) goes on for the rest of the timeout once the event is served. */
spool_message_t *spool_consumer_poll(spool_consumer_t *c, int timeout_ms) {
    if (c == NULL) return NULL;
    int64_t start = now_ms();
    for (;;) {
        int woken = 0;
        serve_events(c);
        spool_message_t *m = spoolgo_consumer_poll(c->h, left_ms(timeout_ms, start), &woken);
        serve_events(c);
        if (m != NULL || !woken || left_ms(timeout_ms, start) == 0) return m;
    }
}

size_t spool_consumer_poll_batch(spool_consumer_t *c, int timeout_ms, spool_message_t **msgs,
                                 size_t max) {
    if (c == NULL || msgs == NULL || max == 0) return 0;
    int64_t start = now_ms();
    for (;;) {
        int woken = 0;
        serve_events(c);
        size_t n = spoolgo_consumer_poll_batch(c->h, left_ms(timeout_ms, start), msgs, max, &woken);
        serve_events(c);
        if (n > 0 || !woken || left_ms(timeout_ms, start) == 0) return n;
    }
}

spool_err_t spool_consumer_commit(spool_consumer_t *c, int async) {
    if (c == NULL) return SPOOL_ERR__BAD_ARG;
    return spoolgo_consumer_commit(c->h, async);
}

spool_err_t spool_consumer_commit_offsets(spool_consumer_t *c,
                                          const spool_topic_partition_offset_t *offsets,
                                          size_t count, int async) {
    if (c == NULL || (offsets == NULL && count > 0)) return SPOOL_ERR__BAD_ARG;
    for (size_t i = 0; i < count; i++)
        if (offsets[i].topic == NULL || offsets[i].partition < 0 || offsets[i].offset < 0)
            return SPOOL_ERR__BAD_ARG;
    return spoolgo_consumer_commit_offsets(c->h, (spool_topic_partition_offset_t *)offsets, count,
                                           async);
}

/* close_consumer closes c, serving the revocation's callback on this thread while the Go
 * side closes (the callback may still commit then). */
static spool_err_t close_consumer(spool_consumer_t *c) {
    spool_err_t err = spoolgo_consumer_close_start(c->h);
    if (c->rebalance_cb == NULL) {
        spoolgo_consumer_close_wait(c->h, -1);
        serve_commits(c); /* the outcomes of commits that finished while closing */
        return err;
    }
    while (!spoolgo_consumer_close_wait(c->h, 10)) serve_events(c);
    serve_events(c);
    return err;
}

spool_err_t spool_consumer_close(spool_consumer_t *c) {
    if (c == NULL) return SPOOL_ERR__BAD_ARG;
    return close_consumer(c);
}

void spool_consumer_destroy(spool_consumer_t *c) {
    if (c == NULL) return;
    close_consumer(c);
    spoolgo_handle_delete(c->h);
    free(c);
}

/* messages */

spool_err_t spool_message_err(const spool_message_t *m) {
    return m == NULL ? SPOOL_ERR__BAD_ARG : m->err;
}
const char *spool_message_errstr(const spool_message_t *m) { return m == NULL ? "" : m->errstr; }
const char *spool_message_topic(const spool_message_t *m) { return m == NULL ? "" : m->topic; }
int32_t spool_message_partition(const spool_message_t *m) { return m == NULL ? -1 : m->partition; }
int64_t spool_message_offset(const spool_message_t *m) { return m == NULL ? -1 : m->offset; }
int64_t spool_message_timestamp(const spool_message_t *m) { return m == NULL ? -1 : m->timestamp; }

const void *spool_message_key(const spool_message_t *m, size_t *len) {
    if (len != NULL) *len = m == NULL ? 0 : m->key_len;
    return m == NULL ? NULL : m->key;
}

const void *spool_message_value(const spool_message_t *m, size_t *len) {
    if (len != NULL) *len = m == NULL ? 0 : m->value_len;
    return m == NULL ? NULL : m->value;
}

size_t spool_message_header_count(const spool_message_t *m) {
    return m == NULL ? 0 : m->header_count;
}

spool_err_t spool_message_header(const spool_message_t *m, size_t idx, const char **key,
                                 size_t *key_len, const void **value, size_t *value_len) {
    if (m == NULL || idx >= m->header_count) return SPOOL_ERR__BAD_ARG;
    const spool_header_t *h = &m->headers[idx];
    if (key != NULL) *key = h->key;
    if (key_len != NULL) *key_len = h->key_len;
    if (value != NULL) *value = h->value;
    if (value_len != NULL) *value_len = h->value_len;
    return SPOOL_ERR_NO_ERROR;
}

spool_err_t spool_message_view(const spool_message_t *m, spool_message_view_t *view,
                               size_t view_size) {
    if (m == NULL || view == NULL) return SPOOL_ERR__BAD_ARG;
    spool_message_view_t v = {m->err,     m->partition, m->offset,    m->timestamp,
                              m->topic,   m->errstr,    m->key,       m->key_len,
                              m->value,   m->value_len, m->header_count, (void *)m->opaque};
    memcpy(view, &v, view_size < sizeof v ? view_size : sizeof v);
    return SPOOL_ERR_NO_ERROR;
}

void *spool_message_opaque(const spool_message_t *m) {
    return m == NULL ? NULL : (void *)m->opaque;
}

void spool_message_destroy(spool_message_t *m) { free(m); }

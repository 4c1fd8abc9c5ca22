/* packed.c: the packed calls of spool.h (spool_produce_packed, spool_producer_poll_reports,
 * spool_consumer_poll_packed, spool_free). They move many records, reports or messages per
 * call in flat buffers, for bindings whose cost is per call and per object (the Python
 * binding over ctypes). Each is built on a call of shim.c or the Go side's report queue, so
 * that produce, consume and commit keep one implementation. */
#include <stdio.h>
#include <string.h>

#include "_cgo_export.h"
#include "spool_impl.h"

/* packed_alloc is malloc for the blocks handed to the caller; out of memory ends the process,
 * as it does on the Go side (the records taken could not be given back). */
static void *packed_alloc(size_t size) {
    void *p = malloc(size > 0 ? size : 1);
    if (p == NULL) {
        fputs("libspool: out of memory\n", stderr);
        abort();
    }
    return p;
}

/* column_ok: a column with positive lengths must have its buffer. */
static int column_ok(const void *buf, const int64_t *lens, size_t count) {
    if (buf != NULL || lens == NULL) return 1;
    for (size_t i = 0; i < count; i++)
        if (lens[i] > 0) return 0;
    return 1;
}

spool_err_t spool_produce_packed(spool_producer_t *p, const char *topic, size_t count,
                                 const int32_t *partitions, const void *keys,
                                 const int64_t *key_lens, const void *values,
                                 const int64_t *value_lens, const spool_header_t *const *headers,
                                 const size_t *header_counts, void *const *msg_opaques) {
    if (p == NULL || topic == NULL || !column_ok(keys, key_lens, count) ||
        !column_ok(values, value_lens, count))
        return SPOOL_ERR__BAD_ARG;
    for (size_t i = 0; i < count; i++) {
        if (partitions != NULL && partitions[i] < SPOOL_PARTITION_UA) return SPOOL_ERR__BAD_ARG;
        if (headers == NULL || header_counts == NULL || header_counts[i] == 0) continue;
        if (headers[i] == NULL) return SPOOL_ERR__BAD_ARG;
        for (size_t j = 0; j < header_counts[i]; j++)
            if (headers[i][j].key == NULL && headers[i][j].key_len > 0) return SPOOL_ERR__BAD_ARG;
    }
    if (count == 0) return SPOOL_ERR_NO_ERROR;
    return spoolring_produce_packed(p, topic, count, partitions, keys, key_lens, values,
                                    value_lens, headers, header_counts, msg_opaques);
}

size_t spool_producer_poll_reports(spool_producer_t *p, int timeout_ms, spool_report_t **reports) {
    if (reports != NULL) *reports = NULL;
    if (p == NULL || reports == NULL) return 0;
    return spoolgo_producer_take_reports(p->h, timeout_ms, reports);
}

/* packed_size is the number of bytes message m adds to a block after its struct; same_topic
 * when it shares the name of the message before it. */
static size_t packed_size(const spool_message_t *m, int same_topic) {
    size_t size = (same_topic ? 0 : strlen(m->topic)) + strlen(m->errstr) + m->key_len + m->value_len;
    for (size_t j = 0; j < m->header_count; j++)
        size += 2 * sizeof(int64_t) + m->headers[j].key_len + m->headers[j].value_len;
    return size;
}

/* put copies n bytes of src to the block at *at and returns where they landed. */
static uint64_t put(char *block, size_t *at, const void *src, size_t n) {
    uint64_t off = *at;
    if (n > 0) memcpy(block + *at, src, n);
    *at += n;
    return off;
}

static void put_len(char *block, size_t *at, int64_t len) { put(block, at, &len, sizeof len); }

size_t spool_consumer_poll_packed(spool_consumer_t *c, int timeout_ms, size_t max, void **block,
                                  size_t *block_size) {
    if (block != NULL) *block = NULL;
    if (block_size != NULL) *block_size = 0;
    if (c == NULL || block == NULL || block_size == NULL || max == 0) return 0;
    spool_message_t **msgs = packed_alloc(max * sizeof *msgs);
    size_t n = spool_consumer_poll_batch(c, timeout_ms, msgs, max);
    if (n == 0) {
        free(msgs);
        return 0;
    }
    size_t size = n * sizeof(spool_packed_message_t);
    for (size_t i = 0; i < n; i++)
        size += packed_size(msgs[i], i > 0 && strcmp(msgs[i]->topic, msgs[i - 1]->topic) == 0);
    char *out = packed_alloc(size);
    spool_packed_message_t *pm = (spool_packed_message_t *)out;
    size_t at = n * sizeof(spool_packed_message_t);
    for (size_t i = 0; i < n; i++) {
        const spool_message_t *m = msgs[i];
        spool_packed_message_t *e = &pm[i];
        e->err = m->err;
        e->partition = m->partition;
        e->offset = m->offset;
        e->timestamp = m->timestamp;
        e->topic_len = strlen(m->topic);
        if (i > 0 && strcmp(m->topic, msgs[i - 1]->topic) == 0)
            e->topic_off = pm[i - 1].topic_off;
        else
            e->topic_off = put(out, &at, m->topic, e->topic_len);
        e->errstr_len = strlen(m->errstr);
        e->errstr_off = put(out, &at, m->errstr, e->errstr_len);
        e->key_len = m->key == NULL ? -1 : (int64_t)m->key_len;
        e->key_off = put(out, &at, m->key, m->key_len);
        e->value_len = m->value == NULL ? -1 : (int64_t)m->value_len;
        e->value_off = put(out, &at, m->value, m->value_len);
        e->header_count = m->header_count;
        e->headers_off = at;
        for (size_t j = 0; j < m->header_count; j++) {
            const spool_header_t *h = &m->headers[j];
            put_len(out, &at, (int64_t)h->key_len);
            put(out, &at, h->key, h->key_len);
            put_len(out, &at, h->value == NULL ? -1 : (int64_t)h->value_len);
            put(out, &at, h->value, h->value_len);
        }
    }
    for (size_t i = 0; i < n; i++) spool_message_destroy(msgs[i]);
    free(msgs);
    *block = out;
    *block_size = size;
    return n;
}

void spool_free(void *block) { free(block); }

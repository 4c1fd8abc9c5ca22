/* packed_test.c: the packed calls of spool.h (spool_produce_packed,
 * spool_producer_poll_reports, spool_consumer_poll_packed, spool_free), run by
 * packed_ctest_test.go against a real broker, built with -Wall -Wextra -Werror and run plain,
 * under AddressSanitizer and under valgrind.
 *
 * usage: packed_test SCENARIO BROKER [ARGS...]
 *   api        BROKER               NULL and bad arguments, without a broker
 *   roundtrip  BROKER TOPIC N PARTS N records (null, empty and set keys and values, explicit
 *                                   partitions, headers) produced in packed calls, their
 *                                   reports taken packed; 10 more flushed, their reports
 *                                   served to dr_cb; then all consumed back packed from PARTS
 *                                   partitions and compared byte for byte
 * Every scenario ends by checking that no handle is left (spool_handle_count). Exit 0 on
 * success; a failed check prints where and exits 1. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <spool.h>

#include "check.h"

/* The Python binding reads these structs with fixed struct formats (spool/_lib.py). */
_Static_assert(sizeof(void *) != 8 || sizeof(spool_report_t) == 32, "spool_report_t layout");
_Static_assert(sizeof(void *) != 8 || sizeof(spool_packed_message_t) == 104,
               "spool_packed_message_t layout");

static char errstr[512];

/* Reports are kept only with a dr_cb. It runs only for reports served by
 * spool_producer_poll or spool_producer_flush: here the 10 records flushed by roundtrip,
 * msg_opaque flush_base + j, null key, value "flush-<j>" (two digits), which their messages
 * carry as the other produce calls' do. */
static int dr_calls;
static uintptr_t flush_base;
static void dr_cb(spool_producer_t *p, const spool_message_t *m, void *opaque) {
    (void)p, (void)opaque;
    CHECK_ERR(spool_message_err(m), SPOOL_ERR_NO_ERROR);
    CHECK(spool_message_opaque(m) != NULL && spool_message_offset(m) >= 0);
    char want[16];
    snprintf(want, sizeof want, "flush-%02d", (int)((uintptr_t)spool_message_opaque(m) - flush_base));
    size_t len;
    const void *value = spool_message_value(m, &len);
    CHECK(spool_message_key(m, NULL) == NULL && value != NULL && len == strlen(want) &&
          memcmp(value, want, len) == 0);
    dr_calls++;
}

static spool_producer_t *new_producer(const char *broker) {
    spool_conf_t *conf = spool_conf_new();
    CHECK(spool_conf_set(conf, "bootstrap.servers", broker, errstr, sizeof errstr) == SPOOL_CONF_OK);
    CHECK(spool_conf_set(conf, "linger.ms", "2", errstr, sizeof errstr) == SPOOL_CONF_OK);
    spool_conf_set_dr_cb(conf, dr_cb);
    spool_producer_t *p = spool_producer_new(conf, errstr, sizeof errstr);
    CHECK(p != NULL);
    return p;
}

/* ---- api ---- */

static void api(const char *broker) {
    int64_t lens[2] = {1, 1};
    int32_t bad_part[2] = {0, -2};
    CHECK_ERR(spool_produce_packed(NULL, "t", 1, NULL, NULL, NULL, "a", lens, NULL, NULL, NULL),
              SPOOL_ERR__BAD_ARG);
    spool_report_t *reports = (spool_report_t *)&lens; /* must be reset to NULL */
    CHECK(spool_producer_poll_reports(NULL, 0, &reports) == 0 && reports == NULL);
    void *block = &lens;
    size_t size = 7;
    CHECK(spool_consumer_poll_packed(NULL, 0, 10, &block, &size) == 0 && block == NULL && size == 0);
    spool_free(NULL);

    spool_producer_t *p = new_producer(broker);
    CHECK_ERR(spool_produce_packed(p, NULL, 1, NULL, NULL, NULL, "a", lens, NULL, NULL, NULL),
              SPOOL_ERR__BAD_ARG);
    /* a positive length without its buffer; a partition below SPOOL_PARTITION_UA */
    CHECK_ERR(spool_produce_packed(p, "t", 2, NULL, NULL, NULL, NULL, lens, NULL, NULL, NULL),
              SPOOL_ERR__BAD_ARG);
    CHECK_ERR(spool_produce_packed(p, "t", 2, NULL, NULL, lens, "ab", lens, NULL, NULL, NULL),
              SPOOL_ERR__BAD_ARG);
    CHECK_ERR(spool_produce_packed(p, "t", 2, bad_part, NULL, NULL, "ab", lens, NULL, NULL, NULL),
              SPOOL_ERR__BAD_ARG);
    /* headers: a NULL array with a count, a NULL key with a length */
    const spool_header_t *no_headers[2] = {NULL, NULL};
    size_t counts[2] = {0, 1};
    CHECK_ERR(spool_produce_packed(p, "t", 2, NULL, NULL, NULL, "ab", lens, no_headers, counts, NULL),
              SPOOL_ERR__BAD_ARG);
    spool_header_t nameless = {NULL, 3, "v", 1};
    const spool_header_t *bad_headers[2] = {NULL, &nameless};
    CHECK_ERR(spool_produce_packed(p, "t", 2, NULL, NULL, NULL, "ab", lens, bad_headers, counts, NULL),
              SPOOL_ERR__BAD_ARG);
    /* nothing was queued; zero records is a no-op */
    CHECK_ERR(spool_produce_packed(p, "t", 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
              SPOOL_ERR_NO_ERROR);
    CHECK(spool_producer_outq_len(p) == 0);
    CHECK(spool_producer_poll_reports(p, 0, NULL) == 0);
    CHECK(spool_producer_poll_reports(p, 0, &reports) == 0 && reports == NULL);
    spool_producer_destroy(p);

    spool_conf_t *conf = spool_conf_new();
    CHECK(spool_conf_set(conf, "bootstrap.servers", broker, errstr, sizeof errstr) == SPOOL_CONF_OK);
    spool_consumer_t *c = spool_consumer_new(conf, errstr, sizeof errstr);
    CHECK(c != NULL);
    CHECK(spool_consumer_poll_packed(c, 0, 0, &block, &size) == 0 && block == NULL);
    CHECK(spool_consumer_poll_packed(c, 0, 10, NULL, &size) == 0);
    CHECK(spool_consumer_poll_packed(c, 0, 10, &block, NULL) == 0);
    /* nothing assigned: a timeout, nothing to free */
    CHECK(spool_consumer_poll_packed(c, 50, 10, &block, &size) == 0 && block == NULL && size == 0);
    spool_consumer_destroy(c);
    CHECK(spool_handle_count() == 0);
    puts("api: ok");
}

/* ---- roundtrip ---- */

/* Record i: key null for i%5 == 0, empty for i%5 == 1, else "k<i%7>"; value null for
 * i%11 == 3, empty for i%11 == 4, else "value-<i>" and a tail of i%300 bytes; partition
 * i%PARTS for even i, the partitioner's for odd; headers ("i", "<i>") and ("null", NULL) for
 * i%4 == 0. */
typedef struct {
    char key[16], value[400], idx[16];
    int64_t key_len, value_len;
} rec_t;

static void make_record(int i, rec_t *r) {
    r->key_len = i % 5 == 0 ? -1 : i % 5 == 1 ? 0 : snprintf(r->key, sizeof r->key, "k%d", i % 7);
    if (i % 11 == 3)
        r->value_len = -1;
    else if (i % 11 == 4)
        r->value_len = 0;
    else {
        int n = snprintf(r->value, sizeof r->value, "value-%d", i);
        memset(r->value + n, 'a' + i % 26, (size_t)(i % 300));
        r->value_len = n + i % 300;
    }
    snprintf(r->idx, sizeof r->idx, "%d", i);
}

static int64_t get64(const char *p) {
    int64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static void roundtrip(const char *broker, const char *topic, int n, int parts) {
    spool_producer_t *p = new_producer(broker);
    rec_t *recs = calloc((size_t)n, sizeof *recs);
    int32_t *partitions = calloc((size_t)n, sizeof *partitions);
    int64_t *key_lens = calloc((size_t)n, sizeof *key_lens), *value_lens = calloc((size_t)n, sizeof *value_lens);
    char *keys = malloc((size_t)n * 16), *values = malloc((size_t)n * 400);
    spool_header_t *hdrs = calloc((size_t)n * 2, sizeof *hdrs);
    const spool_header_t **headers = calloc((size_t)n, sizeof *headers);
    size_t *header_counts = calloc((size_t)n, sizeof *header_counts);
    void **opaques = calloc((size_t)n, sizeof *opaques);
    CHECK(recs && partitions && key_lens && value_lens && keys && values && hdrs && headers &&
          header_counts && opaques);
    size_t kat = 0, vat = 0;
    for (int i = 0; i < n; i++) {
        rec_t *r = &recs[i];
        make_record(i, r);
        partitions[i] = i % 2 == 0 ? i % parts : SPOOL_PARTITION_UA;
        key_lens[i] = r->key_len;
        value_lens[i] = r->value_len;
        if (r->key_len > 0) memcpy(keys + kat, r->key, (size_t)r->key_len), kat += (size_t)r->key_len;
        if (r->value_len > 0)
            memcpy(values + vat, r->value, (size_t)r->value_len), vat += (size_t)r->value_len;
        if (i % 4 == 0) {
            hdrs[2 * i] = (spool_header_t){"i", 1, r->idx, strlen(r->idx)};
            hdrs[2 * i + 1] = (spool_header_t){"null", 4, NULL, 0};
            headers[i] = &hdrs[2 * i];
            header_counts[i] = 2;
        }
        opaques[i] = (void *)(uintptr_t)(i + 1);
    }
    /* in calls of up to 100 records; the columns of each call start where the last ended */
    kat = vat = 0;
    for (int at = 0; at < n; at += 100) {
        int count = n - at < 100 ? n - at : 100;
        CHECK_ERR(spool_produce_packed(p, topic, (size_t)count, partitions + at, keys + kat,
                                       key_lens + at, values + vat, value_lens + at, headers + at,
                                       header_counts + at, opaques + at),
                  SPOOL_ERR_NO_ERROR);
        for (int i = at; i < at + count; i++) {
            kat += key_lens[i] > 0 ? (size_t)key_lens[i] : 0;
            vat += value_lens[i] > 0 ? (size_t)value_lens[i] : 0;
        }
    }
    free(keys);
    free(values); /* the records were copied by the calls */

    int32_t *got_part = malloc((size_t)n * sizeof *got_part);
    CHECK(got_part != NULL);
    for (int i = 0; i < n; i++) got_part[i] = -1;
    int reported = 0;
    for (int tries = 0; reported < n && tries < 300; tries++) {
        spool_report_t *reports = NULL;
        size_t got = spool_producer_poll_reports(p, 100, &reports);
        CHECK((got == 0) == (reports == NULL));
        for (size_t j = 0; j < got; j++) {
            const spool_report_t *r = &reports[j];
            uintptr_t id = (uintptr_t)r->msg_opaque;
            CHECK_ERR(r->err, SPOOL_ERR_NO_ERROR);
            CHECK(id >= 1 && id <= (uintptr_t)n && got_part[id - 1] == -1);
            CHECK(j == 0 || (uintptr_t)reports[j - 1].msg_opaque < id); /* sorted */
            CHECK(r->offset >= 0 && r->timestamp > 1600000000000 && r->partition >= 0 &&
                  r->partition < parts);
            if (partitions[id - 1] != SPOOL_PARTITION_UA) CHECK(r->partition == partitions[id - 1]);
            got_part[id - 1] = r->partition;
            reported++;
        }
        spool_free(reports);
    }
    CHECK(reported == n && spool_producer_outq_len(p) == 0);
    /* spool_producer_flush waits for records still queued by spool_produce_packed and serves
     * their reports to dr_cb */
    int64_t flush_lens[10];
    char flush_values[10 * 8 + 1]; /* snprintf's last NUL */
    void *flush_opaques[10];
    flush_base = (uintptr_t)n + 1;
    for (int j = 0; j < 10; j++) {
        flush_lens[j] = 8;
        snprintf(flush_values + 8 * j, 9, "flush-%02d", j);
        flush_opaques[j] = (void *)(uintptr_t)(n + 1 + j);
    }
    CHECK_ERR(spool_produce_packed(p, topic, 10, NULL, NULL, NULL, flush_values, flush_lens, NULL,
                                   NULL, flush_opaques),
              SPOOL_ERR_NO_ERROR);
    CHECK_ERR(spool_producer_flush(p, 30000), SPOOL_ERR_NO_ERROR);
    CHECK(dr_calls == 10 && spool_producer_outq_len(p) == 0);
    spool_producer_destroy(p);

    spool_conf_t *conf = spool_conf_new();
    CHECK(spool_conf_set(conf, "bootstrap.servers", broker, errstr, sizeof errstr) == SPOOL_CONF_OK);
    spool_consumer_t *c = spool_consumer_new(conf, errstr, sizeof errstr);
    CHECK(c != NULL);
    for (int part = 0; part < parts; part++)
        CHECK_ERR(spool_consumer_assign(c, topic, part, SPOOL_OFFSET_BEGINNING), SPOOL_ERR_NO_ERROR);
    char *seen = calloc((size_t)n, 1);
    CHECK(seen != NULL);
    int consumed = 0, flushed = 0;
    for (int tries = 0; consumed + flushed < n + 10 && tries < 300; tries++) {
        void *block = NULL;
        size_t size = 0;
        size_t got = spool_consumer_poll_packed(c, 100, 64, &block, &size);
        CHECK(got <= 64 && (got == 0) == (block == NULL));
        CHECK(size >= got * sizeof(spool_packed_message_t));
        const spool_packed_message_t *pm = block;
        const char *base = block;
        for (size_t j = 0; j < got; j++) {
            const spool_packed_message_t *m = &pm[j];
            CHECK_ERR(m->err, SPOOL_ERR_NO_ERROR);
            CHECK(m->errstr_len == 0);
            CHECK(m->topic_len == strlen(topic) && memcmp(base + m->topic_off, topic, m->topic_len) == 0);
            /* which record: its "i" header, or its value, or (null/empty values without
             * headers) its key and partition cannot tell: those are found by elimination */
            int i = -1;
            if (m->value_len == 8 && memcmp(base + m->value_off, "flush-", 6) == 0) {
                flushed++;
                continue;
            }
            if (m->header_count > 0) {
                CHECK(m->header_count == 2);
                const char *h = base + m->headers_off;
                int64_t kl = get64(h);
                CHECK(kl == 1 && h[8] == 'i');
                int64_t vl = get64(h + 9);
                CHECK(vl > 0 && vl < 16);
                char idx[16] = {0};
                memcpy(idx, h + 17, (size_t)vl);
                i = atoi(idx);
                const char *h2 = h + 17 + vl;
                CHECK(get64(h2) == 4 && memcmp(h2 + 8, "null", 4) == 0 && get64(h2 + 12) == -1);
                CHECK(m->headers_off + 17 + (uint64_t)vl + 20 <= size);
            } else if (m->value_len > 0) {
                char head[16] = {0}; /* the value is not NUL-terminated: its first bytes */
                memcpy(head, base + m->value_off, m->value_len < 15 ? (size_t)m->value_len : 15);
                CHECK(sscanf(head, "value-%d", &i) == 1);
            } else {
                for (int k = 0; k < n; k++)
                    if (!seen[k] && k % 4 != 0 && recs[k].value_len == m->value_len &&
                        recs[k].key_len == m->key_len && got_part[k] == m->partition &&
                        (m->key_len <= 0 || memcmp(recs[k].key, base + m->key_off, (size_t)m->key_len) == 0)) {
                        i = k;
                        break;
                    }
            }
            CHECK(i >= 0 && i < n && !seen[i]);
            seen[i] = 1;
            consumed++;
            const rec_t *r = &recs[i];
            CHECK(m->partition == got_part[i] && m->offset >= 0 && m->timestamp > 1600000000000);
            CHECK(m->key_len == r->key_len && m->value_len == r->value_len);
            CHECK(m->key_off + (uint64_t)(m->key_len > 0 ? m->key_len : 0) <= size);
            CHECK(m->value_off + (uint64_t)(m->value_len > 0 ? m->value_len : 0) <= size);
            if (r->key_len > 0) CHECK(memcmp(base + m->key_off, r->key, (size_t)r->key_len) == 0);
            if (r->value_len > 0) CHECK(memcmp(base + m->value_off, r->value, (size_t)r->value_len) == 0);
            CHECK((m->header_count > 0) == (i % 4 == 0));
        }
        spool_free(block);
    }
    CHECK(consumed == n && flushed == 10);
    void *block = NULL;
    size_t size = 0;
    CHECK(spool_consumer_poll_packed(c, 200, 64, &block, &size) == 0 && block == NULL);
    spool_consumer_destroy(c);
    free(seen);
    free(got_part);
    free(recs);
    free(partitions);
    free(key_lens);
    free(value_lens);
    free(hdrs);
    free(headers);
    free(header_counts);
    free(opaques);
    CHECK(spool_handle_count() == 0);
    printf("roundtrip: ok, %d records\n", n);
}

int main(int argc, char **argv) {
    if (argc >= 3 && strcmp(argv[1], "api") == 0) {
        api(argv[2]);
    } else if (argc >= 6 && strcmp(argv[1], "roundtrip") == 0) {
        roundtrip(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]));
    } else {
        fprintf(stderr, "usage: packed_test api BROKER | roundtrip BROKER TOPIC N PARTS\n");
        return 2;
    }
    return 0;
}

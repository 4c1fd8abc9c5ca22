/* spool_test.c: libspool's C tests, run by ctest_test.go against a real broker, built with
 * -Wall -Wextra -Werror and run plain, under AddressSanitizer and under valgrind.
 *
 * usage: spool_test SCENARIO BROKER [ARGS...]
 *   api      BROKER                  every public function, NULL arguments, config errors
 *   produce  BROKER TOPIC N          N records with keys and headers, delivery reports;
 *                                    the queue's bounds (SPOOL_ERR__QUEUE_FULL)
 *   consume  BROKER TOPIC N PARTS    the N records back from PARTS partitions, by assign
 *   group    BROKER TOPIC N GROUP    two consumers of one group share the N records
 *   offsets  BROKER TOPIC GROUP      a consumer commits offsets it chooses (three partitions),
 *                                    its offset commit callback told of each commit;
 *                                    the next member of its group starts from them
 *   down     BROKER                  a producer whose broker is down gets failed reports
 *   threads  BROKER TOPIC N          4 threads produce N records through one producer while
 *                                    another polls reports, then 2 threads poll one consumer
 *   leak     BROKER                  forgets to destroy a message: the leak checkers must fail
 * Every scenario ends by checking that no handle is left (spool_handle_count). Exit 0 on
 * success; a failed check prints where and exits 1. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <spool.h>

#include "check.h"

static char errstr[512];

/* the timestamp produce gives its record to an explicit partition (spool_produce_timestamp) */
#define EXPLICIT_TS 1700000000123LL

static spool_conf_t *conf_with(const char *broker, const char *const *kv) {
    spool_conf_t *conf = spool_conf_new();
    CHECK(conf != NULL);
    CHECK(spool_conf_set(conf, "bootstrap.servers", broker, errstr, sizeof errstr) == SPOOL_CONF_OK);
    for (; kv != NULL && kv[0] != NULL; kv += 2) {
        if (spool_conf_set(conf, kv[0], kv[1], errstr, sizeof errstr) != SPOOL_CONF_OK) {
            fprintf(stderr, "conf %s=%s: %s\n", kv[0], kv[1], errstr);
            exit(1);
        }
    }
    return conf;
}

/* ---- api ---- */

static void api(const char *broker) {
    CHECK(strcmp(spool_version(), SPOOL_VERSION_STR) == 0);
    CHECK(strstr(spool_err2str(SPOOL_RESP_ERR_NOT_LEADER_OR_FOLLOWER), "NOT_LEADER_OR_FOLLOWER") != NULL);
    CHECK(strstr(spool_err2str(SPOOL_ERR__TIMED_OUT), "TIMED_OUT") != NULL);
    CHECK(strstr(spool_err2str(SPOOL_ERR_NO_ERROR), "NO_ERROR") != NULL);
    CHECK(spool_err2str(123456) != NULL && spool_err2str(-99999) != NULL);

    /* configuration errors */
    spool_conf_t *conf = spool_conf_new();
    CHECK(spool_conf_set(conf, "no.such.key", "1", errstr, sizeof errstr) == SPOOL_CONF_UNKNOWN);
    CHECK(strstr(errstr, "no.such.key") != NULL);
    CHECK(spool_conf_set(conf, "acks", "2", errstr, sizeof errstr) == SPOOL_CONF_INVALID);
    CHECK(strstr(errstr, "acks") != NULL);
    /* a tiny errstr is cut and NUL-terminated, never overrun */
    char tiny[4] = {'x', 'x', 'x', 'x'};
    CHECK(spool_conf_set(conf, "linger.ms", "soon", tiny, 3) == SPOOL_CONF_INVALID);
    CHECK(tiny[2] == '\0' && tiny[3] == 'x');
    CHECK(spool_conf_set(conf, "linger.ms", "soon", NULL, 0) == SPOOL_CONF_INVALID);
    CHECK(spool_conf_set(NULL, "acks", "1", errstr, sizeof errstr) == SPOOL_CONF_INVALID);
    CHECK(spool_conf_set(conf, NULL, "1", errstr, sizeof errstr) == SPOOL_CONF_INVALID);
    CHECK(spool_conf_set(conf, "acks", NULL, errstr, sizeof errstr) == SPOOL_CONF_INVALID);
    CHECK(spool_conf_set(conf, "acks", "-1", errstr, sizeof errstr) == SPOOL_CONF_OK);
    char val[8];
    size_t val_size = sizeof val;
    CHECK(spool_conf_get(conf, "request.required.acks", val, &val_size) == SPOOL_CONF_OK);
    CHECK(strcmp(val, "all") == 0 && val_size == 4);
    val_size = 0;
    CHECK(spool_conf_get(conf, "acks", NULL, &val_size) == SPOOL_CONF_OK && val_size == 4);
    CHECK(spool_conf_get(conf, "linger.ms", val, &val_size) == SPOOL_CONF_UNKNOWN);
    spool_conf_t *dup = spool_conf_dup(conf);
    CHECK(dup != NULL && spool_conf_dup(NULL) == NULL);
    spool_conf_destroy(dup);

    /* a combination refused by _new leaves the conf with the caller */
    CHECK(spool_conf_set(conf, "group.id", "g", errstr, sizeof errstr) == SPOOL_CONF_OK);
    CHECK(spool_conf_set(conf, "session.timeout.ms", "1000", errstr, sizeof errstr) == SPOOL_CONF_OK);
    CHECK(spool_conf_set(conf, "heartbeat.interval.ms", "2000", errstr, sizeof errstr) == SPOOL_CONF_OK);
    CHECK(spool_consumer_new(conf, errstr, sizeof errstr) == NULL);
    CHECK(strstr(errstr, "HeartbeatInterval") != NULL);
    spool_conf_destroy(conf);

    /* no transactions through the C ABI yet: refused at creation, not on every record */
    conf = spool_conf_new();
    CHECK(spool_conf_set(conf, "transactional.id", "tx", errstr, sizeof errstr) == SPOOL_CONF_OK);
    CHECK(spool_producer_new(conf, errstr, sizeof errstr) == NULL);
    CHECK(strstr(errstr, "transactional.id") != NULL);
    spool_conf_destroy(conf);

    /* NULL handles and arguments */
    spool_conf_set_dr_cb(NULL, NULL);
    spool_conf_set_offset_commit_cb(NULL, NULL);
    spool_conf_set_opaque(NULL, NULL);
    spool_conf_destroy(NULL);
    CHECK(spool_producer_new(NULL, errstr, sizeof errstr) == NULL);
    CHECK(spool_consumer_new(NULL, NULL, 0) == NULL);
    CHECK_ERR(spool_produce(NULL, "t", 0, NULL, 0, NULL, 0, NULL), SPOOL_ERR__BAD_ARG);
    CHECK_ERR(spool_produce_timestamp(NULL, "t", 0, 1, NULL, 0, NULL, 0, NULL, 0, NULL), SPOOL_ERR__BAD_ARG);
    spool_record_t one = {SPOOL_PARTITION_UA, NULL, 0, NULL, 0, NULL, 0, NULL};
    CHECK_ERR(spool_produce_batch(NULL, "t", &one, 1), SPOOL_ERR__BAD_ARG);
    CHECK(spool_producer_poll(NULL, 0) == -1);
    CHECK_ERR(spool_producer_flush(NULL, 0), SPOOL_ERR__BAD_ARG);
    CHECK(spool_producer_outq_len(NULL) == 0);
    spool_producer_destroy(NULL);
    CHECK_ERR(spool_consumer_subscribe(NULL, NULL, 0), SPOOL_ERR__BAD_ARG);
    CHECK_ERR(spool_consumer_assign(NULL, "t", 0, 0), SPOOL_ERR__BAD_ARG);
    CHECK_ERR(spool_consumer_seek(NULL, "t", 0, 0), SPOOL_ERR__BAD_ARG);
    CHECK(spool_consumer_poll(NULL, 0) == NULL);
    CHECK_ERR(spool_consumer_commit(NULL, 0), SPOOL_ERR__BAD_ARG);
    spool_topic_partition_offset_t at = {"t", 0, 1};
    CHECK_ERR(spool_consumer_commit_offsets(NULL, &at, 1, 0), SPOOL_ERR__BAD_ARG);
    CHECK_ERR(spool_consumer_close(NULL), SPOOL_ERR__BAD_ARG);
    spool_consumer_destroy(NULL);
    size_t len = 7;
    CHECK(spool_message_err(NULL) == SPOOL_ERR__BAD_ARG);
    CHECK(strcmp(spool_message_errstr(NULL), "") == 0 && strcmp(spool_message_topic(NULL), "") == 0);
    CHECK(spool_message_partition(NULL) == -1 && spool_message_offset(NULL) == -1);
    CHECK(spool_message_timestamp(NULL) == -1);
    CHECK(spool_message_key(NULL, &len) == NULL && len == 0);
    CHECK(spool_message_value(NULL, NULL) == NULL);
    CHECK(spool_message_header_count(NULL) == 0);
    CHECK_ERR(spool_message_header(NULL, 0, NULL, NULL, NULL, NULL), SPOOL_ERR__BAD_ARG);
    CHECK(spool_message_opaque(NULL) == NULL);
    spool_message_view_t view;
    CHECK_ERR(spool_message_view(NULL, &view, sizeof view), SPOOL_ERR__BAD_ARG);
    spool_message_destroy(NULL);

    /* NULL arguments on live handles */
    spool_producer_t *p = spool_producer_new(conf_with(broker, NULL), errstr, sizeof errstr);
    CHECK(p != NULL);
    CHECK_ERR(spool_produce(p, NULL, 0, NULL, 0, NULL, 0, NULL), SPOOL_ERR__BAD_ARG);
    CHECK_ERR(spool_produce(p, "t", -2, NULL, 0, NULL, 0, NULL), SPOOL_ERR__BAD_ARG);
    CHECK_ERR(spool_produce_headers(p, "t", 0, NULL, 0, NULL, 0, NULL, 1, NULL), SPOOL_ERR__BAD_ARG);
    spool_header_t bad = {NULL, 3, NULL, 0};
    CHECK_ERR(spool_produce_headers(p, "t", 0, NULL, 0, NULL, 0, &bad, 1, NULL), SPOOL_ERR__BAD_ARG);
    /* 2 GiB is refused before a byte of it is read (errstr is not that long) */
    CHECK_ERR(spool_produce(p, "t", 0, NULL, 0, errstr, (size_t)1 << 31, NULL),
              SPOOL_RESP_ERR_MESSAGE_TOO_LARGE);
    spool_record_t huge = {SPOOL_PARTITION_UA, NULL, 0, errstr, (size_t)1 << 31, NULL, 0, NULL};
    CHECK_ERR(spool_produce_batch(p, "t", &huge, 1), SPOOL_RESP_ERR_MESSAGE_TOO_LARGE);
    CHECK(spool_producer_outq_len(p) == 0);
    CHECK_ERR(spool_producer_flush(p, 1000), SPOOL_ERR_NO_ERROR);
    spool_producer_destroy(p);

    spool_consumer_t *c = spool_consumer_new(conf_with(broker, NULL), errstr, sizeof errstr);
    CHECK(c != NULL);
    const char *topics[] = {"t"};
    CHECK_ERR(spool_consumer_subscribe(c, topics, 1), SPOOL_ERR__STATE); /* no group.id */
    CHECK_ERR(spool_consumer_subscribe(c, NULL, 1), SPOOL_ERR__BAD_ARG);
    CHECK_ERR(spool_consumer_assign(c, NULL, 0, 0), SPOOL_ERR__BAD_ARG);
    CHECK_ERR(spool_consumer_commit(c, 0), SPOOL_ERR__STATE);
    CHECK_ERR(spool_consumer_commit_offsets(c, &at, 1, 0), SPOOL_ERR__STATE);
    CHECK_ERR(spool_consumer_commit_offsets(c, NULL, 1, 0), SPOOL_ERR__BAD_ARG);
    spool_topic_partition_offset_t bad_offsets[3] = {{NULL, 0, 1}, {"t", -1, 1}, {"t", 0, -2}};
    for (int i = 0; i < 3; i++) CHECK_ERR(spool_consumer_commit_offsets(c, &bad_offsets[i], 1, 0), SPOOL_ERR__BAD_ARG);
    CHECK(spool_consumer_poll(c, 0) == NULL);
    CHECK_ERR(spool_consumer_close(c), SPOOL_ERR_NO_ERROR);
    CHECK_ERR(spool_consumer_assign(c, "t", 0, 0), SPOOL_ERR__CLOSED);
    spool_consumer_destroy(c);
}

/* check_view checks that spool_message_view agrees with the accessors, and that a short
 * view_size is respected. */
static void check_view(const spool_message_t *m) {
    spool_message_view_t v;
    CHECK_ERR(spool_message_view(m, NULL, sizeof v), SPOOL_ERR__BAD_ARG);
    CHECK_ERR(spool_message_view(m, &v, sizeof v), SPOOL_ERR_NO_ERROR);
    size_t klen, vlen;
    const void *k = spool_message_key(m, &klen), *val = spool_message_value(m, &vlen);
    CHECK(v.err == spool_message_err(m) && v.partition == spool_message_partition(m));
    CHECK(v.offset == spool_message_offset(m) && v.timestamp == spool_message_timestamp(m));
    CHECK(v.topic == spool_message_topic(m) && v.errstr == spool_message_errstr(m));
    CHECK(v.key == k && v.key_len == klen && v.value == val && v.value_len == vlen);
    CHECK(v.header_count == spool_message_header_count(m) && v.opaque == spool_message_opaque(m));
    struct { int32_t err, partition; int64_t guard; } shorter = {0, 0, 77};
    CHECK_ERR(spool_message_view(m, (spool_message_view_t *)(void *)&shorter, 8), SPOOL_ERR_NO_ERROR);
    CHECK(shorter.err == spool_message_err(m) && shorter.partition == spool_message_partition(m) && shorter.guard == 77);
}

/* ---- produce ---- */

struct delivery {
    int n; /* record n is the one with an empty value */
    spool_err_t want_err; /* of failed reports */
    int reports, failed;
    int *seen; /* per record index */
};

static void dr_cb(spool_producer_t *p, const spool_message_t *m, void *opaque) {
    struct delivery *d = opaque;
    CHECK(p != NULL);
    check_view(m);
    d->reports++;
    intptr_t i = (intptr_t)spool_message_opaque(m);
    if (spool_message_err(m) != SPOOL_ERR_NO_ERROR) {
        fprintf(stderr, "record %d failed: %s\n", (int)i, spool_message_errstr(m));
        /* A broker that is down: the report names the transport error of the last connection
         * attempt, or, when none failed within message.timeout.ms (under valgrind on a loaded
         * machine the first attempt may not have been made), says the record timed out, as
         * librdkafka's _MSG_TIMED_OUT does. Either way it is reported, never dropped. */
        if (!(d->want_err == SPOOL_ERR__TRANSPORT && spool_message_err(m) == SPOOL_ERR__TIMED_OUT))
            CHECK_ERR(spool_message_err(m), d->want_err);
        CHECK(spool_message_offset(m) == -1);
        d->failed++;
        return;
    }
    CHECK(spool_message_offset(m) >= 0 && spool_message_partition(m) >= 0);
    CHECK(i == d->n ? spool_message_timestamp(m) == EXPLICIT_TS : spool_message_timestamp(m) > EXPLICIT_TS);
    size_t len;
    const char *v = spool_message_value(m, &len);
    char want[32] = "";
    if (i != d->n) snprintf(want, sizeof want, "value-%d", (int)i);
    CHECK(len == strlen(want) && memcmp(v, want, len) == 0);
    d->seen[i]++;
}

static void produce(const char *broker, const char *topic, int n) {
    struct delivery d = {n, SPOOL_ERR_NO_ERROR, 0, 0, calloc((size_t)n + 1, sizeof(int))};
    const char *kv[] = {"linger.ms", "2", "compression.type", "lz4", NULL};
    spool_conf_t *conf = conf_with(broker, kv);
    spool_conf_set_dr_cb(conf, dr_cb);
    spool_conf_set_opaque(conf, &d);
    spool_producer_t *p = spool_producer_new(conf, errstr, sizeof errstr);
    CHECK(p != NULL);
    /* topic admin: the harness made topic; a scratch topic comes and goes */
    CHECK_ERR(spool_create_topic(p, topic, 3, 1, 10000), SPOOL_RESP_ERR_TOPIC_ALREADY_EXISTS);
    CHECK_ERR(spool_create_topic(p, topic, 0, 1, 10000), SPOOL_ERR__BAD_ARG);
    CHECK_ERR(spool_create_topic(NULL, topic, 1, 1, 10000), SPOOL_ERR__BAD_ARG);
    char scratch[128];
    snprintf(scratch, sizeof scratch, "%s-scratch", topic);
    CHECK_ERR(spool_create_topic(p, scratch, 2, -1, 10000), SPOOL_ERR_NO_ERROR);
    CHECK_ERR(spool_delete_topic(p, scratch, 10000), SPOOL_ERR_NO_ERROR);
    CHECK_ERR(spool_delete_topic(p, scratch, 10000), SPOOL_RESP_ERR_UNKNOWN_TOPIC_OR_PARTITION);
    CHECK_ERR(spool_delete_topic(p, NULL, 10000), SPOOL_ERR__BAD_ARG);
    /* the first half one call per record, the second half in batches of up to 64 */
    int half = n / 2;
    for (int i = 0; i < half; i++) {
        char text[32];
        /* key, value and header key in heap blocks of exactly their length, without a NUL:
         * a read past a length is a heap overflow for valgrind */
        int klen = snprintf(text, sizeof text, "key-%d", i % 10);
        char *key = malloc((size_t)klen);
        memcpy(key, text, (size_t)klen);
        int vlen = snprintf(text, sizeof text, "value-%d", i);
        char *value = malloc((size_t)vlen);
        memcpy(value, text, (size_t)vlen);
        char *hkey = malloc(3);
        memcpy(hkey, "idx", 3);
        spool_header_t h[2] = {{hkey, 3, value, (size_t)vlen}, {"null", 4, NULL, 0}};
        /* every third record without a key: the partitioner places it */
        CHECK_ERR(spool_produce_headers(p, topic, SPOOL_PARTITION_UA, i % 3 == 2 ? NULL : key,
                                        (size_t)klen, value, (size_t)vlen, h, 2, (void *)(intptr_t)i),
                  SPOOL_ERR_NO_ERROR);
        free(key);
        free(value);
        free(hkey);
        if (i % 100 == 0) spool_producer_poll(p, 0);
    }
    for (int start = half; start < n; start += 64) {
        int count = n - start < 64 ? n - start : 64;
        spool_record_t recs[64];
        char *blocks[64][3];
        spool_header_t hs[64][2];
        for (int j = 0; j < count; j++) {
            int i = start + j;
            char text[32];
            int klen = snprintf(text, sizeof text, "key-%d", i % 10);
            blocks[j][0] = malloc((size_t)klen);
            memcpy(blocks[j][0], text, (size_t)klen);
            int vlen = snprintf(text, sizeof text, "value-%d", i);
            blocks[j][1] = malloc((size_t)vlen);
            memcpy(blocks[j][1], text, (size_t)vlen);
            blocks[j][2] = malloc(3);
            memcpy(blocks[j][2], "idx", 3);
            hs[j][0] = (spool_header_t){blocks[j][2], 3, blocks[j][1], (size_t)vlen};
            hs[j][1] = (spool_header_t){"null", 4, NULL, 0};
            recs[j] = (spool_record_t){SPOOL_PARTITION_UA, i % 3 == 2 ? NULL : blocks[j][0], (size_t)klen,
                                       blocks[j][1], (size_t)vlen, hs[j], 2, (void *)(intptr_t)i};
        }
        CHECK_ERR(spool_produce_batch(p, topic, recs, (size_t)count), SPOOL_ERR_NO_ERROR);
        for (int j = 0; j < count; j++)
            for (int b = 0; b < 3; b++) free(blocks[j][b]);
        spool_producer_poll(p, 0);
    }
    /* a batch with a bad record buffers none of it */
    spool_record_t bad[2] = {{SPOOL_PARTITION_UA, "k", 1, "v", 1, NULL, 0, NULL},
                             {-2, "k", 1, "v", 1, NULL, 0, NULL}};
    int before = spool_producer_outq_len(p);
    CHECK_ERR(spool_produce_batch(p, topic, bad, 2), SPOOL_ERR__BAD_ARG);
    bad[1].partition = SPOOL_PARTITION_UA;
    bad[1].header_count = 1; /* NULL headers with a count */
    CHECK_ERR(spool_produce_batch(p, topic, bad, 2), SPOOL_ERR__BAD_ARG);
    CHECK(spool_producer_outq_len(p) <= before);
    CHECK_ERR(spool_produce_batch(p, NULL, bad, 1), SPOOL_ERR__BAD_ARG);
    CHECK_ERR(spool_produce_batch(p, topic, NULL, 1), SPOOL_ERR__BAD_ARG);
    CHECK_ERR(spool_produce_batch(p, topic, NULL, 0), SPOOL_ERR_NO_ERROR);
    /* one to an explicit partition, with an empty value and a timestamp of its own */
    CHECK_ERR(spool_produce_timestamp(p, topic, 0, -1, "explicit", 8, "", 0, NULL, 0, NULL), SPOOL_ERR__BAD_ARG);
    CHECK_ERR(spool_produce_timestamp(p, topic, 0, EXPLICIT_TS, "explicit", 8, "", 0, NULL, 0, (void *)(intptr_t)n),
              SPOOL_ERR_NO_ERROR);
    CHECK_ERR(spool_producer_flush(p, 30000), SPOOL_ERR_NO_ERROR);
    CHECK(spool_producer_outq_len(p) == 0);
    CHECK(d.reports == n + 1 && d.failed == 0);
    for (int i = 0; i <= n; i++) CHECK(d.seen[i] == 1);
    /* a partition the topic does not have (it has 3 or 4): the report has Kafka's code for it */
    d.want_err = SPOOL_RESP_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    CHECK_ERR(spool_produce(p, topic, 99, "k", 1, "v", 1, (void *)(intptr_t)n), SPOOL_ERR_NO_ERROR);
    spool_producer_flush(p, 30000);
    CHECK(d.reports == n + 2 && d.failed == 1);
    spool_producer_destroy(p);
    free(d.seen);
}

static void count_cb(spool_producer_t *p, const spool_message_t *m, void *opaque) {
    CHECK(p != NULL);
    CHECK_ERR(spool_message_err(m), SPOOL_ERR_NO_ERROR);
    (*(int *)opaque)++;
}

/* The queue's bounds, as librdkafka's: records and KiB produced whose report is not served
 * yet. A produce beyond them is SPOOL_ERR__QUEUE_FULL and buffers nothing; serving reports
 * makes room; a record larger than the byte bound goes into an empty queue. */
static void queue_full(const char *broker, const char *topic) {
    int reports = 0;
    const char *kv[] = {"queue.buffering.max.messages", "3", "queue.buffering.max.kbytes", "1",
                        "linger.ms", "60000", NULL};
    spool_conf_t *conf = conf_with(broker, kv);
    spool_conf_set_dr_cb(conf, count_cb);
    spool_conf_set_opaque(conf, &reports);
    spool_producer_t *p = spool_producer_new(conf, errstr, sizeof errstr);
    CHECK(p != NULL);
    char full[128];
    snprintf(full, sizeof full, "%s-full", topic);
    CHECK_ERR(spool_create_topic(p, full, 1, -1, 10000), SPOOL_ERR_NO_ERROR);
    for (int i = 0; i < 3; i++) CHECK_ERR(spool_produce(p, full, 0, NULL, 0, "v", 1, NULL), SPOOL_ERR_NO_ERROR);
    CHECK_ERR(spool_produce(p, full, 0, NULL, 0, "v", 1, NULL), SPOOL_ERR__QUEUE_FULL);
    spool_record_t one = {0, NULL, 0, "v", 1, NULL, 0, NULL};
    CHECK_ERR(spool_produce_batch(p, full, &one, 1), SPOOL_ERR__QUEUE_FULL);
    CHECK(spool_producer_outq_len(p) == 3);
    CHECK_ERR(spool_producer_flush(p, 30000), SPOOL_ERR_NO_ERROR);
    CHECK(reports == 3 && spool_producer_outq_len(p) == 0);
    char *big = calloc(2048, 1);
    CHECK(big != NULL);
    CHECK_ERR(spool_produce(p, full, 0, NULL, 0, big, 2048, NULL), SPOOL_ERR_NO_ERROR);
    CHECK_ERR(spool_produce(p, full, 0, NULL, 0, "v", 1, NULL), SPOOL_ERR__QUEUE_FULL);
    free(big);
    CHECK_ERR(spool_producer_flush(p, 30000), SPOOL_ERR_NO_ERROR);
    CHECK(reports == 4);
    CHECK_ERR(spool_produce(p, full, 0, NULL, 0, "v", 1, NULL), SPOOL_ERR_NO_ERROR);
    CHECK_ERR(spool_producer_flush(p, 30000), SPOOL_ERR_NO_ERROR);
    CHECK(reports == 5);
    CHECK_ERR(spool_delete_topic(p, full, 10000), SPOOL_ERR_NO_ERROR);
    spool_producer_destroy(p);
}

/* ---- consume ---- */

/* checks one consumed record of produce's and marks it in seen */
static void check_record(const spool_message_t *m, const char *topic, int n, int *seen) {
    CHECK_ERR(spool_message_err(m), SPOOL_ERR_NO_ERROR);
    check_view(m);
    CHECK(strcmp(spool_message_topic(m), topic) == 0);
    size_t klen, vlen;
    const char *k = spool_message_key(m, &klen);
    const char *v = spool_message_value(m, &vlen);
    if (klen == 8 && memcmp(k, "explicit", 8) == 0) {
        CHECK(v != NULL && vlen == 0 && spool_message_partition(m) == 0);
        CHECK(spool_message_timestamp(m) == EXPLICIT_TS);
        seen[n]++;
        return;
    }
    CHECK(vlen > 6 && vlen < 16 && memcmp(v, "value-", 6) == 0);
    char buf[16];
    memcpy(buf, v + 6, vlen - 6);
    buf[vlen - 6] = '\0';
    int i = atoi(buf);
    CHECK(i >= 0 && i < n);
    if (i % 3 == 2) {
        CHECK(k == NULL && klen == 0);
    } else {
        char want[16];
        snprintf(want, sizeof want, "key-%d", i % 10);
        CHECK(k != NULL && klen == strlen(want) && memcmp(k, want, klen) == 0);
    }
    CHECK(spool_message_header_count(m) == 2);
    const char *hk;
    const void *hv;
    size_t hklen, hvlen;
    CHECK_ERR(spool_message_header(m, 0, &hk, &hklen, &hv, &hvlen), SPOOL_ERR_NO_ERROR);
    CHECK(hklen == 3 && strcmp(hk, "idx") == 0 && hvlen == vlen && memcmp(hv, v, vlen) == 0);
    CHECK_ERR(spool_message_header(m, 1, &hk, NULL, &hv, &hvlen), SPOOL_ERR_NO_ERROR);
    CHECK(strcmp(hk, "null") == 0 && hv == NULL && hvlen == 0);
    CHECK_ERR(spool_message_header(m, 2, &hk, NULL, NULL, NULL), SPOOL_ERR__BAD_ARG);
    seen[i]++;
}

static void consume(const char *broker, const char *topic, int n, int parts) {
    int *seen = calloc((size_t)n + 1, sizeof(int));
    spool_consumer_t *c = spool_consumer_new(conf_with(broker, NULL), errstr, sizeof errstr);
    CHECK(c != NULL);
    for (int p = 0; p < parts; p++) CHECK_ERR(spool_consumer_assign(c, topic, p, SPOOL_OFFSET_BEGINNING), SPOOL_ERR_NO_ERROR);
    int got = 0, batches = 0;
    int64_t last[64];
    for (int p = 0; p < 64; p++) last[p] = -1;
    spool_message_t *batch[7];
    CHECK(spool_consumer_poll_batch(NULL, 0, batch, 7) == 0);
    CHECK(spool_consumer_poll_batch(c, 0, NULL, 7) == 0);
    CHECK(spool_consumer_poll_batch(c, 0, batch, 0) == 0);
    while (got < n + 1) {
        /* half of the records one by one, the rest in batches of at most 7 */
        size_t k = got < n / 2 ? ((batch[0] = spool_consumer_poll(c, 10000)) != NULL)
                               : spool_consumer_poll_batch(c, 10000, batch, 7);
        CHECK(k > 0 && k <= 7);
        batches += k > 1;
        for (size_t j = 0; j < k; j++) {
            spool_message_t *m = batch[j];
            check_record(m, topic, n, seen);
            int32_t p = spool_message_partition(m);
            CHECK(p >= 0 && p < parts && spool_message_offset(m) > last[p]); /* in offset order */
            last[p] = spool_message_offset(m);
            spool_message_destroy(m);
            got++;
        }
    }
    CHECK(batches > 0);
    for (int i = 0; i <= n; i++) CHECK(seen[i] == 1);
    CHECK(spool_consumer_poll(c, 200) == NULL); /* nothing more */
    /* seek back one record on partition 0 and read it again */
    CHECK_ERR(spool_consumer_seek(c, topic, 0, last[0]), SPOOL_ERR_NO_ERROR);
    spool_message_t *m = spool_consumer_poll(c, 10000);
    CHECK(m != NULL && spool_message_partition(m) == 0 && spool_message_offset(m) == last[0]);
    CHECK_ERR(spool_consumer_close(c), SPOOL_ERR_NO_ERROR);
    spool_consumer_destroy(c);
    spool_message_destroy(m); /* a message outlives its consumer */
    free(seen);
}

/* ---- group ---- */

/* What the rebalance callback saw of one consumer. */
struct rebalance {
    const char *topic;
    spool_consumer_t *c;
    unsigned owned; /* bit p: partition p assigned and not revoked */
    int assigns, revokes;
    int in_cb; /* set while the callback runs: it must never run twice at once */
};

static void rebalance_cb(spool_consumer_t *c, spool_rebalance_t what,
                         const spool_topic_partition_t *parts, size_t count, void *opaque) {
    struct rebalance *r = opaque;
    CHECK(c == r->c && count > 0 && r->in_cb == 0);
    r->in_cb = 1;
    unsigned bits = 0;
    for (size_t i = 0; i < count; i++) {
        CHECK(strcmp(parts[i].topic, r->topic) == 0 && parts[i].partition >= 0 && parts[i].partition < 4);
        bits |= 1u << parts[i].partition;
    }
    switch (what) {
    case SPOOL_REBALANCE_ASSIGN:
        CHECK((r->owned & bits) == 0); /* never assigned twice */
        r->owned |= bits;
        r->assigns++;
        break;
    case SPOOL_REBALANCE_REVOKE:
        CHECK((r->owned & bits) == bits); /* only what was assigned */
        /* a commit from the callback, before the partitions go (auto commit is off) */
        CHECK_ERR(spool_consumer_commit(c, 0), SPOOL_ERR_NO_ERROR);
        r->owned &= ~bits;
        r->revokes++;
        break;
    default:
        CHECK(!"unexpected rebalance event");
    }
    printf("rebalance: consumer %p %s %#x, owns %#x\n", (void *)c,
           what == SPOOL_REBALANCE_ASSIGN ? "assigned" : "revoked", bits, r->owned);
    r->in_cb = 0;
}

static void group(const char *broker, const char *topic, int n, const char *group_id) {
    const char *kv[] = {"group.id", group_id, "session.timeout.ms", "6000", "heartbeat.interval.ms", "500",
                        "enable.auto.commit", "false", NULL};
    spool_conf_t *conf = conf_with(broker, kv);
    struct rebalance rb[2] = {{topic, NULL, 0, 0, 0, 0}, {topic, NULL, 0, 0, 0, 0}};
    spool_conf_set_rebalance_cb(conf, rebalance_cb);
    spool_conf_set_rebalance_cb(NULL, rebalance_cb);
    spool_consumer_t *c[2];
    spool_conf_t *dup = spool_conf_dup(conf);
    spool_conf_set_opaque(dup, &rb[0]);
    spool_conf_set_opaque(conf, &rb[1]);
    c[0] = spool_consumer_new(dup, errstr, sizeof errstr);
    c[1] = spool_consumer_new(conf, errstr, sizeof errstr);
    CHECK(c[0] != NULL && c[1] != NULL);
    rb[0].c = c[0];
    rb[1].c = c[1];
    const char *topics[] = {topic};
    CHECK_ERR(spool_consumer_commit(c[0], 0), SPOOL_ERR__STATE); /* not subscribed yet */
    CHECK_ERR(spool_consumer_subscribe(c[0], topics, 1), SPOOL_ERR_NO_ERROR);
    CHECK_ERR(spool_consumer_subscribe(c[0], topics, 1), SPOOL_ERR__STATE);
    CHECK_ERR(spool_consumer_assign(c[0], topic, 0, 0), SPOOL_ERR__STATE);
    CHECK_ERR(spool_consumer_subscribe(c[1], topics, 1), SPOOL_ERR_NO_ERROR);
    int *seen = calloc((size_t)n + 1, sizeof(int));
    int got[2] = {0, 0};
    unsigned parts[2] = {0, 0}; /* bit p: partition p seen by consumer i */
    /* Poll both from this thread until each has records and all arrived. The first member
     * may take everything before the second joins; records come again after the rebalance
     * (nothing is committed yet), so count distinct records. */
    int distinct = 0;
    for (int round = 0; round < 4000 && (distinct < n + 1 || got[0] == 0 || got[1] == 0); round++) {
        for (int i = 0; i < 2; i++) {
            spool_message_t *m = spool_consumer_poll(c[i], 20);
            if (m == NULL) continue;
            CHECK_ERR(spool_message_err(m), SPOOL_ERR_NO_ERROR);
            int *copy = calloc((size_t)n + 1, sizeof(int));
            check_record(m, topic, n, copy);
            for (int j = 0; j <= n; j++)
                if (copy[j] && !seen[j]++) distinct++;
            free(copy);
            got[i]++;
            parts[i] |= 1u << spool_message_partition(m);
            /* the assignment reached the callback before any record of it */
            CHECK(rb[i].owned & (1u << spool_message_partition(m)));
            spool_message_destroy(m);
        }
    }
    CHECK(distinct == n + 1);
    CHECK(got[0] > 0 && got[1] > 0);
    /* the two consumers own disjoint parts of the four partitions */
    CHECK(rb[0].owned != 0 && rb[1].owned != 0 && (rb[0].owned & rb[1].owned) == 0);
    CHECK(rb[0].assigns > 0 && rb[1].assigns > 0);
    CHECK_ERR(spool_consumer_commit(c[0], 0), SPOOL_ERR_NO_ERROR);
    CHECK_ERR(spool_consumer_commit(c[1], 1), SPOOL_ERR_NO_ERROR);
    /* consumer 1 leaves: its partitions are revoked on close, on this thread, and consumer 0
     * is given all four in the rebalance that follows (served by its polls) */
    int revokes = rb[1].revokes;
    CHECK_ERR(spool_consumer_close(c[1]), SPOOL_ERR_NO_ERROR);
    CHECK(rb[1].revokes == revokes + 1 && rb[1].owned == 0);
    CHECK(spool_consumer_poll(c[1], 0) == NULL);
    spool_consumer_destroy(c[1]);
    for (int round = 0; round < 1500 && rb[0].owned != 0xf; round++) {
        spool_message_t *m = spool_consumer_poll(c[0], 20);
        if (m != NULL) {
            CHECK(rb[0].owned & (1u << spool_message_partition(m)));
            spool_message_destroy(m);
        }
    }
    CHECK(rb[0].owned == 0xf);
    CHECK_ERR(spool_consumer_close(c[0]), SPOOL_ERR_NO_ERROR);
    CHECK(rb[0].owned == 0 && rb[0].revokes > 0);
    CHECK(spool_consumer_poll(c[0], 0) == NULL);
    spool_consumer_destroy(c[0]);
    CHECK(rb[0].in_cb == 0 && rb[1].in_cb == 0);
    printf("group: consumer 0 got %d records (partitions %#x), consumer 1 %d (%#x)\n", got[0], parts[0], got[1], parts[1]);
    free(seen);
}

/* ---- offsets ---- */

/* first_offsets polls a new member of group until it has a record of each of the three
 * partitions of topic, and stores the offset of each partition's first record. */
static void first_offsets(const char *broker, const char *topic, const char *group_id,
                          int64_t first[3]) {
    const char *kv[] = {"group.id", group_id, "enable.auto.commit", "false", NULL};
    spool_consumer_t *c = spool_consumer_new(conf_with(broker, kv), errstr, sizeof errstr);
    CHECK(c != NULL);
    const char *topics[] = {topic};
    CHECK_ERR(spool_consumer_subscribe(c, topics, 1), SPOOL_ERR_NO_ERROR);
    for (int p = 0; p < 3; p++) first[p] = -1;
    for (int round = 0; round < 3000 && (first[0] < 0 || first[1] < 0 || first[2] < 0); round++) {
        spool_message_t *m = spool_consumer_poll(c, 20);
        if (m == NULL) continue;
        CHECK_ERR(spool_message_err(m), SPOOL_ERR_NO_ERROR);
        int32_t p = spool_message_partition(m);
        CHECK(p >= 0 && p < 3);
        if (first[p] < 0) first[p] = spool_message_offset(m);
        spool_message_destroy(m);
    }
    CHECK(first[0] >= 0 && first[1] >= 0 && first[2] >= 0);
    CHECK_ERR(spool_consumer_close(c), SPOOL_ERR_NO_ERROR); /* commits nothing: auto commit is off */
    spool_consumer_destroy(c);
}

/* The offset commit callback's calls, in order: err, then partition:offset pairs. */
struct commits {
    spool_consumer_t *consumer;
    int calls;
    spool_err_t errs[8];
    char log[512];
};

static void on_commit(spool_consumer_t *c, spool_err_t err, const spool_topic_partition_offset_t *offsets,
                      size_t count, void *opaque) {
    struct commits *cs = opaque;
    CHECK(c == cs->consumer);
    if (cs->calls < 8) cs->errs[cs->calls] = err;
    cs->calls++;
    size_t at = strlen(cs->log);
    at += (size_t)snprintf(cs->log + at, sizeof cs->log - at, "%s", at ? ";" : "");
    for (size_t i = 0; i < count; i++) {
        CHECK(offsets[i].topic != NULL && strlen(offsets[i].topic) > 0);
        at += (size_t)snprintf(cs->log + at, sizeof cs->log - at, " %d:%" PRId64, (int)offsets[i].partition,
                               offsets[i].offset);
    }
}

static void offsets(const char *broker, const char *topic, const char *group_id) {
    int64_t first[3];
    first_offsets(broker, topic, group_id, first); /* nothing committed: from the start */
    CHECK(first[0] == 0 && first[1] == 0 && first[2] == 0);

    /* A short request timeout: the refused commit below is retried (UNKNOWN_TOPIC_OR_PARTITION
     * is retriable) until it runs out. */
    const char *kv[] = {"group.id", group_id, "enable.auto.commit", "false", "request.timeout.ms", "3000", NULL};
    struct commits cs = {0};
    spool_conf_t *conf = conf_with(broker, kv);
    spool_conf_set_offset_commit_cb(conf, on_commit);
    spool_conf_set_opaque(conf, &cs);
    spool_consumer_t *c = cs.consumer = spool_consumer_new(conf, errstr, sizeof errstr);
    CHECK(c != NULL);
    const char *topics[] = {topic};
    spool_topic_partition_offset_t want[3] = {{topic, 0, 5}, {topic, 1, 7}, {topic, 2, 3}};
    CHECK_ERR(spool_consumer_commit_offsets(c, want, 3, 0), SPOOL_ERR__STATE); /* not subscribed */
    CHECK_ERR(spool_consumer_subscribe(c, topics, 1), SPOOL_ERR_NO_ERROR);
    spool_message_t *m = NULL;
    for (int round = 0; round < 3000 && m == NULL; round++) m = spool_consumer_poll(c, 20);
    CHECK(m != NULL); /* a member of the group now */
    spool_message_destroy(m);
    CHECK_ERR(spool_consumer_commit_offsets(c, want, 0, 0), SPOOL_ERR_NO_ERROR); /* nothing */
    /* Commits report to the callback, in order, inside a later poll: an asynchronous one that
     * the group refuses (a partition the topic does not have), then one it stores. */
    spool_topic_partition_offset_t missing = {topic, 9, 1};
    CHECK_ERR(spool_consumer_commit_offsets(c, &missing, 1, 1), SPOOL_ERR_NO_ERROR);
    CHECK_ERR(spool_consumer_commit_offsets(c, want, 2, 1), SPOOL_ERR_NO_ERROR);
    CHECK(cs.calls == 0); /* only inside poll and close */
    for (time_t end = time(NULL) + 30; cs.calls < 2 && time(NULL) < end;) {
        m = spool_consumer_poll(c, 20); /* records come back at once, until the topic's end */
        if (m != NULL) spool_message_destroy(m);
    }
    if (cs.calls != 2 || cs.errs[0] == SPOOL_ERR_NO_ERROR || cs.errs[1] != SPOOL_ERR_NO_ERROR ||
        strcmp(cs.log, " 9:1; 0:5 1:7") != 0) {
        fprintf(stderr, "offset commit callback: %d calls (errors %d, %d) of \"%s\", want 2 (a failure, then "
                "none) of \" 9:1; 0:5 1:7\"\n", cs.calls, (int)cs.errs[0], (int)cs.errs[1], cs.log);
        exit(1);
    }
    /* The refused one went to the callback, so the next commit does not return it. A
     * synchronous commit returns its outcome, and reaches the callback too, inside a later
     * poll or close. */
    CHECK_ERR(spool_consumer_commit_offsets(c, &want[2], 1, 0), SPOOL_ERR_NO_ERROR);
    CHECK(cs.calls == 2);
    CHECK_ERR(spool_consumer_close(c), SPOOL_ERR_NO_ERROR);
    CHECK(cs.calls == 3 && strcmp(cs.errs[2] == 0 ? cs.log : "", " 9:1; 0:5 1:7; 2:3") == 0);
    CHECK_ERR(spool_consumer_commit_offsets(c, want, 3, 0), SPOOL_ERR__CLOSED);
    spool_consumer_destroy(c);

    first_offsets(broker, topic, group_id, first);
    for (int p = 0; p < 3; p++) CHECK(first[p] == want[p].offset);
    printf("offsets: the next member started at %" PRId64 ", %" PRId64 ", %" PRId64
           "; the refused commit was reported as %s\n", first[0], first[1], first[2], spool_err2str(cs.errs[0]));
}

/* ---- down ---- */

static void down(const char *broker) {
    struct delivery d = {-1, SPOOL_ERR__TRANSPORT, 0, 0, calloc(4, sizeof(int))};
    const char *kv[] = {"message.timeout.ms", "1500", "request.timeout.ms", "500", "socket.connection.setup.timeout.ms", "200", NULL};
    spool_conf_t *conf = conf_with(broker, kv);
    spool_conf_set_dr_cb(conf, dr_cb);
    spool_conf_set_opaque(conf, &d);
    spool_producer_t *p = spool_producer_new(conf, errstr, sizeof errstr);
    CHECK(p != NULL);
    for (int i = 0; i < 3; i++) CHECK_ERR(spool_produce(p, "nowhere", SPOOL_PARTITION_UA, NULL, 0, "v", 1, (void *)(intptr_t)i), SPOOL_ERR_NO_ERROR);
    spool_producer_flush(p, 10000);
    CHECK(d.reports == 3 && d.failed == 3);
    spool_producer_destroy(p);
    free(d.seen);

    spool_consumer_t *c = spool_consumer_new(conf_with(broker, kv), errstr, sizeof errstr);
    CHECK_ERR(spool_consumer_assign(c, "nowhere", 0, SPOOL_OFFSET_BEGINNING), SPOOL_ERR_NO_ERROR);
    spool_message_t *m = spool_consumer_poll(c, 1000);
    if (m != NULL) { /* an error message, never a record */
        CHECK(spool_message_err(m) != SPOOL_ERR_NO_ERROR && spool_message_errstr(m)[0] != '\0');
        spool_message_destroy(m);
    }
    spool_consumer_destroy(c);
}

/* ---- threads ---- */

struct shared {
    const char *topic;
    int n, per_thread;
    spool_producer_t *p;
    spool_consumer_t *c;
    pthread_mutex_t mu;
    int reports, consumed, done_producing;
    int *seen;
};

static void threads_dr_cb(spool_producer_t *p, const spool_message_t *m, void *opaque) {
    (void)p;
    struct shared *s = opaque;
    CHECK_ERR(spool_message_err(m), SPOOL_ERR_NO_ERROR);
    pthread_mutex_lock(&s->mu);
    s->reports++;
    pthread_mutex_unlock(&s->mu);
}

static void *produce_thread(void *arg) {
    struct shared *s = ((void **)arg)[0];
    int t = (int)(intptr_t)((void **)arg)[1];
    for (int i = 0; i < s->per_thread; i++) {
        char v[32];
        int len = snprintf(v, sizeof v, "t%d-%d", t, i);
        CHECK_ERR(spool_produce(s->p, s->topic, SPOOL_PARTITION_UA, NULL, 0, v, (size_t)len, NULL), SPOOL_ERR_NO_ERROR);
    }
    return NULL;
}

static void *poll_reports_thread(void *arg) {
    struct shared *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        int finished = s->done_producing && s->reports == s->n;
        pthread_mutex_unlock(&s->mu);
        if (finished) return NULL;
        spool_producer_poll(s->p, 50);
    }
}

static void *consume_thread(void *arg) {
    struct shared *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        int finished = s->consumed >= s->n;
        pthread_mutex_unlock(&s->mu);
        if (finished) return NULL;
        spool_message_t *m = spool_consumer_poll(s->c, 100);
        if (m == NULL) continue;
        CHECK_ERR(spool_message_err(m), SPOOL_ERR_NO_ERROR);
        size_t len;
        const char *v = spool_message_value(m, &len);
        int t, i;
        char buf[32];
        CHECK(len < sizeof buf);
        memcpy(buf, v, len);
        buf[len] = '\0';
        CHECK(sscanf(buf, "t%d-%d", &t, &i) == 2 && t >= 0 && t < 4 && i >= 0 && i < s->per_thread);
        pthread_mutex_lock(&s->mu);
        s->seen[t * s->per_thread + i]++;
        s->consumed++;
        pthread_mutex_unlock(&s->mu);
        spool_message_destroy(m);
    }
}

static void threads(const char *broker, const char *topic, int n) {
    struct shared s = {.topic = topic, .n = n - n % 4, .per_thread = n / 4};
    pthread_mutex_init(&s.mu, NULL);
    s.seen = calloc((size_t)s.n, sizeof(int));
    spool_conf_t *conf = conf_with(broker, NULL);
    spool_conf_set_dr_cb(conf, threads_dr_cb);
    spool_conf_set_opaque(conf, &s);
    s.p = spool_producer_new(conf, errstr, sizeof errstr);
    CHECK(s.p != NULL);
    pthread_t producers[4], poller, consumers[2];
    void *args[4][2];
    CHECK(pthread_create(&poller, NULL, poll_reports_thread, &s) == 0);
    for (int t = 0; t < 4; t++) {
        args[t][0] = &s;
        args[t][1] = (void *)(intptr_t)t;
        CHECK(pthread_create(&producers[t], NULL, produce_thread, args[t]) == 0);
    }
    for (int t = 0; t < 4; t++) pthread_join(producers[t], NULL);
    CHECK_ERR(spool_producer_flush(s.p, 30000), SPOOL_ERR_NO_ERROR);
    pthread_mutex_lock(&s.mu);
    s.done_producing = 1;
    pthread_mutex_unlock(&s.mu);
    pthread_join(poller, NULL);
    CHECK(s.reports == s.n);
    spool_producer_destroy(s.p);

    s.c = spool_consumer_new(conf_with(broker, NULL), errstr, sizeof errstr);
    CHECK(s.c != NULL);
    CHECK_ERR(spool_consumer_assign(s.c, topic, 0, SPOOL_OFFSET_BEGINNING), SPOOL_ERR_NO_ERROR);
    for (int t = 0; t < 2; t++) CHECK(pthread_create(&consumers[t], NULL, consume_thread, &s) == 0);
    for (int t = 0; t < 2; t++) pthread_join(consumers[t], NULL);
    for (int i = 0; i < s.n; i++) CHECK(s.seen[i] == 1);
    spool_consumer_destroy(s.c);
    free(s.seen);
    pthread_mutex_destroy(&s.mu);
}

/* ---- leak ---- */

static void leak(const char *broker) {
    const char *kv[] = {"group.id", "g", NULL};
    spool_consumer_t *c = spool_consumer_new(conf_with(broker, kv), errstr, sizeof errstr);
    spool_message_t *m = spool_consumer_poll(c, 0); /* not subscribed: an error message */
    CHECK(m != NULL);
    CHECK_ERR(spool_message_err(m), SPOOL_ERR__STATE);
    spool_consumer_destroy(c);
    /* m is not destroyed */
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s api|produce|consume|group|down BROKER [ARGS...]\n", argv[0]);
        return 2;
    }
    const char *scenario = argv[1], *broker = argv[2];
    if (strcmp(scenario, "api") == 0) {
        api(broker);
    } else if (strcmp(scenario, "produce") == 0 && argc == 5) {
        produce(broker, argv[3], atoi(argv[4]));
        queue_full(broker, argv[3]);
    } else if (strcmp(scenario, "consume") == 0 && argc == 6) {
        consume(broker, argv[3], atoi(argv[4]), atoi(argv[5]));
    } else if (strcmp(scenario, "group") == 0 && argc == 6) {
        group(broker, argv[3], atoi(argv[4]), argv[5]);
    } else if (strcmp(scenario, "offsets") == 0 && argc == 5) {
        offsets(broker, argv[3], argv[4]);
    } else if (strcmp(scenario, "down") == 0) {
        down(broker);
    } else if (strcmp(scenario, "threads") == 0 && argc == 5) {
        threads(broker, argv[3], atoi(argv[4]));
    } else if (strcmp(scenario, "leak") == 0) {
        leak(broker);
    } else {
        fprintf(stderr, "unknown scenario or arguments: %s\n", scenario);
        return 2;
    }
    return scenario_done(scenario);
}

/* spool_bench.c: libspool's side of the benchmark against librdkafka (rdkafka_bench.c, the
 * same workload): produce N records of SIZE bytes without keys to TOPIC (acks=all,
 * linger.ms=5, batch.size=1 MiB), then consume them from its partitions.
 * usage: spool_bench BROKER TOPIC PARTITIONS N SIZE
 * With SPOOL_BENCH_BATCH=K in the environment it produces with spool_produce_batch, K
 * records a call, instead of one spool_produce per record. SPOOL_BENCH_CONF="key=value ..."
 * sets more configuration keys.
 * prints: produce_rps consume_rps peak_rss_kib */
#include <spool.h>

#include "bench.h"

static void on_delivery(spool_producer_t *p, const spool_message_t *m, void *opaque) {
    (void)p;
    struct bench *b = opaque;
    if (spool_message_err(m) == SPOOL_ERR_NO_ERROR)
        b->delivered++;
    else
        b->failed++;
}

static spool_conf_t *conf(const char *broker) {
    char errstr[256];
    spool_conf_t *c = spool_conf_new();
    const char *kv[] = {"bootstrap.servers", broker, "acks", "all", "linger.ms", "5", "batch.size", "1048576", NULL};
    for (const char **k = kv; *k; k += 2)
        if (spool_conf_set(c, k[0], k[1], errstr, sizeof errstr) != SPOOL_CONF_OK) {
            fprintf(stderr, "%s\n", errstr);
            exit(1);
        }
    /* SPOOL_BENCH_CONF="key=value key=value": more keys, for trying other settings */
    const char *extra = getenv("SPOOL_BENCH_CONF");
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", extra ? extra : "");
    for (char *save = NULL, *kv = strtok_r(buf, " ", &save); kv; kv = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(kv, '=');
        if (eq == NULL) {
            fprintf(stderr, "SPOOL_BENCH_CONF: %s is not key=value\n", kv);
            exit(1);
        }
        *eq = 0;
        if (spool_conf_set(c, kv, eq + 1, errstr, sizeof errstr) != SPOOL_CONF_OK) {
            fprintf(stderr, "%s\n", errstr);
            exit(1);
        }
    }
    return c;
}

int main(int argc, char **argv) {
    struct bench b = bench_args(argc, argv);
    char errstr[256];
    spool_conf_t *pc = conf(b.broker);
    spool_conf_set_dr_cb(pc, on_delivery);
    spool_conf_set_opaque(pc, &b);
    spool_producer_t *p = spool_producer_new(pc, errstr, sizeof errstr);
    if (p == NULL) {
        fprintf(stderr, "%s\n", errstr);
        return 1;
    }
    const char *batch_env = getenv("SPOOL_BENCH_BATCH");
    long per_call = batch_env ? atol(batch_env) : 0;
    spool_record_t *recs = NULL;
    if (per_call > 0) {
        recs = calloc((size_t)per_call, sizeof *recs);
        for (long j = 0; j < per_call; j++)
            recs[j] = (spool_record_t){SPOOL_PARTITION_UA, NULL, 0, b.value, b.size, NULL, 0, NULL};
    }
    double t0 = now();
    if (per_call > 0) {
        for (long i = 0; i < b.n; i += per_call) {
            long k = b.n - i < per_call ? b.n - i : per_call;
            spool_err_t err;
            while ((err = spool_produce_batch(p, b.topic, recs, (size_t)k)) == SPOOL_ERR__QUEUE_FULL)
                spool_producer_poll(p, 10);
            if (err) {
                fprintf(stderr, "produce: %s\n", spool_err2str(err));
                return 1;
            }
            spool_producer_poll(p, 0);
        }
    } else {
        for (long i = 0; i < b.n; i++) {
            spool_err_t err;
            while ((err = spool_produce(p, b.topic, SPOOL_PARTITION_UA, NULL, 0, b.value, b.size, NULL)) ==
                   SPOOL_ERR__QUEUE_FULL)
                spool_producer_poll(p, 10);
            if (err) {
                fprintf(stderr, "produce: %s\n", spool_err2str(err));
                return 1;
            }
            if ((i & 1023) == 0) spool_producer_poll(p, 0);
        }
    }
    spool_producer_flush(p, 120000);
    double produce_s = now() - t0;
    spool_producer_destroy(p);
    free(recs);
    bench_delivered(&b);
    bench_phase("produce");

    spool_consumer_t *c = spool_consumer_new(conf(b.broker), errstr, sizeof errstr);
    for (int i = 0; i < b.partitions; i++) spool_consumer_assign(c, b.topic, i, SPOOL_OFFSET_BEGINNING);
    spool_message_t *batch[1024];
    long got = 0;
    t0 = now();
    while (got < b.n) {
        size_t k = spool_consumer_poll_batch(c, 10000, batch, 1024);
        if (k == 0) {
            fprintf(stderr, "consumed %ld of %ld\n", got, b.n);
            return 1;
        }
        for (size_t j = 0; j < k; j++) {
            if (spool_message_err(batch[j]) == SPOOL_ERR_NO_ERROR) got++;
            spool_message_destroy(batch[j]);
        }
    }
    double consume_s = now() - t0;
    spool_consumer_destroy(c);
    bench_report(&b, produce_s, consume_s);
    return 0;
}

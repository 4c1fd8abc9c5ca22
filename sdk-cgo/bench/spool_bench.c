/* spool_bench.c: libspool's side of the benchmark against librdkafka (rdkafka_bench.c, the
 * same workload): produce N records of SIZE bytes without keys to TOPIC (acks=all,
 * linger.ms=5, batch.size=1 MiB), then consume them from its partitions.
 * usage: spool_bench BROKER TOPIC PARTITIONS N SIZE
 * prints: produce_rps consume_rps peak_rss_kib */
#include <spool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static long delivered, failed;

static void on_delivery(spool_producer_t *p, const spool_message_t *m, void *opaque) {
    (void)p;
    (void)opaque;
    if (spool_message_err(m) == SPOOL_ERR_NO_ERROR)
        delivered++;
    else
        failed++;
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
    return c;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: %s BROKER TOPIC PARTITIONS N SIZE\n", argv[0]);
        return 2;
    }
    const char *broker = argv[1], *topic = argv[2];
    int parts = atoi(argv[3]);
    long n = atol(argv[4]);
    size_t size = (size_t)atol(argv[5]);
    char errstr[256];
    char *value = malloc(size);
    memset(value, 'v', size);

    spool_conf_t *pc = conf(broker);
    spool_conf_set_dr_cb(pc, on_delivery);
    spool_producer_t *p = spool_producer_new(pc, errstr, sizeof errstr);
    if (p == NULL) {
        fprintf(stderr, "%s\n", errstr);
        return 1;
    }
    double t0 = now();
    for (long i = 0; i < n; i++) {
        spool_produce(p, topic, SPOOL_PARTITION_UA, NULL, 0, value, size, NULL);
        if ((i & 1023) == 0) spool_producer_poll(p, 0);
    }
    spool_producer_flush(p, 120000);
    double produce_s = now() - t0;
    spool_producer_destroy(p);
    if (delivered != n || failed != 0) {
        fprintf(stderr, "delivered %ld, failed %ld of %ld\n", delivered, failed, n);
        return 1;
    }

    spool_consumer_t *c = spool_consumer_new(conf(broker), errstr, sizeof errstr);
    for (int i = 0; i < parts; i++) spool_consumer_assign(c, topic, i, SPOOL_OFFSET_BEGINNING);
    spool_message_t *batch[1024];
    long got = 0;
    t0 = now();
    while (got < n) {
        size_t k = spool_consumer_poll_batch(c, 10000, batch, 1024);
        if (k == 0) {
            fprintf(stderr, "consumed %ld of %ld\n", got, n);
            return 1;
        }
        for (size_t j = 0; j < k; j++) {
            if (spool_message_err(batch[j]) == SPOOL_ERR_NO_ERROR) got++;
            spool_message_destroy(batch[j]);
        }
    }
    double consume_s = now() - t0;
    spool_consumer_destroy(c);
    free(value);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("%.0f %.0f %ld\n", (double)n / produce_s, (double)n / consume_s, ru.ru_maxrss);
    return 0;
}

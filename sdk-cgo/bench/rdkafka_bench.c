/* rdkafka_bench.c: librdkafka's side of the benchmark, the workload of spool_bench.c.
 * usage: rdkafka_bench BROKER TOPIC PARTITIONS N SIZE
 * prints: produce_rps consume_rps peak_rss_kib */
#include <librdkafka/rdkafka.h>
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

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    (void)rk;
    (void)opaque;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR)
        delivered++;
    else
        failed++;
}

static rd_kafka_conf_t *conf(const char *broker, int consumer) {
    char errstr[256];
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    const char *kv[] = {"bootstrap.servers", broker, "acks", "all", "linger.ms", "5", "batch.size", "1048576",
                        consumer ? "group.id" : NULL, "bench", "enable.auto.commit", "false", NULL};
    for (const char **k = kv; *k; k += 2)
        if (rd_kafka_conf_set(c, k[0], k[1], errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
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

    rd_kafka_conf_t *pc = conf(broker, 0);
    rd_kafka_conf_set_dr_msg_cb(pc, on_delivery);
    rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, pc, errstr, sizeof errstr);
    if (p == NULL) {
        fprintf(stderr, "%s\n", errstr);
        return 1;
    }
    double t0 = now();
    for (long i = 0; i < n; i++) {
        rd_kafka_resp_err_t err;
        while ((err = rd_kafka_producev(p, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_VALUE(value, size),
                                        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END)) ==
               RD_KAFKA_RESP_ERR__QUEUE_FULL)
            rd_kafka_poll(p, 10);
        if (err) {
            fprintf(stderr, "produce: %s\n", rd_kafka_err2str(err));
            return 1;
        }
        if ((i & 1023) == 0) rd_kafka_poll(p, 0);
    }
    rd_kafka_flush(p, 120000);
    double produce_s = now() - t0;
    rd_kafka_destroy(p);
    if (delivered != n || failed != 0) {
        fprintf(stderr, "delivered %ld, failed %ld of %ld\n", delivered, failed, n);
        return 1;
    }

    rd_kafka_t *c = rd_kafka_new(RD_KAFKA_CONSUMER, conf(broker, 1), errstr, sizeof errstr);
    rd_kafka_topic_partition_list_t *tps = rd_kafka_topic_partition_list_new(parts);
    for (int i = 0; i < parts; i++)
        rd_kafka_topic_partition_list_add(tps, topic, i)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_assign(c, tps);
    rd_kafka_topic_partition_list_destroy(tps);
    long got = 0;
    t0 = now();
    while (got < n) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 10000);
        if (m == NULL) {
            fprintf(stderr, "consumed %ld of %ld\n", got, n);
            return 1;
        }
        if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) got++;
        rd_kafka_message_destroy(m);
    }
    double consume_s = now() - t0;
    rd_kafka_consumer_close(c);
    rd_kafka_destroy(c);
    free(value);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("%.0f %.0f %ld\n", (double)n / produce_s, (double)n / consume_s, ru.ru_maxrss);
    return 0;
}

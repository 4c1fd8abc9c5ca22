/* rdkafka_bench.c: librdkafka's side of the benchmark, the workload of spool_bench.c.
 * usage: rdkafka_bench BROKER TOPIC PARTITIONS N SIZE
 * prints: produce_rps consume_rps peak_rss_kib */
#include <librdkafka/rdkafka.h>

#include "bench.h"

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    (void)rk;
    struct bench *b = opaque;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR)
        b->delivered++;
    else
        b->failed++;
}

static rd_kafka_conf_t *conf(const char *broker, int consumer) {
    char errstr[256];
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    const char *producer_kv[] = {"bootstrap.servers", broker, "acks", "all", "linger.ms", "5", "batch.size", "1048576", NULL};
    const char *consumer_kv[] = {"bootstrap.servers", broker, "group.id", "bench", "enable.auto.commit", "false", NULL};
    for (const char **k = consumer ? consumer_kv : producer_kv; *k; k += 2)
        if (rd_kafka_conf_set(c, k[0], k[1], errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
            fprintf(stderr, "%s\n", errstr);
            exit(1);
        }
    return c;
}

int main(int argc, char **argv) {
    struct bench b = bench_args(argc, argv);
    char errstr[256];
    rd_kafka_conf_t *pc = conf(b.broker, 0);
    rd_kafka_conf_set_dr_msg_cb(pc, on_delivery);
    rd_kafka_conf_set_opaque(pc, &b);
    rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, pc, errstr, sizeof errstr);
    if (p == NULL) {
        fprintf(stderr, "%s\n", errstr);
        return 1;
    }
    double t0 = now();
    for (long i = 0; i < b.n; i++) {
        rd_kafka_resp_err_t err;
        while ((err = rd_kafka_producev(p, RD_KAFKA_V_TOPIC(b.topic), RD_KAFKA_V_VALUE(b.value, b.size),
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
    bench_delivered(&b);
    bench_phase("produce");

    rd_kafka_t *c = rd_kafka_new(RD_KAFKA_CONSUMER, conf(b.broker, 1), errstr, sizeof errstr);
    rd_kafka_topic_partition_list_t *tps = rd_kafka_topic_partition_list_new(b.partitions);
    for (int i = 0; i < b.partitions; i++)
        rd_kafka_topic_partition_list_add(tps, b.topic, i)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_assign(c, tps);
    rd_kafka_topic_partition_list_destroy(tps);
    long got = 0;
    t0 = now();
    while (got < b.n) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 10000);
        if (m == NULL) {
            fprintf(stderr, "consumed %ld of %ld\n", got, b.n);
            return 1;
        }
        if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) got++;
        rd_kafka_message_destroy(m);
    }
    double consume_s = now() - t0;
    rd_kafka_consumer_close(c);
    rd_kafka_destroy(c);
    bench_report(&b, produce_s, consume_s);
    return 0;
}

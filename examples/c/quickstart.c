/* quickstart.c: produce three records with libspool, then read them back in a consumer
 * group. Build and run (see sdk-cgo/README.md):
 *
 *   cc -o quickstart examples/c/quickstart.c $(pkg-config --cflags --libs spool)
 *   ./quickstart 127.0.0.1:9092
 *
 * The first run creates the topic; a second run finds it there and reads only its own
 * three records, the group having committed the first run's. */
#include <stdio.h>
#include <string.h>

#include <spool.h>

static const char *topic = "c-quickstart";

static void on_delivery(spool_producer_t *p, const spool_message_t *msg, void *opaque) {
    (void)p;
    int *failed = opaque;
    size_t key_len;
    const char *key = spool_message_key(msg, &key_len);
    if (spool_message_err(msg) != SPOOL_ERR_NO_ERROR) {
        fprintf(stderr, "delivery of %.*s failed: %s\n", (int)key_len, key, spool_message_errstr(msg));
        (*failed)++;
        return;
    }
    printf("delivered %.*s to %s[%d]\n", (int)key_len, key, spool_message_topic(msg),
           (int)spool_message_partition(msg));
}

/* new_conf makes a configuration for brokers, with extra key/value pairs (NULL-ended). */
static spool_conf_t *new_conf(const char *brokers, const char **kv) {
    char errstr[256];
    spool_conf_t *conf = spool_conf_new();
    if (spool_conf_set(conf, "bootstrap.servers", brokers, errstr, sizeof errstr) != SPOOL_CONF_OK) {
        fprintf(stderr, "%s\n", errstr);
        spool_conf_destroy(conf);
        return NULL;
    }
    for (; kv != NULL && *kv != NULL; kv += 2) {
        if (spool_conf_set(conf, kv[0], kv[1], errstr, sizeof errstr) != SPOOL_CONF_OK) {
            fprintf(stderr, "%s\n", errstr);
            spool_conf_destroy(conf);
            return NULL;
        }
    }
    return conf;
}

static int produce(const char *brokers) {
    char errstr[256];
    int failed = 0;
    spool_conf_t *conf = new_conf(brokers, NULL);
    if (conf == NULL) return 1;
    spool_conf_set_dr_cb(conf, on_delivery);
    spool_conf_set_opaque(conf, &failed);
    spool_producer_t *p = spool_producer_new(conf, errstr, sizeof errstr);
    if (p == NULL) {
        fprintf(stderr, "%s\n", errstr);
        spool_conf_destroy(conf);
        return 1;
    }
    spool_err_t err = spool_create_topic(p, topic, 3, -1, 10000);
    if (err != SPOOL_ERR_NO_ERROR && err != SPOOL_RESP_ERR_TOPIC_ALREADY_EXISTS) {
        fprintf(stderr, "create topic: %s\n", spool_err2str(err));
        spool_producer_destroy(p);
        return 1;
    }
    const char *keys[] = {"alice", "bob", "carol"};
    for (int i = 0; i < 3; i++) {
        char value[32];
        int n = snprintf(value, sizeof value, "hello %s", keys[i]);
        spool_err_t err = spool_produce(p, topic, SPOOL_PARTITION_UA, keys[i], strlen(keys[i]), value,
                                        (size_t)n, NULL);
        if (err != SPOOL_ERR_NO_ERROR) fprintf(stderr, "produce: %s\n", spool_err2str(err));
    }
    /* flush sends what is buffered and runs on_delivery for every record, here */
    err = spool_producer_flush(p, 10000);
    spool_producer_destroy(p);
    if (err != SPOOL_ERR_NO_ERROR) fprintf(stderr, "flush: %s\n", spool_err2str(err));
    return err != SPOOL_ERR_NO_ERROR || failed > 0;
}

static int consume(const char *brokers) {
    char errstr[256];
    const char *kv[] = {"group.id", "c-quickstart", "auto.offset.reset", "earliest", NULL};
    spool_conf_t *conf = new_conf(brokers, kv);
    if (conf == NULL) return 1;
    spool_consumer_t *c = spool_consumer_new(conf, errstr, sizeof errstr);
    if (c == NULL) {
        fprintf(stderr, "%s\n", errstr);
        spool_conf_destroy(conf);
        return 1;
    }
    const char *topics[] = {topic};
    spool_consumer_subscribe(c, topics, 1);
    int got = 0, polls = 0;
    while (got < 3 && polls++ < 30) {
        spool_message_t *msg = spool_consumer_poll(c, 1000); /* NULL: nothing within 1s */
        if (msg == NULL) continue;
        if (spool_message_err(msg) != SPOOL_ERR_NO_ERROR) {
            fprintf(stderr, "poll: %s\n", spool_message_errstr(msg));
        } else {
            size_t key_len, value_len;
            const char *key = spool_message_key(msg, &key_len);
            const char *value = spool_message_value(msg, &value_len);
            printf("consumed %.*s=%.*s\n", (int)key_len, key, (int)value_len, value);
            got++;
        }
        spool_message_destroy(msg);
    }
    /* close commits the offsets of what poll returned and leaves the group */
    spool_err_t err = spool_consumer_close(c);
    spool_consumer_destroy(c);
    return got < 3 || err != SPOOL_ERR_NO_ERROR;
}

int main(int argc, char **argv) {
    const char *brokers = argc > 1 ? argv[1] : "127.0.0.1:9092";
    printf("libspool %s\n", spool_version());
    if (produce(brokers) != 0) return 1;
    return consume(brokers);
}

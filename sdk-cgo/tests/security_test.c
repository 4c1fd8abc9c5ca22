/* security_test.c: libspool over TLS and SASL, configured with librdkafka's keys, run by
 * security_ctest_test.go against a real broker, built with -Wall -Wextra -Werror and run
 * plain, under AddressSanitizer and under valgrind.
 *
 * usage: security_test SCENARIO BROKER CA-FILE USER PASSWORD TOPIC [N]
 *   roundtrip  produce N records over SASL_SSL with SCRAM-SHA-512, then consume them back
 *   refused    a wrong password: the delivery report says SASL_AUTHENTICATION_FAILED, and a
 *              consumer's poll reports the same error
 * Both end by checking that no handle is left. Exit 0 on success; a failed check prints where
 * and exits 1. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <spool.h>

#include "check.h"

static char errstr[512];

/* secure_conf is the configuration of a SASL_SSL client with SCRAM-SHA-512, as a
 * librdkafka program would write it. */
static spool_conf_t *secure_conf(const char *broker, const char *ca, const char *user, const char *pass) {
    const char *kv[] = {
        "bootstrap.servers", broker,
        "security.protocol", "SASL_SSL",
        "ssl.ca.location",   ca,
        "sasl.mechanisms",   "SCRAM-SHA-512",
        "sasl.username",     user,
        "sasl.password",     pass,
        NULL,
    };
    spool_conf_t *conf = spool_conf_new();
    CHECK(conf != NULL);
    for (const char *const *p = kv; p[0] != NULL; p += 2) {
        if (spool_conf_set(conf, p[0], p[1], errstr, sizeof errstr) != SPOOL_CONF_OK) {
            fprintf(stderr, "conf %s: %s\n", p[0], errstr);
            exit(1);
        }
    }
    return conf;
}

/* bad_values: the security keys check their values when set, and their combination in _new */
static void bad_values(const char *broker) {
    spool_conf_t *conf = spool_conf_new();
    CHECK(spool_conf_set(conf, "security.protocol", "tls", errstr, sizeof errstr) == SPOOL_CONF_INVALID);
    CHECK(strstr(errstr, "security.protocol") != NULL);
    CHECK(spool_conf_set(conf, "sasl.mechanisms", "GSSAPI", errstr, sizeof errstr) == SPOOL_CONF_INVALID);
    CHECK(spool_conf_set(conf, "sasl.mechanism", "scram-sha-256", errstr, sizeof errstr) == SPOOL_CONF_OK);
    char val[32];
    size_t val_size = sizeof val;
    CHECK(spool_conf_get(conf, "sasl.mechanisms", val, &val_size) == SPOOL_CONF_OK);
    CHECK(strcmp(val, "SCRAM-SHA-256") == 0);
    CHECK(spool_conf_set(conf, "bootstrap.servers", broker, errstr, sizeof errstr) == SPOOL_CONF_OK);
    CHECK(spool_conf_set(conf, "security.protocol", "sasl_ssl", errstr, sizeof errstr) == SPOOL_CONF_OK);
    /* no sasl.username: refused by _new, and the conf stays the caller's */
    CHECK(spool_producer_new(conf, errstr, sizeof errstr) == NULL);
    CHECK(strstr(errstr, "sasl.username") != NULL);
    spool_conf_destroy(conf);
}

struct reports {
    int ok, failed;
    spool_err_t last_err;
    char last_errstr[512];
};

static void dr_cb(spool_producer_t *p, const spool_message_t *m, void *opaque) {
    struct reports *r = opaque;
    CHECK(p != NULL);
    if (spool_message_err(m) != SPOOL_ERR_NO_ERROR) {
        r->failed++;
        r->last_err = spool_message_err(m);
        snprintf(r->last_errstr, sizeof r->last_errstr, "%s", spool_message_errstr(m));
        return;
    }
    r->ok++;
}

static void roundtrip(const char *broker, const char *ca, const char *user, const char *pass, const char *topic, int n) {
    bad_values(broker);
    struct reports r = {0, 0, SPOOL_ERR_NO_ERROR, ""};
    spool_conf_t *conf = secure_conf(broker, ca, user, pass);
    spool_conf_set_dr_cb(conf, dr_cb);
    spool_conf_set_opaque(conf, &r);
    spool_producer_t *p = spool_producer_new(conf, errstr, sizeof errstr);
    CHECK(p != NULL);
    for (int i = 0; i < n; i++) {
        char v[32];
        int len = snprintf(v, sizeof v, "secure-%d", i);
        CHECK_ERR(spool_produce(p, topic, SPOOL_PARTITION_UA, NULL, 0, v, (size_t)len, NULL), SPOOL_ERR_NO_ERROR);
    }
    CHECK_ERR(spool_producer_flush(p, 30000), SPOOL_ERR_NO_ERROR);
    if (r.failed > 0) fprintf(stderr, "delivery failed: %s\n", r.last_errstr);
    CHECK(r.ok == n && r.failed == 0);
    spool_producer_destroy(p);

    spool_consumer_t *c = spool_consumer_new(secure_conf(broker, ca, user, pass), errstr, sizeof errstr);
    CHECK(c != NULL);
    CHECK_ERR(spool_consumer_assign(c, topic, 0, SPOOL_OFFSET_BEGINNING), SPOOL_ERR_NO_ERROR);
    int *seen = calloc((size_t)n, sizeof(int));
    for (int got = 0; got < n; got++) {
        spool_message_t *m = spool_consumer_poll(c, 10000);
        CHECK(m != NULL);
        if (spool_message_err(m) != SPOOL_ERR_NO_ERROR) fprintf(stderr, "poll: %s\n", spool_message_errstr(m));
        CHECK_ERR(spool_message_err(m), SPOOL_ERR_NO_ERROR);
        size_t len;
        const char *v = spool_message_value(m, &len);
        CHECK(len > 7 && len < 20 && memcmp(v, "secure-", 7) == 0);
        char buf[16];
        memcpy(buf, v + 7, len - 7);
        buf[len - 7] = '\0';
        int i = atoi(buf);
        CHECK(i >= 0 && i < n);
        seen[i]++;
        spool_message_destroy(m);
    }
    for (int i = 0; i < n; i++) CHECK(seen[i] == 1);
    free(seen);
    CHECK_ERR(spool_consumer_close(c), SPOOL_ERR_NO_ERROR);
    spool_consumer_destroy(c);
}

static void refused(const char *broker, const char *ca, const char *user, const char *pass, const char *topic) {
    struct reports r = {0, 0, SPOOL_ERR_NO_ERROR, ""};
    spool_conf_t *conf = secure_conf(broker, ca, user, pass);
    spool_conf_set_dr_cb(conf, dr_cb);
    spool_conf_set_opaque(conf, &r);
    spool_producer_t *p = spool_producer_new(conf, errstr, sizeof errstr);
    CHECK(p != NULL);
    spool_err_t err = spool_produce(p, topic, SPOOL_PARTITION_UA, NULL, 0, "x", 1, NULL);
    CHECK(err == SPOOL_ERR_NO_ERROR || err == SPOOL_RESP_ERR_SASL_AUTHENTICATION_FAILED);
    spool_producer_flush(p, 30000);
    if (err == SPOOL_ERR_NO_ERROR) {
        CHECK(r.ok == 0 && r.failed == 1);
        CHECK_ERR(r.last_err, SPOOL_RESP_ERR_SASL_AUTHENTICATION_FAILED);
        CHECK(strstr(r.last_errstr, "SCRAM-SHA-512") != NULL);
        printf("refused: %s\n", r.last_errstr);
    }
    spool_producer_destroy(p);

    spool_consumer_t *c = spool_consumer_new(secure_conf(broker, ca, user, pass), errstr, sizeof errstr);
    CHECK(c != NULL);
    err = spool_consumer_assign(c, topic, 0, SPOOL_OFFSET_BEGINNING);
    if (err == SPOOL_ERR_NO_ERROR) {
        spool_message_t *m = spool_consumer_poll(c, 10000);
        CHECK(m != NULL);
        err = spool_message_err(m);
        spool_message_destroy(m);
    }
    CHECK_ERR(err, SPOOL_RESP_ERR_SASL_AUTHENTICATION_FAILED);
    spool_consumer_close(c);
    spool_consumer_destroy(c);
}

int main(int argc, char **argv) {
    if (argc < 7) {
        fprintf(stderr, "usage: %s roundtrip|refused BROKER CA-FILE USER PASSWORD TOPIC [N]\n", argv[0]);
        return 2;
    }
    const char *scenario = argv[1];
    if (strcmp(scenario, "roundtrip") == 0 && argc == 8) {
        roundtrip(argv[2], argv[3], argv[4], argv[5], argv[6], atoi(argv[7]));
    } else if (strcmp(scenario, "refused") == 0) {
        refused(argv[2], argv[3], argv[4], argv[5], argv[6]);
    } else {
        fprintf(stderr, "unknown scenario or arguments: %s\n", scenario);
        return 2;
    }
    return scenario_done(scenario);
}

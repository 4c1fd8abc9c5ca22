/* bench.h: what spool_bench.c and rdkafka_bench.c share, so that only the library calls
 * differ: the arguments, the clock and the report. */
#ifndef BENCH_H
#define BENCH_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

struct bench {
    const char *broker, *topic;
    int partitions;
    long n;
    size_t size;
    char *value; /* size bytes */
    long delivered, failed;
};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* bench_args parses BROKER TOPIC PARTITIONS N SIZE, or exits with the usage. */
static struct bench bench_args(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: %s BROKER TOPIC PARTITIONS N SIZE\n", argv[0]);
        exit(2);
    }
    struct bench b = {argv[1], argv[2], atoi(argv[3]), atol(argv[4]), (size_t)atol(argv[5]), NULL, 0, 0};
    b.value = malloc(b.size);
    memset(b.value, 'v', b.size);
    return b;
}

/* bench_delivered checks that every record was delivered, or exits. */
static void bench_delivered(const struct bench *b) {
    if (b->delivered != b->n || b->failed != 0) {
        fprintf(stderr, "delivered %ld, failed %ld of %ld\n", b->delivered, b->failed, b->n);
        exit(1);
    }
}

/* peak_rss_kib is this process's peak RSS (VmHWM of /proc/self/status), in KiB. Not
 * getrusage's ru_maxrss: Linux carries that over exec from the process that forked, so a
 * program started by a large one (the go test binary with a broker inside) would report at
 * least its parent's size. */
static long peak_rss_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "VmHWM: %ld kB", &kib) == 1) break;
    if (f != NULL) fclose(f);
    return kib;
}

/* bench_phase writes the peak RSS and the CPU time so far to stderr, naming the phase that
 * just ended, to tell the producer's from the consumer's. */
static void bench_phase(const char *phase) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    /* CPU time so far (all threads), which on a loaded machine says more than the wall clock */
    fprintf(stderr, "peak RSS after %s: %ld KiB, CPU %.2f s\n", phase, peak_rss_kib(),
            (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
                (double)ru.ru_stime.tv_usec / 1e6);
}

/* bench_report prints "produce_rps consume_rps peak_rss_kib". */
static void bench_report(struct bench *b, double produce_s, double consume_s) {
    printf("%.0f %.0f %ld\n", (double)b->n / produce_s, (double)b->n / consume_s, peak_rss_kib());
    free(b->value);
}

#endif

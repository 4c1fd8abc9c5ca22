/* check.h: the assertions of the C tests (spool_test.c, security_test.c): a failed check
 * prints where and what, and exits 1. */
#ifndef SPOOL_TESTS_CHECK_H
#define SPOOL_TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include <spool.h>

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

#define CHECK_ERR(call, want)                                                                   \
    do {                                                                                        \
        spool_err_t err_ = (call);                                                              \
        if (err_ != (want)) {                                                                   \
            fprintf(stderr, "%s:%d: %s = %d (%s), want %d\n", __FILE__, __LINE__, #call, err_, \
                    spool_err2str(err_), (want));                                               \
            exit(1);                                                                            \
        }                                                                                       \
    } while (0)

/* scenario_done is main's return after a scenario: 1 if a handle outlived its destroy (the Go
 * side's leak check, spool_handle_count), else prints "SCENARIO: ok", which the Go test expects,
 * and returns 0. */
static inline int scenario_done(const char *scenario) {
    int left = spool_handle_count();
    if (left != 0) {
        fprintf(stderr, "%s: %d handle(s) left after destroy\n", scenario, left);
        return 1;
    }
    printf("%s: ok\n", scenario);
    return 0;
}

#endif

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

#endif

/* spool_impl.h: the layout of libspool's handles and messages, shared by the C shim
 * (shim.c) and the Go side (cgo). Not installed: the public header keeps them opaque. */
#ifndef SPOOL_IMPL_H
#define SPOOL_IMPL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "spool.h"

/* Each handle is a small C struct holding a runtime/cgo.Handle of its Go object, so that C
 * never keeps a Go pointer. */
struct spool_conf_s {
    uintptr_t h;
    spool_dr_cb_t dr_cb;
    spool_rebalance_cb_t rebalance_cb;
    void *opaque;
};

struct spool_producer_s {
    uintptr_t h;
    spool_dr_cb_t dr_cb;
    void *opaque;
};

struct spool_consumer_s {
    uintptr_t h;
    spool_rebalance_cb_t rebalance_cb;
    void *opaque;
};

/* A message is one malloc'd block: this struct, then the headers array, then every string
 * and buffer it points to. Go fills it; spool_message_destroy is free(). */
struct spool_message_s {
    spool_err_t err;
    int32_t partition;
    int64_t offset;
    int64_t timestamp;
    uintptr_t opaque;
    const char *topic;
    const char *errstr;
    const void *key; /* NULL: null key */
    size_t key_len;
    const void *value; /* NULL: null value */
    size_t value_len;
    size_t header_count;
    spool_header_t *headers;
};

#endif /* SPOOL_IMPL_H */

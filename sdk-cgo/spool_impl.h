/* spool_impl.h: the layout of libspool's handles and messages, shared by the C shim
 * (shim.c) and the Go side (cgo). Not installed: the public header keeps them opaque. */
#ifndef SPOOL_IMPL_H
#define SPOOL_IMPL_H

#include <pthread.h>
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
    spool_offset_commit_cb_t offset_commit_cb;
    void *opaque;
};

/* The produce ring (ring.c): spool_produce and its batch and packed forms copy their records
 * into it, on the caller's thread and without entering the Go runtime, and the producer's
 * drainer goroutine (ring.go) takes them in blocks and produces them through the SDK, on its
 * own thread, as librdkafka's producer hands records to its broker threads.
 *
 * Locking: mu guards every field but outq and outq_bytes, which are atomics (the Go side
 * adds to them through sync/atomic when it serves reports). Records go into buf[fill]; the
 * other buffer is the drainer's from spoolring_take until its next spoolring_take, which
 * is the only call that swaps them, so the drainer reads its block without the lock.
 * active is set while the drainer is notified or draining: an append kicks it
 * (spoolgo_producer_kick) only when it is not, and spoolring_take clears it only when it
 * finds the ring empty, so a record is never left without a drainer coming for it. */
typedef struct spoolring_s {
    pthread_mutex_t mu;
    pthread_cond_t taken; /* signalled when the drainer takes a block (spool_produce_packed waits on it) */
    int closed;           /* the producer is being destroyed */
    char *buf[2];
    size_t cap[2];
    int fill;        /* the buffer appended to */
    size_t len;      /* bytes in buf[fill] */
    size_t count;    /* records in buf[fill] */
    int active;      /* the drainer is kicked or draining */
    int hurry;       /* a produce found the queue full: send the buffered records now */
    uint64_t appended; /* records ever appended */
    int64_t outq, outq_bytes; /* records produced whose report is not served yet, their sizes */
    int64_t max_msgs, max_bytes; /* queue.buffering.max.messages and .kbytes (in bytes) */
} spoolring_t;

/* One record in a ring buffer; then its topic, key and value bytes, then per header an
 * int64_t key length, an int64_t value length (-1: null) and their bytes, padded to 8. */
typedef struct spoolring_rec_s {
    uint32_t size;  /* bytes of the entry, this struct included */
    int32_t partition;
    uint32_t topic_len;
    uint32_t header_count;
    int64_t key_len;   /* -1: null */
    int64_t value_len; /* -1: null */
    uintptr_t opaque;
    int64_t timestamp; /* ms since the epoch; 0: when the drainer takes it */
} spoolring_rec_t;

struct spool_producer_s {
    uintptr_t h;
    spool_dr_cb_t dr_cb;
    void *opaque;
    spoolring_t ring;
};

/* The ring's calls. The produce calls take arguments their public callers checked. */
void spoolring_init(spoolring_t *r);
void spoolring_close(spoolring_t *r);
void spoolring_destroy(spoolring_t *r);
spool_err_t spoolring_produce(spool_producer_t *p, const char *topic, int32_t partition,
                              int64_t timestamp, const void *key, size_t key_len, const void *value,
                              size_t value_len, const spool_header_t *headers, size_t header_count,
                              void *msg_opaque);
spool_err_t spoolring_produce_batch(spool_producer_t *p, const char *topic,
                                    const spool_record_t *recs, size_t count);
spool_err_t spoolring_produce_packed(spool_producer_t *p, const char *topic, size_t count,
                                     const int32_t *partitions, const char *keys,
                                     const int64_t *key_lens, const char *values,
                                     const int64_t *value_lens,
                                     const spool_header_t *const *headers,
                                     const size_t *header_counts, void *const *msg_opaques);
/* spoolring_take hands the drainer every record appended since its last take (their count;
 * 0, clearing active, when there is none) and tells whether a produce found the queue full
 * since. The block stays valid until the next take. */
size_t spoolring_take(spoolring_t *r, char **block, size_t *len, int *hurry);
/* spoolring_appended is the number of records ever appended (spool_producer_flush waits
 * until the drainer has taken them). */
uint64_t spoolring_appended(spoolring_t *r);

struct spool_consumer_s {
    uintptr_t h;
    spool_rebalance_cb_t rebalance_cb;
    spool_offset_commit_cb_t offset_commit_cb;
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

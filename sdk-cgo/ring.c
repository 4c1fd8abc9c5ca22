/* ring.c: the produce ring (spoolring_t, see spool_impl.h). spool_produce,
 * spool_produce_headers, spool_produce_batch and spool_produce_packed copy their records
 * into it on the caller's thread, without entering the Go runtime: a lock, a bound check and
 * a copy per record. The producer's drainer goroutine (ring.go) takes what was appended, a
 * block at a time, and produces it through the SDK on a thread of its own. */
#include <stdio.h>

#include "_cgo_export.h"
#include "spool_impl.h"

/* RING_PENDING_MAX bounds the bytes waiting in the ring for the drainer: a produce call
 * that would pass it waits until the drainer takes them (which it does within a few
 * milliseconds: it waits only for the SDK's buffer, which acknowledgements free, never for
 * the caller). Enough to keep the drainer busy; more would only hold memory, since the
 * caller copies records in faster than the SDK encodes them. */
#define RING_PENDING_MAX ((size_t)1 << 20)

/* wait_room waits, with mu held, until bytes more fit under RING_PENDING_MAX (an empty ring
 * takes anything) or the producer closes; 0 when it closed. */
static int wait_room(spoolring_t *r, size_t bytes) {
    while (!r->closed && r->len > 0 && r->len + bytes > RING_PENDING_MAX)
        pthread_cond_wait(&r->taken, &r->mu);
    return !r->closed;
}

void spoolring_init(spoolring_t *r) {
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->taken, NULL);
}

void spoolring_destroy(spoolring_t *r) {
    free(r->buf[0]);
    free(r->buf[1]);
    pthread_cond_destroy(&r->taken);
    pthread_mutex_destroy(&r->mu);
}

void spoolring_close(spoolring_t *r) {
    pthread_mutex_lock(&r->mu);
    r->closed = 1;
    pthread_cond_broadcast(&r->taken);
    pthread_mutex_unlock(&r->mu);
}

/* record_size is what a record counts against queue.buffering.max.kbytes, as the SDK counts
 * it against its buffer (recordSize in sdk-go): the drainer gives back what the SDK's
 * deliveries say (Delivery.Bytes), so the two must agree, null keys and values counting 0. */
static int64_t record_size(const void *key, size_t key_len, const void *value, size_t value_len,
                           const spool_header_t *headers, size_t header_count) {
    int64_t size = 21 + (key ? (int64_t)key_len : 0) + (value ? (int64_t)value_len : 0);
    for (size_t i = 0; i < header_count; i++)
        size += 10 + (int64_t)headers[i].key_len + (headers[i].value ? (int64_t)headers[i].value_len : 0);
    return size;
}

/* reserve takes room in the queue for n records of size bytes, or returns 0 when it is full.
 * An empty queue takes anything, so that a batch larger than the bound still goes; force
 * takes it regardless (spool_produce_packed). */
static void unreserve(spoolring_t *r, int64_t n, int64_t size) {
    __atomic_sub_fetch(&r->outq, n, __ATOMIC_SEQ_CST);
    __atomic_sub_fetch(&r->outq_bytes, size, __ATOMIC_SEQ_CST);
}

static int reserve(spoolring_t *r, int64_t n, int64_t size, int force) {
    int64_t msgs = __atomic_add_fetch(&r->outq, n, __ATOMIC_SEQ_CST);
    int64_t bytes = __atomic_add_fetch(&r->outq_bytes, size, __ATOMIC_SEQ_CST);
    if (force || msgs == n || (msgs <= r->max_msgs && bytes <= r->max_bytes)) return 1;
    unreserve(r, n, size);
    return 0;
}

static size_t pad8(size_t n) { return (n + 7) & ~(size_t)7; }

/* RING_ENTRY_MAX bounds one record's entry (spoolring_rec_t.size is 32 bits); the SDK
 * refuses records larger than batch.size (at most 64 MiB) anyway. */
#define RING_ENTRY_MAX ((size_t)1 << 31)

/* RING_KEEP_MAX: a buffer that grew beyond this for a large record is freed once drained,
 * rather than kept for the life of the producer. */
#define RING_KEEP_MAX ((size_t)4 << 20)

/* entry_size is the bytes of a record's entry in a ring buffer. */
static size_t entry_size(size_t topic_len, const void *key, size_t key_len, const void *value,
                         size_t value_len, const spool_header_t *headers, size_t header_count) {
    size_t n = sizeof(spoolring_rec_t) + topic_len + (key ? key_len : 0) + (value ? value_len : 0);
    for (size_t i = 0; i < header_count; i++)
        n += 2 * sizeof(int64_t) + headers[i].key_len + (headers[i].value ? headers[i].value_len : 0);
    return pad8(n);
}

/* room makes buf[fill] hold n more bytes; 0 when out of memory. Called with mu held. */
static int room(spoolring_t *r, size_t n) {
    int f = r->fill;
    if (r->len + n <= r->cap[f]) return 1;
    size_t cap = r->cap[f] ? r->cap[f] : 64 << 10;
    while (cap < r->len + n) cap *= 2;
    char *b = realloc(r->buf[f], cap);
    if (b == NULL) return 0;
    r->buf[f] = b;
    r->cap[f] = cap;
    return 1;
}

static char *put(char *at, const void *src, size_t n) {
    if (n > 0) memcpy(at, src, n);
    return at + n;
}

/* append copies one record to buf[fill], which room made large enough. Called with mu held. */
static void append(spoolring_t *r, size_t size, const char *topic, size_t topic_len,
                   int32_t partition, const void *key, size_t key_len, const void *value,
                   size_t value_len, const spool_header_t *headers, size_t header_count,
                   uintptr_t opaque, int64_t timestamp) {
    char *base = r->buf[r->fill] + r->len;
    spoolring_rec_t *e = (spoolring_rec_t *)base;
    e->size = (uint32_t)size;
    e->partition = partition;
    e->topic_len = (uint32_t)topic_len;
    e->header_count = (uint32_t)header_count;
    e->key_len = key ? (int64_t)key_len : -1;
    e->value_len = value ? (int64_t)value_len : -1;
    e->opaque = opaque;
    e->timestamp = timestamp;
    char *at = put(base + sizeof *e, topic, topic_len);
    at = put(at, key, key ? key_len : 0);
    at = put(at, value, value ? value_len : 0);
    for (size_t i = 0; i < header_count; i++) {
        int64_t lens[2] = {(int64_t)headers[i].key_len,
                           headers[i].value ? (int64_t)headers[i].value_len : -1};
        at = put(at, lens, sizeof lens);
        at = put(at, headers[i].key, headers[i].key_len);
        at = put(at, headers[i].value, headers[i].value ? headers[i].value_len : 0);
    }
    r->len += size;
    r->count++;
    r->appended++;
}

/* unlock releases mu after appending and kicks the drainer when it is idle. */
static void unlock_and_kick(spool_producer_t *p) {
    spoolring_t *r = &p->ring;
    int kick = !r->active;
    r->active = 1;
    pthread_mutex_unlock(&r->mu);
    if (kick) spoolgo_producer_kick(p->h);
}

/* queue_full answers a produce that found the queue full: the drainer sends what is
 * buffered without lingering, since nothing more joins it until reports are served. */
static spool_err_t queue_full(spool_producer_t *p) {
    pthread_mutex_lock(&p->ring.mu);
    p->ring.hurry = 1;
    unlock_and_kick(p);
    return SPOOL_ERR__QUEUE_FULL;
}

spool_err_t spoolring_produce(spool_producer_t *p, const char *topic, int32_t partition,
                              int64_t timestamp, const void *key, size_t key_len, const void *value,
                              size_t value_len, const spool_header_t *headers, size_t header_count,
                              void *msg_opaque) {
    spoolring_t *r = &p->ring;
    int64_t rsize = record_size(key, key_len, value, value_len, headers, header_count);
    if (!reserve(r, 1, rsize, 0)) return queue_full(p);
    size_t topic_len = strlen(topic);
    size_t size = entry_size(topic_len, key, key_len, value, value_len, headers, header_count);
    if (size > RING_ENTRY_MAX) {
        unreserve(r, 1, rsize);
        return SPOOL_RESP_ERR_MESSAGE_TOO_LARGE;
    }
    pthread_mutex_lock(&r->mu);
    spool_err_t err = !wait_room(r, size) ? SPOOL_ERR__CLOSED : !room(r, size) ? SPOOL_ERR__QUEUE_FULL : 0;
    if (err) {
        pthread_mutex_unlock(&r->mu);
        unreserve(r, 1, rsize);
        return err;
    }
    append(r, size, topic, topic_len, partition, key, key_len, value, value_len, headers,
           header_count, (uintptr_t)msg_opaque, timestamp);
    unlock_and_kick(p);
    return SPOOL_ERR_NO_ERROR;
}

spool_err_t spoolring_produce_batch(spool_producer_t *p, const char *topic,
                                    const spool_record_t *recs, size_t count) {
    spoolring_t *r = &p->ring;
    size_t topic_len = strlen(topic), bytes = 0;
    int64_t rsize = 0;
    for (size_t i = 0; i < count; i++) {
        const spool_record_t *c = &recs[i];
        size_t size = entry_size(topic_len, c->key, c->key_len, c->value, c->value_len,
                                 c->headers, c->header_count);
        if (size > RING_ENTRY_MAX) return SPOOL_RESP_ERR_MESSAGE_TOO_LARGE;
        rsize += record_size(c->key, c->key_len, c->value, c->value_len, c->headers, c->header_count);
        bytes += size;
    }
    if (!reserve(r, (int64_t)count, rsize, 0)) return queue_full(p);
    pthread_mutex_lock(&r->mu);
    spool_err_t err = !wait_room(r, bytes) ? SPOOL_ERR__CLOSED : !room(r, bytes) ? SPOOL_ERR__QUEUE_FULL : 0;
    if (err) {
        pthread_mutex_unlock(&r->mu);
        unreserve(r, (int64_t)count, rsize);
        return err;
    }
    for (size_t i = 0; i < count; i++) {
        const spool_record_t *c = &recs[i];
        append(r, entry_size(topic_len, c->key, c->key_len, c->value, c->value_len, c->headers,
                             c->header_count),
               topic, topic_len, c->partition, c->key, c->key_len, c->value, c->value_len,
               c->headers, c->header_count, (uintptr_t)c->msg_opaque, 0);
    }
    unlock_and_kick(p);
    return SPOOL_ERR_NO_ERROR;
}

spool_err_t spoolring_produce_packed(spool_producer_t *p, const char *topic, size_t count,
                                     const int32_t *partitions, const char *keys,
                                     const int64_t *key_lens, const char *values,
                                     const int64_t *value_lens,
                                     const spool_header_t *const *headers,
                                     const size_t *header_counts, void *const *msg_opaques) {
    spoolring_t *r = &p->ring;
    size_t topic_len = strlen(topic), bytes = 0;
    int64_t rsize = 0;
    for (size_t i = 0; i < count; i++) {
        const spool_header_t *h = headers && header_counts ? headers[i] : NULL;
        size_t hc = h ? header_counts[i] : 0;
        size_t kl = key_lens && key_lens[i] > 0 ? (size_t)key_lens[i] : 0;
        size_t vl = value_lens && value_lens[i] > 0 ? (size_t)value_lens[i] : 0;
        int has_key = key_lens && key_lens[i] >= 0, has_value = value_lens && value_lens[i] >= 0;
        size_t size = entry_size(topic_len, has_key ? "" : NULL, kl, has_value ? "" : NULL, vl, h, hc);
        if (size > RING_ENTRY_MAX) return SPOOL_RESP_ERR_MESSAGE_TOO_LARGE;
        rsize += record_size(has_key ? "" : NULL, kl, has_value ? "" : NULL, vl, h, hc);
        bytes += size;
    }
    pthread_mutex_lock(&r->mu);
    spool_err_t err = !wait_room(r, bytes) ? SPOOL_ERR__CLOSED : !room(r, bytes) ? SPOOL_ERR__QUEUE_FULL : 0;
    if (err) {
        pthread_mutex_unlock(&r->mu);
        return err;
    }
    reserve(r, (int64_t)count, rsize, 1);
    size_t kat = 0, vat = 0;
    for (size_t i = 0; i < count; i++) {
        const spool_header_t *h = headers && header_counts ? headers[i] : NULL;
        size_t hc = h ? header_counts[i] : 0;
        const char *key = NULL, *value = NULL;
        size_t kl = 0, vl = 0;
        if (key_lens && key_lens[i] >= 0) {
            kl = (size_t)key_lens[i];
            key = kl > 0 ? keys + kat : "";
            kat += kl;
        }
        if (value_lens && value_lens[i] >= 0) {
            vl = (size_t)value_lens[i];
            value = vl > 0 ? values + vat : "";
            vat += vl;
        }
        append(r, entry_size(topic_len, key, kl, value, vl, h, hc), topic, topic_len,
               partitions ? partitions[i] : SPOOL_PARTITION_UA, key, kl, value, vl, h, hc,
               msg_opaques ? (uintptr_t)msg_opaques[i] : 0, 0);
    }
    unlock_and_kick(p);
    return SPOOL_ERR_NO_ERROR;
}

size_t spoolring_take(spoolring_t *r, char **block, size_t *len, int *hurry) {
    pthread_mutex_lock(&r->mu);
    size_t n = r->count;
    *hurry = r->hurry;
    r->hurry = 0;
    *block = NULL;
    *len = 0;
    if (n == 0) {
        r->active = 0;
    } else {
        /* The other buffer was the drainer's block until now: it is done with it. */
        *block = r->buf[r->fill];
        *len = r->len;
        r->fill ^= 1;
        r->len = 0;
        r->count = 0;
        if (r->cap[r->fill] > RING_KEEP_MAX) {
            free(r->buf[r->fill]);
            r->buf[r->fill] = NULL;
            r->cap[r->fill] = 0;
        }
        pthread_cond_broadcast(&r->taken);
    }
    pthread_mutex_unlock(&r->mu);
    return n;
}

uint64_t spoolring_appended(spoolring_t *r) {
    pthread_mutex_lock(&r->mu);
    uint64_t n = r->appended;
    pthread_mutex_unlock(&r->mu);
    return n;
}

/*
 * spool.h: the C API of Spool (libspool), a client for Spool and any Kafka broker.
 *
 * This header is the contract; it is written by hand and changes only compatibly within a
 * major version (soname libspool.so.0). Build with `pkg-config --cflags --libs spool`.
 *
 * Conventions, true of every function unless its comment says otherwise:
 *  - Handles (spool_conf_t, spool_producer_t, spool_consumer_t) are opaque, created by a
 *    `_new` function and freed by the matching `_destroy`. A handle may be used from several
 *    threads at once, except that its `_destroy` must be the last call on it, made once no
 *    other call on it is running.
 *  - A NULL handle, or a NULL pointer where the comment does not allow one, makes the function
 *    return SPOOL_ERR__BAD_ARG (or NULL, 0, -1 as its result type allows) and do nothing else:
 *    never a crash. `_destroy` functions accept NULL and do nothing.
 *  - Strings passed in are NUL-terminated and only read during the call; the library keeps
 *    its own copies. Byte buffers come with their length and are never read past it.
 *  - Strings and buffers returned are owned by the library: the comment says how long they
 *    stay valid. The caller frees nothing but what a `_destroy` function frees.
 *  - Callbacks run only inside spool_producer_poll and spool_producer_flush, on the thread
 *    that called them; never on a thread of the library.
 *  - errstr/errstr_size: on failure a NUL-terminated message is written there, cut to
 *    errstr_size bytes; errstr may be NULL (or errstr_size 0) to get no message.
 *
 * Limits: the library contains the Go runtime. It cannot be unloaded: do not dlclose() it.
 * It is not fork-safe: after the first call into the library, a forked child may only exec.
 *
 * Memory: the Go runtime's garbage collector runs under a soft memory limit that the library
 * derives from its live producers' queue bounds (about 24 MiB plus 1.25 times each
 * producer's queue.buffering.max.kbytes plus 64 bytes per queued record), so that peak
 * memory follows what the handles hold. Go's own environment variables, read when the
 * library loads, override it: GOMEMLIMIT (e.g. 512MiB, or off) replaces the derived limit,
 * GOGC (default 100) sets how much the heap grows between collections.
 */
#ifndef SPOOL_H
#define SPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "spool_errors.h" /* spool_resp_err_t: the protocol's error codes, from errors.tsv */

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header, 0xMMmmpp00 (major, minor, patch), and as a string. */
#define SPOOL_VERSION 0x00010000
#define SPOOL_VERSION_STR "0.1.0"

/* The version of the library linked at run time, e.g. "0.1.0" (static storage). Compare
 * with SPOOL_VERSION_STR to detect a header/library mismatch. Thread-safe. */
const char *spool_version(void);

/* The number of configurations, producers and consumers not yet destroyed (or taken by a
 * `_new`) in this process: 0 once a program has destroyed everything, which is how a test
 * checks that nothing leaks. Thread-safe. */
int spool_handle_count(void);

/* ---------------------------------------------------------------------------------------- */
/* Errors */

/* An error code: SPOOL_ERR_NO_ERROR (0), a protocol error from the broker (a
 * spool_resp_err_t, -1 and above, the same numbers as on the wire), or a local error of the
 * library (SPOOL_ERR__*, below -1). */
typedef int spool_err_t;

#define SPOOL_ERR_NO_ERROR SPOOL_RESP_ERR_NO_ERROR

enum {
    /* A NULL handle or argument where one is required, or an argument out of range. */
    SPOOL_ERR__BAD_ARG = -100,
    /* The call's timeout passed first. */
    SPOOL_ERR__TIMED_OUT = -101,
    /* No broker could be reached, or a connection broke. */
    SPOOL_ERR__TRANSPORT = -102,
    /* The handle was closed (spool_consumer_close) or is shutting down. */
    SPOOL_ERR__CLOSED = -103,
    /* The producer's queue (queue.buffering.max.messages, queue.buffering.max.kbytes) is
     * full: serve delivery reports and produce again. */
    SPOOL_ERR__QUEUE_FULL = -104,
    /* The call does not fit the handle's state, e.g. subscribe without group.id, commit
     * without a group, assign in a group, subscribe twice. */
    SPOOL_ERR__STATE = -105,
    /* Any other failure; the message's errstr (or errstr) says what. */
    SPOOL_ERR__FAIL = -106,
};

/* A one-line description of err: the protocol error's name and description, or the local
 * error's. Never NULL; static storage. Thread-safe. */
const char *spool_err2str(spool_err_t err);

/* ---------------------------------------------------------------------------------------- */
/* Configuration */

typedef struct spool_conf_s spool_conf_t;
typedef struct spool_producer_s spool_producer_t;
typedef struct spool_consumer_s spool_consumer_t;
typedef struct spool_message_s spool_message_t;

typedef enum {
    SPOOL_CONF_UNKNOWN = -2, /* no such key */
    SPOOL_CONF_INVALID = -1, /* the key does not take this value (or an argument is NULL) */
    SPOOL_CONF_OK = 0,
} spool_conf_res_t;

/* A new, empty configuration: every key at its default. Free it with spool_conf_destroy,
 * unless a successful spool_producer_new or spool_consumer_new took it. Never NULL. */
spool_conf_t *spool_conf_new(void);

/* A copy of conf (keys, callback and opaque), owned by the caller; NULL if conf is NULL. */
spool_conf_t *spool_conf_dup(const spool_conf_t *conf);

/* Sets key to value. Keys are librdkafka's names (bootstrap.servers, client.id, acks,
 * enable.idempotence, compression.type, linger.ms, batch.size, partitioner, group.id,
 * group.instance.id, auto.offset.reset, enable.auto.commit, auto.commit.interval.ms,
 * session.timeout.ms, partition.assignment.strategy, isolation.level, ...; sdk-cgo/README.md
 * lists them all). An unknown key gives SPOOL_CONF_UNKNOWN, a bad value SPOOL_CONF_INVALID,
 * each with a message in errstr naming the key; the configuration is then unchanged. A key
 * of a producer set on a consumer's configuration (or the opposite) is accepted and has no
 * effect. Thread-safe. */
spool_conf_res_t spool_conf_set(spool_conf_t *conf, const char *key, const char *value,
                                char *errstr, size_t errstr_size);

/* Writes the value set for key (in its canonical form: "all" for acks=-1, "true"/"false")
 * into dest, NUL-terminated, and sets *dest_size to the size needed including the NUL. With
 * dest NULL only *dest_size is set. SPOOL_CONF_UNKNOWN when the key does not exist or was
 * not set. Thread-safe. */
spool_conf_res_t spool_conf_get(const spool_conf_t *conf, const char *key, char *dest,
                                size_t *dest_size);

/* A delivery report callback: called once per record produced, with its outcome in msg
 * (spool_message_err: SPOOL_ERR_NO_ERROR when stored; its partition and offset then), the
 * msg_opaque given to spool_produce (spool_message_opaque) and the conf's opaque. It runs
 * inside spool_producer_poll or spool_producer_flush on the caller's thread. msg is valid
 * only during the call: do not destroy it. It must not destroy the producer. */
typedef void (*spool_dr_cb_t)(spool_producer_t *producer, const spool_message_t *msg,
                              void *opaque);

/* Sets the delivery report callback (NULL: none, and no reports are kept). */
void spool_conf_set_dr_cb(spool_conf_t *conf, spool_dr_cb_t dr_cb);

/* Sets the opaque pointer passed to callbacks; the library never dereferences it. */
void spool_conf_set_opaque(spool_conf_t *conf, void *opaque);

/* What a rebalance callback is told: partitions given to this consumer, taken from it in a
 * rebalance or on close (after the commit of what poll returned, with enable.auto.commit),
 * or lost (the member left the group without a rebalance, e.g. its session expired: they
 * cannot be committed any more). */
typedef enum {
    SPOOL_REBALANCE_ASSIGN = 1,
    SPOOL_REBALANCE_REVOKE = 2,
    SPOOL_REBALANCE_LOST = 3
} spool_rebalance_t;

/* One partition of a rebalance callback; topic is NUL-terminated and valid during the
 * call only. */
typedef struct {
    const char *topic;
    int32_t partition;
} spool_topic_partition_t;

/* A rebalance callback of a group consumer: partitions[0] to partitions[count-1] were
 * assigned, are being revoked, or were lost (what), with the conf's opaque. It runs only
 * inside spool_consumer_poll, spool_consumer_poll_batch, spool_consumer_close or
 * spool_consumer_destroy, on the caller's thread: SPOOL_REBALANCE_ASSIGN before poll returns
 * any record of those partitions, and SPOOL_REBALANCE_REVOKE before the partitions go to
 * another member, which waits for it (up to max.poll.interval.ms), so a consumer with this
 * callback must poll. The callback may call spool_consumer_commit (e.g. with
 * enable.auto.commit=false, to commit before the partitions go); it must not close or destroy
 * the consumer. Unlike librdkafka's, it is a notification: the library assigns and
 * unassigns by itself, as the Java client's ConsumerRebalanceListener. */
typedef void (*spool_rebalance_cb_t)(spool_consumer_t *consumer, spool_rebalance_t what,
                                     const spool_topic_partition_t *partitions, size_t count,
                                     void *opaque);

/* Sets the rebalance callback (NULL: none). */
void spool_conf_set_rebalance_cb(spool_conf_t *conf, spool_rebalance_cb_t rebalance_cb);

/* A partition's offset to commit: the offset of the next record to read there (the last one
 * processed + 1), as Kafka commits it. topic is NUL-terminated. */
typedef struct spool_topic_partition_offset_s {
    const char *topic;
    int32_t partition;
    int64_t offset;
} spool_topic_partition_offset_t;

/* An offset commit callback of a group consumer (librdkafka's offset_commit_cb): the outcome
 * of each commit of the consumer's (automatic with enable.auto.commit, before a revocation
 * and on close, or by spool_consumer_commit and spool_consumer_commit_offsets, synchronous
 * or not), with err SPOOL_ERR_NO_ERROR when the group stored every offset, else why not, and
 * what the commit asked for in offsets[0] to offsets[count-1] (topics NUL-terminated; the
 * array is valid during the call only), with the conf's opaque. A commit of nothing is not
 * reported. It runs only inside spool_consumer_poll, spool_consumer_poll_batch,
 * spool_consumer_poll_packed, spool_consumer_close or spool_consumer_destroy, on the
 * caller's thread, once per commit, in the order the commits finished; a synchronous call
 * also returns its outcome. With it set, an asynchronous commit's failure goes to it and is
 * not returned by the next commit. It may commit; it must not close or destroy the
 * consumer. */
typedef void (*spool_offset_commit_cb_t)(spool_consumer_t *consumer, spool_err_t err,
                                         const spool_topic_partition_offset_t *offsets,
                                         size_t count, void *opaque);

/* Sets the offset commit callback (NULL: none). */
void spool_conf_set_offset_commit_cb(spool_conf_t *conf, spool_offset_commit_cb_t offset_commit_cb);

/* Frees conf. NULL is a no-op. */
void spool_conf_destroy(spool_conf_t *conf);

/* ---------------------------------------------------------------------------------------- */
/* Producer */

/* Partition "unassigned": let the configured partitioner choose. */
#define SPOOL_PARTITION_UA ((int32_t)-1)

/* A record header. key has key_len bytes (no NUL needed); value NULL is a null value. */
typedef struct spool_header_s {
    const char *key;
    size_t key_len;
    const void *value;
    size_t value_len;
} spool_header_t;

/* A new producer configured by conf. On success it takes conf (do not use or destroy it
 * again); on failure it returns NULL, writes errstr and conf stays the caller's. The
 * producer connects lazily, on the first produce. Free it with spool_producer_destroy. */
spool_producer_t *spool_producer_new(spool_conf_t *conf, char *errstr, size_t errstr_size);

/* Produces one record to topic, in partition (SPOOL_PARTITION_UA: the partitioner chooses).
 * key and value are copied before the call returns; NULL is a null key or value, a non-NULL
 * pointer with length 0 an empty one. msg_opaque comes back in the delivery report.
 * Returns SPOOL_ERR_NO_ERROR when the record is buffered; its outcome then comes in exactly
 * one delivery report (if a dr_cb is set), including failures found later (unknown topic,
 * partition out of range, record too large, broker down past message.timeout.ms). A topic
 * not known yet is asked for, and for its creation (allow.auto.create.topics, default true
 * as librdkafka's producers; the broker creates it with auto.create.topics.enable=true); a
 * record whose topic still does not exist after message.timeout.ms fails with
 * SPOOL_RESP_ERR_UNKNOWN_TOPIC_OR_PARTITION in its report, never before. The call
 * copies the record into the producer's queue and returns: a thread of the library encodes
 * it into its batch (as librdkafka's broker threads do), so the call only blocks, briefly,
 * while a megabyte of earlier records waits for that thread.
 * SPOOL_ERR__QUEUE_FULL, and nothing buffered, when the queue is full: as librdkafka's, it
 * holds the records produced whose delivery report has not been served yet, at most
 * queue.buffering.max.messages records and queue.buffering.max.kbytes KiB of keys, values
 * and headers (a record larger than that goes into an empty queue); serve reports
 * (spool_producer_poll) and produce again. SPOOL_RESP_ERR_MESSAGE_TOO_LARGE, at once, for a
 * record of 2 GiB or more (smaller ones beyond batch.size fail in their delivery report).
 * Thread-safe: records of one thread to one partition are stored in call order. */
spool_err_t spool_produce(spool_producer_t *producer, const char *topic, int32_t partition,
                          const void *key, size_t key_len, const void *value,
                          size_t value_len, void *msg_opaque);

/* spool_produce with header_count headers (copied; headers may be NULL when
 * header_count is 0). */
spool_err_t spool_produce_headers(spool_producer_t *producer, const char *topic,
                                  int32_t partition, const void *key, size_t key_len,
                                  const void *value, size_t value_len,
                                  const spool_header_t *headers, size_t header_count,
                                  void *msg_opaque);

/* spool_produce_headers with the record's timestamp: timestamp_ms, milliseconds since the
 * epoch (the record's CreateTime, unless its topic has message.timestamp.type=LogAppendTime);
 * 0: the time the record is produced, as with the other calls (librdkafka's 0).
 * SPOOL_ERR__BAD_ARG for a negative timestamp_ms. */
spool_err_t spool_produce_timestamp(spool_producer_t *producer, const char *topic,
                                    int32_t partition, int64_t timestamp_ms, const void *key,
                                    size_t key_len, const void *value, size_t value_len,
                                    const spool_header_t *headers, size_t header_count,
                                    void *msg_opaque);

/* One record of spool_produce_batch: spool_produce_headers's arguments. */
typedef struct spool_record_s {
    int32_t partition; /* SPOOL_PARTITION_UA: the partitioner chooses */
    const void *key;   /* NULL: a null key */
    size_t key_len;
    const void *value; /* NULL: a null value */
    size_t value_len;
    const spool_header_t *headers; /* may be NULL when header_count is 0 */
    size_t header_count;
    void *msg_opaque;
} spool_record_t;

/* Produces count records to topic in one call: as count spool_produce_headers calls in
 * order, but with one crossing into the library's runtime and the keys, values and headers
 * copied into one buffer, which is what makes a producer fast from bindings that pay per
 * call. Checks every record first: either all are buffered (SPOOL_ERR_NO_ERROR; each then
 * gets its delivery report) or, when an argument is bad (NULL producer or topic, NULL
 * records with count > 0, a partition below SPOOL_PARTITION_UA, NULL headers or a NULL
 * header key with a length), none is (SPOOL_ERR__BAD_ARG). records is not used after the
 * call returns. SPOOL_ERR__QUEUE_FULL, and none buffered, when the records do not fit in
 * the queue (see spool_produce) unless it is empty; SPOOL_RESP_ERR_MESSAGE_TOO_LARGE, and
 * none buffered, when one is 2 GiB or more. Thread-safe as spool_produce. */
spool_err_t spool_produce_batch(spool_producer_t *producer, const char *topic,
                                const spool_record_t *records, size_t count);

/* Serves delivery reports: waits up to timeout_ms (0: not at all, -1: until one comes) for
 * reports, then calls dr_cb for every report ready, on this thread. Returns the number of
 * reports served, or -1 for a NULL producer. */
int spool_producer_poll(spool_producer_t *producer, int timeout_ms);

/* Sends every buffered record now and waits up to timeout_ms (-1: without limit) until all
 * records produced before the call have their outcome, serving their delivery reports as
 * spool_producer_poll does. SPOOL_ERR__TIMED_OUT if some are still outstanding. */
spool_err_t spool_producer_flush(spool_producer_t *producer, int timeout_ms);

/* Records produced whose delivery report has not been served yet (buffered, in flight, or
 * waiting for spool_producer_poll); 0 for NULL. */
int spool_producer_outq_len(spool_producer_t *producer);

/* Creates topic with partitions partitions and replication_factor replicas (-1 for the
 * broker's defaults) and waits up to timeout_ms (-1: without limit) until the cluster knows
 * it. SPOOL_RESP_ERR_TOPIC_ALREADY_EXISTS when it exists. Uses the producer's connections;
 * the records of the producer are not affected. */
spool_err_t spool_create_topic(spool_producer_t *producer, const char *topic, int32_t partitions,
                               int16_t replication_factor, int timeout_ms);

/* Deletes topic, waiting up to timeout_ms (-1: without limit).
 * SPOOL_RESP_ERR_UNKNOWN_TOPIC_OR_PARTITION when it does not exist. */
spool_err_t spool_delete_topic(spool_producer_t *producer, const char *topic, int timeout_ms);

/* Closes the producer and frees it. Records not yet acknowledged are failed without
 * delivery reports: call spool_producer_flush first. NULL is a no-op. */
void spool_producer_destroy(spool_producer_t *producer);

/* ---------------------------------------------------------------------------------------- */
/* Consumer */

/* Logical offsets for spool_consumer_assign and spool_consumer_seek. */
#define SPOOL_OFFSET_BEGINNING ((int64_t)-2)
#define SPOOL_OFFSET_END ((int64_t)-1)

/* A new consumer configured by conf (taken on success, as spool_producer_new). With
 * group.id it joins that group on spool_consumer_subscribe; without, partitions are chosen
 * with spool_consumer_assign. Free it with spool_consumer_destroy. */
spool_consumer_t *spool_consumer_new(spool_conf_t *conf, char *errstr, size_t errstr_size);

/* Joins the consumer's group (group.id) with a subscription to topic_count topics.
 * SPOOL_ERR__STATE without group.id or when already subscribed; the group's assignment is
 * then made in the background and records come from spool_consumer_poll. */
spool_err_t spool_consumer_subscribe(spool_consumer_t *consumer, const char **topics,
                                     size_t topic_count);

/* Adds topic[partition] to what a consumer without a group reads, starting at offset (an
 * offset, SPOOL_OFFSET_BEGINNING or SPOOL_OFFSET_END); assigning it again seeks it.
 * SPOOL_ERR__STATE in a group. */
spool_err_t spool_consumer_assign(spool_consumer_t *consumer, const char *topic,
                                  int32_t partition, int64_t offset);

/* Moves an assigned partition to offset; records fetched before are dropped. */
spool_err_t spool_consumer_seek(spool_consumer_t *consumer, const char *topic,
                                int32_t partition, int64_t offset);

/* Waits up to timeout_ms (0: not at all, -1: without limit) for the next record and returns
 * it, or an error as a message whose spool_message_err is set, or NULL on timeout (and for
 * a NULL consumer). Records of a partition come in offset order. The message is the
 * caller's: free it with spool_message_destroy (it outlives the consumer). With
 * enable.auto.commit (the default) the offsets of records returned are committed in the
 * background every auto.commit.interval.ms, before partitions are revoked, and on close. */
spool_message_t *spool_consumer_poll(spool_consumer_t *consumer, int timeout_ms);

/* spool_consumer_poll for many messages in one call: waits up to timeout_ms for the first,
 * then adds those ready at once, up to max, into msgs[0] to msgs[n-1] and returns n (0 on
 * timeout, for a NULL consumer or msgs, or max 0). Each message is the caller's, as from
 * spool_consumer_poll. */
size_t spool_consumer_poll_batch(spool_consumer_t *consumer, int timeout_ms,
                                 spool_message_t **msgs, size_t max);

/* Commits, for each partition, the offset after the last record spool_consumer_poll
 * returned. async 0: waits for the broker's answer; otherwise returns at once, and a
 * failure goes to the offset commit callback, or without one is returned by the next commit
 * or close. SPOOL_ERR__STATE without a group. */
spool_err_t spool_consumer_commit(spool_consumer_t *consumer, int async);

/* Commits the offsets given, offsets[0] to offsets[count-1], instead of what poll returned
 * (librdkafka's rd_kafka_commit with a list): for committing a record once it is processed,
 * with enable.auto.commit=false. With auto commit on, the offsets after what poll returned
 * are still committed later, past these. async as spool_consumer_commit. offsets is only
 * read during the call. SPOOL_ERR__BAD_ARG, and nothing committed, for a NULL consumer, NULL
 * offsets with count > 0, a NULL topic, or a negative partition or offset; SPOOL_ERR__STATE
 * without a group or before subscribe; SPOOL_ERR__CLOSED after close. count 0 commits
 * nothing (an earlier asynchronous commit's failure is still returned). */
spool_err_t spool_consumer_commit_offsets(spool_consumer_t *consumer,
                                          const spool_topic_partition_offset_t *offsets,
                                          size_t count, int async);

/* Commits (with enable.auto.commit) and leaves the group; spool_consumer_poll then returns
 * NULL. Call it before spool_consumer_destroy to hand partitions over at once. */
spool_err_t spool_consumer_close(spool_consumer_t *consumer);

/* Closes the consumer if it was not, then frees it. NULL is a no-op. */
void spool_consumer_destroy(spool_consumer_t *consumer);

/* ---------------------------------------------------------------------------------------- */
/* Messages: a consumed record, an error from spool_consumer_poll, or a delivery report. All
 * accessors are thread-safe and return pointers valid until the message is destroyed. */

/* SPOOL_ERR_NO_ERROR for a record; the error of a failed delivery or a consumer error. */
spool_err_t spool_message_err(const spool_message_t *msg);
/* A description of the error ("" for none): more precise than spool_err2str. */
const char *spool_message_errstr(const spool_message_t *msg);
/* The record's topic, NUL-terminated ("" for an error without one). */
const char *spool_message_topic(const spool_message_t *msg);
int32_t spool_message_partition(const spool_message_t *msg); /* -1 when none */
int64_t spool_message_offset(const spool_message_t *msg);    /* -1 when none */
/* Milliseconds since the Unix epoch; -1 when none. */
int64_t spool_message_timestamp(const spool_message_t *msg);
/* The key and its length in *len (len may be NULL); NULL for a null key. */
const void *spool_message_key(const spool_message_t *msg, size_t *len);
/* The value and its length in *len (len may be NULL); NULL for a null value. */
const void *spool_message_value(const spool_message_t *msg, size_t *len);
/* The number of headers. */
size_t spool_message_header_count(const spool_message_t *msg);
/* Header idx (0 to count-1): its key (NUL-terminated too) and length, its value (NULL for
 * null) and length. Any output pointer may be NULL. SPOOL_ERR__BAD_ARG out of range. */
spool_err_t spool_message_header(const spool_message_t *msg, size_t idx, const char **key,
                                 size_t *key_len, const void **value, size_t *value_len);
/* Every field of a message at once, for bindings that pay per call (ctypes, JNA, koffi):
 * the same values as the accessors above. Fields may be added at the end in later versions;
 * spool_message_view writes only the view_size bytes the caller's struct has. */
typedef struct spool_message_view_s {
    spool_err_t err;
    int32_t partition;
    int64_t offset;
    int64_t timestamp;
    const char *topic;
    const char *errstr;
    const void *key; /* NULL: null key */
    size_t key_len;
    const void *value; /* NULL: null value */
    size_t value_len;
    size_t header_count;
    void *opaque;
} spool_message_view_t;

/* Fills *view with msg's fields, writing at most view_size bytes (pass sizeof *view); the
 * pointers are valid while msg is. SPOOL_ERR__BAD_ARG for a NULL msg or view. */
spool_err_t spool_message_view(const spool_message_t *msg, spool_message_view_t *view,
                               size_t view_size);
/* The msg_opaque of the produce call, for a delivery report; NULL otherwise. */
void *spool_message_opaque(const spool_message_t *msg);
/* Frees a message from spool_consumer_poll. NULL is a no-op. Never call it on the message
 * given to a delivery report callback. */
void spool_message_destroy(spool_message_t *msg);

/* ---------------------------------------------------------------------------------------- */
/* Packed calls: many records, reports or messages per call, laid out in flat buffers, for
 * bindings that pay per call and per object (ctypes, JNA, koffi). They do what the calls
 * above do; what differs is only how the data crosses. */

/* Produces count records to topic, as spool_produce_batch, from columns instead of structs:
 *  - partitions[i]: record i's partition (SPOOL_PARTITION_UA: the partitioner chooses);
 *    partitions NULL: every record SPOOL_PARTITION_UA.
 *  - key_lens[i]: the length of record i's key, or -1 (any negative) for a null key; the
 *    keys that are not null are concatenated in keys, in order, which holds at least the sum
 *    of their lengths. key_lens NULL: every key null (keys is then not read).
 *  - values and value_lens: the same for the values.
 *  - headers[i] and header_counts[i]: record i's headers (headers[i] may be NULL when
 *    header_counts[i] is 0); either NULL: no record has headers.
 *  - msg_opaques[i]: record i's msg_opaque, given back in its delivery report; NULL: all NULL.
 * Every array has count entries and is only read during the call. Either all records are
 * queued (SPOOL_ERR_NO_ERROR; each then gets one delivery report) or, for a bad argument
 * (NULL producer or topic, a partition below SPOOL_PARTITION_UA, NULL keys or values with a
 * positive length, NULL headers or a NULL header key with a length), none is
 * (SPOOL_ERR__BAD_ARG) or a record of 2 GiB or more (SPOOL_RESP_ERR_MESSAGE_TOO_LARGE);
 * SPOOL_ERR__CLOSED once the producer is being destroyed.
 * The call returns once the records are copied into the queue the other produce calls use,
 * in call order with theirs; it never fails with SPOOL_ERR__QUEUE_FULL but waits, while a
 * megabyte of earlier records waits to be encoded. Records beyond
 * queue.buffering.max.messages still count in spool_producer_outq_len and make the other
 * calls' records wait. spool_producer_poll_reports is its pair.
 * Thread-safe: records of one thread are queued in call order. */
spool_err_t spool_produce_packed(spool_producer_t *producer, const char *topic, size_t count,
                                 const int32_t *partitions, const void *keys,
                                 const int64_t *key_lens, const void *values,
                                 const int64_t *value_lens, const spool_header_t *const *headers,
                                 const size_t *header_counts, void *const *msg_opaques);

/* A delivery report of spool_producer_poll_reports: the record's outcome without its bytes
 * (the caller, who produced them, has them). */
typedef struct spool_report_s {
    void *msg_opaque;  /* as given when the record was produced */
    int64_t offset;    /* -1 when err is set */
    int64_t timestamp; /* milliseconds since the Unix epoch; -1 when none */
    int32_t partition; /* -1 when none (the record failed before one was chosen) */
    spool_err_t err;   /* SPOOL_ERR_NO_ERROR when the record was written */
} spool_report_t;

/* Takes delivery reports instead of calling dr_cb: waits up to timeout_ms (0: not at all,
 * -1: until one comes) for reports, then returns the number n of reports ready and sets
 * *reports to an array of n, which the caller frees with spool_free (NULL when n is 0). The
 * array is sorted by msg_opaque (as an unsigned integer): a caller that numbers its records
 * in batches finds the reports of one batch together, in order. The
 * producer keeps reports only when its conf had a dr_cb (spool_conf_set_dr_cb); a caller
 * that takes them only here may set any callback, which then never runs unless
 * spool_producer_poll or spool_producer_flush is called (they serve the same queue: each
 * report goes to one of them). 0 for a NULL producer or reports. Thread-safe. */
size_t spool_producer_poll_reports(spool_producer_t *producer, int timeout_ms,
                                   spool_report_t **reports);

/* One message in a block of spool_consumer_poll_packed. Offsets count bytes from the start
 * of the block; strings are not NUL-terminated. */
typedef struct spool_packed_message_s {
    spool_err_t err;    /* SPOOL_ERR_NO_ERROR for a record; else a consumer error */
    int32_t partition;  /* -1 when none */
    int64_t offset;     /* -1 when none */
    int64_t timestamp;  /* milliseconds since the Unix epoch; -1 when none */
    uint64_t topic_off; /* messages of one topic in a row share the bytes of its name */
    uint64_t topic_len;
    uint64_t errstr_off; /* spool_message_errstr's text; errstr_len 0 for a record */
    uint64_t errstr_len;
    uint64_t key_off;
    int64_t key_len; /* -1: null key */
    uint64_t value_off;
    int64_t value_len; /* -1: null value */
    /* header_count headers at headers_off, one after the other, unaligned (read with
     * memcpy): an int64_t key length, the key, an int64_t value length (-1: null), the
     * value. */
    uint64_t headers_off;
    uint64_t header_count;
} spool_packed_message_t;

/* spool_consumer_poll_batch into one block: waits up to timeout_ms for the first message,
 * takes those ready at once, up to max, and returns their number n (0 on timeout, for a NULL
 * consumer, block or block_size, or max 0). *block then points to n spool_packed_message_t,
 * followed by the bytes they point into; *block_size is its size in bytes. The block is the
 * caller's: free it with spool_free (it outlives the consumer). Offsets are committed and
 * rebalance callbacks run as with spool_consumer_poll. Thread-safe. */
size_t spool_consumer_poll_packed(spool_consumer_t *consumer, int timeout_ms, size_t max,
                                  void **block, size_t *block_size);

/* Frees what spool_producer_poll_reports or spool_consumer_poll_packed returned. NULL is a
 * no-op. */
void spool_free(void *block);

#ifdef __cplusplus
}
#endif
#endif /* SPOOL_H */

'use strict';
// native.js: the functions and types of spool.h, declared for koffi (no compiler needed at
// install). Pointers to messages and handles stay opaque; msg_opaque is an integer id.
const koffi = require('koffi');
const { execFileSync } = require('node:child_process');
const path = require('node:path');

// The library: $SPOOL_LIBRARY (a path to libspool.so.0), else pkg-config's libdir of spool,
// else the loader's search path.
function libraryPath() {
  if (process.env.SPOOL_LIBRARY) return process.env.SPOOL_LIBRARY;
  try {
    const dir = execFileSync('pkg-config', ['--variable=libdir', 'spool'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    if (dir) return path.join(dir, 'libspool.so.0');
  } catch (_) {
    // not installed with pkg-config: the loader's path
  }
  return 'libspool.so.0';
}

const lib = koffi.load(libraryPath());

koffi.opaque('spool_conf_t');
koffi.opaque('spool_producer_t');
koffi.opaque('spool_consumer_t');
koffi.opaque('spool_message_t');

const Header = koffi.struct('spool_header_t', {
  key: 'const uint8_t *',
  key_len: 'size_t',
  value: 'const uint8_t *',
  value_len: 'size_t',
});

const Record = koffi.struct('spool_record_t', {
  partition: 'int32_t',
  key: 'const uint8_t *',
  key_len: 'size_t',
  value: 'const uint8_t *',
  value_len: 'size_t',
  headers: 'const spool_header_t *',
  header_count: 'size_t',
  msg_opaque: 'intptr_t',
});

const MessageView = koffi.struct('spool_message_view_t', {
  err: 'int',
  partition: 'int32_t',
  offset: 'int64_t',
  timestamp: 'int64_t',
  topic: 'const char *',
  errstr: 'const char *',
  key: 'const void *',
  key_len: 'size_t',
  value: 'const void *',
  value_len: 'size_t',
  header_count: 'size_t',
  opaque: 'intptr_t',
});

// The delivery report callback. Opaque pointers (the conf's, a record's msg_opaque) are
// declared intptr_t, the same ABI as void *: this binding passes integer ids in them.
const DrCb = koffi.proto('void spool_dr_cb_t(spool_producer_t *producer, const spool_message_t *msg, intptr_t opaque)');

// A partition's offset to commit (spool_consumer_commit_offsets), registered by name.
koffi.struct('spool_topic_partition_offset_t', {
  topic: 'const char *',
  partition: 'int32_t',
  offset: 'int64_t',
});

// The rebalance callback and its partitions (spool_topic_partition_t); libspool calls it
// inside spool_consumer_poll_batch and spool_consumer_close, which this binding calls
// asynchronously: koffi queues the call to the main thread while the worker waits.
const TopicPartition = koffi.struct('spool_topic_partition_t', {
  topic: 'const char *',
  partition: 'int32_t',
});
const RebalanceCb = koffi.proto('void spool_rebalance_cb_t(spool_consumer_t *consumer, int what, spool_topic_partition_t *partitions, size_t count, intptr_t opaque)');
// The offset commit callback, called as the rebalance callback is.
const TopicPartitionOffset = koffi.resolve('spool_topic_partition_offset_t');
const OffsetCommitCb = koffi.proto('void spool_offset_commit_cb_t(spool_consumer_t *consumer, int err, spool_topic_partition_offset_t *offsets, size_t count, intptr_t opaque)');

const fn = {
  version: lib.func('const char *spool_version(void)'),
  handleCount: lib.func('int spool_handle_count(void)'),
  err2str: lib.func('const char *spool_err2str(int err)'),

  confNew: lib.func('spool_conf_t *spool_conf_new(void)'),
  confSet: lib.func('int spool_conf_set(spool_conf_t *conf, const char *key, const char *value, _Out_ char *errstr, size_t errstr_size)'),
  confSetDrCb: lib.func('void spool_conf_set_dr_cb(spool_conf_t *conf, spool_dr_cb_t *cb)'),
  confSetRebalanceCb: lib.func('void spool_conf_set_rebalance_cb(spool_conf_t *conf, spool_rebalance_cb_t *cb)'),
  confSetOffsetCommitCb: lib.func('void spool_conf_set_offset_commit_cb(spool_conf_t *conf, spool_offset_commit_cb_t *cb)'),
  confSetOpaque: lib.func('void spool_conf_set_opaque(spool_conf_t *conf, intptr_t opaque)'),
  confDestroy: lib.func('void spool_conf_destroy(spool_conf_t *conf)'),

  producerNew: lib.func('spool_producer_t *spool_producer_new(spool_conf_t *conf, _Out_ char *errstr, size_t errstr_size)'),
  produce: lib.func('int spool_produce_headers(spool_producer_t *p, const char *topic, int32_t partition, const uint8_t *key, size_t key_len, const uint8_t *value, size_t value_len, const spool_header_t *headers, size_t header_count, intptr_t msg_opaque)'),
  produceTimestamp: lib.func('int spool_produce_timestamp(spool_producer_t *p, const char *topic, int32_t partition, int64_t timestamp_ms, const uint8_t *key, size_t key_len, const uint8_t *value, size_t value_len, const spool_header_t *headers, size_t header_count, intptr_t msg_opaque)'),
  produceBatch: lib.func('int spool_produce_batch(spool_producer_t *p, const char *topic, const spool_record_t *records, size_t count)'),
  producerPoll: lib.func('int spool_producer_poll(spool_producer_t *p, int timeout_ms)'),
  outqLen: lib.func('int spool_producer_outq_len(spool_producer_t *p)'),
  createTopic: lib.func('int spool_create_topic(spool_producer_t *p, const char *topic, int32_t partitions, int16_t replication_factor, int timeout_ms)'),
  deleteTopic: lib.func('int spool_delete_topic(spool_producer_t *p, const char *topic, int timeout_ms)'),
  producerDestroy: lib.func('void spool_producer_destroy(spool_producer_t *p)'),

  consumerNew: lib.func('spool_consumer_t *spool_consumer_new(spool_conf_t *conf, _Out_ char *errstr, size_t errstr_size)'),
  subscribe: lib.func('int spool_consumer_subscribe(spool_consumer_t *c, const char **topics, size_t topic_count)'),
  pollBatch: lib.func('size_t spool_consumer_poll_batch(spool_consumer_t *c, int timeout_ms, _Out_ spool_message_t **msgs, size_t max)'),
  commit: lib.func('int spool_consumer_commit(spool_consumer_t *c, int async)'),
  commitOffsets: lib.func('int spool_consumer_commit_offsets(spool_consumer_t *c, const spool_topic_partition_offset_t *offsets, size_t count, int async)'),
  consumerClose: lib.func('int spool_consumer_close(spool_consumer_t *c)'),
  consumerDestroy: lib.func('void spool_consumer_destroy(spool_consumer_t *c)'),

  messageView: lib.func('int spool_message_view(const spool_message_t *msg, _Out_ spool_message_view_t *view, size_t view_size)'),
  messageHeader: lib.func('int spool_message_header(const spool_message_t *msg, size_t idx, _Out_ const void **key, _Out_ size_t *key_len, _Out_ const void **value, _Out_ size_t *value_len)'),
  messageDestroy: lib.func('void spool_message_destroy(spool_message_t *msg)'),
};

const VIEW_SIZE = koffi.sizeof(MessageView);

// A copy of len bytes at ptr as a Buffer; null for a NULL pointer (a null key or value).
function bytesAt(ptr, len) {
  if (ptr === null) return null;
  if (len === 0) return Buffer.alloc(0);
  return Buffer.from(new Uint8Array(koffi.view(ptr, len))); // a copy: the view aliases C memory
}

// Every field of a message, copied into JS values, headers as KafkaJS has them.
function readMessage(msg) {
  const v = {};
  fn.messageView(msg, v, VIEW_SIZE);
  const headers = {};
  for (let i = 0; i < v.header_count; i++) {
    const k = [null], kl = [0], val = [null], vl = [0];
    if (fn.messageHeader(msg, i, k, kl, val, vl) !== 0) continue;
    headers[bytesAt(k[0], Number(kl[0])).toString()] = bytesAt(val[0], Number(vl[0]));
  }
  return {
    err: v.err,
    errstr: v.errstr,
    topic: v.topic,
    partition: v.partition,
    offset: v.offset,
    timestamp: v.timestamp,
    key: bytesAt(v.key, Number(v.key_len)),
    value: bytesAt(v.value, Number(v.value_len)),
    headers,
    opaque: Number(v.opaque),
  };
}

module.exports = { koffi, fn, DrCb, RebalanceCb, OffsetCommitCb, TopicPartition, TopicPartitionOffset, Header, Record, readMessage, libraryPath };

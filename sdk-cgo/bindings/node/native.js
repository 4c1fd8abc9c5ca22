'use strict';
// native.js: the functions and types of spool.h, declared for koffi (no compiler needed at
// install). Pointers to messages and handles stay opaque; msg_opaque is an integer id.
const koffi = require('koffi');
const { execFileSync } = require('node:child_process');
const path = require('node:path');

// The library: $SPOOL_LIBRARY (a path to libspool.so.0), else the copy bundled in the package
// by npm pack (scripts/bundle-libspool.js), else pkg-config's libdir of spool, else the
// loader's search path.
function libraryPath() {
  if (process.env.SPOOL_LIBRARY) return process.env.SPOOL_LIBRARY;
  const bundled = path.join(__dirname, 'lib', 'libspool.so.0');
  if (require('node:fs').existsSync(bundled)) return bundled;
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
  commit: lib.func('int spool_consumer_commit(spool_consumer_t *c, int async)'),
  commitOffsets: lib.func('int spool_consumer_commit_offsets(spool_consumer_t *c, const spool_topic_partition_offset_t *offsets, size_t count, int async)'),
  consumerClose: lib.func('int spool_consumer_close(spool_consumer_t *c)'),
  consumerDestroy: lib.func('void spool_consumer_destroy(spool_consumer_t *c)'),

  // The packed calls (spool.h): many records, reports or messages per crossing. Columns of
  // int64 are BigInt64Arrays (msg_opaques too: a pointer is 64 bits wherever koffi runs with
  // this library); headers are never passed here (NULL).
  producePacked: lib.func('int spool_produce_packed(spool_producer_t *p, const char *topic, size_t count, const int32_t *partitions, const uint8_t *keys, const int64_t *key_lens, const uint8_t *values, const int64_t *value_lens, void *headers, void *header_counts, const int64_t *msg_opaques)'),
  pollReports: lib.func('size_t spool_producer_poll_reports(spool_producer_t *p, int timeout_ms, _Out_ void **reports)'),
  pollPacked: lib.func('size_t spool_consumer_poll_packed(spool_consumer_t *c, int timeout_ms, size_t max, _Out_ void **block, _Out_ size_t *block_size)'),
  free: lib.func('void spool_free(void *block)'),

};

// The layouts of spool_report_t and spool_packed_message_t (spool.h), read little-endian
// (every platform koffi ships for) with 64-bit pointers.
const REPORT_SIZE = 32; // msg_opaque, offset, timestamp, partition, err
const PACKED_SIZE = 104; // err, partition, offset, timestamp, then ten 64-bit fields
if (koffi.sizeof('void *') !== 8 || require('node:os').endianness() !== 'LE') {
  throw new Error('spool: this binding reads libspool\'s packed blocks as little-endian with 64-bit pointers');
}

// An int64 at off as a Number (exact below 2^53: offsets, lengths, ids); -1 stays -1.
const i64 = (b, off) => b.readInt32LE(off + 4) * 4294967296 + b.readUInt32LE(off);

// The n delivery reports spool_producer_poll_reports returned at ptr, each {opaque, offset,
// partition, err}, handed to each in order; the caller frees ptr afterwards.
function eachReport(ptr, n, each) {
  const b = Buffer.from(koffi.view(ptr, n * REPORT_SIZE)); // aliases C memory: read before spool_free
  for (let i = 0, o = 0; i < n; i++, o += REPORT_SIZE) {
    each(i64(b, o), i64(b, o + 8), b.readInt32LE(o + 24), b.readInt32LE(o + 28));
  }
}

// The n messages of a block of spool_consumer_poll_packed (ptr, size bytes), copied once out
// of C memory; keys, values and header values are views of that copy (as KafkaJS's Buffers
// are of its responses). The caller frees ptr afterwards. Each message: {err, errstr, topic,
// partition, offset, timestamp, key, value, headers}, offset and timestamp as strings.
function readBlock(ptr, size, n) {
  const b = Buffer.from(new Uint8Array(koffi.view(ptr, size))); // a copy: the block is freed next
  const bytes = (off, len) => (len < 0 ? null : b.subarray(off, off + len));
  const out = new Array(n);
  let topicOff = -1; // messages of one topic in a row share its bytes: decoded once
  let topic;
  for (let i = 0, o = 0; i < n; i++, o += PACKED_SIZE) {
    if (i64(b, o + 24) !== topicOff) {
      topicOff = i64(b, o + 24);
      topic = b.toString('utf8', topicOff, topicOff + i64(b, o + 32));
    }
    const headers = {};
    for (let h = 0, at = i64(b, o + 88), count = i64(b, o + 96); h < count; h++) {
      const kl = i64(b, at);
      const key = b.toString('utf8', at + 8, at + 8 + kl);
      const vl = i64(b, at + 8 + kl);
      headers[key] = bytes(at + 16 + kl, vl); // the last value of a repeated key
      at += 16 + kl + Math.max(vl, 0);
    }
    const errstrOff = i64(b, o + 40);
    out[i] = {
      err: b.readInt32LE(o),
      errstr: b.toString('utf8', errstrOff, errstrOff + i64(b, o + 48)),
      topic,
      partition: b.readInt32LE(o + 4),
      offset: String(i64(b, o + 8)),
      timestamp: String(i64(b, o + 16)),
      key: bytes(i64(b, o + 56), i64(b, o + 64)),
      value: bytes(i64(b, o + 72), i64(b, o + 80)),
      headers,
    };
  }
  return out;
}

module.exports = { koffi, fn, DrCb, RebalanceCb, OffsetCommitCb, TopicPartition, TopicPartitionOffset, Header, Record, eachReport, readBlock, libraryPath };

'use strict';
// spool: Node binding of libspool with KafkaJS's API. `new Kafka({brokers})`, then
// `kafka.producer()` (`send({topic, messages})` returns a Promise of the records' metadata),
// `kafka.consumer({groupId})` (`subscribe`, then `run({eachMessage})`: an async loop) and
// `kafka.admin()`. README.md lists every difference from KafkaJS.
const { EventEmitter } = require('node:events');
const { koffi, fn, DrCb, RebalanceCb, OffsetCommitCb, TopicPartition, TopicPartitionOffset, eachReport, readBlock } = require('./native');

const PARTITION_UA = -1;

// Error codes: libspool's (Kafka's protocol numbers; local errors below zero).
const ErrorCodes = Object.freeze({
  NO_ERROR: 0,
  UNKNOWN_TOPIC_OR_PARTITION: 3,
  MESSAGE_TOO_LARGE: 10,
  TOPIC_ALREADY_EXISTS: 36,
  SASL_AUTHENTICATION_FAILED: 58,
  BAD_ARG: -100,
  TIMED_OUT: -101,
  TRANSPORT: -102,
  CLOSED: -103,
  QUEUE_FULL: -104,
  STATE: -105,
  FAIL: -106,
});

// KafkaJSError: every error of this package. `code` is libspool's code (ErrorCodes), `type`
// its name ("TOPIC_ALREADY_EXISTS", "SPOOL_ERR__TRANSPORT"), `retriable` as KafkaJS's.
class KafkaJSError extends Error {
  constructor(message, { code = ErrorCodes.FAIL, retriable = false, cause } = {}) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'KafkaJSError';
    this.code = code;
    this.type = fn.err2str(code).split(':')[0];
    this.retriable = retriable;
  }
}

function errorOf(code, what) {
  const retriable = code === ErrorCodes.TRANSPORT || code === ErrorCodes.TIMED_OUT;
  return new KafkaJSError(`${what}: ${fn.err2str(code)}`, { code, retriable });
}

// timestampOf is a message's timestamp as libspool takes it: milliseconds since the epoch
// (KafkaJS gives a string), 0 for none.
const timestampOf = (ts) => {
  if (ts === undefined || ts === null) return 0;
  const n = Number(ts);
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new KafkaJSError(`timestamp ${ts} is not milliseconds since the epoch`, { code: ErrorCodes.BAD_ARG });
  }
  return n;
};
const toBuffer = (v) => (v === null || v === undefined ? null : Buffer.isBuffer(v) ? v : Buffer.from(String(v)));

// koffi passes an empty Buffer as NULL, which libspool reads as null: an empty key or value
// is passed as this one byte with length 0.
const EMPTY = Buffer.alloc(1);
const nonNull = (b) => (b !== null && b.length === 0 ? EMPTY : b);

// A libspool configuration from string keys; throws KafkaJSError (BAD_ARG) naming the key.
function nativeConf(keys) {
  const conf = fn.confNew();
  const errstr = Buffer.alloc(512);
  for (const [key, value] of Object.entries(keys)) {
    if (value === undefined) continue;
    if (fn.confSet(conf, key, String(value), errstr, errstr.length) !== 0) {
      fn.confDestroy(conf);
      throw new KafkaJSError(errstr.toString('utf8', 0, errstr.indexOf(0)), { code: ErrorCodes.BAD_ARG });
    }
  }
  return conf;
}

// Creates a producer or consumer with newFn, which takes conf only when it succeeds.
function create(newFn, conf) {
  const errstr = Buffer.alloc(512);
  const handle = newFn(conf, errstr, errstr.length);
  if (handle === null) {
    fn.confDestroy(conf);
    throw new KafkaJSError(errstr.toString('utf8', 0, errstr.indexOf(0)), { code: ErrorCodes.BAD_ARG });
  }
  return handle;
}

// Runs a blocking libspool call on koffi's worker threads, off the event loop.
const callAsync = (f, ...args) =>
  new Promise((resolve, reject) => f.async(...args, (err, res) => (err ? reject(err) : resolve(res))));

const wait = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

class Kafka {
  // config: KafkaJS's {clientId, brokers, connectionTimeout, requestTimeout}, plus `config`:
  // libspool keys (librdkafka's names) given as they are to every client.
  constructor({ clientId, brokers, connectionTimeout, requestTimeout, config = {} } = {}) {
    if (!Array.isArray(brokers) || brokers.length === 0) {
      throw new KafkaJSError('Failed to connect: expected brokers array and got nothing', { code: ErrorCodes.BAD_ARG });
    }
    this.keys = {
      'bootstrap.servers': brokers.join(','),
      'client.id': clientId,
      'socket.connection.setup.timeout.ms': connectionTimeout,
      'request.timeout.ms': requestTimeout,
      ...config,
    };
  }

  producer({ idempotent, transactionalId, config = {} } = {}) {
    if (transactionalId) throw new KafkaJSError('transactions are not supported', { code: ErrorCodes.BAD_ARG });
    return new Producer({ ...this.keys, 'enable.idempotence': idempotent, ...config });
  }

  consumer({ groupId, sessionTimeout, heartbeatInterval, rebalanceTimeout, config = {} } = {}) {
    if (!groupId) throw new KafkaJSError('Consumer groupId must be a non-empty string', { code: ErrorCodes.BAD_ARG });
    return new Consumer({
      ...this.keys,
      'group.id': groupId,
      'session.timeout.ms': sessionTimeout,
      'heartbeat.interval.ms': heartbeatInterval,
      'max.poll.interval.ms': rebalanceTimeout,
      ...config,
    });
  }

  admin() {
    return new Admin(this.keys);
  }
}

// libspool keeps delivery reports for spool_producer_poll_reports only when the conf has a
// delivery report callback: this one, which never runs, since this binding never calls
// spool_producer_poll or spool_producer_flush.
const keepReports = koffi.register(() => {}, koffi.pointer(DrCb));

// A record's msg_opaque is its send's number times SEND_SPAN plus its index in the send: the
// reports, sorted by msg_opaque, come grouped by send. Send numbers go round after MAX_SENDS,
// so that every msg_opaque stays below 2^53, exact in a Number (a number comes back only
// after half a billion later sends, long after its own has settled).
const SEND_SPAN = 2 ** 24;
const MAX_SENDS = 2 ** 29 - 1;

class Producer {
  constructor(keys) {
    this.keys = keys;
    this.handle = null;
    this.sends = new Map(); // send number → its pending state (see _track)
    this.nextSend = 1;
    this.polling = false;
  }

  // Creates the libspool producer: configuration errors surface here.
  async connect() {
    if (this.handle !== null) return;
    const conf = nativeConf(this.keys);
    fn.confSetDrCb(conf, keepReports);
    this.handle = create(fn.producerNew, conf);
  }

  // send({topic, messages: [{key, value, partition, headers, timestamp}]}) resolves, once every record
  // is acknowledged, to one RecordMetadata per partition written; it rejects with the first
  // record's KafkaJSError if any failed.
  async send({ topic, messages, acks, timeout } = {}) {
    if (this.handle === null) throw new KafkaJSError('The producer is disconnected', { code: ErrorCodes.CLOSED });
    if (typeof topic !== 'string' || !Array.isArray(messages)) {
      throw new KafkaJSError('send needs {topic, messages: [...]}', { code: ErrorCodes.BAD_ARG });
    }
    if (messages.length >= SEND_SPAN) {
      throw new KafkaJSError(`a send of ${messages.length} messages: at most ${SEND_SPAN - 1}`, { code: ErrorCodes.BAD_ARG });
    }
    void acks; // the producer's acks key decides (libspool has no per-call acks)
    void timeout;
    if (messages.length === 0) return [];
    const id = this.nextSend;
    this.nextSend = id >= MAX_SENDS ? 1 : id + 1;
    const done = this._track(id, topic, messages.length);
    try {
      this._produce(id, topic, messages);
    } catch (e) { // a bad argument found before any record was buffered
      this.sends.delete(id);
      throw e;
    }
    this._poll();
    return done;
  }

  // sendBatch({topicMessages: [{topic, messages}]}): send for each topic, concurrently.
  async sendBatch({ topicMessages = [] } = {}) {
    const all = await Promise.all(topicMessages.map((tm) => this.send(tm)));
    return all.flat();
  }

  // _track returns the promise of send id, which settles when its count records are reported
  // (or at its first failure): one promise a send, not one a record. `lowest` holds, per
  // partition written, the lowest offset reported, the send's baseOffset there.
  _track(id, topic, count) {
    return new Promise((resolve, reject) => {
      this.sends.set(id, { id, topic, remaining: count, lowest: new Map(), failed: false, resolve, reject });
    });
  }

  // _settle counts n records of send s as reported; err (a KafkaJSError) fails the send.
  _settle(s, n, err) {
    if (err && !s.failed) {
      s.failed = true;
      s.reject(err);
    }
    s.remaining -= n;
    if (s.remaining > 0) return;
    this.sends.delete(s.id);
    if (s.failed) return;
    s.resolve([...s.lowest].map(([partition, offset]) => ({
      topicName: s.topic,
      partition,
      errorCode: 0,
      baseOffset: String(offset),
      logAppendTime: '-1',
      logStartOffset: '-1',
    })));
  }

  // Produces the messages of send id to topic in one call. Without headers or timestamps they
  // cross as columns (spool_produce_packed: one buffer of keys, one of values); otherwise as
  // records (spool_produce_batch), or one spool_produce_timestamp call each when any has a
  // timestamp (ms since the epoch, a string or a number), all checked first, so that only a
  // full queue may stop the calls midway (the rest then fail). libspool checks every record of
  // a packed or batch call first and buffers all or none.
  _produce(id, topic, messages) {
    const base = id * SEND_SPAN;
    let err = 0;
    let done = 0; // records buffered
    if (messages.every((m) => !m.headers && (m.timestamp === undefined || m.timestamp === null))) {
      err = this._producePacked(base, topic, messages);
    } else {
      const stamps = messages.map((m) => timestampOf(m.timestamp));
      const records = messages.map((m, i) => {
        const key = toBuffer(m.key);
        const value = toBuffer(m.value);
        const headers = Object.entries(m.headers || {}).map(([k, v]) => {
          const kb = Buffer.from(k);
          const vb = toBuffer(v);
          return { key: nonNull(kb), key_len: kb.length, value: nonNull(vb), value_len: vb ? vb.length : 0 };
        });
        return {
          partition: partitionOf(m),
          key: nonNull(key),
          key_len: key ? key.length : 0,
          value: nonNull(value),
          value_len: value ? value.length : 0,
          headers: headers.length ? headers : null,
          header_count: headers.length,
          msg_opaque: base + i,
        };
      });
      if (stamps.every((ts) => ts === 0)) {
        err = fn.produceBatch(this.handle, topic, records, records.length);
      } else {
        for (const r of records) {
          err = fn.produceTimestamp(this.handle, topic, r.partition, stamps[done], r.key, r.key_len, r.value,
            r.value_len, r.headers, r.header_count, r.msg_opaque);
          if (err !== 0) break;
          done++;
        }
      }
    }
    if (err !== 0) this._settle(this.sends.get(id), messages.length - done, errorOf(err, `produce to ${topic}`));
  }

  // The columns of spool_produce_packed: partitions, keys and values, each set of bytes
  // concatenated into one Buffer with its lengths beside (-1: null).
  _producePacked(base, topic, messages) {
    const n = messages.length;
    const partitions = new Int32Array(n);
    const keyLens = new BigInt64Array(n);
    const valueLens = new BigInt64Array(n);
    const opaques = new BigInt64Array(n);
    const keys = [];
    const values = [];
    let keyed = false;
    for (let i = 0; i < n; i++) {
      const m = messages[i];
      partitions[i] = partitionOf(m);
      const key = toBuffer(m.key);
      keyLens[i] = key === null ? -1n : BigInt(key.length);
      if (key !== null) {
        keyed = true;
        keys.push(key);
      }
      const value = toBuffer(m.value);
      valueLens[i] = value === null ? -1n : BigInt(value.length);
      if (value !== null) values.push(value);
      opaques[i] = BigInt(base + i);
    }
    const joined = (bufs) => (bufs.length === 1 ? bufs[0] : Buffer.concat(bufs));
    return fn.producePacked(this.handle, topic, n, partitions, keyed ? nonNull(joined(keys)) : null, keyed ? keyLens : null,
      nonNull(joined(values)), valueLens, null, null, opaques);
  }

  // Takes the delivery reports ready and settles their sends.
  _serveReports() {
    const out = [null];
    const n = Number(fn.pollReports(this.handle, 0, out));
    if (n === 0) return;
    try {
      eachReport(out[0], n, (opaque, offset, partition, err) => {
        const s = this.sends.get(Math.floor(opaque / SEND_SPAN));
        if (!s) return; // its send failed as a whole before this record's report came
        if (err !== 0) {
          this._settle(s, 1, new KafkaJSError(`delivery to ${s.topic}: ${fn.err2str(err)}`, {
            code: err,
            retriable: err === ErrorCodes.TRANSPORT,
          }));
          return;
        }
        const lowest = s.lowest.get(partition);
        if (lowest === undefined || offset < lowest) s.lowest.set(partition, offset);
        this._settle(s, 1);
      });
    } finally {
      fn.free(out[0]);
    }
  }

  // Serves delivery reports on the main thread while any send is pending: a non-blocking
  // take every 2 ms.
  _poll() {
    if (this.polling) return;
    this.polling = true;
    const tick = () => {
      if (this.handle !== null) this._serveReports();
      if (this.sends.size > 0 && this.handle !== null) {
        setTimeout(tick, 2);
      } else {
        this.polling = false;
      }
    };
    setImmediate(tick);
  }

  // Waits for every record's delivery, then frees the producer.
  async disconnect() {
    if (this.handle === null) return;
    while (this.sends.size > 0 || fn.outqLen(this.handle) > 0) {
      this._serveReports();
      await wait(2);
    }
    fn.producerDestroy(this.handle);
    this.handle = null;
  }
}

// A message's partition as libspool takes it (PARTITION_UA: the partitioner chooses); libspool
// refuses one below PARTITION_UA.
function partitionOf(m) {
  if (m.partition === undefined || m.partition === null) return PARTITION_UA;
  if (!Number.isInteger(m.partition) || m.partition < -(2 ** 31) || m.partition >= 2 ** 31) {
    throw new KafkaJSError(`partition ${m.partition} is not a partition number`, { code: ErrorCodes.BAD_ARG });
  }
  return m.partition;
}

// Group consumers by id, for the rebalance callback (the conf's opaque is the id).
const consumers = new Map();
let nextConsumerId = 1;
const REBALANCE_ASSIGN = 1;

const onRebalance = koffi.register((_consumer, what, parts, count, consumerId) => {
  const c = consumers.get(Number(consumerId));
  const n = Number(count);
  if (c) c._rebalance(what, n > 0 ? koffi.decode(parts, TopicPartition, n) : []);
}, koffi.pointer(RebalanceCb));

const onCommit = koffi.register((_consumer, err, offsets, count, consumerId) => {
  const c = consumers.get(Number(consumerId));
  const n = Number(count);
  if (c) c._committed(err, n > 0 ? koffi.decode(offsets, TopicPartitionOffset, n) : []);
}, koffi.pointer(OffsetCommitCb));

// byTopic turns [{topic, partition}] into KafkaJS's {topic: [partitions]}.
function byTopic(list) {
  const out = {};
  for (const { topic, partition } of list) (out[topic] ||= []).push(partition);
  for (const t of Object.keys(out)) out[t].sort((a, b) => a - b);
  return out;
}

class Consumer extends EventEmitter {
  constructor(keys) {
    super();
    this.keys = keys;
    this.topics = [];
    this.fromBeginning = false;
    this.handle = null;
    this.running = null;
    this.events = Consumer.events;
    this.assignment = new Map(); // topic → Set of partitions, as the rebalances said
  }

  // A rebalance of libspool's, as KafkaJS's events: GROUP_JOIN with the whole assignment
  // (memberAssignment) and what was added (spool's `assigned`), before records of it reach
  // eachMessage; REBALANCING with what is revoked or lost (spool's `revoked`), before the
  // partitions go to another member.
  _rebalance(what, list) {
    const groupId = this.keys['group.id'];
    try {
      if (what === REBALANCE_ASSIGN) {
        for (const { topic, partition } of list) {
          if (!this.assignment.has(topic)) this.assignment.set(topic, new Set());
          this.assignment.get(topic).add(partition);
        }
        const all = [];
        for (const [topic, ps] of this.assignment) for (const partition of ps) all.push({ topic, partition });
        this.emit(Consumer.events.GROUP_JOIN, { type: Consumer.events.GROUP_JOIN, payload: { groupId, memberAssignment: byTopic(all), assigned: byTopic(list) } });
      } else {
        for (const { topic, partition } of list) this.assignment.get(topic)?.delete(partition);
        this.emit(Consumer.events.REBALANCING, { type: Consumer.events.REBALANCING, payload: { groupId, revoked: byTopic(list) } });
      }
    } catch (error) { // a listener's exception: libspool cannot carry it
      this.emit(Consumer.events.CRASH, { type: Consumer.events.CRASH, payload: { error, groupId, restart: false } });
    }
  }

  // A commit of libspool's (automatic, or of commitOffsets), as KafkaJS's COMMIT_OFFSETS
  // event, with the offsets as strings; a failed one as a CRASH event (restart: true: the
  // consumer goes on, and the next commit covers those offsets again).
  _committed(err, list) {
    const groupId = this.keys['group.id'];
    try {
      if (err !== 0) {
        this.emit(Consumer.events.CRASH, { type: Consumer.events.CRASH, payload: { error: errorOf(err, 'commit'), groupId, restart: true } });
        return;
      }
      const topics = new Map();
      for (const { topic, partition, offset } of list) {
        if (!topics.has(topic)) topics.set(topic, []);
        topics.get(topic).push({ partition, offset: String(offset) });
      }
      this.emit(Consumer.events.COMMIT_OFFSETS, {
        type: Consumer.events.COMMIT_OFFSETS,
        payload: { groupId, topics: [...topics].map(([topic, partitions]) => ({ topic, partitions })) },
      });
    } catch (error) { // a listener's exception: libspool cannot carry it
      this.emit(Consumer.events.CRASH, { type: Consumer.events.CRASH, payload: { error, groupId, restart: false } });
    }
  }

  // Checks the configuration; the libspool consumer is made by run, once fromBeginning is
  // known.
  async connect() {
    fn.confDestroy(nativeConf(this.keys));
  }

  // subscribe({topics: [...]} or {topic}, fromBeginning): before run, as KafkaJS.
  async subscribe({ topic, topics, fromBeginning = false } = {}) {
    if (this.handle !== null) throw new KafkaJSError('Cannot subscribe to topic while consumer is running', { code: ErrorCodes.STATE });
    const list = topics || (topic === undefined ? [] : [topic]);
    if (list.length === 0 || list.some((t) => typeof t !== 'string')) {
      throw new KafkaJSError('subscribe needs topic names (RegExp subscriptions are not supported)', { code: ErrorCodes.BAD_ARG });
    }
    this.topics.push(...list);
    this.fromBeginning = fromBeginning;
  }

  // run({eachMessage}) joins the group and resolves; an async loop then calls eachMessage
  // for each record, in order per partition, awaiting it. Offsets are committed every
  // autoCommitInterval ms (libspool's auto commit) and on disconnect.
  async run({ eachMessage, eachBatch, autoCommit = true, autoCommitInterval, partitionsConsumedConcurrently } = {}) {
    if (eachBatch || !eachMessage) throw new KafkaJSError('run needs eachMessage (eachBatch is not supported)', { code: ErrorCodes.BAD_ARG });
    void partitionsConsumedConcurrently;
    const conf = nativeConf({
      ...this.keys,
      'auto.offset.reset': this.fromBeginning ? 'earliest' : 'latest',
      'enable.auto.commit': autoCommit,
      'auto.commit.interval.ms': autoCommitInterval,
    });
    const id = nextConsumerId++;
    fn.confSetRebalanceCb(conf, onRebalance);
    fn.confSetOffsetCommitCb(conf, onCommit);
    fn.confSetOpaque(conf, id);
    this.handle = create(fn.consumerNew, conf);
    this.id = id;
    consumers.set(id, this);
    const err = fn.subscribe(this.handle, this.topics, this.topics.length);
    if (err !== 0) throw errorOf(err, 'subscribe');
    this.stopping = false;
    this.running = this._loop(eachMessage);
  }

  // Takes up to 1024 records a crossing (spool_consumer_poll_packed, on a koffi worker
  // thread), copied out of libspool in one block, and hands them to eachMessage one by one.
  async _loop(eachMessage) {
    const block = [null];
    const size = [0];
    while (!this.stopping) {
      const n = Number(await callAsync(fn.pollPacked, this.handle, 100, 1024, block, size));
      if (n === 0) continue;
      let msgs;
      try {
        msgs = readBlock(block[0], Number(size[0]), n);
      } finally {
        fn.free(block[0]);
      }
      for (const m of msgs) {
        if (this.stopping) break; // returned by poll: committed, as KafkaJS would not
        if (m.err !== 0) {
          this.emit(Consumer.events.CRASH, { type: Consumer.events.CRASH, payload: { error: errorOf(m.err, m.errstr), groupId: this.keys['group.id'], restart: true } });
          continue;
        }
        try {
          await eachMessage({
            topic: m.topic,
            partition: m.partition,
            message: {
              key: m.key,
              value: m.value,
              headers: m.headers,
              timestamp: m.timestamp,
              offset: m.offset,
              attributes: 0,
              size: (m.key ? m.key.length : 0) + (m.value ? m.value.length : 0),
            },
            heartbeat: async () => {},
            pause: () => () => {},
          });
        } catch (error) {
          this.stopping = true;
          this.emit(Consumer.events.CRASH, { type: Consumer.events.CRASH, payload: { error, groupId: this.keys['group.id'], restart: false } });
        }
      }
    }
  }

  // commitOffsets(): commits what eachMessage was given (libspool commits per partition the
  // offset after the last record polled). commitOffsets([{topic, partition, offset}]), as
  // KafkaJS's: commits those offsets (each the next record to read, a string or a number).
  async commitOffsets(offsets) {
    if (this.handle === null) return;
    if (offsets === undefined) {
      const err = await callAsync(fn.commit, this.handle, 0);
      if (err !== 0) throw errorOf(err, 'commit');
      return;
    }
    const list = offsets.map(({ topic, partition, offset }) => {
      const o = Number(offset);
      if (typeof topic !== 'string' || !Number.isInteger(partition) || partition < 0 || !Number.isSafeInteger(o) || o < 0) {
        throw new KafkaJSError(`commitOffsets: ${JSON.stringify({ topic, partition, offset })} is not a partition's offset`,
          { code: ErrorCodes.BAD_ARG });
      }
      return { topic, partition, offset: o };
    });
    if (list.length === 0) return;
    const err = await callAsync(fn.commitOffsets, this.handle, list, list.length, 0);
    if (err !== 0) throw errorOf(err, 'commit');
  }

  // Stops the loop after the record being handled.
  async stop() {
    this.stopping = true;
    if (this.running) await this.running;
    this.running = null;
  }

  // Stops, commits (with autoCommit), leaves the group and frees the consumer.
  async disconnect() {
    await this.stop();
    if (this.handle === null) return;
    await callAsync(fn.consumerClose, this.handle);
    fn.consumerDestroy(this.handle);
    this.handle = null;
    consumers.delete(this.id);
  }
}
Consumer.events = Object.freeze({
  COMMIT_OFFSETS: 'consumer.commit_offsets', CRASH: 'consumer.crash', GROUP_JOIN: 'consumer.group_join', REBALANCING: 'consumer.rebalancing',
});

class Admin {
  constructor(keys) {
    this.keys = keys;
    this.producer = null;
  }

  async connect() {
    if (this.producer === null) {
      this.producer = create(fn.producerNew, nativeConf(this.keys));
    }
  }

  // createTopics({topics: [{topic, numPartitions, replicationFactor}]}) resolves to true, or
  // false when a topic already existed, as KafkaJS's.
  async createTopics({ topics = [], timeout = 10000 } = {}) {
    let created = true;
    for (const t of topics) {
      const err = await callAsync(fn.createTopic, this.producer, t.topic, t.numPartitions || 1, t.replicationFactor || -1, timeout);
      if (err === ErrorCodes.TOPIC_ALREADY_EXISTS) created = false;
      else if (err !== 0) throw errorOf(err, `create topic ${t.topic}`);
    }
    return created;
  }

  async deleteTopics({ topics = [], timeout = 10000 } = {}) {
    for (const t of topics) {
      const err = await callAsync(fn.deleteTopic, this.producer, t, timeout);
      if (err !== 0) throw errorOf(err, `delete topic ${t}`);
    }
  }

  async disconnect() {
    if (this.producer !== null) {
      fn.producerDestroy(this.producer);
      this.producer = null;
    }
  }
}

module.exports = {
  Kafka,
  KafkaJSError,
  ErrorCodes,
  libspoolVersion: () => fn.version(),
  // The libspool handles alive in this process: 0 once every client is disconnected.
  handleCount: () => fn.handleCount(),
};

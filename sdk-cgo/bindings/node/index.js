'use strict';
// spool: Node binding of libspool with KafkaJS's API. `new Kafka({brokers})`, then
// `kafka.producer()` (`send({topic, messages})` returns a Promise of the records' metadata),
// `kafka.consumer({groupId})` (`subscribe`, then `run({eachMessage})`: an async loop) and
// `kafka.admin()`. README.md lists every difference from KafkaJS.
const { EventEmitter } = require('node:events');
const { koffi, fn, DrCb, RebalanceCb, OffsetCommitCb, TopicPartition, TopicPartitionOffset, readMessage } = require('./native');

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

// The producers whose delivery reports are being waited for, by id: the one koffi callback
// finds its producer here.
const producers = new Map();
let nextProducerId = 1;

// The delivery report callback, registered once for every producer (the conf's opaque is
// the producer's id); libspool calls it inside spool_producer_poll, which this binding
// calls only on the main thread.
const onDelivery = koffi.register((_producer, msg, producerId) => {
  const p = producers.get(Number(producerId));
  if (p) p._delivered(readMessage(msg));
}, koffi.pointer(DrCb));

class Producer {
  constructor(keys) {
    this.keys = keys;
    this.handle = null;
    this.pending = new Map(); // record id → {resolve, reject}
    this.nextRecord = 1;
    this.polling = false;
  }

  // Creates the libspool producer: configuration errors surface here.
  async connect() {
    if (this.handle !== null) return;
    const conf = nativeConf(this.keys);
    fn.confSetDrCb(conf, onDelivery);
    const id = nextProducerId++;
    fn.confSetOpaque(conf, id);
    this.handle = create(fn.producerNew, conf);
    this.id = id;
    producers.set(id, this);
  }

  // send({topic, messages: [{key, value, partition, headers, timestamp}]}) resolves, once every record
  // is acknowledged, to one RecordMetadata per partition written; it rejects with the first
  // record's KafkaJSError if any failed.
  async send({ topic, messages, acks, timeout } = {}) {
    if (this.handle === null) throw new KafkaJSError('The producer is disconnected', { code: ErrorCodes.CLOSED });
    if (typeof topic !== 'string' || !Array.isArray(messages)) {
      throw new KafkaJSError('send needs {topic, messages: [...]}', { code: ErrorCodes.BAD_ARG });
    }
    void acks; // the producer's acks key decides (libspool has no per-call acks)
    void timeout;
    const reports = this._produce(topic, messages);
    this._poll();
    const delivered = await Promise.all(reports);
    const byPartition = new Map();
    for (const r of delivered) {
      const meta = byPartition.get(r.partition);
      if (!meta || BigInt(meta.baseOffset) > BigInt(r.offset)) {
        byPartition.set(r.partition, {
          topicName: topic,
          partition: r.partition,
          errorCode: 0,
          baseOffset: String(r.offset),
          logAppendTime: '-1',
          logStartOffset: '-1',
        });
      }
    }
    return [...byPartition.values()];
  }

  // sendBatch({topicMessages: [{topic, messages}]}): send for each topic, concurrently.
  async sendBatch({ topicMessages = [] } = {}) {
    const all = await Promise.all(topicMessages.map((tm) => this.send(tm)));
    return all.flat();
  }

  // Produces messages to topic with one spool_produce_batch call and returns a promise of
  // each one's delivery report. libspool checks every record first and buffers all or none.
  // Messages with a timestamp (ms since the epoch, as a string or a number) go one
  // spool_produce_timestamp call each instead, checked first here; a full queue may then
  // stop the call midway, failing the rest.
  _produce(topic, messages) {
    const stamps = messages.map((m) => timestampOf(m.timestamp));
    const waiters = [];
    const records = messages.map((m) => {
      const key = toBuffer(m.key);
      const value = toBuffer(m.value);
      const headers = Object.entries(m.headers || {}).map(([k, v]) => {
        const kb = Buffer.from(k);
        const vb = toBuffer(v);
        return { key: nonNull(kb), key_len: kb.length, value: nonNull(vb), value_len: vb ? vb.length : 0 };
      });
      const id = this.nextRecord++; // the record's msg_opaque
      waiters.push(new Promise((resolve, reject) => this.pending.set(id, { resolve, reject })));
      return {
        partition: m.partition === undefined || m.partition === null ? PARTITION_UA : m.partition,
        key: nonNull(key),
        key_len: key ? key.length : 0,
        value: nonNull(value),
        value_len: value ? value.length : 0,
        headers: headers.length ? headers : null,
        header_count: headers.length,
        msg_opaque: id,
      };
    });
    let err = 0;
    let done = 0; // records buffered
    if (stamps.every((ts) => ts === 0)) {
      err = records.length ? fn.produceBatch(this.handle, topic, records, records.length) : 0;
    } else {
      for (const r of records) {
        err = fn.produceTimestamp(this.handle, topic, r.partition, stamps[done], r.key, r.key_len, r.value,
          r.value_len, r.headers, r.header_count, r.msg_opaque);
        if (err !== 0) break;
        done++;
      }
    }
    if (err !== 0) {
      const e = errorOf(err, `produce to ${topic}`);
      for (const r of records.slice(done)) {
        const waiter = this.pending.get(r.msg_opaque);
        this.pending.delete(r.msg_opaque);
        waiter.reject(e);
      }
    }
    return waiters;
  }

  _delivered(report) {
    const waiter = this.pending.get(report.opaque);
    if (!waiter) return;
    this.pending.delete(report.opaque);
    if (report.err === 0) {
      waiter.resolve(report);
    } else {
      const e = new KafkaJSError(`delivery to ${report.topic}: ${report.errstr}`, {
        code: report.err,
        retriable: report.err === ErrorCodes.TRANSPORT,
      });
      waiter.reject(e);
    }
  }

  // Serves delivery reports on the main thread while any is awaited: a non-blocking poll
  // every 2 ms (the callback must not run on koffi's worker threads).
  _poll() {
    if (this.polling) return;
    this.polling = true;
    const tick = () => {
      if (this.handle !== null) fn.producerPoll(this.handle, 0);
      if (this.pending.size > 0 && this.handle !== null) {
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
    while (this.pending.size > 0 || fn.outqLen(this.handle) > 0) {
      fn.producerPoll(this.handle, 0);
      await wait(2);
    }
    fn.producerDestroy(this.handle);
    this.handle = null;
    producers.delete(this.id);
  }
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

  async _loop(eachMessage) {
    const batch = new Array(256).fill(null);
    while (!this.stopping) {
      const n = Number(await callAsync(fn.pollBatch, this.handle, 100, batch, batch.length));
      for (let i = 0; i < n; i++) {
        const m = readMessage(batch[i]);
        fn.messageDestroy(batch[i]);
        if (this.stopping) continue; // returned by poll: freed, and committed as KafkaJS would not
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
              timestamp: String(m.timestamp),
              offset: String(m.offset),
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

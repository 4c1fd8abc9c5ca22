'use strict';
// Against a real broker at $SPOOL_BROKERS (sdk-cgo's TestNode starts one): round trips, a
// group of two consumers, error mapping, a broker that is down, and no handle left.
const test = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const { Kafka, KafkaJSError, ErrorCodes, handleCount, libspoolVersion } = require('..');

const brokers = process.env.SPOOL_BROKERS;
assert.ok(brokers, 'SPOOL_BROKERS: the broker to test against (sdk-cgo TestNode sets it)');
const kafka = new Kafka({ clientId: 'node-test', brokers: [brokers] });
const unique = (name) => `${name}-${process.pid}-${Date.now()}`;

// Tests run one after another (node --test runs a file's tests in order), so each can
// check that it left no handle behind.
test.afterEach(() => assert.equal(handleCount(), 0, 'libspool handles left after disconnect'));

async function createTopic(topic, numPartitions) {
  const admin = kafka.admin();
  await admin.connect();
  try {
    assert.equal(await admin.createTopics({ topics: [{ topic, numPartitions }] }), true);
  } finally {
    await admin.disconnect();
  }
}

// Reads n records of a group consumer, then disconnects it.
async function consume(groupId, topic, n) {
  const consumer = kafka.consumer({ groupId });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  const got = [];
  let done;
  const all = new Promise((resolve) => (done = resolve));
  await consumer.run({
    eachMessage: async ({ topic: t, partition, message }) => {
      got.push({ topic: t, partition, ...message });
      if (got.length === n) done();
    },
  });
  await all;
  await consumer.disconnect();
  return got;
}

test('libspool version', () => assert.equal(libspoolVersion(), '0.1.0'));

test('round trip with keys, null keys, headers and explicit partitions', async () => {
  const topic = unique('node-round-trip');
  await createTopic(topic, 3);
  const producer = kafka.producer();
  await producer.connect();
  const binary = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
  const meta = await producer.send({
    topic,
    messages: [
      { key: 'alice', value: 'hello alice', headers: { trace: 't-1', bin: Buffer.from([0, 255]) } },
      { key: null, value: binary, partition: 2 },
      { key: Buffer.alloc(0), value: '', partition: 1 },
    ],
  });
  assert.ok(meta.every((m) => m.topicName === topic && m.errorCode === 0 && m.baseOffset === '0'), JSON.stringify(meta));
  assert.deepEqual(meta.map((m) => m.partition).sort(), [...new Set(meta.map((m) => m.partition))].sort());
  assert.ok(meta.some((m) => m.partition === 2) && meta.some((m) => m.partition === 1));
  await producer.disconnect();

  const got = await consume(unique('g'), topic, 3);
  const alice = got.find((m) => m.key && m.key.equals(Buffer.from('alice')));
  assert.equal(alice.value.toString(), 'hello alice');
  assert.deepEqual(alice.headers, { trace: Buffer.from('t-1'), bin: Buffer.from([0, 255]) });
  assert.ok(Number(alice.timestamp) > 0 && alice.offset === '0');
  const bin = got.find((m) => m.partition === 2);
  assert.equal(bin.key, null, 'a null key came back non-null');
  assert.ok(bin.value.equals(binary));
  const empty = got.find((m) => m.partition === 1);
  assert.ok(empty.key.equals(Buffer.alloc(0)) && empty.value.equals(Buffer.alloc(0)));
});

// Sends without headers or timestamps cross as columns (spool_produce_packed) and their
// reports come back in blocks (spool_producer_poll_reports); messages come back in blocks
// (spool_consumer_poll_packed). Null, empty and binary keys and values, explicit partitions,
// and many sends in flight at once, each resolving to its own records' metadata.
test('many sends in flight, as columns: null, empty and binary keys and values', async () => {
  const topic = unique('node-packed');
  await createTopic(topic, 3);
  const producer = kafka.producer();
  await producer.connect();
  // The send numbers in the records' msg_opaques go round during these sends (white box: the
  // largest msg_opaques are just below 2^53).
  producer.nextSend = 2 ** 29 - 10;
  const sends = 20;
  const per = 100;
  const keyOf = (s, i) => (i % 3 === 0 ? null : i % 3 === 1 ? Buffer.alloc(0) : Buffer.from([s, i, 0, 255]));
  const valueOf = (s, i) => (i % 10 === 9 ? null : Buffer.from(`${s}:${i}:` + 'x'.repeat(i)));
  const metas = await Promise.all(Array.from({ length: sends }, (_, s) => producer.send({
    topic,
    messages: Array.from({ length: per }, (_, i) => ({ key: keyOf(s, i), value: valueOf(s, i), partition: s % 2 === 0 ? i % 3 : undefined })),
  })));
  await producer.disconnect();
  for (const [s, meta] of metas.entries()) {
    assert.ok(meta.length > 0 && meta.every((m) => m.topicName === topic && m.errorCode === 0), JSON.stringify(meta));
    if (s % 2 === 0) assert.deepEqual(meta.map((m) => m.partition).sort(), [0, 1, 2], `send ${s} wrote every partition`);
  }
  // Each partition's base offsets of the sends are distinct: every send got its own reports.
  for (const p of [0, 1, 2]) {
    const bases = metas.flat().filter((m) => m.partition === p).map((m) => m.baseOffset);
    assert.equal(new Set(bases).size, bases.length, `partition ${p}: base offsets ${bases}`);
  }

  const got = await consume(unique('g'), topic, sends * per);
  const seen = new Set();
  for (const m of got) {
    if (m.value === null) continue;
    const [s, i] = m.value.toString().split(':').map(Number);
    assert.ok(m.value.equals(valueOf(s, i)), `value of ${s}:${i}`);
    assert.deepEqual(m.key, keyOf(s, i), `key of ${s}:${i}`);
    if (s % 2 === 0) assert.equal(m.partition, i % 3, `partition of ${s}:${i}`);
    seen.add(`${s}:${i}`);
  }
  assert.equal(seen.size, sends * per * 0.9);
  assert.equal(got.filter((m) => m.value === null).length, sends * per * 0.1, 'null values came back null');
});

test('messages with a timestamp keep it, in order with the others', async () => {
  const topic = unique('node-timestamp');
  await createTopic(topic, 1);
  const producer = kafka.producer();
  await producer.connect();
  await assert.rejects(producer.send({ topic, messages: [{ value: 'bad', timestamp: '-1' }] }), { code: ErrorCodes.BAD_ARG });
  await producer.send({
    topic,
    messages: [
      { value: 'before' },
      { value: 'stamped', timestamp: '1700000000123' },
      { value: 'stamped-h', timestamp: 1700000000124, headers: { h: '1' } },
    ],
  });
  await producer.disconnect();
  const got = await consume(unique('g'), topic, 3);
  assert.deepEqual(got.map((m) => m.value.toString()), ['before', 'stamped', 'stamped-h']);
  assert.deepEqual(got.slice(1).map((m) => m.timestamp), ['1700000000123', '1700000000124']);
  assert.ok(Number(got[0].timestamp) > 1700000000124);
  assert.deepEqual(got[2].headers, { h: Buffer.from('1') });
});

test('commitOffsets with offsets is where the group resumes', async () => {
  const topic = unique('node-commit');
  await createTopic(topic, 2);
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({ topic, messages: Array.from({ length: 20 }, (_, i) => ({ value: `v${i}`, partition: i % 2 })) });
  await producer.disconnect();
  const groupId = unique('node-commit-g');
  const consumer = kafka.consumer({ groupId });
  // Each commit is a COMMIT_OFFSETS event, served while the consumer polls or disconnects.
  const commits = [];
  consumer.on(consumer.events.COMMIT_OFFSETS, ({ payload }) => commits.push(payload));
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  let member;
  const joined = new Promise((resolve) => (member = resolve));
  await consumer.run({ autoCommit: false, eachMessage: async () => member() });
  await joined;
  await assert.rejects(consumer.commitOffsets([{ topic, partition: 0, offset: '-3' }]), { code: ErrorCodes.BAD_ARG });
  await consumer.commitOffsets([{ topic, partition: 0, offset: '4' }, { topic, partition: 1, offset: 7 }]);
  await consumer.disconnect(); // autoCommit is off: nothing more is committed
  assert.deepEqual(commits, [{ groupId, topics: [{ topic, partitions: [{ partition: 0, offset: '4' }, { partition: 1, offset: '7' }] }] }]);
  const got = await consume(groupId, topic, 20 - 4 - 7);
  const first = new Map();
  for (const m of got) if (!first.has(m.partition)) first.set(m.partition, m.offset);
  assert.deepEqual(Object.fromEntries(first), { 0: '4', 1: '7' });
});

test('a group of two consumers shares the partitions', async () => {
  const topic = unique('node-group');
  const n = 80;
  await createTopic(topic, 4);
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({ topic, messages: Array.from({ length: n }, (_, i) => ({ value: `v${i}`, partition: i % 4 })) });
  await producer.disconnect();

  const groupId = unique('node-group');
  const seen = new Set();
  const parts = [new Set(), new Set()];
  let done;
  const finished = new Promise((resolve) => (done = resolve));
  // What each consumer's GROUP_JOIN and REBALANCING events say it owns.
  const owned = [new Set(), new Set()];
  const crashes = []; // an assertion failing in an event handler surfaces as a CRASH event
  let allFour;
  const gotAllFour = new Promise((resolve) => (allFour = resolve));
  const consumers = [0, 1].map((i) => {
    const c = kafka.consumer({ groupId, sessionTimeout: 6000, heartbeatInterval: 500 });
    c.on(c.events.GROUP_JOIN, ({ payload }) => {
      for (const p of payload.assigned[topic] || []) {
        assert.ok(!owned[i].has(p), `assigned twice: ${p}`);
        owned[i].add(p);
      }
      assert.deepEqual(payload.memberAssignment[topic], [...owned[i]].sort((a, b) => a - b));
      if (owned[i].size === 4) allFour();
    });
    c.on(c.events.CRASH, ({ payload }) => crashes.push(payload.error));
    c.on(c.events.REBALANCING, ({ payload }) => {
      for (const p of payload.revoked[topic] || []) {
        assert.ok(owned[i].delete(p), `revoked what was not assigned: ${p}`);
      }
    });
    return { c, eachMessage: async ({ partition, message }) => {
      assert.ok(owned[i].has(partition), `a record of ${partition} before its assignment`);
      seen.add(message.value.toString());
      parts[i].add(partition);
      if (seen.size === n && parts[0].size > 0 && parts[1].size > 0) done();
    } };
  });
  for (const { c, eachMessage } of consumers) {
    await c.connect();
    await c.subscribe({ topic, fromBeginning: true });
    // Without commits a partition moved to the second member is read again from the start.
    await c.run({ eachMessage, autoCommit: false });
  }
  await finished;
  assert.ok(owned[0].size > 0 && owned[1].size > 0 && [...owned[0]].every((p) => !owned[1].has(p)));
  // The second leaves: its partitions are revoked while it disconnects, the first gets all four.
  await consumers[1].c.disconnect();
  assert.equal(owned[1].size, 0);
  await gotAllFour;
  await consumers[0].c.disconnect();
  assert.equal(owned[0].size, 0);
  assert.deepEqual(crashes, []);
  assert.equal(seen.size, n);
  assert.ok(parts[0].size > 0 && parts[1].size > 0);
});

test('errors are KafkaJSErrors with libspool codes', async () => {
  // Configuration: an unknown key, a bad value.
  const bad = new Kafka({ brokers: [brokers], config: { 'no.such.key': '1' } }).producer();
  await assert.rejects(bad.connect(), (e) => e instanceof KafkaJSError && e.code === ErrorCodes.BAD_ARG && /no\.such\.key/.test(e.message));
  const badValue = kafka.producer({ config: { acks: 'many' } });
  await assert.rejects(badValue.connect(), (e) => e.code === ErrorCodes.BAD_ARG && /acks/.test(e.message));
  assert.throws(() => kafka.consumer({}), KafkaJSError);

  // The broker's errors.
  const topic = unique('node-errors');
  const admin = kafka.admin();
  await admin.connect();
  assert.equal(await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] }), true);
  assert.equal(await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] }), false, 'exists: false, as KafkaJS');
  await admin.deleteTopics({ topics: [topic] });
  await assert.rejects(admin.deleteTopics({ topics: [topic] }),
    (e) => e.code === ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION && e.type === 'UNKNOWN_TOPIC_OR_PARTITION');
  await admin.disconnect();

  // A record to a partition the topic does not have fails its send.
  const t2 = unique('node-errors-2');
  await createTopic(t2, 1);
  const producer = kafka.producer();
  await producer.connect();
  await assert.rejects(producer.send({ topic: t2, messages: [{ value: 'v', partition: 7 }] }),
    (e) => e.code === ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION && e.message.startsWith(`delivery to ${t2}: UNKNOWN_TOPIC_OR_PARTITION`));
  // One bad record fails the whole send (one spool_produce_batch call buffers all or none).
  await assert.rejects(producer.send({ topic: t2, messages: [{ value: 'ok' }, { value: 'bad', partition: -5 }] }),
    (e) => e.code === ErrorCodes.BAD_ARG);
  await producer.disconnect();
  await assert.rejects(producer.send({ topic: t2, messages: [{ value: 'v' }] }), (e) => e.code === ErrorCodes.CLOSED);
});

test('a broker that is down fails every record with TRANSPORT', async () => {
  const port = await new Promise((resolve) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const { port: p } = srv.address();
      srv.close(() => resolve(p));
    });
  });
  const down = new Kafka({ brokers: [`127.0.0.1:${port}`], config: { 'message.timeout.ms': '1500', 'socket.connection.setup.timeout.ms': '500' } });
  const producer = down.producer();
  await producer.connect();
  await assert.rejects(producer.send({ topic: 'down', messages: [{ key: 'k', value: 'v' }, { value: 'w' }] }),
    (e) => e.code === ErrorCodes.TRANSPORT && e.retriable === true);
  await producer.disconnect();
});

'use strict';
// SASL_SSL with SCRAM-SHA-512, configured with librdkafka's keys, against the secured broker
// sdk-cgo's TestNode starts ($SPOOL_SECURE_BROKERS, $SPOOL_SECURE_CA, $SPOOL_SECURE_USER,
// $SPOOL_SECURE_PASSWORD): a round trip through a group consumer, and a wrong password
// refused with SASL_AUTHENTICATION_FAILED.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Kafka, KafkaJSError, ErrorCodes, handleCount } = require('..');

const env = Object.fromEntries(['SPOOL_SECURE_BROKERS', 'SPOOL_SECURE_CA', 'SPOOL_SECURE_USER', 'SPOOL_SECURE_PASSWORD'].map((k) => {
  assert.ok(process.env[k], `${k} is not set: run these tests through sdk-cgo's TestNode`);
  return [k, process.env[k]];
}));
const unique = (name) => `${name}-${process.pid}-${Date.now()}`;

// A client of the secured broker, with the user's password or another.
function secureKafka(password = env.SPOOL_SECURE_PASSWORD) {
  return new Kafka({
    clientId: 'node-secure',
    brokers: [env.SPOOL_SECURE_BROKERS],
    config: {
      'security.protocol': 'SASL_SSL',
      'ssl.ca.location': env.SPOOL_SECURE_CA,
      'sasl.mechanisms': 'SCRAM-SHA-512',
      'sasl.username': env.SPOOL_SECURE_USER,
      'sasl.password': password,
    },
  });
}

test.afterEach(() => assert.equal(handleCount(), 0, 'libspool handles left after disconnect'));

test('SASL_SSL round trip with SCRAM-SHA-512', async () => {
  const kafka = secureKafka();
  const topic = unique('node-secure');
  const n = 30;
  const admin = kafka.admin();
  await admin.connect();
  assert.equal(await admin.createTopics({ topics: [{ topic, numPartitions: 2 }] }), true);
  await admin.disconnect();

  const producer = kafka.producer();
  await producer.connect();
  try {
    // One RecordMetadata per partition written, as KafkaJS's.
    const meta = await producer.send({ topic, messages: Array.from({ length: n }, (_, i) => ({ key: `k${i % 5}`, value: `secure-${i}` })) });
    assert.ok(meta.length >= 1 && meta.length <= 2 && meta.every((m) => m.topicName === topic && m.errorCode === 0), JSON.stringify(meta));
  } finally {
    await producer.disconnect();
  }

  const consumer = kafka.consumer({ groupId: unique('node-secure-group') });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  const got = [];
  const crashes = [];
  consumer.on(consumer.events.CRASH, (e) => crashes.push(e.payload.error));
  let done;
  const all = new Promise((resolve) => (done = resolve));
  await consumer.run({
    eachMessage: async ({ message }) => {
      got.push(message.value.toString());
      if (got.length === n) done();
    },
  });
  await all;
  await consumer.disconnect();
  assert.deepEqual(crashes, []);
  assert.deepEqual(got.sort(), Array.from({ length: n }, (_, i) => `secure-${i}`).sort());
});

test('a wrong password is refused with SASL_AUTHENTICATION_FAILED', async () => {
  const kafka = secureKafka(`not-${env.SPOOL_SECURE_PASSWORD}`);
  const refused = (e) => e instanceof KafkaJSError && e.code === ErrorCodes.SASL_AUTHENTICATION_FAILED &&
    e.type === 'SASL_AUTHENTICATION_FAILED' && e.retriable === false;

  const admin = kafka.admin();
  await admin.connect();
  await assert.rejects(admin.createTopics({ topics: [{ topic: 'node-secure-refused' }] }), refused);
  await admin.disconnect();

  const producer = kafka.producer();
  await producer.connect();
  await assert.rejects(producer.send({ topic: 'node-secure-refused', messages: [{ value: 'v' }] }), refused);
  await producer.disconnect();

  // The consumer's loop reports it as a crash event.
  const consumer = kafka.consumer({ groupId: unique('node-secure-refused') });
  await consumer.connect();
  await consumer.subscribe({ topics: ['node-secure-refused'] });
  const crashed = new Promise((resolve) => consumer.on(consumer.events.CRASH, (e) => resolve(e.payload.error)));
  await consumer.run({ eachMessage: async () => assert.fail('consumed with a wrong password') });
  const error = await crashed;
  await consumer.disconnect();
  assert.ok(refused(error), `crash error: ${error}`);
});

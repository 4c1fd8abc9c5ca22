'use strict';
// bench.js: the Node side of BenchmarkNodeVsKafkaJS; one script for both libraries, so only
// the require differs: `spool` (this repository's binding) or `kafkajs`.
//
//     node bench.js spool|kafkajs BROKER TOPIC PARTITIONS N SIZE
//
// Produces N records of SIZE bytes without keys to TOPIC (which exists, with PARTITIONS
// partitions), acks=all, in sends of SEND records with up to IN_FLIGHT sends pending, as a
// KafkaJS application that wants throughput does; then reads them back with a new group's
// consumer (eachMessage, the one loop both offer) from the first record. Prints
// "produce_rps consume_rps peak_rss_kib". The consume rate counts from the first record
// read, so the group's join is not in it.
const lib = process.argv[2];
const [broker, topic] = process.argv.slice(3, 5);
const [partitions, n, size] = process.argv.slice(5, 8).map(Number);
if (!['spool', 'kafkajs'].includes(lib) || !broker || !topic || !(partitions > 0) || !(n > 0) || !(size >= 0)) {
  console.error('usage: node bench.js spool|kafkajs BROKER TOPIC PARTITIONS N SIZE');
  process.exit(2);
}
const SEND = 1000;
const IN_FLIGHT = 8;
const { Kafka, logLevel } = require(lib);

// The same producer settings in both libraries' terms: KafkaJS has no linger or batch size
// (each send is its own request); libspool takes librdkafka's keys.
const kafka = lib === 'kafkajs'
  ? new Kafka({ clientId: 'bench', brokers: [broker], logLevel: logLevel.ERROR })
  : new Kafka({ clientId: 'bench', brokers: [broker], config: { acks: 'all', 'linger.ms': 5, 'batch.size': 1048576 } });

async function produce() {
  const producer = kafka.producer();
  await producer.connect();
  const value = Buffer.alloc(size, 'v');
  const full = Array.from({ length: SEND }, () => ({ value }));
  const t0 = process.hrtime.bigint();
  let sent = 0;
  const pending = new Set();
  while (sent < n) {
    const count = Math.min(SEND, n - sent);
    sent += count;
    const p = producer.send({ topic, acks: -1, messages: count === SEND ? full : full.slice(0, count) });
    pending.add(p);
    p.finally(() => pending.delete(p)).catch(() => {});
    if (pending.size >= IN_FLIGHT) await Promise.race(pending);
  }
  await Promise.all(pending);
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  await producer.disconnect();
  return n / secs;
}

async function consume() {
  const consumer = kafka.consumer({ groupId: `${topic}-bench` });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  let got = 0;
  let t0;
  let done;
  const all = new Promise((resolve) => (done = resolve));
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ message }) => {
      if (got === 0) t0 = process.hrtime.bigint();
      if (message.value.length !== size) throw new Error(`a record of ${message.value.length} bytes, want ${size}`);
      if (++got === n) done(process.hrtime.bigint());
    },
  });
  const t1 = await all;
  await consumer.disconnect();
  return n / (Number(t1 - t0) / 1e9);
}

async function main() {
  const producedRps = await produce();
  const consumedRps = await consume();
  // maxRSS is in KiB on Linux.
  console.log(`${producedRps.toFixed(0)} ${consumedRps.toFixed(0)} ${process.resourceUsage().maxRSS}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

'use strict';
// quickstart.js: produce three keyed records with Spool's Node binding, then read them back
// in a consumer group. As with KafkaJS, but `require('spool')`.
//
//     npm install --prefix examples/node
//     node examples/node/quickstart.js 127.0.0.1:9092
//
// The first run creates the topic; a second run reads only its own three records.
const { Kafka } = require('spool');

const broker = process.argv[2] || '127.0.0.1:9092';
const topic = 'node-quickstart';
const names = ['alice', 'bob', 'carol'];

async function main() {
  const kafka = new Kafka({ clientId: 'quickstart', brokers: [broker] });

  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 3 }] }); // false if it exists
  await admin.disconnect();

  const producer = kafka.producer();
  await producer.connect();
  // One send per record, so each delivery is reported with its partition.
  await Promise.all(names.map(async (name) => {
    const [meta] = await producer.send({ topic, messages: [{ key: name, value: `hello ${name}` }] });
    console.log(`delivered ${name} to ${meta.topicName}[${meta.partition}]`);
  }));
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId: topic });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  let got = 0;
  let done;
  const all = new Promise((resolve) => (done = resolve));
  await consumer.run({
    eachMessage: async ({ message }) => {
      console.log(`consumed ${message.key}=${message.value}`);
      if (++got === names.length) done();
    },
  });
  await all;
  await consumer.disconnect(); // commits and leaves the group
}

main().catch((e) => {
  console.error(`quickstart: ${e.message}`);
  process.exit(1);
});

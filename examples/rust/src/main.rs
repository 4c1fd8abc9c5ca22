//! quickstart: produce three keyed records with Spool's Rust binding, then read them back in
//! a consumer group. As with the rdkafka crate, but `use spool::...`.
//!
//!     cargo run --manifest-path examples/rust/Cargo.toml -- 127.0.0.1:9092
//!
//! The first run creates the topic; a second run reads only its own three records.
use spool::config::ClientConfig;
use spool::consumer::{BaseConsumer, Consumer};
use spool::error::{ErrorCode, KafkaError};
use spool::producer::{FutureProducer, FutureRecord};
use spool::util::block_on;
use spool::Message;
use std::process::exit;
use std::time::Duration;

const TOPIC: &str = "rust-quickstart";

fn main() {
    let brokers = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:9092".to_string());
    if let Err(e) = run(&brokers) {
        eprintln!("quickstart: {e}");
        exit(1);
    }
}

fn run(brokers: &str) -> Result<(), KafkaError> {
    let producer: FutureProducer = ClientConfig::new().set("bootstrap.servers", brokers).create()?;
    match producer.create_topic(TOPIC, 3, -1, Duration::from_secs(10)) {
        Err(KafkaError::AdminOp(ErrorCode::TOPIC_ALREADY_EXISTS)) | Ok(()) => {}
        Err(e) => return Err(e),
    }
    let names = ["alice", "bob", "carol"];
    let values: Vec<String> = names.iter().map(|n| format!("hello {n}")).collect();
    // send_result sends at once and returns the delivery's future; await them after all
    // three are on their way (with tokio: `.await` instead of block_on).
    let mut deliveries = Vec::new();
    for (name, value) in names.iter().zip(&values) {
        let record = FutureRecord::to(TOPIC).key(*name).payload(value);
        deliveries.push(producer.send_result(record).map_err(|(e, _)| e)?);
    }
    for (name, delivery) in names.iter().zip(deliveries) {
        let (partition, _offset) = block_on(delivery).map_err(|(e, _)| e)?;
        println!("delivered {name} to {TOPIC}[{partition}]");
    }
    drop(producer); // flushes and frees

    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("group.id", TOPIC)
        .set("auto.offset.reset", "earliest")
        .create()?;
    consumer.subscribe(&[TOPIC])?;
    for msg in consumer.iter().take(names.len()) {
        let msg = msg?; // borrows the consumer; freed at the end of the iteration
        let text = |b: Option<&[u8]>| String::from_utf8_lossy(b.unwrap_or_default()).into_owned();
        println!("consumed {}={}", text(msg.key()), text(msg.payload()));
    }
    consumer.close() // commits and leaves the group
}

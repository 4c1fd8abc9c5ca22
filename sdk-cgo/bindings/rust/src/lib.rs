//! Spool's Rust binding: a safe layer over `libspool` (the C ABI of Spool's Go SDK) with the
//! API of the [`rdkafka`](https://docs.rs/rdkafka) crate, so code written for it ports by
//! changing `rdkafka::` to `spool::` (README.md lists every difference).
//!
//! ```no_run
//! use spool::config::ClientConfig;
//! use spool::producer::{FutureProducer, FutureRecord};
//! use std::time::Duration;
//!
//! let producer: FutureProducer = ClientConfig::new()
//!     .set("bootstrap.servers", "127.0.0.1:9092")
//!     .create()
//!     .expect("producer");
//! let delivery = spool::util::block_on(producer.send(
//!     FutureRecord::to("orders").key("alice").payload("hello"),
//!     Duration::from_secs(0),
//! ));
//! println!("{:?}", delivery.map(|(partition, offset)| (partition, offset)));
//! ```
//!
//! Every handle frees what it owns when dropped; errors are [`error::KafkaError`] values in
//! `Result`s, never panics. The library never calls Rust from its own threads: delivery
//! reports are served by a thread of the producer that polls.

pub mod config;
pub mod consumer;
pub mod error;
pub mod message;
pub mod producer;
pub mod sys;
pub mod topic_partition_list;
pub mod util;

pub use crate::config::ClientConfig;
pub use crate::message::{Message, Timestamp};
pub use crate::topic_partition_list::{Offset, TopicPartitionList};

/// The version of the libspool linked at run time, e.g. "0.1.0".
pub fn version() -> String {
    util::cstr_to_string(unsafe { sys::spool_version() })
}

/// The number of libspool handles (configurations, producers, consumers) alive in this
/// process: 0 once everything created has been dropped.
pub fn handle_count() -> i32 {
    unsafe { sys::spool_handle_count() }
}

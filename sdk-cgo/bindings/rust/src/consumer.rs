//! `BaseConsumer`: poll returns messages that borrow the consumer, as rdkafka's.
use crate::config::{ClientConfig, FromClientConfig};
use crate::error::{check, ErrorCode, KafkaError, KafkaResult};
use crate::message::BorrowedMessage;
use crate::sys;
use crate::topic_partition_list::{Offset, TopicPartitionList};
use crate::util::Timeout;
use std::ffi::CString;
use std::os::raw::c_char;

/// `Sync` commits wait for the broker; `Async` ones do not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommitMode {
    Sync,
    Async,
}

/// What a consumer does, as rdkafka's `Consumer` trait (import it to call these).
pub trait Consumer {
    /// Joins the group (`group.id`) with a subscription to topics. Once per consumer.
    fn subscribe(&self, topics: &[&str]) -> KafkaResult<()>;
    /// Reads these partitions, for a consumer without `group.id`.
    fn assign(&self, assignment: &TopicPartitionList) -> KafkaResult<()>;
    /// Moves an assigned partition to offset. `timeout` is accepted for rdkafka's signature.
    fn seek<T: Into<Timeout>>(&self, topic: &str, partition: i32, offset: Offset, timeout: T) -> KafkaResult<()>;
    /// Commits the offsets after the records `poll` returned.
    fn commit_consumer_state(&self, mode: CommitMode) -> KafkaResult<()>;
}

/// A consumer read by calling `poll`, as rdkafka's `BaseConsumer`. Dropping it commits (with
/// `enable.auto.commit`), leaves the group and frees it; `close` does the first two earlier.
pub struct BaseConsumer {
    handle: *mut sys::spool_consumer_t,
}

// libspool's consumer may be used from several threads at once (spool.h).
unsafe impl Send for BaseConsumer {}
unsafe impl Sync for BaseConsumer {}

impl FromClientConfig for BaseConsumer {
    fn from_config(config: &ClientConfig) -> KafkaResult<BaseConsumer> {
        let handle = config.create_native_config()?.create_client(sys::spool_consumer_new)?;
        Ok(BaseConsumer { handle })
    }
}

fn c_topic(topic: &str, wrap: fn(ErrorCode) -> KafkaError) -> KafkaResult<CString> {
    CString::new(topic).map_err(|_| wrap(ErrorCode::BAD_ARG))
}

impl Consumer for BaseConsumer {
    fn subscribe(&self, topics: &[&str]) -> KafkaResult<()> {
        let owned = topics.iter().map(|t| c_topic(t, KafkaError::Subscription)).collect::<KafkaResult<Vec<_>>>()?;
        let ptrs: Vec<*const c_char> = owned.iter().map(|t| t.as_ptr()).collect();
        check(
            unsafe { sys::spool_consumer_subscribe(self.handle, ptrs.as_ptr(), ptrs.len()) },
            KafkaError::Subscription,
        )
    }

    fn assign(&self, assignment: &TopicPartitionList) -> KafkaResult<()> {
        for e in assignment.elements() {
            let topic = c_topic(&e.topic, KafkaError::Subscription)?;
            check(
                unsafe { sys::spool_consumer_assign(self.handle, topic.as_ptr(), e.partition, e.offset.to_raw()) },
                KafkaError::Subscription,
            )?;
        }
        Ok(())
    }

    fn seek<T: Into<Timeout>>(&self, topic: &str, partition: i32, offset: Offset, _timeout: T) -> KafkaResult<()> {
        let topic = c_topic(topic, KafkaError::Seek)?;
        check(
            unsafe { sys::spool_consumer_seek(self.handle, topic.as_ptr(), partition, offset.to_raw()) },
            KafkaError::Seek,
        )
    }

    fn commit_consumer_state(&self, mode: CommitMode) -> KafkaResult<()> {
        let is_async = (mode == CommitMode::Async) as i32;
        check(unsafe { sys::spool_consumer_commit(self.handle, is_async) }, KafkaError::ConsumerCommit)
    }
}

impl BaseConsumer {
    /// Waits up to timeout for the next record: None on timeout, Some(Err) for an error the
    /// consumer met (e.g. `TRANSPORT`, `UNKNOWN_TOPIC_OR_PARTITION`).
    pub fn poll<T: Into<Timeout>>(&self, timeout: T) -> Option<KafkaResult<BorrowedMessage<'_>>> {
        let msg = unsafe { sys::spool_consumer_poll(self.handle, timeout.into().as_millis()) };
        if msg.is_null() {
            return None;
        }
        let msg = unsafe { BorrowedMessage::from_native(msg) };
        Some(match msg.error() {
            None => Ok(msg),
            Some((code, text)) => Err(KafkaError::MessageConsumption(code, text)),
        })
    }

    /// Messages as they come, waiting without limit: `for m in consumer.iter() { ... }`.
    pub fn iter(&self) -> Iter<'_> {
        Iter(self)
    }

    /// Commits (with `enable.auto.commit`) and leaves the group now; `poll` then returns None.
    pub fn close(&self) -> KafkaResult<()> {
        check(unsafe { sys::spool_consumer_close(self.handle) }, KafkaError::Subscription)
    }
}

impl Drop for BaseConsumer {
    fn drop(&mut self) {
        unsafe { sys::spool_consumer_destroy(self.handle) }
    }
}

/// The iterator of `BaseConsumer::iter`; it ends when the consumer is closed.
pub struct Iter<'a>(&'a BaseConsumer);

impl<'a> Iterator for Iter<'a> {
    type Item = KafkaResult<BorrowedMessage<'a>>;
    fn next(&mut self) -> Option<Self::Item> {
        self.0.poll(Timeout::Never)
    }
}

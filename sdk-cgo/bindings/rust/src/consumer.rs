//! `BaseConsumer`: poll returns messages that borrow the consumer, as rdkafka's.
use crate::config::{ClientConfig, FromClientConfig};
use crate::error::{check, ErrorCode, KafkaError, KafkaResult};
use crate::message::{BorrowedMessage, Message};
use crate::sys;
use crate::topic_partition_list::{Offset, TopicPartitionList};
use crate::util::{cstr_to_string, Timeout};
use std::any::Any;
use std::ffi::CString;
use std::os::raw::{c_char, c_void};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::Mutex;

/// A rebalance, as rdkafka's: the partitions assigned to this consumer or revoked from it
/// (partitions lost when the member left the group without a rebalance are a `Revoke` too).
#[derive(Debug)]
pub enum Rebalance<'a> {
    Assign(&'a TopicPartitionList),
    Revoke(&'a TopicPartitionList),
}

/// What a group consumer tells its context, as rdkafka's `ConsumerContext`: its methods run
/// inside `poll`, `close` and drop, on their thread. Rebalances: `Assign` before records of
/// those partitions are returned, `Revoke` before they go to another member (which waits for
/// it: keep polling). Unlike rdkafka's, libspool has assigned or revoked already:
/// `pre_rebalance` and `post_rebalance` run one after the other, and neither needs to call
/// `assign`. `commit_callback` is told the outcome and offsets of each commit, in the order
/// they finished (a synchronous one's call also returns it); an asynchronous commit's
/// failure goes only there. A panic in them is resumed by the call that ran them.
pub trait ConsumerContext: Send + Sync {
    fn pre_rebalance(&self, _rebalance: &Rebalance<'_>) {}
    fn post_rebalance(&self, _rebalance: &Rebalance<'_>) {}
    fn commit_callback(&self, _result: KafkaResult<()>, _offsets: &TopicPartitionList) {}
}

/// The context of a consumer made with `create`: does nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultConsumerContext;

impl ConsumerContext for DefaultConsumerContext {}

/// What libspool's rebalance callback reaches through its opaque pointer; boxed, so that its
/// address stays put while the consumer lives.
struct Shared<C> {
    context: C,
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

unsafe extern "C" fn rebalance_cb<C: ConsumerContext>(
    _consumer: *mut sys::spool_consumer_t,
    what: sys::spool_rebalance_t,
    parts: *const sys::spool_topic_partition_t,
    count: usize,
    opaque: *mut c_void,
) {
    let shared = &*(opaque as *const Shared<C>);
    let mut list = TopicPartitionList::new();
    for p in std::slice::from_raw_parts(parts, count) {
        list.add_partition(&cstr_to_string(p.topic), p.partition);
    }
    let r = if what == sys::SPOOL_REBALANCE_ASSIGN { Rebalance::Assign(&list) } else { Rebalance::Revoke(&list) };
    shared.run(|context| {
        context.pre_rebalance(&r);
        context.post_rebalance(&r);
    });
}

unsafe extern "C" fn offset_commit_cb<C: ConsumerContext>(
    _consumer: *mut sys::spool_consumer_t,
    err: sys::spool_err_t,
    offsets: *const sys::spool_topic_partition_offset_t,
    count: usize,
    opaque: *mut c_void,
) {
    let shared = &*(opaque as *const Shared<C>);
    let mut list = TopicPartitionList::new();
    for o in std::slice::from_raw_parts(offsets, count) {
        // libspool reports partitions of 0 or more only.
        let _ = list.add_partition_offset(&cstr_to_string(o.topic), o.partition, Offset::Offset(o.offset));
    }
    let result = if err == 0 { Ok(()) } else { Err(KafkaError::ConsumerCommit(ErrorCode(err))) };
    shared.run(|context| context.commit_callback(result, &list));
}

impl<C: ConsumerContext> Shared<C> {
    /// Runs f on the context. A panic must not unwind into C: it is kept for the call that
    /// served the callback.
    fn run(&self, f: impl FnOnce(&C)) {
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| f(&self.context))) {
            self.panic.lock().unwrap().get_or_insert(panic);
        }
    }
}

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
    /// Commits the offsets of the list (each the next record to read; only `Offset::Offset`
    /// of 0 or more), instead of what `poll` returned.
    fn commit(&self, topic_partition_list: &TopicPartitionList, mode: CommitMode) -> KafkaResult<()>;
    /// Commits the offset after message in its partition.
    fn commit_message(&self, message: &BorrowedMessage<'_>, mode: CommitMode) -> KafkaResult<()>;
}

/// A consumer read by calling `poll`, as rdkafka's `BaseConsumer`. Dropping it commits (with
/// `enable.auto.commit`), leaves the group and frees it; `close` does the first two earlier.
pub struct BaseConsumer<C: ConsumerContext + 'static = DefaultConsumerContext> {
    handle: *mut sys::spool_consumer_t,
    shared: Box<Shared<C>>, // after handle: dropped once the consumer is destroyed
}

// libspool's consumer may be used from several threads at once (spool.h).
unsafe impl<C: ConsumerContext> Send for BaseConsumer<C> {}
unsafe impl<C: ConsumerContext> Sync for BaseConsumer<C> {}

impl FromClientConfig for BaseConsumer {
    fn from_config(config: &ClientConfig) -> KafkaResult<BaseConsumer> {
        BaseConsumer::with_context(config, DefaultConsumerContext)
    }
}

impl ClientConfig {
    /// A consumer whose context is told of rebalances (rdkafka's `create_with_context`).
    pub fn create_with_context<C: ConsumerContext + 'static>(&self, context: C) -> KafkaResult<BaseConsumer<C>> {
        BaseConsumer::with_context(self, context)
    }
}

impl<C: ConsumerContext + 'static> BaseConsumer<C> {
    fn with_context(config: &ClientConfig, context: C) -> KafkaResult<BaseConsumer<C>> {
        let shared = Box::new(Shared { context, panic: Mutex::new(None) });
        let native = config.create_native_config()?;
        if config.get("group.id").is_some() {
            unsafe {
                sys::spool_conf_set_rebalance_cb(native.0, Some(rebalance_cb::<C>));
                sys::spool_conf_set_offset_commit_cb(native.0, Some(offset_commit_cb::<C>));
                sys::spool_conf_set_opaque(native.0, &*shared as *const Shared<C> as *mut c_void);
            }
        }
        let handle = native.create_client(sys::spool_consumer_new)?;
        Ok(BaseConsumer { handle, shared })
    }

    /// The consumer's context.
    pub fn context(&self) -> &C {
        &self.shared.context
    }

    /// Resumes a panic of the context's methods, on the thread of the call that ran them.
    fn resume_panic(&self) {
        if let Some(panic) = self.shared.panic.lock().unwrap().take() {
            resume_unwind(panic);
        }
    }
}

fn c_topic(topic: &str, wrap: fn(ErrorCode) -> KafkaError) -> KafkaResult<CString> {
    CString::new(topic).map_err(|_| wrap(ErrorCode::BAD_ARG))
}

impl<C: ConsumerContext + 'static> Consumer for BaseConsumer<C> {
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

    fn commit(&self, topic_partition_list: &TopicPartitionList, mode: CommitMode) -> KafkaResult<()> {
        let mut topics = Vec::with_capacity(topic_partition_list.count());
        for e in topic_partition_list.elements() {
            match e.offset {
                Offset::Offset(o) if o >= 0 => {
                    topics.push((c_topic(&e.topic, KafkaError::ConsumerCommit)?, e.partition, o))
                }
                _ => return Err(KafkaError::ConsumerCommit(ErrorCode::BAD_ARG)),
            }
        }
        // The CStrings in topics outlive the call that reads these pointers.
        let offsets: Vec<sys::spool_topic_partition_offset_t> = topics
            .iter()
            .map(|(t, partition, offset)| sys::spool_topic_partition_offset_t {
                topic: t.as_ptr(),
                partition: *partition,
                offset: *offset,
            })
            .collect();
        let is_async = (mode == CommitMode::Async) as i32;
        check(
            unsafe { sys::spool_consumer_commit_offsets(self.handle, offsets.as_ptr(), offsets.len(), is_async) },
            KafkaError::ConsumerCommit,
        )
    }

    fn commit_message(&self, message: &BorrowedMessage<'_>, mode: CommitMode) -> KafkaResult<()> {
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(message.topic(), message.partition(), Offset::Offset(message.offset() + 1))?;
        self.commit(&tpl, mode)
    }
}

impl<C: ConsumerContext + 'static> BaseConsumer<C> {
    /// Waits up to timeout for the next record: None on timeout, Some(Err) for an error the
    /// consumer met (e.g. `TRANSPORT`, `UNKNOWN_TOPIC_OR_PARTITION`).
    pub fn poll<T: Into<Timeout>>(&self, timeout: T) -> Option<KafkaResult<BorrowedMessage<'_>>> {
        let msg = unsafe { sys::spool_consumer_poll(self.handle, timeout.into().as_millis()) };
        if self.shared.panic.lock().unwrap().is_some() {
            if !msg.is_null() {
                unsafe { sys::spool_message_destroy(msg) };
            }
            self.resume_panic();
        }
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
    pub fn iter(&self) -> Iter<'_, C> {
        Iter(self)
    }

    /// Commits (with `enable.auto.commit`) and leaves the group now; `poll` then returns None.
    pub fn close(&self) -> KafkaResult<()> {
        let r = check(unsafe { sys::spool_consumer_close(self.handle) }, KafkaError::Subscription);
        self.resume_panic();
        r
    }
}

impl<C: ConsumerContext + 'static> Drop for BaseConsumer<C> {
    fn drop(&mut self) {
        unsafe { sys::spool_consumer_destroy(self.handle) }
    }
}

/// The iterator of `BaseConsumer::iter`; it ends when the consumer is closed.
pub struct Iter<'a, C: ConsumerContext + 'static = DefaultConsumerContext>(&'a BaseConsumer<C>);

impl<'a, C: ConsumerContext + 'static> Iterator for Iter<'a, C> {
    type Item = KafkaResult<BorrowedMessage<'a>>;
    fn next(&mut self) -> Option<Self::Item> {
        self.0.poll(Timeout::Never)
    }
}

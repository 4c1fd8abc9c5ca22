//! `FutureProducer`: `send` returns a future of the record's delivery, as rdkafka's.
use crate::config::{ClientConfig, FromClientConfig};
use crate::error::{check, ErrorCode, KafkaError, KafkaResult};
use crate::message::{owned_from_native, read_view, OwnedHeaders, OwnedMessage, ToBytes};
use crate::sys;
use crate::util::{cstr_to_string, Timeout};
use std::collections::HashMap;
use std::ffi::CString;
use std::future::Future;
use std::os::raw::c_void;
use std::pin::Pin;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::thread::JoinHandle;
use std::time::Duration;

/// A record's outcome: its partition and offset, or the error and the record.
pub type OwnedDeliveryResult = Result<(i32, i64), (KafkaError, OwnedMessage)>;

/// A record to send, built as rdkafka's: `FutureRecord::to(topic).key(k).payload(p)`.
#[derive(Debug)]
pub struct FutureRecord<'a, K: ToBytes + ?Sized, P: ToBytes + ?Sized> {
    pub topic: &'a str,
    /// None: the configured `partitioner` chooses.
    pub partition: Option<i32>,
    pub payload: Option<&'a P>,
    pub key: Option<&'a K>,
    /// Milliseconds since the epoch; None: the time of the send.
    pub timestamp: Option<i64>,
    pub headers: Option<OwnedHeaders>,
}

impl<'a, K: ToBytes + ?Sized, P: ToBytes + ?Sized> FutureRecord<'a, K, P> {
    pub fn to(topic: &'a str) -> FutureRecord<'a, K, P> {
        FutureRecord { topic, partition: None, payload: None, key: None, timestamp: None, headers: None }
    }
    pub fn partition(mut self, partition: i32) -> Self {
        self.partition = Some(partition);
        self
    }
    pub fn payload(mut self, payload: &'a P) -> Self {
        self.payload = Some(payload);
        self
    }
    pub fn key(mut self, key: &'a K) -> Self {
        self.key = Some(key);
        self
    }
    pub fn timestamp(mut self, timestamp: i64) -> Self {
        self.timestamp = Some(timestamp);
        self
    }
    pub fn headers(mut self, headers: OwnedHeaders) -> Self {
        self.headers = Some(headers);
        self
    }
}

/// One record's delivery: filled by the delivery report callback, awaited by a DeliveryFuture.
#[derive(Default)]
struct Slot {
    state: Mutex<SlotState>,
}

#[derive(Default)]
struct SlotState {
    result: Option<OwnedDeliveryResult>,
    waker: Option<Waker>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding these locks; never unwind through the C callback.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Slot {
    fn complete(&self, result: OwnedDeliveryResult) {
        let waker = {
            let mut st = lock(&self.state);
            st.result = Some(result);
            st.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// The future of one record's delivery report.
pub struct DeliveryFuture {
    slot: Arc<Slot>,
}

impl Future for DeliveryFuture {
    type Output = OwnedDeliveryResult;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<OwnedDeliveryResult> {
        let mut st = lock(&self.slot.state);
        match st.result.take() {
            Some(r) => Poll::Ready(r),
            None => {
                st.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// What the producer and its delivery callback share. Records are known to the callback by
/// an id (their msg_opaque), so records the library never reports can still be completed
/// and nothing leaks.
struct Shared {
    handle: *mut sys::spool_producer_t,
    pending: Mutex<HashMap<usize, Arc<Slot>>>,
    next_id: AtomicUsize,
    stop: AtomicBool,
}

// libspool's producer may be used from several threads at once (spool.h).
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

/// The delivery report callback: runs inside spool_producer_poll/flush, on that thread.
unsafe extern "C" fn on_delivery(
    _producer: *mut sys::spool_producer_t,
    msg: *const sys::spool_message_t,
    opaque: *mut c_void,
) {
    let shared = &*(opaque as *const Shared);
    let id = sys::spool_message_opaque(msg) as usize;
    let slot = match lock(&shared.pending).remove(&id) {
        Some(slot) => slot,
        None => return,
    };
    let view = read_view(msg);
    let result = if view.err == 0 {
        Ok((view.partition, view.offset))
    } else {
        Err((KafkaError::MessageProduction(ErrorCode(view.err), cstr_to_string(view.errstr)), owned_from_native(msg)))
    };
    slot.complete(result);
}

/// A producer whose `send` returns a future of the delivery, as rdkafka's `FutureProducer`.
/// A thread of the producer serves delivery reports (it polls libspool every 100 ms and
/// wakes futures); dropping the producer flushes (every record gets its outcome, within
/// `message.timeout.ms`), stops that thread and frees the libspool producer.
pub struct FutureProducer {
    shared: Arc<Shared>,
    poller: Option<JoinHandle<()>>,
}

impl FromClientConfig for FutureProducer {
    fn from_config(config: &ClientConfig) -> KafkaResult<FutureProducer> {
        let native = config.create_native_config()?;
        // The callback's opaque must point at Shared before the producer exists: allocate it
        // first, with a NULL handle filled in below.
        let mut shared = Arc::new(Shared {
            handle: ptr::null_mut(),
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicUsize::new(1),
            stop: AtomicBool::new(false),
        });
        unsafe {
            sys::spool_conf_set_dr_cb(native.0, Some(on_delivery));
            sys::spool_conf_set_opaque(native.0, Arc::as_ptr(&shared) as *mut c_void);
        }
        let handle = native.create_client(sys::spool_producer_new)?;
        Arc::get_mut(&mut shared).expect("not shared yet").handle = handle;
        let poll_shared = Arc::clone(&shared);
        let poller = std::thread::Builder::new()
            .name("spool-producer-poll".into())
            .spawn(move || {
                while !poll_shared.stop.load(Ordering::Acquire) {
                    unsafe { sys::spool_producer_poll(poll_shared.handle, 100) };
                }
            })
            .map_err(|e| {
                unsafe { sys::spool_producer_destroy(handle) };
                KafkaError::ClientCreation(format!("starting the poll thread: {e}"))
            })?;
        Ok(FutureProducer { shared, poller: Some(poller) })
    }
}

impl FutureProducer {
    /// Sends record and returns a future of its delivery, or the error and the record when
    /// libspool refuses it at once (e.g. a topic name with a NUL byte).
    #[allow(clippy::type_complexity, clippy::result_large_err)]
    pub fn send_result<'a, K: ToBytes + ?Sized, P: ToBytes + ?Sized>(
        &self,
        record: FutureRecord<'a, K, P>,
    ) -> Result<DeliveryFuture, (KafkaError, FutureRecord<'a, K, P>)> {
        let topic = match CString::new(record.topic) {
            Ok(t) => t,
            Err(_) => {
                return Err((
                    KafkaError::MessageProduction(ErrorCode::BAD_ARG, "topic contains a NUL byte".into()),
                    record,
                ))
            }
        };
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let slot = Arc::new(Slot::default());
        // Registered first: the poll thread may serve the report before spool_produce returns.
        lock(&self.shared.pending).insert(id, Arc::clone(&slot));
        let (key, key_len) = ptr_len(record.key.map(ToBytes::to_bytes));
        let (value, value_len) = ptr_len(record.payload.map(ToBytes::to_bytes));
        let headers = record.headers.as_ref().map(OwnedHeaders::as_native).unwrap_or_default();
        let err = unsafe {
            sys::spool_produce_timestamp(
                self.shared.handle,
                topic.as_ptr(),
                record.partition.unwrap_or(sys::SPOOL_PARTITION_UA),
                record.timestamp.unwrap_or(0),
                key,
                key_len,
                value,
                value_len,
                if headers.is_empty() { ptr::null() } else { headers.as_ptr() },
                headers.len(),
                id as *mut c_void,
            )
        };
        if err != 0 {
            lock(&self.shared.pending).remove(&id);
            let msg = ErrorCode(err).description();
            return Err((KafkaError::MessageProduction(ErrorCode(err), msg), record));
        }
        Ok(DeliveryFuture { slot })
    }

    /// Sends record and waits for its delivery report. `queue_timeout` is accepted for
    /// rdkafka's signature; libspool's produce waits while its buffer is full.
    pub async fn send<K: ToBytes + ?Sized, P: ToBytes + ?Sized, T: Into<Timeout>>(
        &self,
        record: FutureRecord<'_, K, P>,
        _queue_timeout: T,
    ) -> OwnedDeliveryResult {
        match self.send_result(record) {
            Ok(fut) => fut.await,
            Err((err, rec)) => Err((err, record_copy(&rec))),
        }
    }

    /// Sends every buffered record and waits until each has its outcome.
    pub fn flush<T: Into<Timeout>>(&self, timeout: T) -> KafkaResult<()> {
        check(unsafe { sys::spool_producer_flush(self.shared.handle, timeout.into().as_millis()) }, KafkaError::Flush)
    }

    /// Records sent whose delivery report has not been served yet.
    pub fn in_flight_count(&self) -> i32 {
        unsafe { sys::spool_producer_outq_len(self.shared.handle) }
    }

    /// Creates a topic (replication_factor -1: the broker's default) and waits until the
    /// cluster knows it; `ErrorCode::TOPIC_ALREADY_EXISTS` if it exists. (rdkafka has an
    /// AdminClient for this.)
    pub fn create_topic<T: Into<Timeout>>(
        &self,
        topic: &str,
        partitions: i32,
        replication_factor: i16,
        timeout: T,
    ) -> KafkaResult<()> {
        let topic = CString::new(topic).map_err(|_| KafkaError::AdminOp(ErrorCode::BAD_ARG))?;
        check(
            unsafe {
                sys::spool_create_topic(
                    self.shared.handle,
                    topic.as_ptr(),
                    partitions,
                    replication_factor,
                    timeout.into().as_millis(),
                )
            },
            KafkaError::AdminOp,
        )
    }

    /// Deletes a topic; `ErrorCode::UNKNOWN_TOPIC_OR_PARTITION` if there is none.
    pub fn delete_topic<T: Into<Timeout>>(&self, topic: &str, timeout: T) -> KafkaResult<()> {
        let topic = CString::new(topic).map_err(|_| KafkaError::AdminOp(ErrorCode::BAD_ARG))?;
        check(
            unsafe { sys::spool_delete_topic(self.shared.handle, topic.as_ptr(), timeout.into().as_millis()) },
            KafkaError::AdminOp,
        )
    }
}

impl Drop for FutureProducer {
    fn drop(&mut self) {
        // Flush while the poll thread still runs (so futures awaited elsewhere complete), then
        // stop it; records the library never reported are failed as CLOSED.
        let _ = self.flush(Duration::from_secs(24 * 3600));
        self.shared.stop.store(true, Ordering::Release);
        if let Some(t) = self.poller.take() {
            let _ = t.join();
        }
        unsafe { sys::spool_producer_destroy(self.shared.handle) };
        let left: Vec<_> = lock(&self.shared.pending).drain().collect();
        for (_, slot) in left {
            let closed = KafkaError::MessageProduction(ErrorCode::CLOSED, "producer dropped".into());
            slot.complete(Err((closed, OwnedMessage::empty())));
        }
    }
}

fn ptr_len(b: Option<&[u8]>) -> (*const c_void, usize) {
    match b {
        // A slice's pointer is never NULL, even when empty: libspool reads NULL as null.
        Some(b) => (b.as_ptr() as *const c_void, b.len()),
        None => (ptr::null(), 0),
    }
}

fn record_copy<K: ToBytes + ?Sized, P: ToBytes + ?Sized>(rec: &FutureRecord<'_, K, P>) -> OwnedMessage {
    OwnedMessage::new(
        rec.key.map(|k| k.to_bytes().to_vec()),
        rec.payload.map(|p| p.to_bytes().to_vec()),
        rec.topic.to_string(),
        rec.partition.unwrap_or(-1),
        rec.headers.clone(),
    )
}

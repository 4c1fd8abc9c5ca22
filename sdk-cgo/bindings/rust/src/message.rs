//! Messages and headers, as rdkafka's: the `Message` trait, `BorrowedMessage` (a polled
//! record that borrows its consumer and is freed on drop), `OwnedMessage`, `OwnedHeaders`.
use crate::sys;
use crate::util::{bytes, cstr_to_string};
use std::marker::PhantomData;
use std::os::raw::{c_char, c_void};
use std::ptr;

/// A record's timestamp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timestamp {
    NotAvailable,
    /// Milliseconds since the Unix epoch.
    CreateTime(i64),
}

impl Timestamp {
    pub fn to_millis(self) -> Option<i64> {
        match self {
            Timestamp::NotAvailable => None,
            Timestamp::CreateTime(ms) => Some(ms),
        }
    }

    fn from_millis(ms: i64) -> Timestamp {
        if ms < 0 {
            Timestamp::NotAvailable
        } else {
            Timestamp::CreateTime(ms)
        }
    }
}

/// One header: a key and a value that may be null.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header<'a, V> {
    pub key: &'a str,
    pub value: Option<V>,
}

/// Read access to a record's headers.
pub trait Headers {
    fn count(&self) -> usize;
    /// Header idx, or None past the end.
    fn try_get(&self, idx: usize) -> Option<Header<'_, &[u8]>>;
    /// Header idx; panics past the end, as rdkafka's.
    fn get(&self, idx: usize) -> Header<'_, &[u8]> {
        self.try_get(idx).expect("header index out of bounds")
    }
    fn iter(&self) -> HeadersIter<'_, Self>
    where
        Self: Sized,
    {
        HeadersIter { headers: self, idx: 0 }
    }
}

pub struct HeadersIter<'a, H: Headers> {
    headers: &'a H,
    idx: usize,
}

impl<'a, H: Headers> Iterator for HeadersIter<'a, H> {
    type Item = Header<'a, &'a [u8]>;
    fn next(&mut self) -> Option<Self::Item> {
        let h = self.headers.try_get(self.idx)?;
        self.idx += 1;
        Some(h)
    }
}

/// Headers built by the program, for `FutureRecord::headers`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OwnedHeaders {
    headers: Vec<(String, Option<Vec<u8>>)>,
}

impl OwnedHeaders {
    pub fn new() -> OwnedHeaders {
        OwnedHeaders::default()
    }

    /// Adds a header; the value is copied.
    pub fn insert<V: ToBytes + ?Sized>(mut self, header: Header<'_, &V>) -> OwnedHeaders {
        self.headers.push((header.key.to_string(), header.value.map(|v| v.to_bytes().to_vec())));
        self
    }

    /// The headers as libspool takes them; valid while self is.
    pub(crate) fn as_native(&self) -> Vec<sys::spool_header_t> {
        self.headers
            .iter()
            .map(|(k, v)| sys::spool_header_t {
                key: k.as_ptr() as *const c_char,
                key_len: k.len(),
                value: v.as_ref().map_or(ptr::null(), |v| v.as_ptr() as *const c_void),
                value_len: v.as_ref().map_or(0, |v| v.len()),
            })
            .collect()
    }
}

impl Headers for OwnedHeaders {
    fn count(&self) -> usize {
        self.headers.len()
    }
    fn try_get(&self, idx: usize) -> Option<Header<'_, &[u8]>> {
        self.headers.get(idx).map(|(k, v)| Header { key: k.as_str(), value: v.as_deref() })
    }
}

/// A record as read from the broker or reported on delivery.
pub trait Message {
    type Headers: Headers;
    fn key(&self) -> Option<&[u8]>;
    fn payload(&self) -> Option<&[u8]>;
    fn topic(&self) -> &str;
    fn partition(&self) -> i32;
    fn offset(&self) -> i64;
    fn timestamp(&self) -> Timestamp;
    fn headers(&self) -> Option<&Self::Headers>;
    /// The payload as UTF-8 text: None for a null payload, Some(Err) for invalid UTF-8.
    fn payload_view<P: FromBytes + ?Sized>(&self) -> Option<Result<&P, P::Error>> {
        self.payload().map(P::from_bytes)
    }
    fn key_view<K: FromBytes + ?Sized>(&self) -> Option<Result<&K, K::Error>> {
        self.key().map(K::from_bytes)
    }
}

/// Types a key, payload or header value can be given as.
pub trait ToBytes {
    fn to_bytes(&self) -> &[u8];
}

impl ToBytes for [u8] {
    fn to_bytes(&self) -> &[u8] {
        self
    }
}
impl ToBytes for str {
    fn to_bytes(&self) -> &[u8] {
        self.as_bytes()
    }
}
impl ToBytes for String {
    fn to_bytes(&self) -> &[u8] {
        self.as_bytes()
    }
}
impl ToBytes for Vec<u8> {
    fn to_bytes(&self) -> &[u8] {
        self
    }
}
impl<const N: usize> ToBytes for [u8; N] {
    fn to_bytes(&self) -> &[u8] {
        self
    }
}
impl ToBytes for () {
    fn to_bytes(&self) -> &[u8] {
        &[]
    }
}

/// Types a key or payload can be viewed as.
pub trait FromBytes {
    type Error;
    fn from_bytes(b: &[u8]) -> Result<&Self, Self::Error>;
}

impl FromBytes for [u8] {
    type Error = ();
    fn from_bytes(b: &[u8]) -> Result<&[u8], ()> {
        Ok(b)
    }
}
impl FromBytes for str {
    type Error = std::str::Utf8Error;
    fn from_bytes(b: &[u8]) -> Result<&str, std::str::Utf8Error> {
        std::str::from_utf8(b)
    }
}

/// The headers of a `BorrowedMessage`, read from the message in place.
pub struct BorrowedHeaders {
    msg: *const sys::spool_message_t,
    count: usize,
}

impl Headers for BorrowedHeaders {
    fn count(&self) -> usize {
        self.count
    }
    fn try_get(&self, idx: usize) -> Option<Header<'_, &[u8]>> {
        if idx >= self.count {
            return None;
        }
        let (mut k, mut klen, mut v, mut vlen) = (ptr::null(), 0usize, ptr::null(), 0usize);
        let err = unsafe { sys::spool_message_header(self.msg, idx, &mut k, &mut klen, &mut v, &mut vlen) };
        if err != 0 {
            return None;
        }
        // Header keys are UTF-8 on the wire (Kafka strings); an invalid one reads as "".
        let key = unsafe { bytes(k as *const c_void, klen) }.and_then(|b| std::str::from_utf8(b).ok()).unwrap_or("");
        Some(Header { key, value: unsafe { bytes(v, vlen) } })
    }
}

/// A record returned by `BaseConsumer::poll`: it borrows the consumer, reads the library's
/// copy of the record in place and frees it when dropped. `detach` makes an `OwnedMessage`.
pub struct BorrowedMessage<'a> {
    msg: *mut sys::spool_message_t,
    view: sys::spool_message_view_t,
    topic: String,
    headers: BorrowedHeaders,
    _consumer: PhantomData<&'a ()>,
}

// The message is immutable and its accessors are thread-safe (spool.h).
unsafe impl Send for BorrowedMessage<'_> {}
unsafe impl Sync for BorrowedMessage<'_> {}

impl<'a> BorrowedMessage<'a> {
    /// Takes ownership of msg (not NULL) and reads all of its fields in one call.
    pub(crate) unsafe fn from_native(msg: *mut sys::spool_message_t) -> BorrowedMessage<'a> {
        let view = read_view(msg);
        BorrowedMessage {
            msg,
            view,
            topic: cstr_to_string(view.topic),
            headers: BorrowedHeaders { msg, count: view.header_count },
            _consumer: PhantomData,
        }
    }

    pub(crate) fn error(&self) -> Option<(crate::error::ErrorCode, String)> {
        (self.view.err != 0).then(|| (crate::error::ErrorCode(self.view.err), cstr_to_string(self.view.errstr)))
    }

    /// A copy that owns its data and outlives the consumer.
    pub fn detach(&self) -> OwnedMessage {
        OwnedMessage::of(self)
    }
}

impl Message for BorrowedMessage<'_> {
    type Headers = BorrowedHeaders;
    fn key(&self) -> Option<&[u8]> {
        unsafe { bytes(self.view.key, self.view.key_len) }
    }
    fn payload(&self) -> Option<&[u8]> {
        unsafe { bytes(self.view.value, self.view.value_len) }
    }
    fn topic(&self) -> &str {
        &self.topic
    }
    fn partition(&self) -> i32 {
        self.view.partition
    }
    fn offset(&self) -> i64 {
        self.view.offset
    }
    fn timestamp(&self) -> Timestamp {
        Timestamp::from_millis(self.view.timestamp)
    }
    fn headers(&self) -> Option<&BorrowedHeaders> {
        (self.headers.count > 0).then_some(&self.headers)
    }
}

impl Drop for BorrowedMessage<'_> {
    fn drop(&mut self) {
        unsafe { sys::spool_message_destroy(self.msg) }
    }
}

/// Every field of msg in one call.
pub(crate) unsafe fn read_view(msg: *const sys::spool_message_t) -> sys::spool_message_view_t {
    let mut view = std::mem::MaybeUninit::<sys::spool_message_view_t>::zeroed();
    sys::spool_message_view(msg, view.as_mut_ptr(), std::mem::size_of::<sys::spool_message_view_t>());
    view.assume_init()
}

/// A record that owns its data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedMessage {
    key: Option<Vec<u8>>,
    payload: Option<Vec<u8>>,
    topic: String,
    partition: i32,
    offset: i64,
    timestamp: Timestamp,
    headers: Option<OwnedHeaders>,
}

impl OwnedMessage {
    /// A record not (yet) in the log: no offset, no timestamp.
    pub fn new(
        key: Option<Vec<u8>>,
        payload: Option<Vec<u8>>,
        topic: String,
        partition: i32,
        headers: Option<OwnedHeaders>,
    ) -> OwnedMessage {
        OwnedMessage { key, payload, topic, partition, offset: -1, timestamp: Timestamp::NotAvailable, headers }
    }

    pub(crate) fn empty() -> OwnedMessage {
        OwnedMessage::new(None, None, String::new(), -1, None)
    }

    pub(crate) fn of<M: Message>(m: &M) -> OwnedMessage {
        OwnedMessage {
            key: m.key().map(<[u8]>::to_vec),
            payload: m.payload().map(<[u8]>::to_vec),
            topic: m.topic().to_string(),
            partition: m.partition(),
            offset: m.offset(),
            timestamp: m.timestamp(),
            headers: m.headers().map(copy_headers),
        }
    }
}

/// A copy of a message the library owns (a delivery report's), fields read in one call.
///
/// # Safety
/// msg must be a valid message for the duration of the call.
pub(crate) unsafe fn owned_from_native(msg: *const sys::spool_message_t) -> OwnedMessage {
    let view = read_view(msg);
    let headers = BorrowedHeaders { msg, count: view.header_count };
    OwnedMessage {
        key: bytes(view.key, view.key_len).map(<[u8]>::to_vec),
        payload: bytes(view.value, view.value_len).map(<[u8]>::to_vec),
        topic: cstr_to_string(view.topic),
        partition: view.partition,
        offset: view.offset,
        timestamp: Timestamp::from_millis(view.timestamp),
        headers: (view.header_count > 0).then(|| copy_headers(&headers)),
    }
}

fn copy_headers<H: Headers>(hs: &H) -> OwnedHeaders {
    hs.iter().fold(OwnedHeaders::new(), |acc, h| acc.insert(Header { key: h.key, value: h.value }))
}

impl Message for OwnedMessage {
    type Headers = OwnedHeaders;
    fn key(&self) -> Option<&[u8]> {
        self.key.as_deref()
    }
    fn payload(&self) -> Option<&[u8]> {
        self.payload.as_deref()
    }
    fn topic(&self) -> &str {
        &self.topic
    }
    fn partition(&self) -> i32 {
        self.partition
    }
    fn offset(&self) -> i64 {
        self.offset
    }
    fn timestamp(&self) -> Timestamp {
        self.timestamp
    }
    fn headers(&self) -> Option<&OwnedHeaders> {
        self.headers.as_ref()
    }
}

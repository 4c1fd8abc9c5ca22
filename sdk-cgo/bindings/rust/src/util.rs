//! Timeouts, string conversion and a minimal executor.
use std::ffi::CStr;
use std::future::Future;
use std::os::raw::{c_char, c_int};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::Duration;

/// How long a call may wait, as rdkafka's `Timeout`: `After` a duration, or `Never` (without
/// limit). A `Duration` converts into `After`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timeout {
    After(Duration),
    Never,
}

impl From<Duration> for Timeout {
    fn from(d: Duration) -> Timeout {
        Timeout::After(d)
    }
}

impl From<Option<Duration>> for Timeout {
    fn from(d: Option<Duration>) -> Timeout {
        d.map_or(Timeout::Never, Timeout::After)
    }
}

impl Timeout {
    /// The timeout in libspool's convention: milliseconds, -1 without limit.
    pub(crate) fn as_millis(self) -> c_int {
        match self {
            Timeout::After(d) => d.as_millis().min(c_int::MAX as u128) as c_int,
            Timeout::Never => -1,
        }
    }
}

/// Copies a NUL-terminated C string into a String ("" for NULL), replacing invalid UTF-8.
pub(crate) fn cstr_to_string(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// A byte slice from a pointer and length; None for a NULL pointer (a null key or value).
///
/// # Safety
/// `p` must point to `len` readable bytes living for `'a`.
pub(crate) unsafe fn bytes<'a>(p: *const std::os::raw::c_void, len: usize) -> Option<&'a [u8]> {
    if p.is_null() {
        None
    } else if len == 0 {
        Some(&[])
    } else {
        Some(std::slice::from_raw_parts(p as *const u8, len))
    }
}

struct ThreadWaker(Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs a future to completion on the calling thread, parking it between polls: enough to
/// await delivery futures in programs without an async runtime (with tokio or async-std, just
/// `.await` them).
pub fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = Box::pin(fut);
    let waker = Waker::from(Arc::new(ThreadWaker(thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
        thread::park();
    }
}

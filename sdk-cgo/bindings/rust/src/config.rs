//! `ClientConfig`: librdkafka-style string keys, checked by libspool when a client is created.
use crate::error::{ConfigError, KafkaError, KafkaResult};
use crate::sys;
use crate::util::cstr_to_string;
use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::raw::c_char;

/// A client configuration, as rdkafka's: `ClientConfig::new().set(key, value).create()`. Keys
/// are libspool's (librdkafka's names; sdk-cgo/README.md lists them) and are checked by
/// `create`, which fails with `KafkaError::ClientConfig` naming the key.
#[derive(Clone, Debug, Default)]
pub struct ClientConfig {
    conf_map: BTreeMap<String, String>,
}

impl ClientConfig {
    pub fn new() -> ClientConfig {
        ClientConfig::default()
    }

    /// Sets key to value (replacing an earlier value).
    pub fn set<K: Into<String>, V: Into<String>>(&mut self, key: K, value: V) -> &mut ClientConfig {
        self.conf_map.insert(key.into(), value.into());
        self
    }

    /// The value set for key, if any.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.conf_map.get(key).map(|v| v.as_str())
    }

    /// Removes key.
    pub fn remove(&mut self, key: &str) -> &mut ClientConfig {
        self.conf_map.remove(key);
        self
    }

    /// Creates a client (`FutureProducer`, `BaseConsumer`) from this configuration.
    pub fn create<T: FromClientConfig>(&self) -> KafkaResult<T> {
        T::from_config(self)
    }

    /// A new libspool configuration with every key set; the caller owns it.
    pub(crate) fn create_native_config(&self) -> KafkaResult<NativeConfig> {
        let native = NativeConfig(unsafe { sys::spool_conf_new() });
        for (key, value) in &self.conf_map {
            let bad = |message: String, unknown| {
                KafkaError::ClientConfig(ConfigError { key: key.clone(), value: value.clone(), unknown, message })
            };
            let (ckey, cvalue) = match (CString::new(key.as_str()), CString::new(value.as_str())) {
                (Ok(k), Ok(v)) => (k, v),
                _ => return Err(bad(format!("{key}: contains a NUL byte"), false)),
            };
            let mut errstr = [0 as c_char; 512];
            let res = unsafe {
                sys::spool_conf_set(native.0, ckey.as_ptr(), cvalue.as_ptr(), errstr.as_mut_ptr(), errstr.len())
            };
            if res != sys::SPOOL_CONF_OK {
                return Err(bad(cstr_to_string(errstr.as_ptr()), res == sys::SPOOL_CONF_UNKNOWN));
            }
        }
        Ok(native)
    }
}

/// A client made from a `ClientConfig`.
pub trait FromClientConfig: Sized {
    fn from_config(config: &ClientConfig) -> KafkaResult<Self>;
}

/// A `spool_conf_t` owned by Rust until a client takes it (`into_raw`); freed on drop.
pub(crate) struct NativeConfig(pub(crate) *mut sys::spool_conf_t);

impl NativeConfig {
    /// Creates a client with `new`, which takes the configuration only when it succeeds.
    pub(crate) fn create_client<T>(
        self,
        new: unsafe extern "C" fn(*mut sys::spool_conf_t, *mut c_char, usize) -> *mut T,
    ) -> KafkaResult<*mut T> {
        let mut errstr = [0 as c_char; 512];
        let handle = unsafe { new(self.0, errstr.as_mut_ptr(), errstr.len()) };
        if handle.is_null() {
            return Err(KafkaError::ClientCreation(cstr_to_string(errstr.as_ptr())));
        }
        std::mem::forget(self); // taken by the client
        Ok(handle)
    }
}

impl Drop for NativeConfig {
    fn drop(&mut self) {
        unsafe { sys::spool_conf_destroy(self.0) }
    }
}

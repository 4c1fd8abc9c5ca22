//! Errors: libspool's one code space (Kafka's protocol error numbers and local codes below
//! zero) in rdkafka's `KafkaError` shape.
use crate::sys;
use crate::util::cstr_to_string;
use std::fmt;

/// A libspool error code (`spool_err_t`): 0, a Kafka protocol error (its wire number) or a
/// local error (below zero).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ErrorCode(pub i32);

impl ErrorCode {
    pub const NO_ERROR: ErrorCode = ErrorCode(0);
    /// A NULL or out of range argument.
    pub const BAD_ARG: ErrorCode = ErrorCode(-100);
    pub const TIMED_OUT: ErrorCode = ErrorCode(-101);
    /// No broker could be reached, or a connection broke.
    pub const TRANSPORT: ErrorCode = ErrorCode(-102);
    pub const CLOSED: ErrorCode = ErrorCode(-103);
    pub const QUEUE_FULL: ErrorCode = ErrorCode(-104);
    /// The call does not fit the handle's state (subscribe without group.id, ...).
    pub const STATE: ErrorCode = ErrorCode(-105);
    pub const FAIL: ErrorCode = ErrorCode(-106);
    pub const UNKNOWN_TOPIC_OR_PARTITION: ErrorCode = ErrorCode(3);
    pub const MESSAGE_TOO_LARGE: ErrorCode = ErrorCode(10);
    pub const TOPIC_ALREADY_EXISTS: ErrorCode = ErrorCode(36);
    /// A SASL exchange refused (wrong password, unknown user, mechanism not enabled).
    pub const SASL_AUTHENTICATION_FAILED: ErrorCode = ErrorCode(58);

    /// libspool's one-line description (`spool_err2str`).
    pub fn description(self) -> String {
        cstr_to_string(unsafe { sys::spool_err2str(self.0) })
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.description(), self.0)
    }
}

/// What went wrong, by the operation that failed, as rdkafka's `KafkaError`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KafkaError {
    /// `ClientConfig::create`: a key libspool does not know, or a value it does not take.
    ClientConfig(ConfigError),
    /// The producer or consumer could not be created (e.g. keys that do not fit together).
    ClientCreation(String),
    /// A record was not delivered: the code and libspool's description.
    MessageProduction(ErrorCode, String),
    /// `poll` returned an error instead of a record.
    MessageConsumption(ErrorCode, String),
    Subscription(ErrorCode),
    Seek(ErrorCode),
    ConsumerCommit(ErrorCode),
    /// A producer's flush did not finish in time (`ErrorCode::TIMED_OUT`).
    Flush(ErrorCode),
    /// Creating or deleting a topic.
    AdminOp(ErrorCode),
}

/// A configuration error: `unknown` for a key libspool does not have.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub key: String,
    pub value: String,
    pub unknown: bool,
    pub message: String,
}

impl KafkaError {
    /// The libspool error code, where the error has one (`BAD_ARG` for configuration errors,
    /// as `spool_conf_set`'s callers see them).
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            KafkaError::ClientConfig(_) => Some(ErrorCode::BAD_ARG),
            KafkaError::ClientCreation(_) => None,
            KafkaError::MessageProduction(c, _) | KafkaError::MessageConsumption(c, _) => Some(*c),
            KafkaError::Subscription(c)
            | KafkaError::Seek(c)
            | KafkaError::ConsumerCommit(c)
            | KafkaError::Flush(c)
            | KafkaError::AdminOp(c) => Some(*c),
        }
    }
}

impl fmt::Display for KafkaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KafkaError::ClientConfig(e) => write!(f, "client config error: {}", e.message),
            KafkaError::ClientCreation(m) => write!(f, "client creation error: {m}"),
            KafkaError::MessageProduction(c, m) => write!(f, "message production error: {m} ({})", c.0),
            KafkaError::MessageConsumption(c, m) => write!(f, "message consumption error: {m} ({})", c.0),
            KafkaError::Subscription(c) => write!(f, "subscription error: {c}"),
            KafkaError::Seek(c) => write!(f, "seek error: {c}"),
            KafkaError::ConsumerCommit(c) => write!(f, "consumer commit error: {c}"),
            KafkaError::Flush(c) => write!(f, "flush error: {c}"),
            KafkaError::AdminOp(c) => write!(f, "admin operation error: {c}"),
        }
    }
}

impl std::error::Error for KafkaError {}

pub type KafkaResult<T> = Result<T, KafkaError>;

/// Ok for code 0, else the error `wrap` makes of it.
pub(crate) fn check(code: sys::spool_err_t, wrap: fn(ErrorCode) -> KafkaError) -> KafkaResult<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(wrap(ErrorCode(code)))
    }
}

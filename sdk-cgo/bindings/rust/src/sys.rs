//! The `extern "C"` declarations of `spool.h`, written by hand (no bindgen): one item per
//! function and type of the header, same names. Everything here is unsafe to call; the rest
//! of the crate is the safe wrapper.
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_int, c_void};

pub type spool_err_t = c_int;
pub type spool_conf_res_t = c_int;

pub const SPOOL_CONF_UNKNOWN: spool_conf_res_t = -2;
pub const SPOOL_CONF_INVALID: spool_conf_res_t = -1;
pub const SPOOL_CONF_OK: spool_conf_res_t = 0;

pub const SPOOL_PARTITION_UA: i32 = -1;
pub const SPOOL_OFFSET_BEGINNING: i64 = -2;
pub const SPOOL_OFFSET_END: i64 = -1;

/// Opaque handles: only pointers to them cross the boundary.
#[repr(C)]
pub struct spool_conf_t {
    _private: [u8; 0],
}
#[repr(C)]
pub struct spool_producer_t {
    _private: [u8; 0],
}
#[repr(C)]
pub struct spool_consumer_t {
    _private: [u8; 0],
}
#[repr(C)]
pub struct spool_message_t {
    _private: [u8; 0],
}

#[repr(C)]
pub struct spool_header_t {
    pub key: *const c_char,
    pub key_len: usize,
    pub value: *const c_void,
    pub value_len: usize,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct spool_message_view_t {
    pub err: spool_err_t,
    pub partition: i32,
    pub offset: i64,
    pub timestamp: i64,
    pub topic: *const c_char,
    pub errstr: *const c_char,
    pub key: *const c_void,
    pub key_len: usize,
    pub value: *const c_void,
    pub value_len: usize,
    pub header_count: usize,
    pub opaque: *mut c_void,
}

pub type spool_dr_cb_t = Option<unsafe extern "C" fn(*mut spool_producer_t, *const spool_message_t, *mut c_void)>;

pub type spool_rebalance_t = c_int;
pub const SPOOL_REBALANCE_ASSIGN: spool_rebalance_t = 1;
pub const SPOOL_REBALANCE_REVOKE: spool_rebalance_t = 2;
pub const SPOOL_REBALANCE_LOST: spool_rebalance_t = 3;

#[repr(C)]
pub struct spool_topic_partition_offset_t {
    pub topic: *const c_char,
    pub partition: i32,
    pub offset: i64,
}

#[repr(C)]
pub struct spool_topic_partition_t {
    pub topic: *const c_char,
    pub partition: i32,
}

pub type spool_rebalance_cb_t = Option<
    unsafe extern "C" fn(*mut spool_consumer_t, spool_rebalance_t, *const spool_topic_partition_t, usize, *mut c_void),
>;

pub type spool_offset_commit_cb_t = Option<
    unsafe extern "C" fn(*mut spool_consumer_t, spool_err_t, *const spool_topic_partition_offset_t, usize, *mut c_void),
>;

extern "C" {
    pub fn spool_version() -> *const c_char;
    pub fn spool_handle_count() -> c_int;
    pub fn spool_err2str(err: spool_err_t) -> *const c_char;

    pub fn spool_conf_new() -> *mut spool_conf_t;
    pub fn spool_conf_dup(conf: *const spool_conf_t) -> *mut spool_conf_t;
    pub fn spool_conf_set(
        conf: *mut spool_conf_t,
        key: *const c_char,
        value: *const c_char,
        errstr: *mut c_char,
        errstr_size: usize,
    ) -> spool_conf_res_t;
    pub fn spool_conf_get(
        conf: *const spool_conf_t,
        key: *const c_char,
        dest: *mut c_char,
        dest_size: *mut usize,
    ) -> spool_conf_res_t;
    pub fn spool_conf_set_dr_cb(conf: *mut spool_conf_t, dr_cb: spool_dr_cb_t);
    pub fn spool_conf_set_rebalance_cb(conf: *mut spool_conf_t, rebalance_cb: spool_rebalance_cb_t);
    pub fn spool_conf_set_offset_commit_cb(conf: *mut spool_conf_t, offset_commit_cb: spool_offset_commit_cb_t);
    pub fn spool_conf_set_opaque(conf: *mut spool_conf_t, opaque: *mut c_void);
    pub fn spool_conf_destroy(conf: *mut spool_conf_t);

    pub fn spool_producer_new(
        conf: *mut spool_conf_t,
        errstr: *mut c_char,
        errstr_size: usize,
    ) -> *mut spool_producer_t;
    pub fn spool_produce(
        producer: *mut spool_producer_t,
        topic: *const c_char,
        partition: i32,
        key: *const c_void,
        key_len: usize,
        value: *const c_void,
        value_len: usize,
        msg_opaque: *mut c_void,
    ) -> spool_err_t;
    pub fn spool_produce_timestamp(
        producer: *mut spool_producer_t,
        topic: *const c_char,
        partition: i32,
        timestamp_ms: i64,
        key: *const c_void,
        key_len: usize,
        value: *const c_void,
        value_len: usize,
        headers: *const spool_header_t,
        header_count: usize,
        msg_opaque: *mut c_void,
    ) -> spool_err_t;
    pub fn spool_producer_poll(producer: *mut spool_producer_t, timeout_ms: c_int) -> c_int;
    pub fn spool_producer_flush(producer: *mut spool_producer_t, timeout_ms: c_int) -> spool_err_t;
    pub fn spool_producer_outq_len(producer: *mut spool_producer_t) -> c_int;
    pub fn spool_create_topic(
        producer: *mut spool_producer_t,
        topic: *const c_char,
        partitions: i32,
        replication_factor: i16,
        timeout_ms: c_int,
    ) -> spool_err_t;
    pub fn spool_delete_topic(producer: *mut spool_producer_t, topic: *const c_char, timeout_ms: c_int) -> spool_err_t;
    pub fn spool_producer_destroy(producer: *mut spool_producer_t);

    pub fn spool_consumer_new(
        conf: *mut spool_conf_t,
        errstr: *mut c_char,
        errstr_size: usize,
    ) -> *mut spool_consumer_t;
    pub fn spool_consumer_subscribe(
        consumer: *mut spool_consumer_t,
        topics: *const *const c_char,
        topic_count: usize,
    ) -> spool_err_t;
    pub fn spool_consumer_assign(
        consumer: *mut spool_consumer_t,
        topic: *const c_char,
        partition: i32,
        offset: i64,
    ) -> spool_err_t;
    pub fn spool_consumer_seek(
        consumer: *mut spool_consumer_t,
        topic: *const c_char,
        partition: i32,
        offset: i64,
    ) -> spool_err_t;
    pub fn spool_consumer_poll(consumer: *mut spool_consumer_t, timeout_ms: c_int) -> *mut spool_message_t;
    pub fn spool_consumer_poll_batch(
        consumer: *mut spool_consumer_t,
        timeout_ms: c_int,
        msgs: *mut *mut spool_message_t,
        max: usize,
    ) -> usize;
    pub fn spool_consumer_commit(consumer: *mut spool_consumer_t, async_: c_int) -> spool_err_t;
    pub fn spool_consumer_commit_offsets(
        consumer: *mut spool_consumer_t,
        offsets: *const spool_topic_partition_offset_t,
        count: usize,
        async_: c_int,
    ) -> spool_err_t;
    pub fn spool_consumer_close(consumer: *mut spool_consumer_t) -> spool_err_t;
    pub fn spool_consumer_destroy(consumer: *mut spool_consumer_t);

    pub fn spool_message_err(msg: *const spool_message_t) -> spool_err_t;
    pub fn spool_message_errstr(msg: *const spool_message_t) -> *const c_char;
    pub fn spool_message_topic(msg: *const spool_message_t) -> *const c_char;
    pub fn spool_message_partition(msg: *const spool_message_t) -> i32;
    pub fn spool_message_offset(msg: *const spool_message_t) -> i64;
    pub fn spool_message_timestamp(msg: *const spool_message_t) -> i64;
    pub fn spool_message_key(msg: *const spool_message_t, len: *mut usize) -> *const c_void;
    pub fn spool_message_value(msg: *const spool_message_t, len: *mut usize) -> *const c_void;
    pub fn spool_message_header_count(msg: *const spool_message_t) -> usize;
    pub fn spool_message_header(
        msg: *const spool_message_t,
        idx: usize,
        key: *mut *const c_char,
        key_len: *mut usize,
        value: *mut *const c_void,
        value_len: *mut usize,
    ) -> spool_err_t;
    pub fn spool_message_view(
        msg: *const spool_message_t,
        view: *mut spool_message_view_t,
        view_size: usize,
    ) -> spool_err_t;
    pub fn spool_message_opaque(msg: *const spool_message_t) -> *mut c_void;
    pub fn spool_message_destroy(msg: *mut spool_message_t);
}

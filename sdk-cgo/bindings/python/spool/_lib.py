"""ctypes declarations of libspool's C API (include/spool.h), and how the library is found."""

import ctypes
import ctypes.util
import os
import subprocess


def _find_library():
    """$SPOOL_LIBRARY (a path to libspool.so), else the copy bundled in the package by
    `pip install` (setup.py), else pkg-config's libdir, else the loader's search path."""
    path = os.environ.get("SPOOL_LIBRARY")
    if path:
        return path
    bundled = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libspool.so.0")
    if os.path.exists(bundled):
        return bundled
    try:
        libdir = subprocess.run(["pkg-config", "--variable=libdir", "spool"], capture_output=True,
                                text=True, check=True).stdout.strip()
        candidate = os.path.join(libdir, "libspool.so.0")
        if os.path.exists(candidate):
            return candidate
    except (OSError, subprocess.CalledProcessError):
        pass
    found = ctypes.util.find_library("spool")
    if found:
        return found
    raise OSError("libspool not found: pip install the package after make build (it bundles the "
                  "library), set SPOOL_LIBRARY to the path of libspool.so.0, or install it "
                  "(make install PREFIX=...) where pkg-config finds spool.pc")


lib = ctypes.CDLL(_find_library())

c_char_p, c_void_p, c_size_t, c_int = ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
c_int32, c_int64, c_int16 = ctypes.c_int32, ctypes.c_int64, ctypes.c_int16
P = c_void_p  # every handle and message is opaque


class Header(ctypes.Structure):
    _fields_ = [("key", c_char_p), ("key_len", c_size_t), ("value", c_void_p), ("value_len", c_size_t)]


class Record(ctypes.Structure):
    """spool_record_t. Keys and values are c_char_p so that a bytes object is passed without a
    copy (the array keeps it alive); None is NULL."""
    _fields_ = [("partition", c_int32), ("key", c_char_p), ("key_len", c_size_t), ("value", c_char_p),
                ("value_len", c_size_t), ("headers", ctypes.POINTER(Header)), ("header_count", c_size_t),
                ("msg_opaque", c_void_p)]


class MessageView(ctypes.Structure):
    """spool_message_view_t."""
    _fields_ = [("err", c_int), ("partition", c_int32), ("offset", c_int64), ("timestamp", c_int64),
                ("topic", c_char_p), ("errstr", c_char_p), ("key", c_void_p), ("key_len", c_size_t),
                ("value", c_void_p), ("value_len", c_size_t), ("header_count", c_size_t), ("opaque", c_void_p)]


DR_CB = ctypes.CFUNCTYPE(None, P, P, c_void_p)


class TopicPartitionC(ctypes.Structure):
    """spool_topic_partition_t."""
    _fields_ = [("topic", c_char_p), ("partition", c_int32)]


class TopicPartitionOffsetC(ctypes.Structure):
    """spool_topic_partition_offset_t."""
    _fields_ = [("topic", c_char_p), ("partition", c_int32), ("offset", c_int64)]


REBALANCE_ASSIGN, REBALANCE_REVOKE, REBALANCE_LOST = 1, 2, 3
REBALANCE_CB = ctypes.CFUNCTYPE(None, P, c_int, ctypes.POINTER(TopicPartitionC), c_size_t, c_void_p)
OFFSET_COMMIT_CB = ctypes.CFUNCTYPE(None, P, c_int, ctypes.POINTER(TopicPartitionOffsetC), c_size_t, c_void_p)


def _fn(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype, f.argtypes = restype, list(argtypes)
    return f


spool_version = _fn("spool_version", c_char_p)
spool_err2str = _fn("spool_err2str", c_char_p, c_int)
spool_handle_count = _fn("spool_handle_count", c_int)

spool_conf_new = _fn("spool_conf_new", P)
spool_conf_set = _fn("spool_conf_set", c_int, P, c_char_p, c_char_p, c_char_p, c_size_t)
spool_conf_set_dr_cb = _fn("spool_conf_set_dr_cb", None, P, DR_CB)
spool_conf_set_rebalance_cb = _fn("spool_conf_set_rebalance_cb", None, P, REBALANCE_CB)
spool_conf_set_offset_commit_cb = _fn("spool_conf_set_offset_commit_cb", None, P, OFFSET_COMMIT_CB)
spool_conf_destroy = _fn("spool_conf_destroy", None, P)

spool_producer_new = _fn("spool_producer_new", P, P, c_char_p, c_size_t)
spool_produce = _fn("spool_produce", c_int, P, c_char_p, c_int32, c_char_p, c_size_t, c_char_p, c_size_t, c_void_p)
spool_produce_headers = _fn("spool_produce_headers", c_int, P, c_char_p, c_int32, c_char_p, c_size_t,
                            c_char_p, c_size_t, ctypes.POINTER(Header), c_size_t, c_void_p)
spool_produce_timestamp = _fn("spool_produce_timestamp", c_int, P, c_char_p, c_int32, c_int64, c_char_p, c_size_t,
                              c_char_p, c_size_t, ctypes.POINTER(Header), c_size_t, c_void_p)
spool_produce_batch = _fn("spool_produce_batch", c_int, P, c_char_p, ctypes.POINTER(Record), c_size_t)
spool_producer_poll = _fn("spool_producer_poll", c_int, P, c_int)
spool_producer_flush = _fn("spool_producer_flush", c_int, P, c_int)
spool_producer_outq_len = _fn("spool_producer_outq_len", c_int, P)
spool_producer_destroy = _fn("spool_producer_destroy", None, P)
spool_create_topic = _fn("spool_create_topic", c_int, P, c_char_p, c_int32, c_int16, c_int)
spool_delete_topic = _fn("spool_delete_topic", c_int, P, c_char_p, c_int)

spool_consumer_new = _fn("spool_consumer_new", P, P, c_char_p, c_size_t)
spool_consumer_subscribe = _fn("spool_consumer_subscribe", c_int, P, ctypes.POINTER(c_char_p), c_size_t)
spool_consumer_assign = _fn("spool_consumer_assign", c_int, P, c_char_p, c_int32, c_int64)
spool_consumer_seek = _fn("spool_consumer_seek", c_int, P, c_char_p, c_int32, c_int64)
spool_consumer_poll = _fn("spool_consumer_poll", P, P, c_int)
spool_consumer_poll_batch = _fn("spool_consumer_poll_batch", c_size_t, P, c_int, ctypes.POINTER(P), c_size_t)
spool_consumer_commit = _fn("spool_consumer_commit", c_int, P, c_int)
spool_consumer_commit_offsets = _fn("spool_consumer_commit_offsets", c_int, P,
                                    ctypes.POINTER(TopicPartitionOffsetC), c_size_t, c_int)
spool_consumer_close = _fn("spool_consumer_close", c_int, P)
spool_consumer_destroy = _fn("spool_consumer_destroy", None, P)

spool_message_err = _fn("spool_message_err", c_int, P)
spool_message_errstr = _fn("spool_message_errstr", c_char_p, P)
spool_message_topic = _fn("spool_message_topic", c_char_p, P)
spool_message_partition = _fn("spool_message_partition", c_int32, P)
spool_message_offset = _fn("spool_message_offset", c_int64, P)
spool_message_timestamp = _fn("spool_message_timestamp", c_int64, P)
spool_message_key = _fn("spool_message_key", c_void_p, P, ctypes.POINTER(c_size_t))
spool_message_value = _fn("spool_message_value", c_void_p, P, ctypes.POINTER(c_size_t))
spool_message_header_count = _fn("spool_message_header_count", c_size_t, P)
spool_message_header = _fn("spool_message_header", c_int, P, c_size_t, ctypes.POINTER(c_char_p),
                           ctypes.POINTER(c_size_t), ctypes.POINTER(c_void_p), ctypes.POINTER(c_size_t))
spool_message_view = _fn("spool_message_view", c_int, P, ctypes.POINTER(MessageView), c_size_t)
spool_message_opaque = _fn("spool_message_opaque", c_void_p, P)
spool_message_destroy = _fn("spool_message_destroy", None, P)

# The packed calls: many records, reports or messages per crossing.
spool_produce_packed = _fn("spool_produce_packed", c_int, P, c_char_p, c_size_t, c_void_p, c_void_p, c_void_p,
                           c_void_p, c_void_p, c_void_p, c_void_p, c_void_p)
spool_producer_poll_reports = _fn("spool_producer_poll_reports", c_size_t, P, c_int, ctypes.POINTER(c_void_p))
spool_consumer_poll_packed = _fn("spool_consumer_poll_packed", c_size_t, P, c_int, c_size_t,
                                 ctypes.POINTER(c_void_p), ctypes.POINTER(c_size_t))
spool_free = _fn("spool_free", None, c_void_p)

# spool_report_t and spool_packed_message_t, as struct formats (native sizes and alignment).
REPORT_FORMAT = "@Pqqii"
PACKED_MESSAGE_FORMAT = "@iiqqQQQQQqQqQQ"

CONF_OK, CONF_INVALID, CONF_UNKNOWN = 0, -1, -2
PARTITION_UA = -1
OFFSET_BEGINNING, OFFSET_END = -2, -1

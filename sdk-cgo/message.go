package main

/*
#include "spool_impl.h"
*/
import "C"

import (
	"unsafe"

	spool "github.com/spoolmq/spool/sdk-go"
)

var (
	messageSize = int(unsafe.Sizeof(C.struct_spool_message_s{}))
	headerSize  = int(unsafe.Sizeof(C.spool_header_t{}))
)

// newMessage copies a record (r may be nil for a bare error) and its outcome into one
// malloc'd block that spool_message_destroy frees: the struct, the headers array, then the
// bytes of the topic, error text, key, value and headers, each string NUL-terminated.
func newMessage(r *spool.Record, err error, opaque uintptr) *C.spool_message_t {
	var topic string
	var key, val []byte
	var hdrs []spool.Header
	partition, offset, ts := int32(-1), int64(-1), int64(-1)
	if r != nil {
		topic, key, val, hdrs = r.Topic, r.Key, r.Value, r.Headers
		partition, offset = r.Partition, r.Offset
		if !r.Timestamp.IsZero() {
			ts = r.Timestamp.UnixMilli()
		}
	}
	errstr := ""
	if err != nil {
		errstr = err.Error()
	}
	size := messageSize + len(hdrs)*headerSize + len(topic) + 1 + len(errstr) + 1 + len(key) + len(val)
	for _, h := range hdrs {
		size += len(h.Key) + 1 + len(h.Value)
	}
	base := C.malloc(C.size_t(size))
	if base == nil {
		panic("libspool: out of memory")
	}
	block := unsafe.Slice((*byte)(base), size)
	m := (*C.spool_message_t)(base)
	headers := unsafe.Slice((*C.spool_header_t)(unsafe.Add(base, messageSize)), len(hdrs))
	at := messageSize + len(hdrs)*headerSize
	// put copies b into the block and returns where it landed.
	put := func(b []byte, nul bool) unsafe.Pointer {
		p := unsafe.Add(base, at)
		at += copy(block[at:], b)
		if nul {
			block[at] = 0
			at++
		}
		return p
	}
	// putBuf is put for a key or value: nil stays NULL.
	putBuf := func(b []byte) (unsafe.Pointer, C.size_t) {
		if b == nil {
			return nil, 0
		}
		return put(b, false), C.size_t(len(b))
	}
	*m = C.spool_message_t{
		err:          C.spool_err_t(errCode(err)),
		partition:    C.int32_t(partition),
		offset:       C.int64_t(offset),
		timestamp:    C.int64_t(ts),
		opaque:       C.uintptr_t(opaque),
		header_count: C.size_t(len(hdrs)),
	}
	if len(hdrs) > 0 {
		m.headers = &headers[0]
	}
	m.topic = (*C.char)(put([]byte(topic), true))
	m.errstr = (*C.char)(put([]byte(errstr), true))
	m.key, m.key_len = putBuf(key)
	m.value, m.value_len = putBuf(val)
	for i, h := range hdrs {
		headers[i].key = (*C.char)(put([]byte(h.Key), true))
		headers[i].key_len = C.size_t(len(h.Key))
		headers[i].value, headers[i].value_len = putBuf(h.Value)
	}
	return m
}

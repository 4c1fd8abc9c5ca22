package main

/*
#include "spool_impl.h"
*/
import "C"

import (
	"runtime"
	"unsafe"

	spool "github.com/spoolmq/spool/sdk-go"
)

var (
	messageSize = int(unsafe.Sizeof(C.struct_spool_message_s{}))
	headerSize  = int(unsafe.Sizeof(C.spool_header_t{}))
)

// newMessage copies a record (r may be nil for a bare error) and its outcome into one
// malloc'd block that spool_message_destroy frees.
func newMessage(r *spool.Record, err error, opaque uintptr) *C.spool_message_t {
	errstr := errText(err)
	size := messageBytes(r, errstr, false)
	base := C.malloc(C.size_t(size))
	if base == nil {
		panic("libspool: out of memory")
	}
	return fillMessage(base, size, r, err, errstr, opaque, nil)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// messageBytes is the size of the message of r with errstr, rounded up to 8 bytes so that
// messages can follow each other in one block. With borrow, non-empty keys and values are
// not copied (fillMessage with a pinner points at them).
func messageBytes(r *spool.Record, errstr string, borrow bool) int {
	size := messageSize + len(errstr) + 1 + 1 // the NULs of errstr and of the topic, "" without r
	if r != nil {
		size += len(r.Headers)*headerSize + len(r.Topic)
		if !borrow {
			size += len(r.Key) + len(r.Value)
		}
		for _, h := range r.Headers {
			size += len(h.Key) + 1 + len(h.Value)
		}
	}
	return (size + 7) &^ 7
}

// alreadyPinned, given to fillMessage as its pinner, borrows the key and value without
// pinning them: the caller pinned the object holding them (a batch buffer) already.
var alreadyPinned = new(runtime.Pinner)

// fillMessage lays the message out at base, in size bytes (messageBytes): the struct, the
// headers array, then the bytes of the topic, error text, key, value and headers, each
// string NUL-terminated. With a pinner, a non-empty key or value is not copied: the message
// points at the Go bytes, pinned until the pinner is unpinned (delivery reports, whose
// messages live only during the callback).
func fillMessage(base unsafe.Pointer, size int, r *spool.Record, err error, errstr string, opaque uintptr, pin *runtime.Pinner) *C.spool_message_t {
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
	block := unsafe.Slice((*byte)(base), size)
	// Zero the struct and the headers array before the typed stores below: a pointer store
	// has a write barrier that reads the old value, and malloc'd memory may hold a stale Go
	// pointer (a freed report that pointed at pinned bytes), which the GC would find bad.
	clear(block[:messageSize+len(hdrs)*headerSize])
	m := (*C.spool_message_t)(base)
	headers := unsafe.Slice((*C.spool_header_t)(unsafe.Add(base, messageSize)), len(hdrs))
	at := messageSize + len(hdrs)*headerSize
	// put copies b into the block, NUL-terminated if nul, and returns where it landed.
	put := func(b []byte, nul bool) unsafe.Pointer {
		p := unsafe.Add(base, at)
		at += copy(block[at:], b)
		if nul {
			block[at] = 0
			at++
		}
		return p
	}
	// putString is put for a string, NUL-terminated.
	putString := func(s string) *C.char {
		p := unsafe.Add(base, at)
		at += copy(block[at:], s)
		block[at] = 0
		at++
		return (*C.char)(p)
	}
	// putBuf is put for a key or value: nil stays NULL.
	putBuf := func(b []byte) (unsafe.Pointer, C.size_t) {
		if b == nil {
			return nil, 0
		}
		return put(b, false), C.size_t(len(b))
	}
	// borrowBuf is putBuf pointing at b itself, pinned (by the caller, with alreadyPinned).
	borrowBuf := func(b []byte) (unsafe.Pointer, C.size_t) {
		if pin == nil || len(b) == 0 {
			return putBuf(b)
		}
		p := unsafe.Pointer(unsafe.SliceData(b))
		if pin != alreadyPinned {
			pin.Pin(p)
		}
		return p, C.size_t(len(b))
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
	m.topic = putString(topic)
	m.errstr = putString(errstr)
	m.key, m.key_len = borrowBuf(key)
	m.value, m.value_len = borrowBuf(val)
	for i, h := range hdrs {
		headers[i].key = (*C.char)(put(h.Key, true))
		headers[i].key_len = C.size_t(len(h.Key))
		headers[i].value, headers[i].value_len = putBuf(h.Value)
	}
	return m
}

// messageView reads a message back into Go values, and frees it; for tests, which cannot use
// cgo themselves.
func messageView(m *C.spool_message_t) (topic, errstr string, key, value []byte, headers []spool.Header) {
	defer C.free(unsafe.Pointer(m))
	topic, errstr = C.GoString(m.topic), C.GoString(m.errstr)
	if m.key != nil {
		key = C.GoBytes(m.key, C.int(m.key_len))
	}
	if m.value != nil {
		value = C.GoBytes(m.value, C.int(m.value_len))
	}
	for _, h := range unsafe.Slice(m.headers, int(m.header_count)) {
		hv := spool.Header{Key: C.GoBytes(unsafe.Pointer(h.key), C.int(h.key_len))}
		if h.value != nil {
			hv.Value = C.GoBytes(h.value, C.int(h.value_len))
		}
		headers = append(headers, hv)
	}
	return topic, errstr, key, value, headers
}

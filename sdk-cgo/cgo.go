// Command libspool is the C ABI of the Go SDK, built with -buildmode=c-shared (libspool.so)
// or c-archive (libspool.a); include/spool.h is its contract and shim.c its public
// functions, which call the spoolgo_* functions of this package. Objects live on the Go side
// behind runtime/cgo handles: C never holds a Go pointer.
package main

/*
#cgo CFLAGS: -I${SRCDIR}/include -I${SRCDIR}/../protocol-spec/c
#include "spool_impl.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime/cgo"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/spoolmq/spool/protocol-spec/wire"
	spool "github.com/spoolmq/spool/sdk-go"
)

func main() {}

// Local error codes of spool.h (SPOOL_ERR__*).
const (
	errBadArg    = -100
	errTimedOut  = -101
	errTransport = -102
	errClosed    = -103
	errQueueFull = -104
	errState     = -105
	errFail      = -106
)

var localErrs = map[C.int]string{
	errBadArg:    "SPOOL_ERR__BAD_ARG: a required argument is NULL or out of range",
	errTimedOut:  "SPOOL_ERR__TIMED_OUT: the timeout passed",
	errTransport: "SPOOL_ERR__TRANSPORT: no broker reachable, or a connection broke",
	errClosed:    "SPOOL_ERR__CLOSED: the handle is closed",
	errQueueFull: "SPOOL_ERR__QUEUE_FULL: the produce buffer is full",
	errState:     "SPOOL_ERR__STATE: the call does not fit the handle's state",
	errFail:      "SPOOL_ERR__FAIL: the call failed",
}

// errStateSentinel marks errors of the handle's state made on this side.
var errStateSentinel = errors.New("spool: wrong state")

// errCode maps a Go error to a spool_err_t.
func errCode(err error) C.int {
	if err == nil {
		return 0 // before the variables below, which errors.As makes escape: no allocation
	}
	var we *wire.Error
	var ne net.Error
	switch {
	case err == nil:
		return 0
	case errors.As(err, &we):
		return C.int(we.Code)
	case errors.Is(err, context.DeadlineExceeded):
		return errTimedOut
	case errors.Is(err, spool.ErrClosed):
		return errClosed
	case errors.Is(err, spool.ErrBufferFull):
		return errQueueFull
	case errors.Is(err, spool.ErrRecordTooLarge):
		return C.int(wire.CodeOf(wire.ErrMessageTooLarge))
	case errors.Is(err, spool.ErrNoGroup), errors.Is(err, spool.ErrGroupManaged), errors.Is(err, errStateSentinel):
		return errState
	case errors.Is(err, spool.ErrNoBrokers), errors.Is(err, spool.ErrConnClosed), errors.As(err, &ne):
		return errTransport
	}
	return errFail
}

// spoolgo_err2str describes code in a new malloc'd string; spool_err2str keeps one per code.
//
//export spoolgo_err2str
func spoolgo_err2str(code C.int) *C.char {
	if code == 0 {
		return C.CString("NO_ERROR: success")
	}
	if msg, ok := localErrs[code]; ok {
		return C.CString(msg)
	}
	var we *wire.Error
	if code >= -1 && code <= 32767 && errors.As(wire.ErrorForCode(int16(code)), &we) && !strings.HasPrefix(we.Name, "UNKNOWN_ERROR_CODE") {
		return C.CString(we.Error())
	}
	return C.CString(fmt.Sprintf("unknown error code %d", code))
}

// liveHandles counts the handles not deleted yet, for spool_handle_count.
var liveHandles atomic.Int64

func newHandle(v any) C.uintptr_t {
	liveHandles.Add(1)
	return C.uintptr_t(cgo.NewHandle(v))
}

// value returns the object behind h as a T, or nil for 0 or a handle of another type.
func value[T any](h C.uintptr_t) *T {
	if h == 0 {
		return nil
	}
	v, _ := cgo.Handle(h).Value().(*T)
	return v
}

//export spoolgo_handle_delete
func spoolgo_handle_delete(h C.uintptr_t) {
	if h != 0 {
		cgo.Handle(h).Delete()
		liveHandles.Add(-1)
	}
}

//export spoolgo_handle_count
func spoolgo_handle_count() C.int { return C.int(liveHandles.Load()) }

// setErrstr writes msg into the caller's errstr buffer, cut to size and NUL-terminated.
func setErrstr(errstr *C.char, size C.size_t, msg string) {
	if errstr == nil || size == 0 {
		return
	}
	dst := unsafe.Slice((*byte)(unsafe.Pointer(errstr)), int(size))
	n := copy(dst[:len(dst)-1], msg)
	dst[n] = 0
}

// goBytes copies n bytes at p; nil for a NULL p (a null key or value), empty for n == 0.
func goBytes(p unsafe.Pointer, n C.size_t) []byte {
	if p == nil {
		return nil
	}
	if n == 0 {
		return []byte{}
	}
	return C.GoBytes(p, C.int(n))
}

// storeC writes the C pointer v at dst, in C memory, without a write barrier: a typed store
// would read the old value at dst for the GC, and C memory may hold anything there.
func storeC(dst, v unsafe.Pointer) {
	*(*uintptr)(dst) = uintptr(v)
}

// timeoutCtx is a context ending after ms milliseconds; a negative ms never ends.
func timeoutCtx(ms C.int) (context.Context, context.CancelFunc) {
	if ms < 0 {
		return context.WithCancel(context.Background())
	}
	return context.WithTimeout(context.Background(), time.Duration(ms)*time.Millisecond)
}

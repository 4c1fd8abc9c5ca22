package main

/*
#include "spool_impl.h"
*/
import "C"

import (
	"cmp"
	"slices"
	"unsafe"
)

// spoolgo_producer_take_reports is spoolgo_producer_take for spool_producer_poll_reports: the
// same queue, but each report becomes a spool_report_t (no message, so nothing to copy or
// pin), in one malloc'd array sorted by msg_opaque, which the caller frees.
//
//export spoolgo_producer_take_reports
func spoolgo_producer_take_reports(h C.uintptr_t, timeoutMS C.int, out **C.spool_report_t) C.size_t {
	p := value[producer](h)
	if p == nil {
		return 0
	}
	got := p.takeReports(timeoutMS)
	if len(got) == 0 {
		return 0
	}
	// Reports mostly come in the order records were produced (per partition): sorting is
	// then close to a linear pass. Sorted here, on Go values: the C array's msg_opaque is a
	// pointer type, which Go must not move around (write barriers would see the caller's
	// numbers as pointers).
	slices.SortFunc(got, func(a, b report) int { return cmp.Compare(a.opaque, b.opaque) })
	base := C.malloc(C.size_t(len(got)) * C.size_t(unsafe.Sizeof(C.spool_report_t{})))
	if base == nil {
		panic("libspool: out of memory")
	}
	arr := unsafe.Slice((*C.spool_report_t)(base), len(got))
	for i, rep := range got {
		ts := int64(-1)
		if !rep.r.Timestamp.IsZero() {
			ts = rep.r.Timestamp.UnixMilli()
		}
		partition := rep.r.Partition
		if rep.err != nil && partition < 0 {
			partition = -1
		}
		// msg_opaque is the caller's value, never dereferenced: stored as an integer, without
		// a write barrier (see storeC).
		*(*uintptr)(unsafe.Pointer(&arr[i].msg_opaque)) = rep.opaque
		arr[i].offset = C.int64_t(rep.r.Offset)
		arr[i].timestamp = C.int64_t(ts)
		arr[i].partition = C.int32_t(partition)
		arr[i].err = C.spool_err_t(errCode(rep.err))
	}
	*out = (*C.spool_report_t)(base)
	return C.size_t(len(got))
}

// takeReports waits up to timeoutMS for a report (0: not at all) and takes every report
// queued, as spoolgo_producer_take does.
func (p *producer) takeReports(timeoutMS C.int) []report {
	p.mu.Lock()
	empty := len(p.queue) == 0
	p.mu.Unlock()
	if empty && timeoutMS != 0 {
		ctx, cancel := timeoutCtx(timeoutMS)
		select {
		case <-p.notify:
		case <-ctx.Done():
		}
		cancel()
	}
	p.mu.Lock()
	got := p.queue
	p.queue = nil
	p.mu.Unlock()
	p.outq.Add(-int64(len(got)))
	return got
}

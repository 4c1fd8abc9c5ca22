package main

/*
#include "spool_impl.h"
*/
import "C"

import (
	"unsafe"

	spool "github.com/spoolmq/spool/sdk-go"
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
	// Sorted here, on Go values: the C array's msg_opaque is a pointer type, which Go must
	// not move around (write barriers would see the caller's numbers as pointers).
	got = sortByOpaque(got)
	base := C.malloc(C.size_t(len(got)) * C.size_t(unsafe.Sizeof(C.spool_report_t{})))
	if base == nil {
		panic("libspool: out of memory")
	}
	arr := unsafe.Slice((*C.spool_report_t)(base), len(got))
	for i, rep := range got {
		// msg_opaque is the caller's value, never dereferenced: stored as an integer, without
		// a write barrier (see storeC).
		*(*uintptr)(unsafe.Pointer(&arr[i].msg_opaque)) = rep.opaque
		arr[i].offset = C.int64_t(rep.offset)
		arr[i].timestamp = C.int64_t(rep.timestamp)
		arr[i].partition = C.int32_t(max(rep.partition, -1))
		arr[i].err = C.spool_err_t(errCode(rep.err))
	}
	*out = (*C.spool_report_t)(base)
	return C.size_t(len(got))
}

// sortByOpaque sorts reports by opaque with a natural merge sort: the queue is a few
// ascending runs (each produce response reports its records in the order they were
// produced, and callers number records in that order), so this costs n·log(runs), close to
// one pass, where a general sort costs n·log(n).
func sortByOpaque(rs []report) []report {
	bounds := []int{0}
	for i := 1; i < len(rs); i++ {
		if rs[i].opaque < rs[i-1].opaque {
			bounds = append(bounds, i)
		}
	}
	if len(bounds) == 1 {
		return rs
	}
	bounds = append(bounds, len(rs))
	src, dst := rs, make([]report, len(rs))
	for len(bounds) > 2 {
		merged := []int{0}
		for k := 0; k+1 < len(bounds); k += 2 {
			lo, mid, hi := bounds[k], bounds[k+1], bounds[k+1]
			if k+2 < len(bounds) {
				hi = bounds[k+2]
			}
			a, b, out := src[lo:mid], src[mid:hi], dst[lo:hi]
			i, j, o := 0, 0, 0
			for i < len(a) && j < len(b) {
				if b[j].opaque < a[i].opaque {
					out[o] = b[j]
					j++
				} else {
					out[o] = a[i]
					i++
				}
				o++
			}
			o += copy(out[o:], a[i:])
			copy(out[o:], b[j:])
			merged = append(merged, hi)
		}
		bounds = merged
		src, dst = dst, src
	}
	return src
}

// report is a record's outcome as a spool_report_t gives it.
type report struct {
	opaque            uintptr
	offset, timestamp int64
	partition         int32
	err               error
}

// takeReports waits up to timeoutMS for a report (0: not at all) and takes every report
// queued, as spoolgo_producer_take does.
func (p *producer) takeReports(timeoutMS C.int) []report {
	got := p.takeQueue(timeoutMS)
	n, served := countServed(got)
	reps := make([]report, 0, n)
	var r spool.Record
	for _, d := range got {
		for i := range d.Len() {
			d.Record(i, &r)
			reps = append(reps, report{opaque: uintptr(d.Token(i)), offset: r.Offset, timestamp: r.Timestamp.UnixMilli(),
				partition: r.Partition, err: d.Err()})
		}
		// A spool_report_t holds no key or value: the batch's buffer goes back now.
		d.Release()
	}
	p.reuseQueue(got)
	p.unreserve(int64(n), served)
	return reps
}

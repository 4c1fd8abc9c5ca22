package main

import (
	"math"
	"os"
	"runtime/debug"
	"sync"
)

// The Go runtime inside libspool collects garbage when its heap has grown by GOGC percent
// (100) since the last collection, so a producer holding 40 MiB in flight runs with a heap
// of up to 80 MiB and more, and a C program's peak RSS shows it. libspool therefore sets a
// soft memory limit (debug.SetMemoryLimit) derived from what its live handles may hold: a
// base for the runtime, plus each producer's queue bound and each consumer's prefetch. The
// runtime then collects before the heap outgrows what the handles need, and never stops
// collecting for lack of room: it is a soft limit, and with the budgets above the live
// heap stays under it. A program that sets GOMEMLIMIT in its environment (Go's own
// variable, read when the library loads; "off" for none) keeps its value: libspool then
// never sets a limit. GOGC is left to the runtime (and to the environment) in every case.
var memLimit struct {
	mu     sync.Mutex
	budget int64 // the live handles' budgets
	user   bool  // GOMEMLIMIT is set (or valgrindBuild): leave the limit alone
}

// memBase is what the runtime needs besides the handles' data: code, stacks, metadata,
// connections' buffers, and room for garbage between collections.
const memBase = 24 << 20

func init() {
	_, memLimit.user = os.LookupEnv("GOMEMLIMIT")
	memLimit.user = memLimit.user || valgrindBuild
}

// addMemBudget adds n bytes (negative: removes them) to the budget of the live handles and
// sets the runtime's soft memory limit to memBase plus that budget; no limit without handles.
func addMemBudget(n int64) {
	if memLimit.user || n == 0 {
		return
	}
	memLimit.mu.Lock()
	defer memLimit.mu.Unlock()
	memLimit.budget += n
	limit := int64(math.MaxInt64)
	if memLimit.budget > 0 {
		limit = memBase + memLimit.budget
	}
	debug.SetMemoryLimit(limit)
}

// producerBudget is the memory a producer with these bounds may hold: each queued byte once
// (in its batch, keys and values are not copied elsewhere) with a quarter more for batch
// buffers not yet full, and per record 64 bytes: the SDK's 32 (ProduceTracked) and the
// report's pointer and share of the queue of deliveries, with room to spare.
func producerBudget(maxMsgs, maxBytes int64) int64 {
	return maxBytes + maxBytes/4 + min(maxMsgs, maxBytes/21)*64
}

package main

import (
	"log/slog"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// SPOOL_HEAP_PROFILE=FILE makes the library write a pprof heap profile to FILE each time the
// Go heap reaches a new peak (checked every 50 ms), so that FILE holds the allocations live
// near the process's peak memory: `go tool pprof -sample_index=inuse_space FILE`. A debugging
// aid for a C program's memory (the C side cannot run the Go profiler itself); off when unset.
func init() {
	path := os.Getenv("SPOOL_HEAP_PROFILE")
	if path == "" {
		return
	}
	runtime.MemProfileRate = 64 << 10 // finer than the default 512 KiB: records are small
	go watchHeapPeak(path)
}

func watchHeapPeak(path string) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	for range time.Tick(50 * time.Millisecond) {
		metrics.Read(sample)
		if v := sample[0].Value.Uint64(); v > peak+peak/10 {
			peak = v
			if err := writeHeapProfile(path); err != nil {
				slog.Error("SPOOL_HEAP_PROFILE", "err", err)
				return
			}
		}
	}
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return err
	}
	// debug=0 with a GC first: the profile shows what is live now, not at the last GC.
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

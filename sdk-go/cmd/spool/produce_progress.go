package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/term"
)

// produceProgress shows a long produce's progress on a terminal: one line, redrawn in place,
// with the records and bytes acknowledged so far and the current rates. Nothing is drawn for
// the first progressDelay, so a short run (one line, one file) prints only its summary, and
// nothing at all when stderr is not a terminal (a pipe, a file): scripts see what they saw.
//
// Concurrency: acked is called from the producer's delivery callbacks (any goroutine); the
// counters are atomics, so a record costs two atomic adds and no allocation. The drawing
// goroutine is the only writer to w until stop returns.
type produceProgress struct {
	w              io.Writer
	records, bytes atomic.Int64
}

const (
	progressDelay    = time.Second
	progressInterval = 250 * time.Millisecond
)

// newProduceProgress is a progress for stderr, nil unless stderr is a terminal.
func newProduceProgress(stderr io.Writer) *produceProgress {
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return &produceProgress{w: stderr}
	}
	return nil
}

// acked counts one acknowledged record of size bytes (key and value); nil-safe.
func (p *produceProgress) acked(size int) {
	if p == nil {
		return
	}
	p.records.Add(1)
	p.bytes.Add(int64(size))
}

// start draws until the returned function is called, which clears the line; on a nil
// progress it does nothing.
func (p *produceProgress) start(t0 time.Time) (stop func()) {
	if p == nil {
		return func() {}
	}
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(progressInterval)
		defer tick.Stop()
		drawn := false
		lastN, lastB, lastT := int64(0), int64(0), t0
		for {
			select {
			case <-quit:
				if drawn {
					fmt.Fprint(p.w, "\r\033[K")
				}
				return
			case now := <-tick.C:
				n, b := p.records.Load(), p.bytes.Load()
				dt := now.Sub(lastT).Seconds()
				line := progressLine(n, b, float64(n-lastN)/dt, float64(b-lastB)/dt, now.Sub(t0))
				lastN, lastB, lastT = n, b, now
				if now.Sub(t0) < progressDelay {
					continue
				}
				fmt.Fprint(p.w, "\r\033[K"+line)
				drawn = true
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(quit)
			<-finished
		})
	}
}

// progressLine is what the progress line says: records and bytes acknowledged, the rates over
// the last interval, the time since the start.
func progressLine(records, bytes int64, recRate, byteRate float64, elapsed time.Duration) string {
	return fmt.Sprintf("produced %d records, %s, %.0f rec/s, %s/s, %v",
		records, humanBytes(bytes), recRate, humanBytes(int64(byteRate)), elapsed.Truncate(100*time.Millisecond))
}

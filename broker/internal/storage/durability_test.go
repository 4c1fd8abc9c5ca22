package storage

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestWaitDurableGroupCommit(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentBytes = 1 << 20
	l := openLog(t, t.TempDir(), cfg)
	const writers, each = 16, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	start := make(chan struct{})
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range each {
				b := simpleBatch(t, 2, int64(i), "w")
				res, err := l.Append(b, AppendOptions{AssignOffsets: true})
				if err != nil {
					errs <- err
					return
				}
				if err := l.WaitDurable(context.Background(), res.LastOffset+1); err != nil {
					errs <- err
					return
				}
				if d := l.DurableEndOffset(); d <= res.LastOffset {
					errs <- errors.New("WaitDurable returned before the offset was durable")
					return
				}
			}
			_ = w
		}()
	}
	before := l.flushCount.Load()
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	flushes := l.flushCount.Load() - before
	if l.DurableEndOffset() != l.LogEndOffset() || l.LogEndOffset() != 2*writers*each {
		t.Fatalf("durable %d, end %d", l.DurableEndOffset(), l.LogEndOffset())
	}
	t.Logf("%d appends, %d fsyncs", writers*each, flushes)
	if flushes >= writers*each {
		t.Fatalf("%d fsyncs for %d appends: no group commit", flushes, writers*each)
	}
}

func TestWaitDurableContext(t *testing.T) {
	l := openLog(t, t.TempDir(), smallConfig())
	leaderAppend(t, l, simpleBatch(t, 1, 1, "a"))
	l.flushSem <- struct{}{} // a flush that never ends
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := l.WaitDurable(ctx, 1)
	<-l.flushSem
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
	if err := l.WaitDurable(context.Background(), 100); err != nil { // beyond the end: up to the end
		t.Fatal(err)
	}
	if l.DurableEndOffset() != 1 {
		t.Fatalf("durable %d", l.DurableEndOffset())
	}
}

// waitDurableAt waits, on Changed, until the durable offset reaches want.
func waitDurableAt(t *testing.T, l *Log, want int64) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		ch := l.Changed()
		if l.DurableEndOffset() >= want {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("durable offset %d never reached %d", l.DurableEndOffset(), want)
		}
	}
}

func TestFsyncInterval(t *testing.T) {
	t.Run("time", func(t *testing.T) {
		cfg := smallConfig()
		cfg.Fsync = FsyncInterval
		cfg.FlushIntervalMs = 5
		l := openLog(t, t.TempDir(), cfg)
		res := leaderAppend(t, l, simpleBatch(t, 3, 1, "a"))
		if err := l.WaitDurable(context.Background(), res.LastOffset+1); err != nil {
			t.Fatal(err) // returns at once
		}
		waitDurableAt(t, l, 3)
	})
	t.Run("messages", func(t *testing.T) {
		cfg := smallConfig()
		cfg.Fsync = FsyncInterval
		cfg.FlushIntervalMessages = 10
		l := openLog(t, t.TempDir(), cfg)
		leaderAppend(t, l, simpleBatch(t, 4, 1, "a"))
		leaderAppend(t, l, simpleBatch(t, 4, 1, "b"))
		if l.DurableEndOffset() != 0 {
			t.Fatal("flushed before flush.messages")
		}
		leaderAppend(t, l, simpleBatch(t, 4, 1, "c"))
		waitDurableAt(t, l, 12)
	})
}

func TestFsyncNeverFlushesRolledSegments(t *testing.T) {
	cfg := smallConfig()
	cfg.Fsync = FsyncNever
	l := openLog(t, t.TempDir(), cfg)
	first := leaderAppend(t, l, simpleBatch(t, 3, 1, "a"))
	if err := l.WaitDurable(context.Background(), first.LastOffset+1); err != nil {
		t.Fatal(err)
	}
	if l.DurableEndOffset() != 0 {
		t.Fatal("FsyncNever flushed on WaitDurable")
	}
	for l.segmentCount() < 2 {
		leaderAppend(t, l, simpleBatch(t, 3, 1, "a"))
	}
	waitDurableAt(t, l, first.LastOffset+1) // the roll flushed the sealed segment
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if l.DurableEndOffset() != l.LogEndOffset() {
		t.Fatal("Flush left data unflushed")
	}
}

func (l *Log) segmentCount() int {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	return len(l.segs)
}

func TestConcurrentReadersAppendersMaintenance(t *testing.T) {
	cfg := smallConfig()
	cfg.RetentionBytes = 64 << 10
	cfg.Compact = true
	l := openLog(t, t.TempDir(), cfg)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() { // appenders
			defer wg.Done()
			for i := 0; ctx.Err() == nil && i < 400; i++ {
				res, err := l.Append(simpleBatch(t, 3, int64(i), "x"), AppendOptions{AssignOffsets: true})
				if err != nil {
					t.Error(err)
					return
				}
				if i%10 == 0 {
					if err := l.WaitDurable(ctx, res.LastOffset+1); err != nil && ctx.Err() == nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // readers
		defer wg.Done()
		for ctx.Err() == nil {
			start, end := l.LogStartOffset(), l.LogEndOffset()
			if end == start {
				continue
			}
			r, err := l.Read(start+(end-start)/2, 8192, end)
			if errors.Is(err, ErrOffsetOutOfRange) {
				continue // retention moved the start
			}
			if err != nil {
				t.Error(err)
				return
			}
			buf := make([]byte, r.Size)
			p := buf
			for _, c := range r.Chunks {
				if _, err := c.File.ReadAt(p[:c.Len], c.Pos); err != nil {
					t.Error(err)
				}
				p = p[c.Len:]
			}
			r.Release()
			decodeAll(t, buf)
		}
	}()
	wg.Add(1)
	go func() { // maintenance
		defer wg.Done()
		for ctx.Err() == nil {
			if _, err := l.EnforceRetention(time.Now()); err != nil {
				t.Error(err)
			}
			if err := l.Compact(time.Now()); err != nil {
				t.Error(err)
			}
			if _, err := l.recoveryPoint(); err != nil {
				t.Error(err)
			}
		}
	}()
	// Stop when the appenders are done.
	doneAppending := make(chan struct{})
	go func() {
		defer close(doneAppending)
		for {
			ch := l.Changed()
			if l.LogEndOffset() >= 3*400*3 || t.Failed() || l.closed.Load() {
				return
			}
			<-ch
		}
	}()
	select {
	case <-doneAppending:
	case <-time.After(60 * time.Second):
		t.Error("appenders did not finish")
	}
	cancel()
	wg.Wait()
}

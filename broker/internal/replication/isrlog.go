package replication

import (
	"log/slog"
	"sync"
	"time"
)

// isrLogWindow is how long ISR changes are gathered into one info line.
const isrLogWindow = time.Second

// isrLog summarizes a broker's ISR changes in its info log (issue 28: a broker leading
// thousands of partitions wrote a line per partition for every change, thousands a second
// after a broker stopped). The first change of a quiet period is logged as itself; the
// changes of the following second are counted and logged in one line when it ends. Every
// change is logged on its own at debug. The zero value is ready; mu is a leaf lock.
type isrLog struct {
	mu                    sync.Mutex
	gathering             bool
	written, lost, shrunk int
	firstFailure          string
}

// noteISR records one ISR change proposed by a leader: written, or not (err, the state moved
// on); attrs describe it.
func (s *Settings) noteISR(err error, shrink bool, attrs ...any) {
	log := s.Log
	if log == nil {
		return
	}
	if err != nil {
		log.Debug("ISR change not written", append(attrs, "err", err)...)
	} else {
		log.Debug("ISR changed", attrs...)
	}
	l := &s.isrLog
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.gathering {
		l.gathering = true
		time.AfterFunc(isrLogWindow, func() { l.flush(log) })
		if err != nil {
			log.Info("ISR change not written", append(attrs, "err", err)...)
		} else {
			log.Info("ISR changed", attrs...)
		}
		return
	}
	switch {
	case err != nil:
		l.lost++
		if l.firstFailure == "" {
			l.firstFailure = err.Error()
		}
	case shrink:
		l.shrunk++
		l.written++
	default:
		l.written++
	}
}

// flush logs the changes gathered since the window opened, if any, and closes it.
func (l *isrLog) flush(log *slog.Logger) {
	l.mu.Lock()
	written, lost, shrunk, failure := l.written, l.lost, l.shrunk, l.firstFailure
	l.written, l.lost, l.shrunk, l.firstFailure, l.gathering = 0, 0, 0, "", false
	l.mu.Unlock()
	if written+lost == 0 {
		return
	}
	attrs := []any{"written", written, "shrinks", shrunk, "expands", written - shrunk, "not_written", lost}
	if failure != "" {
		attrs = append(attrs, "first_error", failure)
	}
	log.Info("more ISR changes in the last second (each at debug)", attrs...)
}

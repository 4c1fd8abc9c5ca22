package partition

import (
	"context"
	"reflect"
	"time"
)

// Delay parks a fetch (Kafka's delayed fetch). It calls try, and again after each change of
// what reader may see in any of parts (nil entries are skipped), until try reports the fetch
// satisfied (fetch.min.bytes reached across all its partitions, or an error to answer), the
// max wait passes, or ctx ends. It reports whether try was satisfied; a false return leaves
// the final read to the caller. The signals are taken before each try, so no change is
// missed between a try and the wait. Delay blocks: run it on a goroutine of its own.
func Delay(ctx context.Context, maxWait time.Duration, parts []*Partition, reader Reader, try func() bool) bool {
	deadline := time.NewTimer(maxWait)
	defer deadline.Stop()
	chans := make([]<-chan struct{}, 0, len(parts))
	for {
		chans = chans[:0]
		for _, p := range parts {
			if p != nil {
				chans = append(chans, p.Changed(reader))
			}
		}
		if try() {
			return true
		}
		if !waitAny(ctx, deadline.C, chans) {
			return false
		}
	}
}

// waitAny blocks until one of chans is closed (true), or the deadline passes or ctx ends
// (false).
func waitAny(ctx context.Context, deadline <-chan time.Time, chans []<-chan struct{}) bool {
	switch len(chans) {
	case 0:
		select {
		case <-deadline:
		case <-ctx.Done():
		}
		return false
	case 1:
		select {
		case <-chans[0]:
			return true
		case <-deadline:
		case <-ctx.Done():
		}
		return false
	}
	cases := make([]reflect.SelectCase, 0, len(chans)+2)
	cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(deadline)},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())})
	for _, c := range chans {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c)})
	}
	i, _, _ := reflect.Select(cases)
	return i >= 2
}

package group

import (
	"sync"
	"time"
)

// fakeClock is a Clock that moves only when a test advances it: timers due by then fire on
// the advancing goroutine, in deadline order (ties in the order they were armed), each with
// the clock's time set to its deadline, so every timeout happens exactly when the rules say.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c     *fakeClock
	at    time.Time
	f     func()
	state int8 // 0 armed, 1 stopped, 2 fired
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.state != 0 {
		return false
	}
	t.state = 1
	return true
}

// Advance moves the clock d on, firing every timer due by then (also those the fired ones
// arm). The caller must hold none of the coordinator's locks.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	target := c.now.Add(d)
	for {
		var next *fakeTimer
		live := c.timers[:0]
		for _, t := range c.timers {
			if t.state != 0 {
				continue
			}
			live = append(live, t)
			if !t.at.After(target) && (next == nil || t.at.Before(next.at)) {
				next = t
			}
		}
		c.timers = live
		if next == nil {
			break
		}
		next.state = 2
		if next.at.After(c.now) {
			c.now = next.at
		}
		c.mu.Unlock()
		next.f()
		c.mu.Lock()
	}
	c.now = target
	c.mu.Unlock()
}

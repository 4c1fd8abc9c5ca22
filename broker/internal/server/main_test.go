package server_test

import (
	"flag"
	"os"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
)

// Most tests here wait (on brokers, ZooKeeper, JVMs, the network) rather than compute, so they
// run in parallel, in two classes with a bound each that fits a 2-core machine:
//
//   - parallel(t): a test with brokers in this process and Go clients;
//   - heavy(t): a test that starts other processes (spoold clusters, ZooKeeper, JVMs, Python,
//     kcat, a browser), which take memory and a burst of CPU each to start;
//   - longest(t): the few heavy tests that take minutes (a JVM per Kafka tool run, one after
//     another), with places of their own, so that they start at once instead of waiting behind
//     the other heavy tests and ending the package's run last.
//
// A test that calls neither runs alone, before the parallel ones: it computes, or it measures
// something process-wide (the heap), and says so.
//
// go test's own bound (-parallel, default GOMAXPROCS) would be 2 here, which leaves the machine
// idle while two tests wait, and it counts a test waiting for its class's place as running;
// TestMain lifts it unless the command line set it, so that the classes' bounds below are the
// ones that apply.
const (
	lightSlots   = 4
	heavySlots   = 3
	longestSlots = 2
)

var (
	lightSem   = make(chan struct{}, lightSlots)
	heavySem   = make(chan struct{}, heavySlots)
	longestSem = make(chan struct{}, longestSlots)
)

func TestMain(m *testing.M) {
	flag.Parse()
	brokertest.DefaultParallel(1000)
	code := m.Run()
	brokertest.StopSharedZooKeeper()
	os.Exit(code)
}

// parallel runs t in parallel with the other waiting tests, within the light class's bound.
func parallel(t *testing.T) {
	t.Helper()
	t.Parallel()
	take(t, lightSem)
}

// heavy runs t in parallel with the other waiting tests, within the heavy class's bound.
func heavy(t *testing.T) {
	t.Helper()
	t.Parallel()
	take(t, heavySem)
}

// longest runs t in parallel with the other waiting tests, within the longest class's bound.
func longest(t *testing.T) {
	t.Helper()
	t.Parallel()
	take(t, longestSem)
}

// take holds a place of sem until t ends. go test's elapsed time of a parallel test counts
// the wait for the place too, so t logs both.
func take(t *testing.T, sem chan struct{}) {
	asked := time.Now()
	sem <- struct{}{}
	got := time.Now()
	t.Cleanup(func() {
		t.Logf("ran %v after waiting %v for its place", time.Since(got).Round(time.Millisecond), got.Sub(asked).Round(time.Millisecond))
		<-sem
	})
}

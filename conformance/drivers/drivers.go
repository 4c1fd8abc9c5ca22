// Package drivers holds the built-in conformance drivers: "go" drives the Spool Go SDK
// (sdk-go) and "franz-go" drives franz-go, a Kafka client we did not write, as the reference
// that validates the client-level cases. A driver is a process speaking the JSON-lines
// protocol of DRIVERS.md; the built-in ones are the spool-conformance binary (or a test
// binary) started again with $SPOOL_CONFORMANCE_DRIVER set to the driver's name.
package drivers

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spoolmq/spool/conformance"
)

// EnvVar names the built-in driver a process should run instead of its main program.
const EnvVar = "SPOOL_CONFORMANCE_DRIVER"

// Names are the built-in drivers.
var Names = []string{"go", "franz-go"}

// client is one SDK client driven by the suite.
type client interface {
	produce(ctx context.Context, recs []conformance.DriverRecord) []conformance.ProduceResult
	consume(ctx context.Context, topic string, from int64, count int, wait time.Duration) ([]conformance.DriverRecord, error)
	poll(ctx context.Context, count int, wait time.Duration) ([]conformance.DriverRecord, error)
	commit(ctx context.Context) error
	close()
}

// opener opens a client of one SDK; it returns the client and its name and version.
type opener func(open conformance.Request, assigned *assignment) (client, string, error)

var openers = map[string]opener{"go": openSpool, "franz-go": openFranz}

// Builtin returns the built-in driver name, run as this executable started again.
func Builtin(name string) (*conformance.ProcessDriver, error) {
	if _, ok := openers[name]; !ok {
		return nil, fmt.Errorf("unknown driver %q (built in: %s; for another SDK, run its driver program with --driver-cmd)", name, strings.Join(Names, ", "))
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("driver %s: %w", name, err)
	}
	return &conformance.ProcessDriver{DriverName: name, Path: self, Env: []string{EnvVar + "=" + name}}, nil
}

// MaybeServe runs the driver named by $SPOOL_CONFORMANCE_DRIVER on standard input and
// output, and exits, when it is set; otherwise it returns. Call it first in main (and in
// TestMain of tests that use Builtin).
func MaybeServe() {
	name := os.Getenv(EnvVar)
	if name == "" {
		return
	}
	if err := Serve(name, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "driver %s: %v\n", name, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// assignment tracks the partitions a group member owns, from the SDK's callbacks.
type assignment struct {
	mu      sync.Mutex
	parts   map[string][]int32
	revoked map[string][]int32 // every partition revoked or lost so far
}

// union adds m's partitions to set, keeping each topic's list sorted.
func union(set *map[string][]int32, m map[string][]int32) {
	if *set == nil {
		*set = map[string][]int32{}
	}
	for t, ps := range m {
		for _, p := range ps {
			if !slices.Contains((*set)[t], p) {
				(*set)[t] = append((*set)[t], p)
			}
		}
		slices.Sort((*set)[t])
	}
}

func (a *assignment) add(m map[string][]int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	union(&a.parts, m)
}

func (a *assignment) remove(m map[string][]int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	union(&a.revoked, m)
	for t, ps := range m {
		a.parts[t] = slices.DeleteFunc(a.parts[t], func(p int32) bool { return slices.Contains(ps, p) })
		if len(a.parts[t]) == 0 {
			delete(a.parts, t)
		}
	}
}

// get returns copies of the owned and the revoked partitions.
func (a *assignment) get() (owned, revoked map[string][]int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	union(&owned, a.parts)
	union(&revoked, a.revoked)
	return owned, revoked
}

// Serve runs driver name on one JSON-lines session until in ends.
func Serve(name string, in io.Reader, out io.Writer) error {
	open, ok := openers[name]
	if !ok {
		return fmt.Errorf("unknown driver %q", name)
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	enc := json.NewEncoder(out)
	var cl client
	assigned := new(assignment)
	defer func() {
		if cl != nil {
			cl.close()
		}
	}()
	ctx := context.Background()
	for sc.Scan() {
		var req conformance.Request
		resp := conformance.Response{OK: true}
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			resp.OK, resp.Error = false, "bad request line: "+err.Error()
		} else {
			resp.ID = req.ID
			if err := handle(ctx, open, &cl, assigned, req, &resp); err != nil {
				resp.OK, resp.Error = false, err.Error()
			}
		}
		if err := enc.Encode(resp); err != nil {
			return fmt.Errorf("writing a response: %w", err)
		}
	}
	return sc.Err()
}

func handle(ctx context.Context, open opener, cl *client, assigned *assignment, req conformance.Request, resp *conformance.Response) error {
	if req.Cmd != "open" && *cl == nil {
		return fmt.Errorf("%s before open", req.Cmd)
	}
	wait := time.Duration(req.TimeoutMs) * time.Millisecond
	if wait <= 0 {
		wait = 10 * time.Second
	}
	var err error
	switch req.Cmd {
	case "open":
		if *cl != nil {
			return fmt.Errorf("open: the client is open already")
		}
		*cl, resp.Client, err = open(req, assigned)
	case "produce":
		resp.Results = (*cl).produce(ctx, req.Records)
	case "consume":
		resp.Records, err = (*cl).consume(ctx, req.Topic, req.FromOffset, req.Count, wait)
	case "poll":
		resp.Records, err = (*cl).poll(ctx, req.Count, wait)
	case "commit":
		err = (*cl).commit(ctx)
	case "assignment":
		resp.Assignment, resp.Revoked = assigned.get()
	case "close":
		(*cl).close()
		*cl = nil
	default:
		err = fmt.Errorf("unknown command %q", req.Cmd)
	}
	return err
}

// produceEach produces records 0..n-1 with send, which calls done once per record when it
// is acknowledged or failed, then flushes and waits for every result.
func produceEach(n int, send func(i int, done func(partition int32, offset int64, err error)), flush func()) []conformance.ProduceResult {
	out := make([]conformance.ProduceResult, n)
	var wg sync.WaitGroup
	wg.Add(n)
	for i := range n {
		send(i, func(p int32, off int64, err error) {
			defer wg.Done()
			out[i] = conformance.ProduceResult{Partition: p, Offset: off}
			if err != nil {
				out[i].Error = err.Error()
			}
		})
	}
	flush()
	wg.Wait()
	return out
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func at(msec int64) time.Time {
	if msec == 0 {
		return time.Time{}
	}
	return time.UnixMilli(msec)
}

// Package conformance is Spool's conformance suite: cases written once, each checking one
// rule of the protocol spec (protocol-spec/SPEC.md), run against any Kafka-compatible broker
// and, for client-level cases, any SDK through a driver (DRIVERS.md). Every case must pass
// against Apache Kafka 3.9, the reference; a case that fails there is a wrong case.
package conformance

import (
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"
)

// Level says what a case talks to: the broker through the codec, or an SDK through a driver.
type Level string

const (
	// Wire cases speak the protocol directly through protocol-spec/wire.
	Wire Level = "wire"
	// Client cases drive an SDK through a driver process.
	Client Level = "client"
)

// Case is one conformance check.
type Case struct {
	ID    string // area/name, unique
	Area  string // the part before the slash of ID
	Level Level
	Spec  string // SPEC.md section it checks, e.g. "§8.1"
	Desc  string
	// KnownIssue, when set, names a known Spool deviation from the spec: the case still runs
	// and still fails on Spool, and the report carries this note after the failure.
	KnownIssue string
	// Brokers, when above 1, is how many brokers the target needs: with fewer, the case is
	// skipped, saying so (cluster cases).
	Brokers int
	// Faults says the case crashes and restarts brokers (Config.Faults): it runs alone, after
	// the other cases, and is skipped without Config.Faults.
	Faults bool
	Run    func(t *T)
}

var (
	registry []*Case
	byID     = map[string]*Case{}
)

// register adds a case; ids are area/name.
func register(c *Case) {
	area, _, ok := strings.Cut(c.ID, "/")
	if !ok {
		panic("conformance: case id without area: " + c.ID)
	}
	if byID[c.ID] != nil {
		panic("conformance: duplicate case id " + c.ID)
	}
	if c.Level == "" {
		c.Level = Wire
	}
	c.Area = area
	byID[c.ID] = c
	registry = append(registry, c)
}

// Areas are the case areas in the order the suite runs and reports them.
var Areas = []string{"versions", "metadata", "produce", "fetch", "listoffsets", "idempotence", "groups", "admin", "client", "cluster"}

// Cases returns every case, grouped by area (in the order of Areas), in registration order
// within an area.
func Cases() []*Case {
	out := slices.Clone(registry)
	slices.SortStableFunc(out, func(a, b *Case) int { return areaRank(a.Area) - areaRank(b.Area) })
	return out
}

func areaRank(area string) int {
	if i := slices.Index(Areas, area); i >= 0 {
		return i
	}
	return len(Areas)
}

// Select returns the cases whose id matches pattern: a comma-separated list of shell globs
// (path.Match, e.g. "produce/*,fetch/long-poll*") or, when it starts with "~", a regular
// expression. An empty pattern selects everything.
func Select(pattern string) ([]*Case, error) {
	if pattern == "" {
		return Cases(), nil
	}
	var match func(id string) bool
	if re, ok := strings.CutPrefix(pattern, "~"); ok {
		r, err := regexp.Compile(re)
		if err != nil {
			return nil, fmt.Errorf("--cases: %w", err)
		}
		match = r.MatchString
	} else {
		globs := strings.Split(pattern, ",")
		for _, g := range globs {
			if _, err := path.Match(g, ""); err != nil {
				return nil, fmt.Errorf("--cases %q: %w", g, err)
			}
		}
		match = func(id string) bool {
			for _, g := range globs {
				if ok, _ := path.Match(g, id); ok {
					return true
				}
				// a bare area name ("produce") selects the whole area
				if !strings.ContainsAny(g, "*?[") && strings.HasPrefix(id, strings.TrimSuffix(g, "/")+"/") {
					return true
				}
			}
			return false
		}
	}
	var out []*Case
	for _, c := range Cases() {
		if match(c.ID) {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--cases %q matches no case (see --list)", pattern)
	}
	return out, nil
}

// Outcome of a case.
type Outcome string

const (
	Pass Outcome = "pass"
	Fail Outcome = "FAIL"
	Skip Outcome = "skip"
)

// Result is one case's outcome against one target and driver.
type Result struct {
	Case    *Case
	Outcome Outcome
	Elapsed time.Duration
	Message string // why it failed or was skipped
}

// Config says what a run targets.
type Config struct {
	Bootstrap string // HOST:PORT of the broker under test
	Driver    Driver // runs client-level cases; nil skips them
	Parallel  int    // cases run at once; default 4
	// CaseTimeout bounds each case; default 60s.
	CaseTimeout time.Duration
	// Security holds librdkafka's keys for a secured target (security.protocol,
	// ssl.ca.location, sasl.mechanisms, sasl.username, sasl.password, ...): the suite's own
	// connections speak them, and every driver's client gets them (Request.Config). Empty:
	// plaintext. security.go says more.
	Security map[string]string
	// OnResult, when set, is called after each case (from any goroutine, one at a time).
	OnResult func(Result)
	// Faults, when set, lets cases that need it (Case.Faults) crash and restart the target's
	// brokers; a test harness that started them provides it. Without it they are skipped.
	Faults Faults
}

// Faults stops and restarts brokers of a target, by node id.
type Faults interface {
	// Kill crashes broker id (SIGKILL): its connections break, its port refuses.
	Kill(id int32) error
	// Restart starts broker id again on its data and returns once it listens.
	Restart(id int32) error
}

// NeedsFaults is the reason of a case skipped for want of Config.Faults.
const NeedsFaults = "fault case: needs a target whose brokers the suite may crash and restart (Config.Faults, given by a test harness)"

// Run runs cases against cfg's target and returns their results in the order of cases.
func Run(ctx context.Context, cfg Config, cases []*Case) []Result {
	if cfg.Parallel <= 0 {
		cfg.Parallel = 4
	}
	if cfg.CaseTimeout <= 0 {
		cfg.CaseTimeout = 60 * time.Second
	}
	results := make([]Result, len(cases))
	sec, err := ParseSecurity(cfg.Security)
	if err != nil {
		for i, c := range cases {
			results[i] = Result{Case: c, Outcome: Fail, Message: err.Error()}
		}
		return results
	}
	sem := make(chan struct{}, cfg.Parallel)
	var wg sync.WaitGroup
	var mu sync.Mutex
	// Fault cases crash brokers: they run after the others, one at a time, alone.
	order := make([]int, 0, len(cases))
	for _, faults := range []bool{false, true} {
		for i, c := range cases {
			if c.Faults == faults {
				order = append(order, i)
			}
		}
	}
	for _, i := range order {
		c := cases[i]
		if c.Faults {
			wg.Wait()
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r := runOne(ctx, cfg, sec, c)
			results[i] = r
			if cfg.OnResult != nil {
				mu.Lock()
				cfg.OnResult(r)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return results
}

// NeedsCluster starts the reason of a case skipped for want of brokers.
const NeedsCluster = "cluster case"

// errFailNow and errSkipNow end a case early (T.Fatalf, T.Skipf).
var (
	errFailNow = errors.New("case failed")
	errSkipNow = errors.New("case skipped")
)

func runOne(ctx context.Context, cfg Config, sec *Security, c *Case) (r Result) {
	r.Case = c
	if c.Level == Client && cfg.Driver == nil {
		r.Outcome, r.Message = Skip, "client-level case: no driver"
		return r
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.CaseTimeout)
	defer cancel()
	t := &T{Ctx: ctx, Bootstrap: cfg.Bootstrap, driver: cfg.Driver, faults: cfg.Faults, id: c.ID, sec: sec, security: cfg.Security}
	start := time.Now()
	func() {
		defer func() {
			if p := recover(); p != nil && p != errFailNow && p != errSkipNow {
				t.fail(fmt.Sprintf("panic: %v\n%s", p, debug.Stack()))
			}
		}()
		defer t.runCleanups()
		if c.Brokers > 1 {
			if n := t.brokerCount(); n < c.Brokers {
				t.Skipf("%s: needs %d brokers, the target has %d", NeedsCluster, c.Brokers, n)
			}
		}
		if c.Faults && cfg.Faults == nil {
			t.Skipf("%s", NeedsFaults)
		}
		c.Run(t)
	}()
	r.Elapsed = time.Since(start)
	switch {
	case t.failed:
		r.Outcome, r.Message = Fail, strings.Join(t.msgs, "; ")
		if c.KnownIssue != "" {
			r.Message += " (known Spool issue: " + c.KnownIssue + ")"
		}
	case t.skipped != "":
		r.Outcome, r.Message = Skip, t.skipped
	default:
		r.Outcome = Pass
	}
	return r
}

// T is a running case: its context, its target and how it reports.
type T struct {
	Ctx       context.Context
	Bootstrap string
	driver    Driver
	faults    Faults
	id        string
	sec       *Security         // the suite's own connections' TLS and SASL
	security  map[string]string // Config.Security, for the drivers' open requests

	mu      sync.Mutex
	failed  bool
	skipped string
	msgs    []string
	// partitions of the topics the case created (Topic), for drivers' consume requests
	partitions map[string]int32
	cleanups   []func()
}

// Errorf records a failure and lets the case go on.
func (t *T) Errorf(format string, args ...any) { t.fail(fmt.Sprintf(format, args...)) }

// Fatalf records a failure and ends the case. Call it from the case's goroutine only.
func (t *T) Fatalf(format string, args ...any) {
	t.fail(fmt.Sprintf(format, args...))
	panic(errFailNow)
}

// Skipf ends the case as skipped, with the reason.
func (t *T) Skipf(format string, args ...any) {
	t.mu.Lock()
	t.skipped = fmt.Sprintf(format, args...)
	t.mu.Unlock()
	panic(errSkipNow)
}

func (t *T) fail(msg string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failed = true
	t.msgs = append(t.msgs, msg)
}

// Cleanup registers fn to run when the case ends, last registered first.
func (t *T) Cleanup(fn func()) { t.cleanups = append(t.cleanups, fn) }

func (t *T) runCleanups() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}

// Failed reports whether the case has failed so far.
func (t *T) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

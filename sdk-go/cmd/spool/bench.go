package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
	spool "github.com/spoolmq/spool/sdk-go"
	"github.com/spoolmq/spool/sdk-go/internal/hist"
	"golang.org/x/term"
)

// benchResult is what `spool bench --json` prints, one object on one line. The bench-compare
// harness (bench/) reads these names: add fields, never rename or drop one.
type benchResult struct {
	Mode       string  `json:"mode"`
	Records    int     `json:"records"`
	Bytes      int64   `json:"bytes"`
	Seconds    float64 `json:"seconds"`
	RecordsSec float64 `json:"records_per_sec"`
	MBSec      float64 `json:"mb_per_sec"`
	P50ms      float64 `json:"p50_ms"`
	P90ms      float64 `json:"p90_ms"`
	P99ms      float64 `json:"p99_ms"`
	P999ms     float64 `json:"p99_9_ms"`
	Maxms      float64 `json:"max_ms"`
	// Size is the value size in bytes; TargetRate the --rate asked for (0: unthrottled).
	Size       int     `json:"size"`
	TargetRate float64 `json:"target_rate"`
}

// benchOpts are the flags of `spool bench MODE`.
type benchOpts struct {
	mode        string
	topic       string
	records     int
	duration    time.Duration
	size        int
	rate        float64
	acks        string
	codec       string
	partitions  int
	linger      time.Duration
	batchBytes  int
	maxInFlight int
	idempotence *bool         // nil: the client's default (on, unless --max-in-flight is over 5)
	idle        time.Duration // consume --timeout
	json        bool
}

// e2eDefaultRate is the e2e rate without --rate: latency, not throughput, is what e2e is for.
const e2eDefaultRate = 1000

// stampSize is the bytes of an e2e value that carry its send time.
const stampSize = 8

// consumeIdleDefault is --timeout's default: kafka-consumer-perf-test's --timeout (10000 ms).
const consumeIdleDefault = 10 * time.Second

// parseBenchOpts also returns the flags, whose usage explains later usage errors.
func parseBenchOpts(sub string, args []string) (o benchOpts, fs *flagSet, err error) {
	o = benchOpts{mode: sub}
	idempotence := true
	fs = newFlags("bench " + sub)
	defer fs.explain(&err)
	fs.StringVar(&o.topic, "topic", "", "topic to use (required; produce and e2e create it when missing)")
	fs.IntVar(&o.records, "records", 100000, "records to send or read; not with --duration")
	fs.DurationVar(&o.duration, "duration", 0, "run this long instead of a record count")
	sizeHelp := "value size in bytes"
	if sub == "consume" {
		sizeHelp = "value size in bytes the result reports (the bytes counted are those read)"
	}
	fs.IntVar(&o.size, "size", 100, sizeHelp)
	if sub != "consume" {
		rateHelp := "records/s to send at (default 0: unthrottled)"
		if sub == "e2e" {
			rateHelp = fmt.Sprintf("records/s to send at (default %d; 0: unthrottled)", e2eDefaultRate)
		}
		fs.Float64Var(&o.rate, "rate", 0, rateHelp)
		fs.StringVar(&o.acks, "acks", "all", "all, 1 or 0")
		fs.StringVar(&o.codec, "compression", "none", "none, gzip, snappy, lz4 or zstd")
		fs.IntVar(&o.partitions, "partitions", 0, "partitions of the topic when it is created (default: the broker's num.partitions)")
		fs.DurationVar(&o.linger, "linger", -1, "how long a batch waits for more records (default: the client's, 5ms)")
		fs.IntVar(&o.batchBytes, "batch-bytes", 0, "largest batch in bytes (default: the client's)")
		fs.IntVar(&o.maxInFlight, "max-in-flight", 0, "produce requests in flight per broker (default: the client's)")
		fs.BoolVar(&idempotence, "idempotence", true, "idempotent producer; false allows --max-in-flight over 5 (default: the client's, on)")
	} else {
		fs.DurationVar(&o.idle, "timeout", consumeIdleDefault,
			"with --records: fail when no record arrives for this long, as kafka-consumer-perf-test --timeout")
	}
	fs.BoolVar(&o.json, "json", false, "print the result as one JSON object")
	if err := fs.parse(args); err != nil {
		return o, fs, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case fs.NArg() > 0:
		return o, fs, fs.noArgs()
	case o.topic == "":
		return o, fs, fs.bad("bench: --topic is required")
	case set["records"] && set["duration"]:
		return o, fs, fs.bad("bench: give --records or --duration, not both")
	case o.records <= 0:
		return o, fs, fs.bad("bench: --records must be > 0, got %d", o.records)
	case set["duration"] && o.duration <= 0:
		return o, fs, fs.bad("bench: --duration must be > 0, got %v", o.duration)
	case o.size < 0:
		return o, fs, fs.bad("bench: --size must be >= 0, got %d", o.size)
	case o.mode == "e2e" && o.size < stampSize:
		return o, fs, fs.bad("bench: --size must be >= %d for e2e (the value carries its send time), got %d", stampSize, o.size)
	case o.rate < 0:
		return o, fs, fs.bad("bench: --rate must be >= 0 (0: unthrottled), got %v", o.rate)
	case o.partitions < 0:
		return o, fs, fs.bad("bench: --partitions must be >= 1, got %d", o.partitions)
	case set["linger"] && o.linger < 0:
		return o, fs, fs.bad("bench: --linger must be >= 0, got %v", o.linger)
	case o.batchBytes < 0 || o.maxInFlight < 0:
		return o, fs, fs.bad("bench: --batch-bytes and --max-in-flight must be > 0")
	case set["timeout"] && o.idle <= 0:
		return o, fs, fs.bad("bench: --timeout must be > 0, got %v", o.idle)
	}
	if set["idempotence"] {
		o.idempotence = &idempotence
	}
	if o.mode == "e2e" && !set["rate"] {
		o.rate = e2eDefaultRate
	}
	if set["duration"] {
		o.records = 0
	}
	return o, fs, nil
}

// producerOpts are the client options for the producing side of a bench.
func (o benchOpts) producerOpts() ([]spool.Opt, error) {
	opts, err := producerOpts(o.acks, o.codec, "sticky")
	if err != nil {
		return nil, err
	}
	if o.linger >= 0 {
		opts = append(opts, spool.Linger(o.linger))
	}
	if o.batchBytes > 0 {
		opts = append(opts, spool.MaxBatchBytes(o.batchBytes))
	}
	if o.maxInFlight > 0 {
		opts = append(opts, spool.MaxInFlight(o.maxInFlight))
	}
	if o.idempotence != nil {
		opts = append(opts, spool.Idempotence(*o.idempotence))
	}
	return opts, nil
}

// more reports whether record i (0-based) is still to be sent at now.
func (o benchOpts) more(i int, start, now time.Time) bool {
	if o.records > 0 {
		return i < o.records
	}
	return now.Sub(start) < o.duration
}

func benchCmd(ctx context.Context, clientFor clientFunc, sub string, args []string, stdout, stderr io.Writer) (err error) {
	o, fs, err := parseBenchOpts(sub, args)
	if err != nil {
		return err
	}
	defer fs.explain(&err)
	b := &bench{o: o, clientFor: clientFor}
	if !o.json {
		if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			b.progress = &progress{w: stderr, o: o, done: &b.done}
		}
	}
	var res benchResult
	switch sub {
	case "produce":
		res, err = b.produce(ctx)
	case "consume":
		res, err = b.consume(ctx)
	case "e2e":
		res, err = b.e2e(ctx)
	}
	if err != nil {
		return err
	}
	if o.json {
		return json.NewEncoder(stdout).Encode(res)
	}
	fmt.Fprintf(stdout, "%-8s %10s %12s %9s %9s %9s %9s %9s %9s\n", "mode", "records", "records/s", "MB/s", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms")
	fmt.Fprintf(stdout, "%-8s %10d %12.0f %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f\n", res.Mode, res.Records, res.RecordsSec, res.MBSec,
		res.P50ms, res.P90ms, res.P99ms, res.P999ms, res.Maxms)
	return nil
}

// bench is one run: its options, latency histogram and count of records done.
type bench struct {
	o         benchOpts
	clientFor clientFunc
	lat       hist.Hist // nanoseconds
	done      atomic.Int64
	bytes     atomic.Int64
	progress  *progress // nil unless stderr is a terminal
	errMu     sync.Mutex
	err       error
}

func (b *bench) fail(err error) {
	b.errMu.Lock()
	if b.err == nil {
		b.err = err
	}
	b.errMu.Unlock()
}

func (b *bench) firstErr() error {
	b.errMu.Lock()
	defer b.errMu.Unlock()
	return b.err
}

// result summarizes the run that started at start.
func (b *bench) result(start time.Time) benchResult {
	el := time.Since(start).Seconds()
	n := b.done.Load()
	ms := func(q float64) float64 { return float64(b.lat.Quantile(q)) / 1e6 }
	return benchResult{
		Mode: b.o.mode, Records: int(n), Bytes: b.bytes.Load(), Seconds: el,
		RecordsSec: float64(n) / el, MBSec: float64(b.bytes.Load()) / el / 1e6,
		P50ms: ms(0.5), P90ms: ms(0.9), P99ms: ms(0.99), P999ms: ms(0.999), Maxms: ms(1),
		Size: b.o.size, TargetRate: b.o.rate,
	}
}

// client makes a client. NewClient fails only on bad options, which here come from flags.
func (b *bench) client(opts ...spool.Opt) (*spool.Client, error) {
	cl, err := b.clientFor(opts...)
	if err != nil {
		return nil, usageError{msg: "bench: " + strings.TrimPrefix(err.Error(), "spool: ")}
	}
	return cl, nil
}

// ensureTopic creates the topic when it is missing, with --partitions (else the broker's
// default).
func (b *bench) ensureTopic(ctx context.Context, cl *spool.Client) error {
	ds, err := cl.Admin().DescribeTopics(ctx, b.o.topic)
	if err == nil && len(ds) == 1 && ds[0].Err == nil {
		return nil
	}
	if err == nil && len(ds) == 1 {
		err = ds[0].Err
	}
	if !errors.Is(err, wire.ErrUnknownTopicOrPartition) {
		return fmt.Errorf("looking up topic %q: %w", b.o.topic, err)
	}
	parts := int32(-1)
	if b.o.partitions > 0 {
		parts = int32(b.o.partitions)
	}
	if err := cl.Admin().CreateTopic(ctx, b.o.topic, parts, -1, nil); err != nil && !errors.Is(err, wire.ErrTopicAlreadyExists) {
		return fmt.Errorf("creating topic %q: %w", b.o.topic, err)
	}
	return nil
}

// records hands out Records from slabs, so that producing does not allocate per record.
type recordSlab struct {
	recs  []spool.Record
	vals  []byte
	size  int
	stamp bool
}

const slabRecords = 4096

func (s *recordSlab) next(topic string, shared []byte) *spool.Record {
	if len(s.recs) == 0 {
		s.recs = make([]spool.Record, slabRecords)
		if s.stamp {
			s.vals = make([]byte, slabRecords*s.size)
		}
	}
	r := &s.recs[0]
	s.recs = s.recs[1:]
	r.Topic, r.Value = topic, shared
	if s.stamp {
		r.Value, s.vals = s.vals[:s.size:s.size], s.vals[s.size:]
	}
	return r
}

// sendLoop produces records at the paced rate until the run is over; each record's
// Timestamp is its send time. onSend (may be nil) sees each record before it is produced.
func (b *bench) sendLoop(ctx context.Context, cl *spool.Client, start time.Time, slab *recordSlab, onSend func(*spool.Record, time.Time), cb func(*spool.Record, error)) (int, error) {
	shared := make([]byte, b.o.size)
	p := pacer{rate: b.o.rate, start: start}
	i := 0
	for ; b.o.more(i, start, time.Now()); i++ {
		if err := p.wait(ctx, i); err != nil {
			return i, err
		}
		if err := b.firstErr(); err != nil {
			return i, err
		}
		now := time.Now()
		if !b.o.more(i, start, now) {
			break // the duration ended while waiting
		}
		r := slab.next(b.o.topic, shared)
		r.Timestamp = now
		if onSend != nil {
			onSend(r, now)
		}
		cl.Produce(ctx, r, cb)
	}
	if err := cl.Flush(ctx); err != nil {
		return i, fmt.Errorf("flushing: %w", err)
	}
	return i, b.firstErr()
}

func (b *bench) produce(ctx context.Context) (benchResult, error) {
	opts, err := b.o.producerOpts()
	if err != nil {
		return benchResult{}, err
	}
	cl, err := b.client(opts...)
	if err != nil {
		return benchResult{}, err
	}
	defer cl.Close()
	if err := b.ensureTopic(ctx, cl); err != nil {
		return benchResult{}, err
	}
	size := int64(b.o.size)
	cb := func(r *spool.Record, err error) {
		if err != nil {
			b.fail(err)
			return
		}
		b.lat.Record(int64(time.Since(r.Timestamp)))
		b.done.Add(1)
		b.bytes.Add(size)
	}
	start := time.Now()
	stop := b.progress.start(start)
	_, err = b.sendLoop(ctx, cl, start, &recordSlab{}, nil, cb)
	stop()
	if err != nil {
		return benchResult{}, err
	}
	return b.result(start), nil
}

func (b *bench) consume(ctx context.Context) (benchResult, error) {
	cl, err := b.client()
	if err != nil {
		return benchResult{}, err
	}
	defer cl.Close()
	// Resolved before assigning, so everything counted as "there at start" is read.
	cu, err := newCatchUp(ctx, cl.Admin(), b.o.topic)
	if err != nil {
		return benchResult{}, err
	}
	if err := cl.AssignTopic(ctx, b.o.topic, spool.OffsetStart()); err != nil {
		return benchResult{}, err
	}
	start := time.Now()
	pctx := ctx
	if b.o.duration > 0 {
		var cancel context.CancelFunc
		pctx, cancel = context.WithDeadline(ctx, start.Add(b.o.duration))
		defer cancel()
	}
	stop := b.progress.start(start)
	defer stop()
	t := tally{b: b, cu: cu}
	for b.o.records == 0 || b.done.Load() < int64(b.o.records) {
		err := b.poll(pctx, cl, cu, t.add)
		t.flush()
		if err != nil {
			if b.o.duration > 0 && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				break
			}
			return benchResult{}, err
		}
	}
	stop()
	return b.result(start), nil
}

// tally accounts for the records of one poll: bytes, count, latency from the record's
// timestamp to the poll's return, and how far each partition was read. Records of a
// partition come in offset order, so only the last of each run of one partition goes to
// catchUp, which keeps map look-ups off the per-record path.
type tally struct {
	b     *bench
	cu    *catchUp
	now   int64 // when the poll returned, in Unix nanoseconds; 0 before its first record
	bytes int64
	n     int64
	part  int32
	next  int64 // offset after the last record of part; 0 when no run is open
}

func (t *tally) add(r *spool.Record) {
	if t.now == 0 {
		t.now = time.Now().UnixNano()
	}
	t.bytes += int64(len(r.Value) + len(r.Key))
	t.n++
	// Integer nanoseconds: Time.Sub's overflow checks cost more than the rest of add.
	t.b.lat.Record(t.now - r.Timestamp.UnixNano())
	if t.next != 0 && r.Partition != t.part {
		t.cu.saw(t.part, t.next)
	}
	t.part, t.next = r.Partition, r.Offset+1
}

// flush ends a poll: it publishes the counts (the progress line reads them) and the last run.
func (t *tally) flush() {
	if t.next != 0 {
		t.cu.saw(t.part, t.next)
	}
	t.b.bytes.Add(t.bytes)
	t.b.done.Add(t.n)
	t.now, t.bytes, t.n, t.next = 0, 0, 0, 0
}

// poll is one PollFunc of consume. With --records it waits at most --timeout for records, as
// kafka-consumer-perf-test does, so a topic shorter than --records ends the run with an error
// instead of a wait forever; the error says whether everything the topic held at start was
// read (the usual case) or the records stopped coming before that.
func (b *bench) poll(ctx context.Context, cl *spool.Client, cu *catchUp, fn func(*spool.Record)) error {
	if b.o.records == 0 {
		_, err := cl.PollFunc(ctx, fn)
		return err
	}
	ictx, cancel := context.WithTimeout(ctx, b.o.idle)
	defer cancel()
	_, err := cl.PollFunc(ictx, fn)
	if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if cu.done() {
		return fmt.Errorf("bench consume: read %d of --records %d: the topic held %d records at start, all read, and no new record arrived within --timeout %v",
			b.done.Load(), b.o.records, cu.atStart, b.o.idle)
	}
	return fmt.Errorf("bench consume: read %d of --records %d: no record arrived within --timeout %v, before reaching the end offsets the topic had at start (%d records)",
		b.done.Load(), b.o.records, b.o.idle, cu.atStart)
}

// catchUp tracks whether a reader from the start of a topic has reached the end offsets the
// topic had when it began.
type catchUp struct {
	end     map[int32]int64 // log end offset per partition at start
	next    map[int32]int64 // next offset to read per partition
	behind  int             // partitions whose next is below their end
	atStart int64           // records between the log start and end offsets at start
}

func newCatchUp(ctx context.Context, ad *spool.Admin, topic string) (*catchUp, error) {
	first, err := ad.ListOffsets(ctx, topic, spool.OffsetEarliest)
	if err != nil {
		return nil, fmt.Errorf("start offsets of %q: %w", topic, err)
	}
	end, err := ad.ListOffsets(ctx, topic, spool.OffsetLatest)
	if err != nil {
		return nil, fmt.Errorf("end offsets of %q: %w", topic, err)
	}
	c := &catchUp{end: end, next: first}
	for p, e := range end {
		if first[p] < e {
			c.behind++
			c.atStart += e - first[p]
		}
	}
	return c, nil
}

// saw records that partition was read up to next (the offset after the last record read).
func (c *catchUp) saw(partition int32, next int64) {
	e, ok := c.end[partition]
	if !ok {
		return // a partition added since the start
	}
	was := c.next[partition]
	c.next[partition] = max(was, next)
	if was < e && next >= e {
		c.behind--
	}
}

func (c *catchUp) done() bool { return c.behind == 0 }

// e2eDrain bounds the wait for the last records to arrive once producing is done.
const e2eDrain = 30 * time.Second

func (b *bench) e2e(ctx context.Context) (benchResult, error) {
	opts, err := b.o.producerOpts()
	if err != nil {
		return benchResult{}, err
	}
	prod, err := b.client(opts...)
	if err != nil {
		return benchResult{}, err
	}
	defer prod.Close()
	if err := b.ensureTopic(ctx, prod); err != nil {
		return benchResult{}, err
	}
	cons, err := b.client()
	if err != nil {
		return benchResult{}, err
	}
	defer cons.Close()
	// Start at the current end, resolved now, so that every record produced below is seen.
	ends, err := cons.Admin().ListOffsets(ctx, b.o.topic, -1)
	if err != nil {
		return benchResult{}, fmt.Errorf("end offsets of %q: %w", b.o.topic, err)
	}
	at := make(map[int32]spool.Offset, len(ends))
	for p, o := range ends {
		at[p] = spool.OffsetAt(o)
	}
	if err := cons.Assign(map[string]map[int32]spool.Offset{b.o.topic: at}); err != nil {
		return benchResult{}, fmt.Errorf("assign %q: %w", b.o.topic, err)
	}

	// Send times are monotonic nanoseconds since base, so wall-clock steps do not matter.
	base := time.Now()
	var target atomic.Int64
	target.Store(-1)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	consumed := make(chan error, 1)
	go func() { consumed <- b.receive(cctx, cons, base, &target) }()

	var acked atomic.Int64
	cb := func(_ *spool.Record, err error) {
		if err != nil {
			b.fail(err)
			return
		}
		acked.Add(1)
	}
	stamp := func(r *spool.Record, now time.Time) {
		binary.BigEndian.PutUint64(r.Value, uint64(now.Sub(base)))
	}
	start := time.Now()
	stop := b.progress.start(start)
	defer stop()
	_, err = b.sendLoop(ctx, prod, start, &recordSlab{size: b.o.size, stamp: true}, stamp, cb)
	if err != nil {
		return benchResult{}, err
	}
	n := acked.Load()
	target.Store(n)
	if b.done.Load() >= n {
		// The receiver may already be waiting for records that will never come.
		cancel()
	}
	select {
	case err = <-consumed:
	case <-time.After(e2eDrain):
		cancel()
		err = <-consumed
		if err == nil {
			err = fmt.Errorf("e2e: %d of %d records arrived within %v of the last send", b.done.Load(), n, e2eDrain)
		}
	}
	if err != nil {
		return benchResult{}, err
	}
	if got := b.done.Load(); got != n {
		return benchResult{}, fmt.Errorf("e2e: consumed %d records, produced %d", got, n)
	}
	stop()
	return b.result(start), nil
}

// receive consumes until it has the target number of records (once known) or ctx ends.
func (b *bench) receive(ctx context.Context, cl *spool.Client, base time.Time, target *atomic.Int64) error {
	for {
		if t := target.Load(); t >= 0 && b.done.Load() >= t {
			return nil
		}
		rs, err := cl.Poll(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		now := int64(time.Since(base))
		var nb int64
		for _, r := range rs {
			if len(r.Value) < stampSize {
				return fmt.Errorf("e2e: record %s[%d]@%d has no send time (another producer on the topic?)", r.Topic, r.Partition, r.Offset)
			}
			b.lat.Record(now - int64(binary.BigEndian.Uint64(r.Value)))
			nb += int64(len(r.Value) + len(r.Key))
		}
		b.bytes.Add(nb)
		b.done.Add(int64(len(rs)))
	}
}

// pacer spaces sends at rate records/s from start. Record i is due at start + i/rate, so
// lateness never accumulates; it sleeps only when at least a millisecond early, so high rates
// go out in small bursts rather than with a sleep per record.
type pacer struct {
	rate  float64
	start time.Time
}

func (p pacer) wait(ctx context.Context, i int) error {
	if p.rate <= 0 {
		return nil
	}
	d := time.Until(p.start.Add(time.Duration(float64(i) / p.rate * float64(time.Second))))
	if d < time.Millisecond {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// progress draws a bar with the current rate on a terminal, at most 10 times a second.
type progress struct {
	w    io.Writer
	o    benchOpts
	done *atomic.Int64
}

const progressWidth = 30

// start draws until the returned function is called; on a nil progress it does nothing.
func (p *progress) start(t0 time.Time) (stop func()) {
	if p == nil {
		return func() {}
	}
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		lastN, lastT := int64(0), t0
		for {
			select {
			case <-quit:
				fmt.Fprint(p.w, "\r\033[K")
				return
			case now := <-tick.C:
				n := p.done.Load()
				rate := float64(n-lastN) / now.Sub(lastT).Seconds()
				lastN, lastT = n, now
				fmt.Fprint(p.w, "\r\033[K"+p.line(n, now.Sub(t0), rate))
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

func (p *progress) line(n int64, el time.Duration, rate float64) string {
	frac := 0.0
	if p.o.records > 0 {
		frac = float64(n) / float64(p.o.records)
	} else if p.o.duration > 0 {
		frac = el.Seconds() / p.o.duration.Seconds()
	}
	frac = min(max(frac, 0), 1)
	full := int(frac * progressWidth)
	return fmt.Sprintf("[%s%s] %3.0f%% %d records %.0f rec/s %v",
		strings.Repeat("#", full), strings.Repeat(".", progressWidth-full), frac*100, n, rate, el.Truncate(100*time.Millisecond))
}

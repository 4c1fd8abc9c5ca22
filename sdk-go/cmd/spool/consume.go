package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	spool "github.com/spoolmq/spool/sdk-go"
)

// startOffset is the parsed --offset of consume: where each partition starts.
type startOffset struct {
	kind     int8 // 0 exact, 1 beginning, 2 end, 3 relative to the end, 4 time
	n        int64
	explicit bool // given on the command line (else: the end, or the group's committed offset)
}

// parseStartOffset reads beginning, end, N, -N (N before the end), @UNIX_MS or an RFC 3339
// time, as kcat's -o does (kcat's s@ and e@ are spelled @ and an RFC 3339 time here).
func parseStartOffset(s string) (startOffset, error) {
	switch s {
	case "beginning", "earliest", "start":
		return startOffset{kind: 1, explicit: true}, nil
	case "end", "latest":
		return startOffset{kind: 2, explicit: true}, nil
	}
	if ms, ok := strings.CutPrefix(s, "@"); ok {
		n, err := strconv.ParseInt(ms, 10, 64)
		if err != nil || n < 0 {
			return startOffset{}, fmt.Errorf("%q: want @ followed by Unix milliseconds", s)
		}
		return startOffset{kind: 4, n: n, explicit: true}, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return startOffset{kind: 3, n: -n, explicit: true}, nil
		}
		return startOffset{kind: 0, n: n, explicit: true}, nil
	}
	if ts, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return startOffset{kind: 4, n: ts.UnixMilli(), explicit: true}, nil
	}
	return startOffset{}, fmt.Errorf("%q: want beginning, end, an offset N, -N (N before the end), @UNIX_MS or an RFC 3339 time", s)
}

func consumeCmd(ctx context.Context, clientFor clientFunc, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("consume")
	topic := fs.String("topic", "", "topics to read, comma-separated (required)")
	group := fs.String("group", "", "consume as a member of this consumer group and commit what is printed (default: no group, every partition assigned)")
	var parts partitionsFlag
	fs.Var(&parts, "partition", "read only these partitions, e.g. `0,2` (default: all; not with --group)")
	fs.Var(&parts, "p", "short for --partition")
	offset := fs.String("offset", "", "`WHERE` to start: beginning, end, N, -N (N before the end), @UNIX_MS or an RFC 3339 time (default: beginning, as kcat and rpk; with --group, the committed offset, else the end)")
	fromTS := fs.String("from-timestamp", "", "start at the first record at or after this `TIME` (Unix ms or RFC 3339); same as --offset @TIME")
	fromBeginning := fs.Bool("from-beginning", false, "same as --offset beginning")
	exitAtEnd := fs.Bool("exit-at-end", false, "stop at the end of every partition read, as kcat -e (not with --group)")
	fs.BoolVar(exitAtEnd, "e", false, "short for --exit-at-end")
	count := fs.Int("count", 0, "stop after this many records (default 0: never)")
	format := fs.String("format", `%v\n`, "how each record is printed, see `FMT` above")
	null := fs.String("null", "NULL", "how a null key or value is printed by %k and %v, distinct from an empty one")
	asJSON := fs.Bool("json", false, "print each record as one JSON object per line (fields in the README) instead of --format")
	isolation := fs.String("isolation", "read_uncommitted", "read_uncommitted (every record) or read_committed (only committed transactions' records, up to the last stable offset)")
	if err := fs.parse(args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	level := spool.ReadUncommitted
	switch *isolation {
	case "read_uncommitted":
	case "read_committed":
		level = spool.ReadCommitted
	default:
		return fs.bad("consume: --isolation %q: want read_uncommitted or read_committed", *isolation)
	}
	// Without a group, the beginning, as kcat and rpk; a group with no committed offset starts
	// at the end, as Kafka's consumers do (and says so on stderr).
	start := startOffset{kind: 1}
	if *group != "" {
		start = startOffset{kind: 2}
	}
	var err error
	switch {
	case *topic == "":
		return fs.bad("consume: --topic is required")
	case *count < 0:
		return fs.bad("consume: --count must be >= 0, got %d", *count)
	case fs.NArg() > 0:
		return fs.noArgs()
	case btoi(set["offset"])+btoi(set["from-timestamp"])+btoi(*fromBeginning) > 1:
		return fs.bad("consume: give one of --offset, --from-timestamp and --from-beginning")
	case *group != "" && len(parts) > 0:
		return fs.bad("consume: --partition reads chosen partitions, --group the ones the group assigns: give one")
	case *asJSON && set["format"]:
		return fs.bad("consume: give --format or --json, not both")
	case *group != "" && *exitAtEnd:
		return fs.bad("consume: --exit-at-end works without --group (a group's partitions change as members come and go)")
	}
	if err := checkFormat(*format); err != nil {
		return fs.bad("consume: --format: %v", err)
	}
	switch {
	case *fromBeginning:
		start = startOffset{kind: 1, explicit: true}
	case *offset != "":
		if start, err = parseStartOffset(*offset); err != nil {
			return fs.bad("consume: --offset %v", err)
		}
	case *fromTS != "":
		s := *fromTS
		if _, err := strconv.ParseInt(s, 10, 64); err == nil {
			s = "@" + s
		}
		if start, err = parseStartOffset(s); err != nil || start.kind != 4 {
			return fs.bad("consume: --from-timestamp %q: want Unix milliseconds or an RFC 3339 time", *fromTS)
		}
	}
	if *group != "" && start.kind != 1 && start.kind != 2 {
		return fs.bad("consume: with --group, --offset is beginning or end (where a group with no committed offset starts); move a group with spool group seek")
	}
	topics := strings.Split(*topic, ",")
	src, err := openSource(ctx, clientFor, topics, *group, parts, start, level, stderr)
	if err != nil {
		return err
	}
	defer src.close()
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	n := 0
	var buf []byte
	for (*count == 0 || n < *count) && !(*exitAtEnd && src.atEnd()) {
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if *exitAtEnd {
			// Poll returns at the latest when the last wanted record arrives; the deadline only
			// bounds one poll, so that the end is checked again.
			pctx, cancel = context.WithTimeout(ctx, time.Second)
		}
		rs, err := src.cl.Poll(pctx)
		cancel()
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				continue
			}
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return nil
			}
			return err
		}
		if *count > 0 && len(rs) > *count-n {
			rs = rs[:*count-n]
		}
		for _, r := range rs {
			if *exitAtEnd && r.Offset >= src.ends[tp{r.Topic, r.Partition}] {
				continue // past the end seen at start
			}
			if *asJSON {
				buf, _ = json.Marshal(recordToJSON(r)) // strings, numbers and slices: cannot fail
				buf = append(buf, '\n')
			} else {
				buf = formatRecord(buf[:0], *format, *null, r)
			}
			w.Write(buf)
			n++
		}
		if err := w.Flush(); err != nil {
			return fmt.Errorf("consume: write: %w", err)
		}
		src.printed(rs)
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

type tp struct {
	topic     string
	partition int32
}

// source is where consume reads from: chosen partitions directly, or a consumer group, whose
// offsets then advance past exactly the records printed (not the whole fetched batch), so a
// later `consume --group` with the same group continues where this one stopped.
type source struct {
	cl      *spool.Client
	grouped bool
	pending []*spool.Record
	// ends are the end offsets when consume started, for --exit-at-end.
	ends map[tp]int64
}

func openSource(ctx context.Context, clientFor clientFunc, topics []string, group string, parts []int32, start startOffset, level spool.IsolationLevel, stderr io.Writer) (*source, error) {
	reset := spool.ResetLatest
	if start.kind == 1 {
		reset = spool.ResetEarliest
	}
	opts := []spool.Opt{spool.AutoOffsetReset(reset)}
	if group != "" {
		opts = append(opts, spool.ConsumerGroup(group), spool.ConsumeTopics(topics...), spool.DisableAutoCommit())
	} else {
		// An offset before the log start (e.g. -N on a log retention has trimmed) starts at the
		// log start.
		opts[0] = spool.AutoOffsetReset(spool.ResetEarliest)
	}
	opts = append(opts, spool.Isolation(level))
	cl, err := clientFor(opts...)
	if err != nil {
		return nil, err
	}
	src := &source{cl: cl, grouped: group != "", ends: map[tp]int64{}}
	if err := src.assign(ctx, topics, group, parts, start, stderr); err != nil {
		cl.Close()
		return nil, err
	}
	return src, nil
}

func (s *source) assign(ctx context.Context, topics []string, group string, parts []int32, start startOffset, stderr io.Writer) error {
	ad := s.cl.Admin()
	// A group waits forever for a topic that does not exist; say so instead.
	ds, err := describeTopics(ctx, ad, topics...)
	if err != nil {
		return err
	}
	if s.grouped {
		if !start.explicit {
			s.hintNewGroup(ctx, group, topics, stderr)
		}
		return nil
	}
	assign := map[string]map[int32]spool.Offset{}
	for _, d := range ds {
		want := parts
		if len(want) == 0 {
			for _, p := range d.Partitions {
				want = append(want, p.Partition)
			}
		}
		ends, err := ad.ListOffsets(ctx, d.Name, spool.OffsetLatest)
		if err != nil {
			return err
		}
		assign[d.Name] = map[int32]spool.Offset{}
		for _, p := range want {
			end, ok := ends[p]
			if !ok {
				return fmt.Errorf("topic %s has no partition %d (it has %d)", d.Name, p, len(d.Partitions))
			}
			s.ends[tp{d.Name, p}] = end
			var o spool.Offset
			switch start.kind {
			case 0:
				o = spool.OffsetAt(start.n)
			case 1:
				o = spool.OffsetStart()
			case 2:
				o = spool.OffsetEnd()
			case 3:
				o = spool.OffsetAt(max(end-start.n, 0))
			case 4:
				o = spool.OffsetTime(time.UnixMilli(start.n))
			}
			assign[d.Name][p] = o
		}
	}
	return s.cl.Assign(assign)
}

// hintNewGroup says on stderr that a group with no committed offset starts at the end, as in
// Kafka, so that a consume that prints nothing is not a mystery.
func (s *source) hintNewGroup(ctx context.Context, group string, topics []string, stderr io.Writer) {
	committed, err := s.cl.Admin().FetchOffsets(ctx, group)
	if err != nil {
		return
	}
	for _, t := range topics {
		if len(committed[t]) == 0 {
			fmt.Fprintf(stderr, "spool: group %s has no committed offsets for %s: it starts at the end and prints only new records (--offset beginning reads from the start)\n", group, t)
		}
	}
}

// atEnd tells whether every partition has been read up to the end offset seen at start.
func (s *source) atEnd() bool {
	for k, end := range s.ends {
		if s.cl.Position(k.topic, k.partition) < end {
			return false
		}
	}
	return true
}

// printed records what was written out; in a group it is committed before the next poll and
// on close.
func (s *source) printed(rs []*spool.Record) {
	if s.grouped {
		s.pending = append(s.pending[:0], rs...)
		s.commit()
	}
}

func (s *source) commit() {
	if len(s.pending) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.cl.CommitRecords(ctx, s.pending...); err != nil {
		slog.Warn("consume: commit failed", "err", err)
	}
	s.pending = s.pending[:0]
}

func (s *source) close() {
	s.commit()
	s.cl.Close()
}

// formatVerbs are the --format verbs after %.
const formatVerbs = "tpokvhTKS%"

// checkFormat refuses a verb formatRecord does not know, and a trailing lone % or \.
func checkFormat(f string) error {
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c != '%' && c != '\\' {
			continue
		}
		if i+1 == len(f) {
			return fmt.Errorf("%q ends with a lone %c", f, c)
		}
		i++
		if c == '%' && !strings.ContainsRune(formatVerbs, rune(f[i])) {
			return fmt.Errorf("unknown verb %%%c in %q (verbs: %%t %%p %%o %%k %%v %%h %%T %%K %%S %%%%)", f[i], f)
		}
	}
	return nil
}

// formatRecord appends r formatted by f (checked by checkFormat): %t topic, %p partition, %o
// offset, %k key, %v value, %h headers (k=v,...), %T timestamp in Unix ms, %K and %S the key's
// and value's size in bytes (-1 when null), %% percent, \n newline, \t tab. A null key or
// value prints as null.
func formatRecord(b []byte, f, null string, r *spool.Record) []byte {
	bytesOrNull := func(b, v []byte) []byte {
		if v == nil {
			return append(b, null...)
		}
		return append(b, v...)
	}
	size := func(v []byte) int64 {
		if v == nil {
			return -1
		}
		return int64(len(v))
	}
	for i := 0; i < len(f); i++ {
		c := f[i]
		if (c == '%' || c == '\\') && i+1 < len(f) {
			i++
			d := f[i]
			if c == '\\' {
				switch d {
				case 'n':
					b = append(b, '\n')
				case 't':
					b = append(b, '\t')
				case '\\':
					b = append(b, '\\')
				default:
					b = append(b, c, d)
				}
				continue
			}
			switch d {
			case 't':
				b = append(b, r.Topic...)
			case 'p':
				b = strconv.AppendInt(b, int64(r.Partition), 10)
			case 'o':
				b = strconv.AppendInt(b, r.Offset, 10)
			case 'k':
				b = bytesOrNull(b, r.Key)
			case 'v':
				b = bytesOrNull(b, r.Value)
			case 'K':
				b = strconv.AppendInt(b, size(r.Key), 10)
			case 'S':
				b = strconv.AppendInt(b, size(r.Value), 10)
			case 'T':
				b = strconv.AppendInt(b, r.Timestamp.UnixMilli(), 10)
			case 'h':
				for j, h := range r.Headers {
					if j > 0 {
						b = append(b, ',')
					}
					b = append(b, h.Key...)
					b = append(b, '=')
					b = append(b, h.Value...)
				}
			case '%':
				b = append(b, '%')
			}
			continue
		}
		b = append(b, c)
	}
	return b
}

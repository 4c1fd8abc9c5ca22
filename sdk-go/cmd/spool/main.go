// Command spool is a command-line client for Spool and any Kafka cluster: topics, produce,
// consume, consumer groups, cluster info and benchmarks.
//
//	spool [--brokers HOST:PORT,...] COMMAND [SUBCOMMAND] [ARGS] [FLAGS]
//
// `spool --help` lists the commands (the table in usage.go), `spool COMMAND [SUBCOMMAND]
// --help` one command's flags with their defaults. --brokers defaults to $SPOOL_BROKERS, else
// 127.0.0.1:9092. Bad usage exits 2 with the command's usage on stderr, other errors exit 1
// with a message on stderr.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
	"github.com/spoolmq/spool/protocol-spec/wire/compress"
	spool "github.com/spoolmq/spool/sdk-go"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	err := dispatch(ctx, args, stdin, stdout, stderr)
	if err == nil {
		return 0
	}
	var help helpRequest
	if errors.As(err, &help) {
		// Asked for: the usage is the answer, not an error.
		io.WriteString(stdout, help.usage)
		return 0
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "spool: %s\n", ue.msg)
		if ue.usage == "" {
			ue.usage = overview()
		}
		io.WriteString(stderr, ue.usage)
		return 2
	}
	fmt.Fprintf(stderr, "spool: %s\n", errorText(err))
	return 1
}

// errorText is err's message without the SDK's "spool: " prefixes: run prints one, and an
// SDK error wrapping another SDK error carries one per layer.
func errorText(err error) string {
	return strings.ReplaceAll(strings.TrimPrefix(err.Error(), "spool: "), ": spool: ", ": ")
}

func dispatch(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	g := flag.NewFlagSet("spool", flag.ContinueOnError)
	g.SetOutput(io.Discard)
	def := os.Getenv("SPOOL_BROKERS")
	if def == "" {
		def = "127.0.0.1:9092"
	}
	brokers := g.String("brokers", def, "")
	if err := g.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return helpRequest{overview()}
		}
		return usageError{msg: err.Error()}
	}
	rest := g.Args()
	if len(rest) == 0 {
		return usageError{msg: "no command"}
	}
	// Every subcommand gets its client here, so the broker list is checked in one place, after
	// the subcommand's own flags.
	clientFor := func(opts ...spool.Opt) (*spool.Client, error) {
		seeds, err := spool.ParseBrokers(*brokers)
		if err != nil {
			return nil, usageError{msg: "--brokers: " + errorText(err)}
		}
		return spool.NewClient(append([]spool.Opt{spool.SeedBrokers(seeds...), spool.ClientID("spool-cli"),
			spool.DialTimeout(5 * time.Second), spool.RequestTimeout(10 * time.Second)}, opts...)...)
	}
	cmd, rest := rest[0], rest[1:]
	var sub string
	if len(subcommands(cmd)) > 0 {
		switch {
		case len(rest) == 0:
			return usageError{msg: cmd + ": missing subcommand", usage: commandUsage(cmd)}
		case isHelpFlag(rest[0]):
			return helpRequest{commandUsage(cmd)}
		}
		sub, rest = rest[0], rest[1:]
		if _, ok := docFor(cmd + " " + sub); !ok {
			return usageError{msg: cmd + ": unknown subcommand " + sub, usage: commandUsage(cmd)}
		}
	}
	switch cmd {
	case "topic":
		return topicCmd(ctx, clientFor, sub, rest, stdout)
	case "produce":
		return produceCmd(ctx, clientFor, rest, stdin, stderr)
	case "consume":
		return consumeCmd(ctx, clientFor, rest, stdout)
	case "group":
		return groupCmd(ctx, clientFor, sub, rest, stdout, stderr)
	case "cluster":
		if sub == "configs" {
			return clusterConfigs(ctx, clientFor, rest, stdout)
		}
		return clusterInfo(ctx, clientFor, rest, stdout)
	case "bench":
		return benchCmd(ctx, clientFor, sub, rest, stdout, stderr)
	}
	return usageError{msg: "unknown command " + cmd}
}

func clusterInfo(ctx context.Context, clientFor clientFunc, args []string, stdout io.Writer) error {
	fs := newFlags("cluster info")
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fs.bad("cluster info: takes no arguments")
	}
	cl, err := clientFor()
	if err != nil {
		return err
	}
	defer cl.Close()
	ci, err := cl.Admin().Cluster(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "cluster id: %s\ncontroller: %d\nbrokers:\n", ci.ClusterID, ci.Controller)
	for _, b := range ci.Brokers {
		fmt.Fprintf(stdout, "  %d\t%s:%d\t%s\n", b.NodeID, b.Host, b.Port, b.Rack)
	}
	return nil
}

// clusterConfigs prints a broker's configs, as kafka-configs.sh --describe --all does for
// --entity-type brokers: the controller's when no broker id is given.
func clusterConfigs(ctx context.Context, clientFor clientFunc, args []string, stdout io.Writer) error {
	fs := newFlags("cluster configs")
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return fs.bad("cluster configs: takes at most one broker id")
	}
	id := int64(-1)
	if fs.NArg() == 1 {
		n, err := strconv.ParseInt(fs.Arg(0), 10, 32)
		if err != nil || n < 0 {
			return fs.bad("cluster configs: broker id %q: want a number >= 0", fs.Arg(0))
		}
		id = n
	}
	cl, err := clientFor()
	if err != nil {
		return err
	}
	defer cl.Close()
	ad := cl.Admin()
	if id < 0 {
		ci, err := ad.Cluster(ctx)
		if err != nil {
			return err
		}
		id = int64(ci.Controller)
	}
	cfgs, err := ad.DescribeConfigs(ctx, spool.BrokerResource(int32(id)))
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "broker %d\nNAME\tVALUE\tSOURCE\n", id)
	for _, c := range cfgs {
		v := "(sensitive)"
		if c.Value != nil {
			v = *c.Value
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, v, configSource(c.Source))
	}
	return tw.Flush()
}

// configSource names a config's source as kafka-configs.sh does.
func configSource(s int8) string {
	switch s {
	case spool.ConfigSourceDynamicTopic:
		return "DYNAMIC_TOPIC_CONFIG"
	case spool.ConfigSourceDynamicBroker:
		return "DYNAMIC_BROKER_CONFIG"
	case spool.ConfigSourceDynamicDefaultBroker:
		return "DYNAMIC_DEFAULT_BROKER_CONFIG"
	case spool.ConfigSourceStaticBroker:
		return "STATIC_BROKER_CONFIG"
	case spool.ConfigSourceDefault:
		return "DEFAULT_CONFIG"
	}
	return "UNKNOWN"
}

type clientFunc func(opts ...spool.Opt) (*spool.Client, error)

type kvFlag map[string]string

func (k kvFlag) String() string { return "" }
func (k kvFlag) Set(s string) error {
	key, v, ok := strings.Cut(s, "=")
	if !ok || key == "" {
		return fmt.Errorf("want k=v, got %q", s)
	}
	k[key] = v
	return nil
}

func topicCmd(ctx context.Context, clientFor clientFunc, sub string, args []string, stdout io.Writer) error {
	fs := newFlags("topic " + sub)
	var partitions, rf *int
	configs := kvFlag{}
	if sub == "create" {
		partitions = fs.Int("partitions", -1, "number of partitions (default: the broker's num.partitions)")
		rf = fs.Int("replication-factor", -1, "copies of each partition (default: the broker's default.replication.factor)")
		fs.Var(configs, "config", "a topic config `k=v`, e.g. retention.ms=86400000; repeatable")
	}
	if err := fs.parse(args); err != nil {
		return err
	}
	names := fs.Args()
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case sub == "list" && len(names) > 0:
		return fs.bad("topic list: takes no arguments")
	case sub != "list" && len(names) == 0:
		return fs.bad("topic %s: missing topic name", sub)
	case set["partitions"] && (*partitions < 1 || *partitions > math.MaxInt32):
		return fs.bad("topic create: --partitions must be from 1 to %d, got %d", math.MaxInt32, *partitions)
	case set["replication-factor"] && (*rf < 1 || *rf > math.MaxInt16):
		return fs.bad("topic create: --replication-factor must be from 1 to %d, got %d", math.MaxInt16, *rf)
	}
	cl, err := clientFor()
	if err != nil {
		return err
	}
	defer cl.Close()
	ad := cl.Admin()
	switch sub {
	case "create":
		for _, n := range names {
			if err := ad.CreateTopic(ctx, n, int32(*partitions), int16(*rf), configs); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "created %s\n", n)
		}
	case "list":
		ns, err := ad.ListTopics(ctx)
		if err != nil {
			return err
		}
		for _, n := range ns {
			fmt.Fprintln(stdout, n)
		}
	case "describe":
		ds, err := ad.DescribeTopics(ctx, names...)
		if err != nil {
			return err
		}
		for _, d := range ds {
			if d.Err != nil {
				return fmt.Errorf("topic %q: %w", d.Name, d.Err)
			}
			fmt.Fprintf(stdout, "topic %s partitions %d\n", d.Name, len(d.Partitions))
			for _, p := range d.Partitions {
				fmt.Fprintf(stdout, "  partition %d leader %d replicas %v isr %v\n", p.Partition, p.Leader, p.Replicas, p.ISR)
			}
			cfgs, err := ad.DescribeTopicConfigs(ctx, d.Name)
			if err != nil {
				return err
			}
			for _, c := range cfgs {
				if !c.Default && c.Value != nil {
					fmt.Fprintf(stdout, "  config %s=%s\n", c.Name, *c.Value)
				}
			}
		}
	case "delete":
		if err := ad.DeleteTopics(ctx, names...); err != nil {
			return err
		}
		for _, n := range names {
			fmt.Fprintf(stdout, "deleted %s\n", n)
		}
	}
	return nil
}

func producerOpts(acks, codec, partitioner string) ([]spool.Opt, error) {
	var opts []spool.Opt
	switch acks {
	case "all", "-1":
		opts = append(opts, spool.RequiredAcks(spool.AcksAll))
	case "1":
		opts = append(opts, spool.RequiredAcks(spool.AcksLeader))
	case "0":
		opts = append(opts, spool.RequiredAcks(spool.AcksNone))
	default:
		return nil, usageError{msg: fmt.Sprintf("--acks %q: want all, 1 or 0", acks)}
	}
	c, err := compress.ParseCodec(codec)
	if err != nil {
		return nil, usageError{msg: fmt.Sprintf("--compression %q: want none, gzip, snappy, lz4 or zstd", codec)}
	}
	opts = append(opts, spool.Compression(c))
	switch partitioner {
	case "hash", "":
		opts = append(opts, spool.WithPartitioner(spool.Hash()))
	case "roundrobin":
		opts = append(opts, spool.WithPartitioner(spool.RoundRobin()))
	case "sticky":
		opts = append(opts, spool.WithPartitioner(spool.Sticky(0, true)))
	default:
		return nil, usageError{msg: fmt.Sprintf("--partitioner %q: want hash, roundrobin or sticky", partitioner)}
	}
	return opts, nil
}

func produceCmd(ctx context.Context, clientFor clientFunc, args []string, stdin io.Reader, stderr io.Writer) (err error) {
	fs := newFlags("produce")
	defer fs.explain(&err)
	topic := fs.String("topic", "", "topic to produce to (required)")
	sep := fs.String("key-separator", "", "split each line at the first `S` into key and value (default: no key)")
	part := fs.String("partitioner", "hash", "hash (Kafka's murmur2 of the key), roundrobin or sticky")
	acks := fs.String("acks", "all", "all, 1 or 0")
	codec := fs.String("compression", "none", "none, gzip, snappy, lz4 or zstd")
	if err := fs.parse(args); err != nil {
		return err
	}
	if *topic == "" {
		return fs.bad("produce: --topic is required")
	}
	if fs.NArg() > 0 {
		return fs.bad("produce: takes no arguments (records come from stdin)")
	}
	opts, err := producerOpts(*acks, *codec, *part)
	if err != nil {
		return err
	}
	cl, err := clientFor(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	// Before stdin: empty input must not turn a down broker or a missing topic into success.
	if err := lookupTopic(ctx, cl, *topic); err != nil {
		return err
	}
	var (
		mu    sync.Mutex
		first error
	)
	cb := func(_ *spool.Record, err error) {
		if err != nil {
			mu.Lock()
			if first == nil {
				first = err
			}
			mu.Unlock()
		}
	}
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		r := &spool.Record{Topic: *topic}
		if *sep != "" {
			k, v, ok := strings.Cut(line, *sep)
			if ok {
				r.Key, r.Value = []byte(k), []byte(v)
			} else {
				r.Value = []byte(line)
			}
		} else {
			r.Value = []byte(line)
		}
		cl.Produce(ctx, r, cb)
		n++
		mu.Lock()
		err := first
		mu.Unlock()
		if err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading stdin: %w", err)
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	if first != nil {
		return first
	}
	fmt.Fprintf(stderr, "produced %d records\n", n)
	return nil
}

// lookupTopic asks for topic's metadata, allowing a broker with auto.create.topics.enable to
// create it, as kafka-console-producer's metadata request does.
func lookupTopic(ctx context.Context, cl *spool.Client, topic string) error {
	req := &wire.MetadataRequest{}
	req.Default()
	req.Topics = []wire.MetadataRequestTopic{{Name: &topic}}
	req.AllowAutoTopicCreation = true
	resp := &wire.MetadataResponse{}
	if err := cl.Request(ctx, req, resp); err != nil {
		return fmt.Errorf("looking up topic %q: %w", topic, err)
	}
	for _, t := range resp.Topics {
		if t.Name == nil || *t.Name != topic {
			continue
		}
		// UNKNOWN_TOPIC_OR_PARTITION is retriable in Kafka's table, but here the broker has
		// declined to create the topic. Other retriable errors (LEADER_NOT_AVAILABLE just after
		// an automatic creation) are the producer's to wait out.
		err := wire.ErrorForCode(t.ErrorCode)
		if err != nil && (!wire.IsRetriable(err) || errors.Is(err, wire.ErrUnknownTopicOrPartition)) {
			return fmt.Errorf("topic %q: %w", topic, err)
		}
		return nil
	}
	return fmt.Errorf("topic %q: not in the metadata response: %w", topic, wire.ErrUnknownTopicOrPartition)
}

func consumeCmd(ctx context.Context, clientFor clientFunc, args []string, stdout io.Writer) error {
	fs := newFlags("consume")
	topic := fs.String("topic", "", "topics to read, comma-separated (required)")
	group := fs.String("group", "", "consume as a member of this consumer group and commit what is printed (default: no group, every partition assigned)")
	fromBeginning := fs.Bool("from-beginning", false, "start at the earliest offset instead of the end")
	count := fs.Int("count", 0, "stop after this many records (default 0: never)")
	format := fs.String("format", `%v\n`, "how each record is printed, see `FMT` above")
	if err := fs.parse(args); err != nil {
		return err
	}
	if *topic == "" {
		return fs.bad("consume: --topic is required")
	}
	if *count < 0 {
		return fs.bad("consume: --count must be >= 0")
	}
	if fs.NArg() > 0 {
		return fs.bad("consume: takes no arguments")
	}
	src, err := openSource(ctx, clientFor, strings.Split(*topic, ","), *group, *fromBeginning)
	if err != nil {
		return err
	}
	defer src.close()
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	n := 0
	var buf []byte
	for *count == 0 || n < *count {
		rs, err := src.cl.Poll(ctx)
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		}
		if *count > 0 && len(rs) > *count-n {
			rs = rs[:*count-n]
		}
		for _, r := range rs {
			buf = formatRecord(buf[:0], *format, r)
			w.Write(buf)
		}
		n += len(rs)
		if err := w.Flush(); err != nil {
			return fmt.Errorf("consume: write: %w", err)
		}
		src.printed(rs)
	}
	return nil
}

// source is where consume reads from: the topic's partitions directly, or a consumer group,
// whose offsets then advance past exactly the records printed (not the whole fetched batch),
// so a later `consume --group` with the same group continues where this one stopped.
type source struct {
	cl      *spool.Client
	grouped bool
	pending []*spool.Record
}

func openSource(ctx context.Context, clientFor clientFunc, topics []string, group string, fromBeginning bool) (*source, error) {
	reset := spool.ResetLatest
	if fromBeginning {
		reset = spool.ResetEarliest
	}
	var opts []spool.Opt
	if group != "" {
		opts = []spool.Opt{spool.ConsumerGroup(group), spool.ConsumeTopics(topics...),
			spool.DisableAutoCommit(), spool.AutoOffsetReset(reset)}
	}
	cl, err := clientFor(opts...)
	if err != nil {
		return nil, err
	}
	src := &source{cl: cl, grouped: group != ""}
	if !src.grouped {
		start := spool.OffsetEnd()
		if fromBeginning {
			start = spool.OffsetStart()
		}
		for _, t := range topics {
			if err := cl.AssignTopic(ctx, t, start); err != nil {
				cl.Close()
				return nil, err
			}
		}
		return src, nil
	}
	// A group waits forever for a topic that does not exist; say so instead.
	ds, err := cl.Admin().DescribeTopics(ctx, topics...)
	if err == nil {
		for _, d := range ds {
			if d.Err != nil {
				err = fmt.Errorf("topic %s: %w", d.Name, d.Err)
				break
			}
		}
	}
	if err != nil {
		cl.Close()
		return nil, err
	}
	return src, nil
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

// formatRecord appends r formatted by f: %t topic, %p partition, %o offset, %k key, %v value,
// %h headers (k=v,...), %T timestamp in Unix ms, %% percent, \n newline, \t tab.
func formatRecord(b []byte, f string, r *spool.Record) []byte {
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
				b = append(b, r.Key...)
			case 'v':
				b = append(b, r.Value...)
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
			default:
				b = append(b, c, d)
			}
			continue
		}
		b = append(b, c)
	}
	return b
}

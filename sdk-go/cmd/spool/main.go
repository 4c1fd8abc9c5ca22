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
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
	"github.com/spoolmq/spool/protocol-spec/wire/compress"
	spool "github.com/spoolmq/spool/sdk-go"
)

func main() {
	// SIGTERM (kill, systemd, Kubernetes) stops a command as Ctrl-C does: a consumer commits
	// what it printed and leaves its group, a producer flushes, and the exit status is 0.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
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
		if ue.short {
			return 2
		}
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
	profile, err := loadProfile()
	if err != nil {
		return err
	}
	def := os.Getenv("SPOOL_BROKERS")
	if def == "" {
		def = profile["brokers"]
	}
	if def == "" {
		def = "127.0.0.1:9092"
	}
	brokers := g.String("brokers", def, "")
	security := addSecurityFlags(g, profile)
	version := g.Bool("version", false, "")
	args, err = hoistGlobalFlags(args)
	if err != nil {
		return err
	}
	if err := g.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return helpRequest{overview()}
		}
		if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); ok {
			msg := err.Error()
			if s := closestFlag(g, name); s != "" {
				msg += fmt.Sprintf(" (did you mean --%s?)", s)
			}
			return usageError{msg: msg + "; 'spool --help' lists the commands and global flags", short: true}
		}
		return usageError{msg: err.Error()}
	}
	rest := g.Args()
	if *version {
		fmt.Fprintln(stdout, versionString())
		return nil
	}
	if len(rest) > 0 && rest[0] == "help" {
		// spool help [COMMAND [SUBCOMMAND]] is COMMAND [SUBCOMMAND] --help.
		if len(rest) == 1 {
			return helpRequest{overview()}
		}
		rest = append(rest[1:len(rest):len(rest)], "--help")
	}
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
		secOpts, err := security.opts()
		if err != nil {
			return nil, err
		}
		return spool.NewClient(append(append([]spool.Opt{spool.SeedBrokers(seeds...), spool.ClientID("spool-cli"),
			spool.DialTimeout(5 * time.Second), spool.RequestTimeout(10 * time.Second)}, secOpts...), opts...)...)
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
		return topicCmd(ctx, clientFor, sub, rest, stdout, stderr)
	case "produce":
		return produceCmd(ctx, clientFor, rest, stdin, stderr)
	case "consume":
		return consumeCmd(ctx, clientFor, rest, stdout, stderr)
	case "group":
		return groupCmd(ctx, clientFor, sub, rest, stdout, stderr)
	case "cluster":
		switch sub {
		case "configs":
			return clusterConfigs(ctx, clientFor, rest, stdout)
		case "info":
			return clusterInfo(ctx, clientFor, rest, stdout)
		}
		return clusterOps(ctx, clientFor, sub, rest, stdout)
	case "bench":
		return benchCmd(ctx, clientFor, sub, rest, stdout, stderr)
	case "completion":
		return completionCmd(ctx, rest, stdout)
	case "acl":
		return aclCmd(ctx, clientFor, sub, rest, stdout)
	case "user":
		return userCmd(ctx, clientFor, sub, rest, stdin, stdout)
	}
	return usageError{msg: "unknown command " + cmd}
}

// hoistGlobalFlags moves --brokers and the security flags (in any of the flag package's
// spellings) from wherever they are to the front, so that they may follow the subcommand as
// rpk's and kcat's global flags do.
func hoistGlobalFlags(args []string) ([]string, error) {
	var global, rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || (name != "brokers" && !slices.Contains(securityFlagNames, name)) {
			rest = append(rest, a)
			continue
		}
		global = append(global, a)
		if !hasValue && name != "tls" {
			if i+1 == len(args) {
				return nil, usageError{msg: "flag needs an argument: --" + name}
			}
			global = append(global, args[i+1])
			i++
		}
	}
	return append(global, rest...), nil
}

// versionString is the module version and VCS revision go build recorded.
func versionString() string {
	v, rev := "(devel)", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = " " + s.Value[:12]
			}
		}
	}
	return "spool " + v + rev
}

func clusterInfo(ctx context.Context, clientFor clientFunc, args []string, stdout io.Writer) error {
	fs := newFlags("cluster info")
	asJSON := fs.Bool("json", false, "print one JSON document (fields in the README)")
	if err := fs.parse(args); err != nil {
		return err
	}
	if err := fs.noArgs(); err != nil {
		return err
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
	if *asJSON {
		out := clusterJSON{ClusterID: ci.ClusterID, Controller: ci.Controller, Brokers: []brokerJSON{}}
		for _, b := range ci.Brokers {
			out.Brokers = append(out.Brokers, brokerJSON{ID: b.NodeID, Host: b.Host, Port: b.Port, Rack: b.Rack})
		}
		return writeJSON(stdout, out)
	}
	fmt.Fprintf(stdout, "cluster id: %s\ncontroller: %d\nbrokers:\n", ci.ClusterID, ci.Controller)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  ID\tADDRESS\tRACK")
	for _, b := range ci.Brokers {
		fmt.Fprintf(tw, "  %d\t%s:%d\t%s\n", b.NodeID, b.Host, b.Port, orDash(b.Rack))
	}
	return tw.Flush()
}

// clusterConfigs prints a broker's configs, as kafka-configs.sh --describe --all does for
// --entity-type brokers: the controller's when no broker id is given.
func clusterConfigs(ctx context.Context, clientFor clientFunc, args []string, stdout io.Writer) error {
	fs := newFlags("cluster configs")
	asJSON := fs.Bool("json", false, "print one JSON document (fields in the README)")
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
	if *asJSON {
		out := brokerConfigsJSON{Broker: id, Configs: []configJSON{}}
		for _, c := range cfgs {
			out.Configs = append(out.Configs, configJSON{Name: c.Name, Value: c.Value, Source: configSource(c.Source), Sensitive: c.Sensitive})
		}
		return writeJSON(stdout, out)
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

func topicCmd(ctx context.Context, clientFor clientFunc, sub string, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("topic " + sub)
	var partitions, rf, add *int
	configs := kvFlag{}
	var deletes listFlag
	switch sub {
	case "create":
		partitions = fs.Int("partitions", -1, "number of partitions (default: the broker's num.partitions)")
		rf = fs.Int("replication-factor", -1, "copies of each partition (default: the broker's default.replication.factor)")
		fs.Var(configs, "config", "a topic config `k=v`, e.g. retention.ms=86400000; repeatable")
	case "alter-config":
		fs.Var(configs, "set", "set a topic config `k=v`, e.g. retention.ms=86400000; repeatable")
		fs.Var(&deletes, "delete", "remove a topic override `NAME`, back to the broker's default; repeatable")
	case "add-partitions":
		add = fs.Int("num", 0, "how many partitions to add (required)")
	}
	asJSON, internal := new(bool), new(bool)
	if sub == "list" {
		internal = fs.Bool("internal", false, "list internal topics too (names starting with __, and _schemas), as rpk's --internal")
	}
	if sub == "list" || sub == "describe" {
		asJSON = fs.Bool("json", false, "print one JSON document (fields in the README) instead of a table")
	}
	if err := fs.parse(args); err != nil {
		return err
	}
	names := fs.Args()
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case sub == "list" && len(names) > 0:
		return fs.noArgs()
	case sub != "list" && len(names) == 0:
		return fs.bad("topic %s: missing topic name", sub)
	case set["partitions"] && (*partitions < 1 || *partitions > math.MaxInt32):
		return fs.bad("topic create: --partitions must be from 1 to %d, got %d", math.MaxInt32, *partitions)
	case set["replication-factor"] && (*rf < 1 || *rf > math.MaxInt16):
		return fs.bad("topic create: --replication-factor must be from 1 to %d, got %d", math.MaxInt16, *rf)
	case sub == "alter-config" && len(configs) == 0 && len(deletes) == 0:
		return fs.bad("topic alter-config: give --set k=v or --delete NAME")
	case sub == "add-partitions" && (*add < 1 || *add > math.MaxInt32):
		return fs.bad("topic add-partitions: --num must be from 1 to %d, got %d", math.MaxInt32, *add)
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
		ds, err := ad.DescribeTopics(ctx)
		if err != nil {
			return err
		}
		rows := []topicJSON{}
		for _, d := range ds {
			if !*internal && isInternalTopic(d.Name) {
				continue
			}
			rows = append(rows, topicSummary(d))
		}
		if *asJSON {
			return writeJSON(stdout, rows)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tPARTITIONS\tREPLICAS")
		for _, t := range rows {
			fmt.Fprintf(tw, "%s\t%d\t%d\n", t.Name, t.PartitionCount, t.ReplicationFactor)
		}
		return tw.Flush()
	case "describe":
		return topicDescribe(ctx, ad, names, *asJSON, stdout, stderr)
	case "alter-config":
		change := map[string]*string{}
		for k, v := range configs {
			change[k] = &v
		}
		for _, k := range deletes {
			change[k] = nil
		}
		for _, n := range names {
			if err := ad.AlterTopicConfigs(ctx, n, change); err != nil {
				return err // it names the topic
			}
			fmt.Fprintf(stdout, "altered %s\n", n)
		}
	case "add-partitions":
		ds, err := describeTopics(ctx, ad, names...)
		if err != nil {
			return err
		}
		for _, d := range ds {
			total := len(d.Partitions) + *add
			if err := ad.CreatePartitions(ctx, d.Name, int32(total)); err != nil {
				return fmt.Errorf("topic %s: %w", d.Name, err)
			}
			fmt.Fprintf(stdout, "%s now has %d partitions\n", d.Name, total)
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

// describeTopics describes the named topics, failing on the first one that has an error
// (one that does not exist).
func describeTopics(ctx context.Context, ad *spool.Admin, names ...string) ([]spool.TopicDetail, error) {
	ds, err := ad.DescribeTopics(ctx, names...)
	if err != nil {
		return nil, err
	}
	for _, d := range ds {
		if d.Err != nil {
			return nil, fmt.Errorf("topic %s: %w", d.Name, d.Err)
		}
	}
	return ds, nil
}

// topicSummary is a topic's name, partition count and replication factor (of partition 0).
func topicSummary(d spool.TopicDetail) topicJSON {
	t := topicJSON{Name: d.Name, PartitionCount: len(d.Partitions)}
	if len(d.Partitions) > 0 {
		t.ReplicationFactor = len(d.Partitions[0].Replicas)
	}
	return t
}

// topicDescribe prints each topic's partitions with their log start and end offsets, the
// records between them and the leader's log size, then the topic's config overrides.
func topicDescribe(ctx context.Context, ad *spool.Admin, names []string, asJSON bool, stdout, stderr io.Writer) error {
	ds, err := describeTopics(ctx, ad, names...)
	if err != nil {
		return err
	}
	sizes := replicaSizes(ctx, ad, names, stderr)
	var topics []topicJSON
	for _, d := range ds {
		starts, err := ad.ListOffsets(ctx, d.Name, spool.OffsetEarliest)
		if err != nil {
			return fmt.Errorf("topic %q: log start offsets: %w", d.Name, err)
		}
		ends, err := ad.ListOffsets(ctx, d.Name, spool.OffsetLatest)
		if err != nil {
			return fmt.Errorf("topic %q: high watermarks: %w", d.Name, err)
		}
		cfgs, err := ad.DescribeTopicConfigs(ctx, d.Name)
		if err != nil {
			return err
		}
		t := topicSummary(d)
		t.Configs = map[string]string{}
		for _, p := range d.Partitions {
			t.Partitions = append(t.Partitions, partitionJSON{Partition: p.Partition, Leader: p.Leader, Replicas: p.Replicas, ISR: p.ISR,
				LogStartOffset: starts[p.Partition], HighWatermark: ends[p.Partition], Size: sizeOf(sizes, d.Name, p.Partition, p.Leader)})
		}
		for _, c := range cfgs {
			if c.Source == spool.ConfigSourceDynamicTopic && c.Value != nil {
				t.Configs[c.Name] = *c.Value
			}
		}
		topics = append(topics, t)
	}
	if asJSON {
		return writeJSON(stdout, topics)
	}
	for _, t := range topics {
		fmt.Fprintf(stdout, "topic %s partitions %d\n", t.Name, t.PartitionCount)
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  PARTITION\tLEADER\tREPLICAS\tISR\tLOG-START\tHIGH-WATERMARK\tRECORDS\tSIZE")
		for _, p := range t.Partitions {
			size := "-"
			if p.Size >= 0 {
				size = strconv.FormatInt(p.Size, 10)
			}
			fmt.Fprintf(tw, "  %d\t%d\t%s\t%s\t%d\t%d\t%d\t%s\n", p.Partition, p.Leader, ids(p.Replicas), ids(p.ISR),
				p.LogStartOffset, p.HighWatermark, p.HighWatermark-p.LogStartOffset, size)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, k := range slices.Sorted(maps.Keys(t.Configs)) {
			fmt.Fprintf(stdout, "  config %s=%s\n", k, t.Configs[k])
		}
	}
	return nil
}

// replicaSizes are the log sizes of the topics' replicas by topic, partition and broker. Sizes
// are a detail: a broker that cannot say (an older one, or one that refuses DescribeLogDirs)
// costs a warning on stderr, not the description.
func replicaSizes(ctx context.Context, ad *spool.Admin, topics []string, stderr io.Writer) map[string]map[int32]map[int32]int64 {
	dirs, err := ad.DescribeLogDirs(ctx, topics...)
	if err != nil {
		fmt.Fprintf(stderr, "spool: partition sizes are incomplete: %s\n", errorText(err))
	}
	out := map[string]map[int32]map[int32]int64{}
	for _, d := range dirs {
		if out[d.Topic] == nil {
			out[d.Topic] = map[int32]map[int32]int64{}
		}
		if out[d.Topic][d.Partition] == nil {
			out[d.Topic][d.Partition] = map[int32]int64{}
		}
		out[d.Topic][d.Partition][d.Broker] = d.Size
	}
	return out
}

// sizeOf is the size of the leader's replica, -1 when unknown.
func sizeOf(sizes map[string]map[int32]map[int32]int64, topic string, partition, leader int32) int64 {
	if n, ok := sizes[topic][partition][leader]; ok {
		return n
	}
	return -1
}

// ids prints broker ids as 1,2,3.
func ids(xs []int32) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(int(x))
	}
	return strings.Join(s, ",")
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return "" }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

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

// lookupTopic asks for topic's metadata, allowing a broker with auto.create.topics.enable to
// create it, as kafka-console-producer's metadata request does. It returns the partition count
// (0 while a new topic's partitions are not known yet).
func lookupTopic(ctx context.Context, cl *spool.Client, topic string) (int, error) {
	req := &wire.MetadataRequest{}
	req.Default()
	req.Topics = []wire.MetadataRequestTopic{{Name: &topic}}
	req.AllowAutoTopicCreation = true
	resp := &wire.MetadataResponse{}
	if err := cl.Request(ctx, req, resp); err != nil {
		return 0, fmt.Errorf("looking up topic %q: %w", topic, err)
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
			return 0, fmt.Errorf("topic %q: %w", topic, err)
		}
		return len(t.Partitions), nil
	}
	return 0, fmt.Errorf("topic %q: not in the metadata response: %w", topic, wire.ErrUnknownTopicOrPartition)
}

// isInternalTopic tells the topics Kafka and its tools keep for themselves
// (__consumer_offsets, __transaction_state, ...) and the schema registry's _schemas, which
// topic list hides unless --internal.
func isInternalTopic(name string) bool {
	return strings.HasPrefix(name, "__") || name == "_schemas"
}

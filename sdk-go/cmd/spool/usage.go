package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// doc describes one command or subcommand: the overview, `spool CMD --help` and
// `spool CMD SUB --help` are all built from this one table, so they cannot disagree.
type doc struct {
	name    string // "topic create", or "produce" for a command without subcommands
	args    string // positional arguments and the required flags, for the synopsis
	summary string // one line
	about   string // optional: more lines, shown only in the command's own --help
}

var docs = []doc{
	{name: "topic create", args: "NAME...", summary: "create topics"},
	{name: "topic list", summary: "list the topics with their partition counts and replication factors",
		about: "Internal topics (names starting with __, such as __consumer_offsets, and _schemas) are\n" +
			"listed only with --internal, as rpk does."},
	{name: "topic describe", args: "NAME...", summary: "show partitions (leader, replicas, log start, high watermark, size in bytes) and the topic's config overrides"},
	{name: "topic alter-config", args: "NAME...", summary: "set (--set k=v) or remove (--delete NAME) topic config overrides"},
	{name: "topic add-partitions", args: "NAME... --num N", summary: "add N partitions to topics"},
	{name: "topic delete", args: "NAME...", summary: "delete topics"},
	{name: "produce", args: "--topic T", summary: "produce the lines of stdin, one record per line",
		about: "Each line is a record's value, or KEY<S>VALUE with --key-separator S. -Z sends an empty key or\n" +
			"value as null (an empty value is then a tombstone), as kcat -Z does. On a terminal a run\n" +
			"longer than a second shows a progress line (records and bytes acknowledged, rates),\n" +
			"cleared for the summary; with stderr piped or in a file, only the summary is printed.\n" +
			"--transactional-id ID produces exactly once: the whole input is one transaction, or one per\n" +
			"--txn-size N records; a transaction that fails is aborted and the command exits 1."},
	{name: "consume", args: "--topic T[,T2...]", summary: "print records until --count, the end (-e), Ctrl-C or SIGTERM",
		about: "Without --group every partition (or those of --partition) is read from --offset, by default\n" +
			"from the beginning (as kcat and rpk). With --group the offsets of the records printed are\n" +
			"committed, and --offset (beginning or end) applies only when the group has no committed\n" +
			"offset: a new group starts at the end, as in Kafka. SIGTERM stops as Ctrl-C: the group's\n" +
			"offsets are committed and the member leaves the group, exit 0.\n" +
			"FMT: %t topic, %p partition, %o offset, %k key, %v value, %h headers (k=v,...),\n" +
			"%T timestamp (Unix ms), %K key size, %S value size (-1 for null), %% percent, \\n newline,\n" +
			"\\t tab. A null key or value prints as --null. --isolation read_committed prints only the\n" +
			"records of committed transactions (and records outside transactions)."},
	{name: "group list", summary: "list the consumer groups with their state, members and total lag"},
	{name: "group describe", args: "GROUP", summary: "show a group's members, committed offsets and lag"},
	{name: "group delete", args: "GROUP...", summary: "delete groups that have no members"},
	{name: "group seek", args: "GROUP --topic T --to WHERE", summary: "move a group's committed offsets (only while it has no members)",
		about: "WHERE: earliest, latest, an offset (clamped into the log), an RFC 3339 time, or @ followed by\n" +
			"Unix milliseconds; a time with no record at or after it means the end."},
	{name: "group delete-offsets", args: "GROUP --topic T", summary: "delete a group's committed offsets of a topic"},
	{name: "cluster info", summary: "show the cluster id, the controller and the brokers"},
	{name: "cluster configs", args: "[BROKER-ID]", summary: "show a broker's configs with their sources (default: the controller's)"},
	{name: "cluster rebalance", summary: "plan (default) or --execute moves that spread replicas and leaders evenly over brokers and racks",
		about: "Replicas move only off brokers above their share, and leaders are spread by reordering replica\n" +
			"lists. With --execute the brokers copy the data while clients go on (Kafka's\n" +
			"AlterPartitionReassignments); then the preferred leaders are elected."},
	{name: "cluster decommission", args: "BROKER-ID...", summary: "move every replica off brokers, so they can be stopped"},
	{name: "cluster elect-leaders", summary: "put preferred leaders (each partition's first replica) back in the lead"},
	{name: "cluster reassignments", summary: "list the partition moves in progress, or --cancel them"},
	{name: "bench produce", args: "--topic T", summary: "measure produce throughput and send-to-ack latency"},
	{name: "bench consume", args: "--topic T", summary: "measure reading the topic from the start (latency: record timestamp to receipt)",
		about: "With --records N it stops with an error when no record arrives for --timeout, so a topic\n" +
			"holding fewer than N records ends the run instead of a wait forever."},
	{name: "bench e2e", args: "--topic T", summary: "one producer and one consumer in one process: send-to-receipt latency",
		about: "The consumer starts at the end offsets; each value starts with its send time, so --size >= 8."},
	{name: "acl create", args: "--allow-principal|--deny-principal P --operation OP RESOURCE", summary: "create ACLs: every principal × operation × resource × host given",
		about: "RESOURCE: --topic T, --group G, --transactional-id ID (each repeatable) or --cluster; names are\n" +
			"LITERAL (\"*\" for all) or, with --resource-pattern-type prefixed, prefixes. P: User:NAME or User:*.\n" +
			"OP: All, Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs,\n" +
			"AlterConfigs, IdempotentWrite. As kafka-acls.sh --add."},
	{name: "acl list", summary: "list ACLs, all or those matching the filter flags (as kafka-acls.sh --list)"},
	{name: "acl delete", args: "FILTER", summary: "delete the ACLs matching the filter flags, at least one of them (as kafka-acls.sh --remove)"},
	{name: "user create", args: "NAME...", summary: "create or replace SCRAM credentials (password from --password, else the first line of stdin)",
		about: "The password is salted here with a random salt; only the salted form reaches the broker."},
	{name: "user list", args: "[NAME...]", summary: "list users' SCRAM mechanisms and iteration counts"},
	{name: "user delete", args: "NAME...", summary: "delete users' SCRAM credentials (every mechanism, or those of --mechanism)"},
	{name: "completion", args: "SHELL", summary: "print the completion script for SHELL, bash or zsh",
		about: "Load it with: source <(spool completion bash), or zsh in ~/.zshrc: source <(spool completion zsh)."},
}

func docFor(name string) (doc, bool) {
	for _, d := range docs {
		if d.name == name {
			return d, true
		}
	}
	return doc{}, false
}

// subcommands are the docs under cmd, e.g. "topic" → create, list, describe, delete; none
// for a command that takes no subcommand.
func subcommands(cmd string) []doc {
	var ds []doc
	for _, d := range docs {
		if strings.HasPrefix(d.name, cmd+" ") {
			ds = append(ds, d)
		}
	}
	return ds
}

const synopsisPrefix = "usage: spool [--brokers HOST:PORT,...] "

const brokersHelp = "--brokers defaults to $SPOOL_BROKERS, else the profile's brokers= ($SPOOL_CONFIG, default\n~/.config/spool/config), else 127.0.0.1:9092; it goes before or after COMMAND.\n" + securityHelp

// overview is `spool --help`: every command's synopsis.
func overview() string {
	var b strings.Builder
	b.WriteString(synopsisPrefix + "COMMAND [SUBCOMMAND] [ARGS] [FLAGS]\n\ncommands:\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, d := range docs {
		fmt.Fprintf(tw, "  %s %s\t%s\n", d.name, d.args, d.summary)
	}
	tw.Flush()
	b.WriteString("\n`spool COMMAND [SUBCOMMAND] --help` (or `spool help COMMAND [SUBCOMMAND]`) lists its flags with\ntheir defaults; `spool --version` prints the version.\n" + brokersHelp)
	return b.String()
}

// commandUsage is `spool CMD --help` for a command with subcommands.
func commandUsage(cmd string) string {
	var b strings.Builder
	b.WriteString(synopsisPrefix + cmd + " SUBCOMMAND [ARGS] [FLAGS]\n\nsubcommands:\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, d := range subcommands(cmd) {
		fmt.Fprintf(tw, "  %s %s\t%s\n", strings.TrimPrefix(d.name, cmd+" "), d.args, d.summary)
	}
	tw.Flush()
	fmt.Fprintf(&b, "\n`spool %s SUBCOMMAND --help` lists its flags with their defaults.\n", cmd)
	return b.String()
}

// usageError is bad usage: exit 2 with the message and usage (the overview when empty) on
// stderr.
type usageError struct {
	msg   string
	usage string
	// short: msg says where the usage is (an unknown flag), which is not printed.
	short bool
}

func (e usageError) Error() string { return e.msg }

// helpRequest is --help or -h: its usage goes to stdout and the exit status is 0.
type helpRequest struct{ usage string }

func (helpRequest) Error() string        { return "help requested" }
func (helpRequest) Is(target error) bool { return target == flag.ErrHelp }

func isHelpFlag(s string) bool { return s == "-h" || s == "-help" || s == "--help" }

// flagSet is the flags of one command or subcommand, named as in docs.
type flagSet struct {
	*flag.FlagSet
}

func newFlags(name string) *flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// Errors come back from Parse and are printed once, with the usage, by run.
	fs.SetOutput(io.Discard)
	return &flagSet{fs}
}

// usage is the command's synopsis, description and every flag with its default.
func (fs *flagSet) usage() string {
	d, _ := docFor(fs.Name())
	var b strings.Builder
	fmt.Fprintf(&b, "%s%s\n\n%s.\n", synopsisPrefix, strings.TrimSpace(fs.Name()+" "+d.args), capitalize(d.summary))
	if d.about != "" {
		b.WriteString(d.about + "\n")
	}
	b.WriteString("\nflags:\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		typ, help := flag.UnquoteUsage(f)
		if len(f.Name) == 1 {
			// A short form, as kcat spells it: the long flag's argument, and its default.
			if long := fs.Lookup(strings.TrimPrefix(help, "short for --")); long != nil {
				typ, _ = flag.UnquoteUsage(long)
			}
			fmt.Fprintf(tw, "  -%s %s\t%s\n", f.Name, typ, help)
			return
		}
		fmt.Fprintf(tw, "  --%s %s\t%s%s\n", f.Name, typ, help, defaultNote(f, help))
	})
	if n == 0 {
		fmt.Fprintln(tw, "  (none)")
	}
	tw.Flush()
	b.WriteString("\n" + brokersHelp)
	return b.String()
}

// defaultNote is " (default X)", unquoted as it would be typed, unless the default is a zero
// value or the help text already says what the default means.
func defaultNote(f *flag.Flag, help string) string {
	switch f.DefValue {
	case "", "0", "false", "0s":
		return ""
	}
	if strings.Contains(help, "(default") {
		return ""
	}
	return " (default " + f.DefValue + ")"
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// bad is a usage error of this command: its message and this command's usage.
func (fs *flagSet) bad(format string, a ...any) error {
	return usageError{msg: fmt.Sprintf(format, a...), usage: fs.usage()}
}

// noArgs refuses positional arguments, naming them.
func (fs *flagSet) noArgs() error {
	if fs.NArg() > 0 {
		return fs.bad("%s: takes no arguments, got %q", fs.Name(), strings.Join(fs.Args(), " "))
	}
	return nil
}

// explain gives a usage error raised below this command (by a shared option parser) this
// command's usage; `defer fs.explain(&err)`.
func (fs *flagSet) explain(err *error) {
	var ue usageError
	if errors.As(*err, &ue) && ue.usage == "" {
		ue.usage = fs.usage()
		*err = ue
	}
}

// parse parses args, allowing flags after positional arguments.
func (fs *flagSet) parse(args []string) error {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return helpRequest{fs.usage()}
			}
			if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); ok {
				return fs.unknownFlag(name, err)
			}
			return fs.bad("%s: %v", fs.Name(), err)
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	return fs.Parse(append([]string{"--"}, pos...))
}

// unknownFlag is the one-line error for a flag fs does not define: Go's message, the
// closest flag's name when one is near (as spoold's "did you mean" for properties), and
// where the flags are listed.
func (fs *flagSet) unknownFlag(name string, err error) error {
	msg := fmt.Sprintf("%s: %v", fs.Name(), err)
	if s := closestFlag(fs.FlagSet, name); s != "" {
		msg += fmt.Sprintf(" (did you mean --%s?)", s)
	}
	return usageError{msg: msg + fmt.Sprintf("; 'spool %s --help' lists the flags", fs.Name()), short: true}
}

// closestFlag is the long flag of fs nearest to name, if near enough to be a typo (an edit
// distance up to a third of its length), else "".
func closestFlag(fs *flag.FlagSet, name string) string {
	name, _, _ = strings.Cut(name, "=")
	best, bestDist := "", len(name)/3+1
	fs.VisitAll(func(f *flag.Flag) {
		if len(f.Name) < 2 {
			return
		}
		if d := editDistance(name, f.Name); d < bestDist {
			best, bestDist = f.Name, d
		}
	})
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, sub)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

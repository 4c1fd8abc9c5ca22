package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	spool "github.com/spoolmq/spool/sdk-go"
)

// TestCLIConsumeFormatVerbs checks every --format verb on one record with known fields (its
// header can only come from the SDK: produce reads plain lines).
func TestCLIConsumeFormatVerbs(t *testing.T) {
	t.Parallel()
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	ok(t, runCLI(t, addr, "", "topic", "create", "fmt", "--partitions", "2"))
	cl, err := spool.NewClient(spool.SeedBrokers(addr), spool.WithPartitioner(spool.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ts := time.UnixMilli(1700000000123)
	for i, v := range []string{"first", "second"} {
		r := &spool.Record{Topic: "fmt", Partition: 1, Key: []byte("k" + v), Value: []byte(v), Timestamp: ts.Add(time.Duration(i) * time.Millisecond),
			Headers: []spool.Header{{Key: []byte("trace"), Value: []byte("abc")}, {Key: []byte("n"), Value: []byte(v)}}}
		if err := cl.ProduceSync(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	r := ok(t, runCLI(t, addr, "", "consume", "--topic", "fmt", "--from-beginning", "--count", "2",
		"--format", `%t|%p|%o|%k|%v|%h|%T|%K|%S|%%\t\\\n`))
	want := "fmt|1|0|kfirst|first|trace=abc,n=first|1700000000123|6|5|%\t\\\n" +
		"fmt|1|1|ksecond|second|trace=abc,n=second|1700000000124|7|6|%\t\\\n"
	if r.stdout != want {
		t.Fatalf("formatted\n%q\nwant\n%q", r.stdout, want)
	}
	// With --offset end the consumer starts at the end: a record produced after it started is
	// the only one it sees.
	done := make(chan result, 1)
	go func() {
		done <- runCLI(t, addr, "", "consume", "--topic", "fmt", "--offset", "end", "--count", "1", "--format", `%v`)
	}()
	// The end is only known once the consumer is running, so keep producing until it sees one.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		if err := cl.ProduceSync(ctx, &spool.Record{Topic: "fmt", Partition: 0, Value: []byte("late")}); err != nil {
			t.Fatal(err)
		}
		if i > 5000 {
			t.Fatal("consume from the end never returned")
		}
		select {
		case r := <-done:
			if r.code != 0 || !strings.HasPrefix(r.stdout, "late") {
				t.Fatalf("consume from the end: exit %d %q %q", r.code, r.stdout, r.stderr)
			}
			return
		case <-tick.C:
		}
	}
}

// TestCLIProducePartitioners checks where each --partitioner puts unkeyed lines.
func TestCLIProducePartitioners(t *testing.T) {
	t.Parallel()
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	ok(t, runCLI(t, addr, "", "topic", "create", "rr", "--partitions", "3"))
	ok(t, runCLI(t, addr, "a\nb\nc\nd\ne\nf\n", "produce", "--topic", "rr", "--partitioner", "roundrobin", "--acks", "1", "--compression", "lz4"))
	r := ok(t, runCLI(t, addr, "", "consume", "--topic", "rr", "--from-beginning", "--count", "6", "--format", `%p\n`))
	per := map[string]int{}
	for _, p := range strings.Fields(r.stdout) {
		per[p]++
	}
	if per["0"] != 2 || per["1"] != 2 || per["2"] != 2 {
		t.Fatalf("roundrobin spread %v, want 2 per partition", per)
	}
	// Keyed lines with --partitioner hash (the default) follow murmur2 whatever the codec.
	ok(t, runCLI(t, addr, "", "topic", "create", "keyed", "--partitions", "3"))
	ok(t, runCLI(t, addr, "key3=x\n", "produce", "--topic", "keyed", "--key-separator", "=", "--compression", "gzip", "--compression-level", "9", "--acks", "all"))
	r = ok(t, runCLI(t, addr, "", "consume", "--topic", "keyed", "--from-beginning", "--count", "1", "--format", `%p %k %v`))
	if r.stdout != "1 key3 x" {
		t.Fatalf("keyed record: %q, want partition 1", r.stdout)
	}
	// A line without the separator has no key.
	ok(t, runCLI(t, addr, "nokey\n", "produce", "--topic", "keyed", "--key-separator", "=", "--partitioner", "sticky", "--acks", "0"))
	r = ok(t, runCLI(t, addr, "", "consume", "--topic", "keyed", "--from-beginning", "--count", "2", "--format", `[%k]%v\n`))
	if !strings.Contains(r.stdout, "[NULL]nokey\n") {
		t.Fatalf("unkeyed line: %q", r.stdout)
	}
}

// TestCLICommandsBadInput covers every subcommand's usage errors, unknown topics and a
// broker that is down, with the message each prints.
func TestCLICommandsBadInput(t *testing.T) {
	t.Parallel()
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	ok(t, runCLI(t, addr, "", "topic", "create", "exists", "--partitions", "1"))
	const down = "127.0.0.1:1"
	cases := []struct {
		name   string
		addr   string
		args   []string
		code   int
		stderr string
	}{
		{"topic bad sub", addr, []string{"topic", "rename"}, 2, "topic: unknown subcommand rename"},
		{"topic create no name", addr, []string{"topic", "create"}, 2, "topic create: missing topic name"},
		{"topic create bad config", addr, []string{"topic", "create", "x", "--config", "retention"}, 2, `want k=v, got "retention"`},
		{"topic create exists", addr, []string{"topic", "create", "exists"}, 1, "TOPIC_ALREADY_EXISTS"},
		{"topic create bad flag", addr, []string{"topic", "create", "x", "--replicas", "3"}, 2, "flag provided but not defined: -replicas"},
		{"topic list bad flag", addr, []string{"topic", "list", "--all"}, 2, "flag provided but not defined: -all"},
		{"topic describe no name", addr, []string{"topic", "describe"}, 2, "topic describe: missing topic name"},
		{"topic describe bad flag", addr, []string{"topic", "describe", "exists", "--partitions", "1"}, 2, "flag provided but not defined: -partitions"},
		{"topic delete no name", addr, []string{"topic", "delete"}, 2, "topic delete: missing topic name"},
		{"topic delete bad flag", addr, []string{"topic", "delete", "x", "--force"}, 2, "flag provided but not defined: -force"},
		{"consume no topic", addr, []string{"consume"}, 2, "consume: --topic is required"},
		{"consume bad flag", addr, []string{"consume", "--topic", "exists", "--from-end"}, 2, "flag provided but not defined: -from-end"},
		{"consume negative count", addr, []string{"consume", "--topic", "exists", "--count", "-1"}, 2, "--count must be >= 0"},
		{"consume bad count", addr, []string{"consume", "--topic", "exists", "--count", "ten"}, 2, `invalid value "ten" for flag -count`},
		{"produce bad flag value", addr, []string{"produce", "--topic", "exists", "--acks", "most"}, 2, `--acks "most": want all, 1 or 0`},
		{"produce level out of range", addr, []string{"produce", "--topic", "exists", "--compression", "zstd", "--compression-level", "23"}, 2, "--compression-level: zstd level 23 is not from -131072 to 22"},
		{"produce level gzip 0", addr, []string{"produce", "--topic", "exists", "--compression", "gzip", "--compression-level", "0"}, 2, "gzip level 0 is not from 1 to 9 or -1"},
		{"produce level without codec", addr, []string{"produce", "--topic", "exists", "--compression-level", "5"}, 2, "--compression-level needs --compression gzip, lz4 or zstd, got none"},
		{"produce level snappy", addr, []string{"produce", "--topic", "exists", "--compression", "snappy", "--compression-level", "5"}, 2, "got snappy"},
		{"cluster no sub", addr, []string{"cluster"}, 2, "cluster: missing subcommand"},
		{"cluster bad sub", addr, []string{"cluster", "health"}, 2, "cluster: unknown subcommand health"},
		{"decommission no id", addr, []string{"cluster", "decommission"}, 2, "cluster decommission: missing broker id"},
		{"decommission bad id", addr, []string{"cluster", "decommission", "two"}, 2, `broker id "two": want a number >= 0`},
		{"decommission unknown broker", addr, []string{"cluster", "decommission", "99"}, 2, "broker 99 is not in the cluster"},
		{"rebalance bad throttle", addr, []string{"cluster", "rebalance", "--throttle", "fast"}, 2, `--throttle: "fast": want a positive rate`},
		{"rebalance stray arg", addr, []string{"cluster", "rebalance", "now"}, 2, `takes no arguments, got "now"`},
		{"bench no sub", addr, []string{"bench"}, 2, "bench: missing subcommand"},
		{"bench no topic", addr, []string{"bench", "produce"}, 2, "bench: --topic is required"},
		{"bench zero records", addr, []string{"bench", "produce", "--topic", "exists", "--records", "0"}, 2, "--records must be > 0"},
		{"bench bad flag", addr, []string{"bench", "consume", "--topic", "exists", "--threads", "2"}, 2, "flag provided but not defined: -threads"},
		{"bench bad acks", addr, []string{"bench", "produce", "--topic", "exists", "--acks", "2"}, 2, `--acks "2"`},
		{"bench consume unknown topic", addr, []string{"bench", "consume", "--topic", "nope", "--records", "10"}, 1, "UNKNOWN_TOPIC_OR_PARTITION"},
		{"down topic create", down, []string{"topic", "create", "x"}, 1, "no broker reachable"},
		{"down topic describe", down, []string{"topic", "describe", "x"}, 1, "no broker reachable"},
		{"down topic delete", down, []string{"topic", "delete", "x"}, 1, "no broker reachable"},
		{"down produce", down, []string{"produce", "--topic", "x"}, 1, "no broker reachable"},
		{"down consume", down, []string{"consume", "--topic", "x"}, 1, "no broker reachable"},
		{"down cluster info", down, []string{"cluster", "info"}, 1, "no broker reachable"},
		{"down bench produce", down, []string{"bench", "produce", "--topic", "x"}, 1, "no broker reachable"},
		{"down bench consume", down, []string{"bench", "consume", "--topic", "x"}, 1, "no broker reachable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each case is a CLI process of its own; none changes the broker
			r := runCLI(t, c.addr, "line\n", c.args...)
			if r.code != c.code || !strings.Contains(r.stderr, c.stderr) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", r.code, r.stderr, c.code, c.stderr)
			}
			if c.code == 2 && !strings.Contains(r.stderr, "usage: spool") && !strings.Contains(r.stderr, "--help' lists the flags") {
				t.Fatalf("usage error without the usage text: %q", r.stderr)
			}
			checkOnePrefix(t, r.stderr)
		})
	}
}

// checkOnePrefix fails when the error line on stderr says "spool: " more than once, as it did
// when the CLI's prefix met the SDK's, or one SDK error wrapped another.
func checkOnePrefix(t *testing.T, stderr string) {
	t.Helper()
	line, _, _ := strings.Cut(stderr, "\n")
	if strings.Count(line, "spool: ") != 1 {
		t.Fatalf("error line %q: want exactly one \"spool: \" prefix", line)
	}
}

// TestCLIProduceChecksFirst checks that produce looks its topic up before reading stdin, so
// that empty input does not turn a down broker or a missing topic into "produced 0 records",
// while a broker that creates topics automatically still gets to create it.
func TestCLIProduceChecksFirst(t *testing.T) {
	t.Parallel()
	noAuto := brokertest.Start(t, brokertest.Options{Props: map[string]string{"auto.create.topics.enable": "false"}}).Addr
	auto := brokertest.Start(t, brokertest.Options{}).Addr
	for _, c := range []struct {
		name, addr, stderr string
	}{
		{"down", "127.0.0.1:1", "no broker reachable"},
		{"unknown topic", noAuto, `topic "fresh": UNKNOWN_TOPIC_OR_PARTITION`},
	} {
		r := runCLI(t, c.addr, "", "produce", "--topic", "fresh")
		if r.code != 1 || !strings.Contains(r.stderr, c.stderr) || strings.Contains(r.stderr, "produced") {
			t.Fatalf("%s, empty stdin: exit %d stderr %q, want exit 1 and %q", c.name, r.code, r.stderr, c.stderr)
		}
		checkOnePrefix(t, r.stderr)
	}
	r := ok(t, runCLI(t, auto, "", "produce", "--topic", "fresh"))
	if r.stderr != "produced 0 records\n" {
		t.Fatalf("auto-created, empty stdin: %q", r.stderr)
	}
	r = ok(t, runCLI(t, auto, "", "topic", "list"))
	if !regexp.MustCompile(`(?m)^fresh\s+1\s+1$`).MatchString(r.stdout) {
		t.Fatalf("the lookup did not create the topic: %q", r.stdout)
	}
	ok(t, runCLI(t, auto, "a\n", "produce", "--topic", "fresh"))
	r = ok(t, runCLI(t, auto, "", "consume", "--topic", "fresh", "--from-beginning", "--count", "1"))
	if r.stdout != "a\n" {
		t.Fatalf("consumed %q", r.stdout)
	}
}

// TestCLIBadValues checks that flag values out of range, and a malformed broker list for any
// subcommand, are usage errors (exit 2 with the usage) found before any broker is contacted:
// the address of a broker that is down shows they never get that far.
func TestCLIBadValues(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"partitions 0", []string{"topic", "create", "x", "--partitions", "0"}, "--partitions must be from 1 to 2147483647, got 0"},
		{"partitions negative", []string{"topic", "create", "x", "--partitions", "-3"}, "--partitions must be from 1 to 2147483647, got -3"},
		{"partitions -1", []string{"topic", "create", "x", "--partitions", "-1"}, "--partitions must be from 1"},
		{"partitions over int32", []string{"topic", "create", "x", "--partitions", "2147483648"}, "got 2147483648"},
		{"rf 0", []string{"topic", "create", "x", "--replication-factor", "0"}, "--replication-factor must be from 1 to 32767, got 0"},
		{"rf negative", []string{"topic", "create", "x", "--replication-factor", "-2"}, "got -2"},
		{"rf over int16", []string{"topic", "create", "x", "--replication-factor", "32768"}, "got 32768"},
		{"rf wraps to 1", []string{"topic", "create", "x", "--replication-factor", "65537"}, "got 65537"},
		{"count negative", []string{"consume", "--topic", "x", "--count", "-5"}, "--count must be >= 0"},
		{"cluster configs bad id", []string{"cluster", "configs", "one"}, `broker id "one"`},
		{"cluster configs two ids", []string{"cluster", "configs", "1", "2"}, "at most one broker id"},
	}
	badLists := map[string]string{
		"foo":      `broker address "foo" in "foo": missing port in address`,
		"a:1,,b:2": `broker address "" in "a:1,,b:2": empty address`,
		"h:0":      `broker address "h:0" in "h:0": port "0" is not a number from 1 to 65535`,
		"h:65536":  `port "65536" is not a number from 1 to 65535`,
		"h:kafka":  `port "kafka" is not a number`,
	}
	cmds := [][]string{{"topic", "list"}, {"topic", "create", "x"}, {"produce", "--topic", "x"}, {"consume", "--topic", "x"},
		{"group", "list"}, {"cluster", "info"}, {"cluster", "configs"}, {"bench", "produce", "--topic", "x"}}
	for list, msg := range badLists {
		for _, cmd := range cmds {
			cases = append(cases, struct {
				name   string
				args   []string
				stderr string
			}{"brokers " + list + " " + strings.Join(cmd[:2], " "), append([]string{"--brokers", list}, cmd...), msg})
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runCLI(t, "127.0.0.1:1", "", c.args...)
			if r.code != 2 || !strings.Contains(r.stderr, c.stderr) || !strings.Contains(r.stderr, "usage: spool") ||
				(c.args[0] == "--brokers" && !strings.Contains(r.stderr, "--brokers: broker address")) {
				t.Fatalf("exit %d stderr %q; want exit 2, %q and the usage", r.code, r.stderr, c.stderr)
			}
			checkOnePrefix(t, r.stderr)
		})
	}
	// The same list from $SPOOL_BROKERS.
	r := runCLI(t, "127.0.0.1:9092,", "", "topic", "list")
	if r.code != 2 || !strings.Contains(r.stderr, `broker address "" in "127.0.0.1:9092,": empty address`) {
		t.Fatalf("$SPOOL_BROKERS with an empty entry: exit %d stderr %q", r.code, r.stderr)
	}
}

// TestCLIClusterConfigs checks cluster configs: a broker's configs with their sources, by id
// or the controller's by default.
func TestCLIClusterConfigs(t *testing.T) {
	t.Parallel()
	addr := brokertest.Start(t, brokertest.Options{Props: map[string]string{"num.partitions": "4"}}).Addr
	info := ok(t, runCLI(t, addr, "", "cluster", "info"))
	m := regexp.MustCompile(`controller: (\d+)`).FindStringSubmatch(info.stdout)
	if m == nil {
		t.Fatalf("cluster info: %q", info.stdout)
	}
	want := []*regexp.Regexp{
		regexp.MustCompile(`(?m)^broker ` + m[1] + `$`),
		regexp.MustCompile(`(?m)^NAME +VALUE +SOURCE$`),
		regexp.MustCompile(`(?m)^num\.partitions +4 +STATIC_BROKER_CONFIG$`),
		regexp.MustCompile(`(?m)^min\.insync\.replicas +1 +DEFAULT_CONFIG$`),
	}
	for _, args := range [][]string{{"cluster", "configs"}, {"cluster", "configs", m[1]}} {
		r := ok(t, runCLI(t, addr, "", args...))
		for _, re := range want {
			if !re.MatchString(r.stdout) {
				t.Fatalf("%v: output lacks %v:\n%s", args, re, r.stdout)
			}
		}
	}
	r := runCLI(t, addr, "", "cluster", "configs", "99")
	if r.code != 1 || !strings.Contains(r.stderr, "no broker 99 in the cluster") {
		t.Fatalf("unknown broker: exit %d stderr %q", r.code, r.stderr)
	}
	checkOnePrefix(t, r.stderr)
}

// TestCLIClusterOpsSingleNode runs the cluster operations on a single node: nothing to move,
// no moves in progress, every leader in place; a move onto a broker that does not exist is
// refused by the broker.
func TestCLIClusterOpsSingleNode(t *testing.T) {
	t.Parallel()
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	ok(t, runCLI(t, addr, "", "topic", "create", "orders", "--partitions", "3"))
	if r := ok(t, runCLI(t, addr, "", "cluster", "rebalance")); !strings.Contains(r.stdout, "0 partitions to move, 0 replicas to copy") {
		t.Fatalf("rebalance: %q", r.stdout)
	}
	if r := ok(t, runCLI(t, addr, "", "cluster", "reassignments")); !strings.Contains(r.stdout, "no reassignments in progress") {
		t.Fatalf("reassignments: %q", r.stdout)
	}
	if r := ok(t, runCLI(t, addr, "", "cluster", "elect-leaders", "--topic", "orders")); !strings.Contains(r.stdout, "0 leaders elected, 3 already in place") {
		t.Fatalf("elect-leaders: %q", r.stdout)
	}
	r := runCLI(t, addr, "", "cluster", "elect-leaders", "--topic", "nope")
	if r.code != 1 || !strings.Contains(r.stderr, "UNKNOWN_TOPIC_OR_PARTITION") {
		t.Fatalf("elect-leaders of an unknown topic: exit %d stderr %q", r.code, r.stderr)
	}
}

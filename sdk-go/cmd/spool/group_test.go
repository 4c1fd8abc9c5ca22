package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/twmb/franz-go/pkg/kgo"
)

// offsetRows parses the per-partition table of group describe into "topic/partition" →
// "current end lag".
func offsetRows(t *testing.T, out string) map[string]string {
	t.Helper()
	_, table, ok := strings.Cut(out, "TOPIC")
	if !ok {
		t.Fatalf("no offsets table in %q", out)
	}
	rows := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(table), "\n")[1:] {
		f := strings.Fields(l)
		rows[f[0]+"/"+f[1]] = strings.Join(f[2:5], " ")
	}
	return rows
}

// waitCLI reruns the CLI until its stdout matches re.
func waitCLI(t *testing.T, addr string, re string, args ...string) result {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := runCLI(t, addr, "", args...)
		if r.code == 0 && rx.MatchString(r.stdout) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v never matched %q; last exit %d stdout %q stderr %q", args, re, r.code, r.stdout, r.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCLIGroupOffsets(t *testing.T) {
	t.Parallel()
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	ok(t, runCLI(t, addr, "", "topic", "create", "orders", "--partitions", "3"))
	ok(t, runCLI(t, addr, "a\nb\nc\nd\ne\nf\n", "produce", "--topic", "orders", "--partitioner", "roundrobin"))

	if r := ok(t, runCLI(t, addr, "", "group", "list")); strings.TrimSpace(r.stdout) != "GROUP  STATE  PROTOCOL-TYPE  COORDINATOR  MEMBERS  LAG" {
		t.Fatalf("empty list: %q", r.stdout)
	}
	// A group that does not exist is not created by accident.
	r := runCLI(t, addr, "", "group", "seek", "reports", "--topic", "orders", "--to", "earliest")
	if r.code != 1 || !strings.Contains(r.stderr, `group "reports" does not exist`) || !strings.Contains(r.stderr, "--create") {
		t.Fatalf("seek of an unknown group: exit %d %q", r.code, r.stderr)
	}
	r = ok(t, runCLI(t, addr, "", "group", "seek", "reports", "--topic", "orders", "--to", "earliest", "--create"))
	if strings.Count(r.stdout, "reports  orders  ") != 3 {
		t.Fatalf("seek --create: %q", r.stdout)
	}
	r = ok(t, runCLI(t, addr, "", "group", "describe", "reports"))
	if !strings.Contains(r.stdout, "group reports state Empty") {
		t.Fatalf("describe: %q", r.stdout)
	}
	want := map[string]string{"orders/0": "0 2 2", "orders/1": "0 2 2", "orders/2": "0 2 2"}
	if got := offsetRows(t, r.stdout); !equalMaps(got, want) {
		t.Fatalf("describe offsets %v, want %v", got, want)
	}

	seek := func(to string, parts ...string) map[string]string {
		t.Helper()
		args := []string{"group", "seek", "reports", "--topic", "orders", "--to", to}
		if len(parts) > 0 {
			args = append(args, "--partitions", parts[0])
		}
		ok(t, runCLI(t, addr, "", args...))
		return offsetRows(t, ok(t, runCLI(t, addr, "", "group", "describe", "reports")).stdout)
	}
	want["orders/1"] = "1 2 1"
	if got := seek("1", "1"); !equalMaps(got, want) {
		t.Fatalf("seek to offset 1 of partition 1: %v", got)
	}
	// Past the end: clamped to the end, as kafka-consumer-groups.sh does.
	want["orders/2"] = "2 2 0"
	if got := seek("99", "2"); !equalMaps(got, want) {
		t.Fatalf("seek past the end: %v", got)
	}
	want = map[string]string{"orders/0": "2 2 0", "orders/1": "2 2 0", "orders/2": "2 2 0"}
	if got := seek("latest"); !equalMaps(got, want) {
		t.Fatalf("seek to latest: %v", got)
	}
	want = map[string]string{"orders/0": "0 2 2", "orders/1": "0 2 2", "orders/2": "2 2 0"}
	if got := seek("@0", "0,1"); !equalMaps(got, want) {
		t.Fatalf("seek to time 0: %v", got)
	}
	// No record after the time: the end, as kafka-consumer-groups.sh does.
	want["orders/0"] = "2 2 0"
	if got := seek("2100-01-01T00:00:00Z", "0"); !equalMaps(got, want) {
		t.Fatalf("seek to a future time: %v", got)
	}
	// The list's total lag is the sum of the LAG column of describe.
	total := 0
	for _, m := range regexp.MustCompile(`(?m)^orders\s+\d+\s+\d+\s+\d+\s+(\d+)\s`).FindAllStringSubmatch(ok(t, runCLI(t, addr, "", "group", "describe", "reports")).stdout, -1) {
		n, _ := strconv.Atoi(m[1])
		total += n
	}
	if r := ok(t, runCLI(t, addr, "", "group", "list")); !regexp.MustCompile(fmt.Sprintf(`(?m)^reports\s+Empty\s+-\s+0\s+0\s+%d$`, total)).MatchString(r.stdout) || total == 0 {
		t.Fatalf("list, want members 0 and lag %d: %q", total, r.stdout)
	}

	r = ok(t, runCLI(t, addr, "", "group", "delete-offsets", "reports", "--topic", "orders", "--partitions", "0"))
	if !strings.Contains(r.stdout, "orders  0          deleted") {
		t.Fatalf("delete-offsets: %q", r.stdout)
	}
	delete(want, "orders/0")
	if got := offsetRows(t, ok(t, runCLI(t, addr, "", "group", "describe", "reports")).stdout); !equalMaps(got, want) {
		t.Fatalf("after delete-offsets: %v", got)
	}
	// Without --partitions: every committed partition of the topic.
	ok(t, runCLI(t, addr, "", "group", "delete-offsets", "reports", "--topic", "orders"))
	r = runCLI(t, addr, "", "group", "delete-offsets", "reports", "--topic", "orders")
	if r.code != 1 || !strings.Contains(r.stderr, "no committed offsets for topic") {
		t.Fatalf("delete-offsets with nothing committed: exit %d %q", r.code, r.stderr)
	}

	r = ok(t, runCLI(t, addr, "", "group", "delete", "reports"))
	if r.stdout != "deleted reports\n" {
		t.Fatalf("delete: %q", r.stdout)
	}
	r = runCLI(t, addr, "", "group", "delete", "reports")
	if r.code != 1 || !strings.Contains(r.stderr, `group "reports" does not exist`) || !strings.Contains(r.stderr, "GROUP_ID_NOT_FOUND") {
		t.Fatalf("delete twice: exit %d %q", r.code, r.stderr)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestCLIGroupWithMembers checks describe's members table and what the CLI refuses while a
// group has members (a franz-go consumer).
func TestCLIGroupWithMembers(t *testing.T) {
	t.Parallel()
	addr := brokertest.Start(t, brokertest.Options{Props: map[string]string{"group.initial.rebalance.delay.ms": "0"}}).Addr
	ok(t, runCLI(t, addr, "", "topic", "create", "orders", "--partitions", "2"))
	ok(t, runCLI(t, addr, "x\ny\nz\n", "produce", "--topic", "orders", "--partitioner", "roundrobin"))
	m, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("live"), kgo.ConsumeTopics("orders"),
		kgo.ClientID("kgo-cli"), kgo.DisableAutoCommit(), kgo.HeartbeatInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			m.PollFetches(ctx)
		}
	}()
	t.Cleanup(func() { cancel(); <-done; m.Close() })

	r := waitCLI(t, addr, `state Stable .* members 1`, "group", "describe", "live")
	if !regexp.MustCompile(`(?m)^\S+\s+-\s+kgo-cli\s+/127\.0\.0\.1\s+orders:0,1$`).MatchString(r.stdout) {
		t.Fatalf("members table: %q", r.stdout)
	}
	// Assigned partitions without commits: no current offset, but the owner is shown.
	if !regexp.MustCompile(`(?m)^orders\s+1\s+-\s+\d\s+-\s+\S+\s+/127\.0\.0\.1\s+kgo-cli$`).MatchString(r.stdout) {
		t.Fatalf("offsets table: %q", r.stdout)
	}
	for _, c := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"group", "seek", "live", "--topic", "orders", "--to", "earliest"}, `seeking group "live" (1 members): group has active members; stop its consumers first`},
		{[]string{"group", "delete", "live"}, `group "live" has active members`},
		{[]string{"group", "delete-offsets", "live", "--topic", "orders", "--partitions", "0"}, "GROUP_SUBSCRIBED_TO_TOPIC"},
	} {
		r := runCLI(t, addr, "", c.args...)
		if r.code != 1 || !strings.Contains(r.stderr, c.stderr) {
			t.Errorf("%v: exit %d stderr %q, want 1 and %q", c.args, r.code, r.stderr, c.stderr)
		}
	}
}

func TestCLIGroupBadInput(t *testing.T) {
	t.Parallel()
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	ok(t, runCLI(t, addr, "", "topic", "create", "orders", "--partitions", "1"))
	cases := []struct {
		name   string
		addr   string
		args   []string
		code   int
		stderr string
	}{
		{"no subcommand", addr, []string{"group"}, 2, "group: missing subcommand"},
		{"unknown subcommand", addr, []string{"group", "reset"}, 2, "group: unknown subcommand reset"},
		{"bad flag", addr, []string{"group", "list", "--all"}, 2, "flag provided but not defined: -all"},
		{"list with args", addr, []string{"group", "list", "g"}, 2, "takes no arguments"},
		{"describe without group", addr, []string{"group", "describe"}, 2, "want exactly one group name"},
		{"delete without group", addr, []string{"group", "delete"}, 2, "missing group name"},
		{"seek without topic", addr, []string{"group", "seek", "g", "--to", "earliest"}, 2, "--topic is required"},
		{"seek without to", addr, []string{"group", "seek", "g", "--topic", "orders"}, 2, "--to is required"},
		{"seek bad to", addr, []string{"group", "seek", "g", "--topic", "orders", "--to", "yesterday"}, 2, `--to "yesterday"`},
		{"seek negative offset", addr, []string{"group", "seek", "g", "--topic", "orders", "--to", "-5"}, 2, "cannot be negative"},
		{"seek bad partitions", addr, []string{"group", "seek", "g", "--topic", "orders", "--to", "0", "--partitions", "0,x"}, 2, "want partition numbers"},
		{"delete-offsets without topic", addr, []string{"group", "delete-offsets", "g"}, 2, "--topic is required"},
		{"describe unknown group", addr, []string{"group", "describe", "nobody"}, 1, `group "nobody" does not exist`},
		{"delete-offsets unknown group", addr, []string{"group", "delete-offsets", "nobody", "--topic", "orders"}, 1, `group "nobody" does not exist`},
		{"seek unknown topic", addr, []string{"group", "seek", "g", "--topic", "nope", "--to", "0", "--create"}, 1, "UNKNOWN_TOPIC_OR_PARTITION"},
		{"seek missing partition", addr, []string{"group", "seek", "g", "--topic", "orders", "--to", "0", "--partitions", "3", "--create"}, 1, "no partition 3"},
		{"broker down list", "127.0.0.1:1", []string{"group", "list"}, 1, "127.0.0.1:1"},
		{"broker down describe", "127.0.0.1:1", []string{"group", "describe", "g"}, 1, "127.0.0.1:1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runCLI(t, c.addr, "", c.args...)
			if r.code != c.code || !strings.Contains(r.stderr, c.stderr) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", r.code, r.stderr, c.code, c.stderr)
			}
		})
	}
}

// consume --group commits exactly the records it printed: a second run of the same group
// continues after them, group describe shows the commit, and a new group starts over.
func TestCLIConsumeGroup(t *testing.T) {
	t.Parallel()
	// No initial rebalance delay: each of the five group runs below would wait 3 s for others.
	addr := brokertest.Start(t, brokertest.Options{Props: map[string]string{"group.initial.rebalance.delay.ms": "0"}}).Addr
	ok(t, runCLI(t, addr, "", "topic", "create", "events", "--partitions", "2"))
	var in strings.Builder
	for i := range 10 {
		fmt.Fprintf(&in, "k%d:v%d\n", i, i)
	}
	ok(t, runCLI(t, addr, in.String(), "produce", "--topic", "events", "--key-separator", ":"))

	seen := map[string]int{}
	for _, n := range []int{4, 6} {
		r := ok(t, runCLI(t, addr, "", "consume", "--topic", "events", "--group", "cli", "--from-beginning", "--count", strconv.Itoa(n), "--format", `%v\n`))
		lines := strings.Fields(r.stdout)
		if len(lines) != n {
			t.Fatalf("consume --count %d printed %q", n, r.stdout)
		}
		for _, l := range lines {
			seen[l]++
		}
	}
	for i := range 10 {
		if v := fmt.Sprintf("v%d", i); seen[v] != 1 {
			t.Fatalf("%s consumed %d times across two runs of one group: %v", v, seen[v], seen)
		}
	}
	rows := offsetRows(t, ok(t, runCLI(t, addr, "", "group", "describe", "cli")).stdout)
	var committed int
	for _, p := range []string{"events/0", "events/1"} {
		f := strings.Fields(rows[p])
		if len(f) != 3 || f[2] != "0" {
			t.Fatalf("partition %s after consuming everything: %q (want lag 0) in %v", p, rows[p], rows)
		}
		c, _ := strconv.Atoi(f[0])
		committed += c
	}
	if committed != 10 {
		t.Fatalf("committed offsets add up to %d, want 10: %v", committed, rows)
	}
	// Nothing left for the group: a run with a short deadline prints nothing.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "consume", "--topic", "events", "--group", "cli", "--count", "1")
	cmd.Env = append(os.Environ(), "SPOOL_BROKERS="+addr)
	if out, _ := cmd.Output(); len(out) != 0 {
		t.Fatalf("the group had consumed everything but a third run printed %q", out)
	}
	r := ok(t, runCLI(t, addr, "", "consume", "--topic", "events", "--group", "other", "--from-beginning", "--count", "10"))
	if n := len(strings.Fields(r.stdout)); n != 10 {
		t.Fatalf("a new group read %d records from the beginning, want 10", n)
	}
	if r := runCLI(t, addr, "", "consume", "--topic", "nope", "--group", "cli"); r.code != 1 || !strings.Contains(r.stderr, "UNKNOWN_TOPIC_OR_PARTITION") {
		t.Fatalf("group consume of a missing topic: exit %d stderr %q", r.code, r.stderr)
	}
}

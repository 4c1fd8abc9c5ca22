package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	spool "github.com/spoolmq/spool/sdk-go"
)

// TestCLIConsumeWithoutGroupStartsAtBeginning: `spool consume --topic T` with no group and no
// --offset prints what the topic holds, as kcat and rpk do. Before, it started at the end and
// printed nothing, for ever, without a hint.
func TestCLIConsumeWithoutGroupStartsAtBeginning(t *testing.T) {
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	ok(t, runCLI(t, addr, "", "topic", "create", "fresh", "--partitions", "3"))
	var in strings.Builder
	for i := range 500 {
		fmt.Fprintf(&in, "v%d\n", i)
	}
	ok(t, runCLI(t, addr, in.String(), "produce", "--topic", "fresh", "--partitioner", "roundrobin"))
	// --count ends it, so the test fails (instead of hanging) if it reads fewer.
	r := ok(t, runCLI(t, addr, "", "consume", "--topic", "fresh", "--count", "500"))
	seen := map[string]bool{}
	for _, l := range strings.Fields(r.stdout) {
		seen[l] = true
	}
	if len(seen) != 500 {
		t.Fatalf("consume printed %d distinct records of 500", len(seen))
	}
	// --offset end still means only new records.
	if r := ok(t, runCLI(t, addr, "", "consume", "--topic", "fresh", "--offset", "end", "-e")); r.stdout != "" {
		t.Fatalf("--offset end -e printed %q", r.stdout)
	}
}

// TestCLISIGTERMLeavesGroup: `spool consume --group` stopped by SIGTERM (kill, systemd,
// Kubernetes) does what Ctrl-C does: it commits what it printed, leaves the group at once and
// exits 0. Before, it died with 143 and stayed a member until its session timed out.
func TestCLISIGTERMLeavesGroup(t *testing.T) {
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	ok(t, runCLI(t, addr, "", "topic", "create", "term", "--partitions", "2"))
	ok(t, runCLI(t, addr, "a\nb\nc\nd\ne\nf\n", "produce", "--topic", "term", "--partitioner", "roundrobin"))

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "consume", "--topic", "term", "--group", "g2", "--offset", "beginning")
	cmd.Env = append(os.Environ(), "SPOOL_BROKERS="+addr, "SPOOL_CONFIG="+os.DevNull)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for n := 0; n < 6; n++ {
		if !sc.Scan() {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("consume ended after %d of 6 records: %v; stderr %q", n, sc.Err(), stderr.String())
		}
	}
	cl, err := spool.NewClient(spool.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ad := cl.Admin()
	ds, err := ad.DescribeGroups(ctx, "g2")
	if err != nil || len(ds) != 1 || len(ds[0].Members) != 1 {
		t.Fatalf("before SIGTERM: %+v %v, want one member", ds, err)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
		t.Errorf("after SIGTERM: printed %q", sc.Text())
	}
	err = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("after SIGTERM: exit %d (%v), want 0; stderr %q", code, err, stderr.String())
	}
	// At once: not after the session timeout.
	ds, err = ad.DescribeGroups(ctx, "g2")
	if err != nil || len(ds) != 1 || len(ds[0].Members) != 0 || ds[0].State != "Empty" {
		t.Fatalf("after SIGTERM: %+v %v, want the group Empty with no member", ds, err)
	}
	offs, err := ad.FetchOffsets(ctx, "g2")
	if err != nil {
		t.Fatal(err)
	}
	if got := offs["term"]; got[0].Offset+got[1].Offset != 6 {
		t.Fatalf("committed %+v, want offsets adding up to the 6 records printed", got)
	}
}

// TestCLIMisspeltFlag: a misspelt flag gets one line naming the flag meant and where the
// flags are listed, exit 2, as spoold's "did you mean" for properties; before, Go's message
// came with 30 lines of usage.
func TestCLIMisspeltFlag(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"consume", "--topc", "orders"}, "spool: consume: flag provided but not defined: -topc (did you mean --topic?); 'spool consume --help' lists the flags\n"},
		{[]string{"topic", "list", "--jsn"}, "spool: topic list: flag provided but not defined: -jsn (did you mean --json?); 'spool topic list --help' lists the flags\n"},
		{[]string{"--brokrs", "x:1", "topic", "list"}, "spool: flag provided but not defined: -brokrs (did you mean --brokers?); 'spool --help' lists the commands and global flags\n"},
		{[]string{"consume", "--zzzzzzzz"}, "spool: consume: flag provided but not defined: -zzzzzzzz; 'spool consume --help' lists the flags\n"},
	}
	for _, c := range cases {
		r := runCLI(t, "127.0.0.1:1", "", c.args...)
		if r.code != 2 || r.stdout != "" || r.stderr != c.want {
			t.Errorf("%v: exit %d stdout %q stderr %q; want exit 2 and %q", c.args, r.code, r.stdout, r.stderr, c.want)
		}
	}
}

// TestCLITopicListHidesInternal: topic list shows the user's topics; __consumer_offsets (and
// any __ topic, and _schemas) only with --internal, as rpk does.
func TestCLITopicListHidesInternal(t *testing.T) {
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	ok(t, runCLI(t, addr, "", "topic", "create", "orders", "_schemas", "--partitions", "1"))
	ok(t, runCLI(t, addr, "a\n", "produce", "--topic", "orders"))
	ok(t, runCLI(t, addr, "", "consume", "--topic", "orders", "--group", "g", "--offset", "beginning", "--count", "1"))
	want := "NAME    PARTITIONS  REPLICAS\norders  1           1\n"
	if r := ok(t, runCLI(t, addr, "", "topic", "list")); r.stdout != want {
		t.Fatalf("topic list:\n%s\nwant:\n%s", r.stdout, want)
	}
	if r := ok(t, runCLI(t, addr, "", "topic", "list", "--json")); strings.Contains(r.stdout, "__consumer_offsets") || !strings.Contains(r.stdout, `"orders"`) {
		t.Fatalf("topic list --json: %s", r.stdout)
	}
	r := ok(t, runCLI(t, addr, "", "topic", "list", "--internal"))
	for _, name := range []string{"__consumer_offsets", "_schemas", "orders"} {
		if !strings.Contains(r.stdout, name) {
			t.Errorf("topic list --internal lacks %s:\n%s", name, r.stdout)
		}
	}
}

// TestCLIElectLeadersCounts: elect-leaders of every partition counts each one, elected or
// already led by its preferred replica. Before, the controller's answer for "all partitions"
// lists only those it elected, and 6 partitions in place printed "0 leaders elected, 0
// already in place".
func TestCLIElectLeadersCounts(t *testing.T) {
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	ok(t, runCLI(t, addr, "", "topic", "create", "a", "--partitions", "4"))
	ok(t, runCLI(t, addr, "", "topic", "create", "b", "--partitions", "2"))
	r := ok(t, runCLI(t, addr, "", "cluster", "elect-leaders"))
	if r.stdout != "0 leaders elected, 6 already in place\n" {
		t.Fatalf("elect-leaders: %q, want 6 partitions already in place", r.stdout)
	}
}

// TestCLIConsumeToEndOnTwoBrokers: consume -e on a topic whose partitions are led by two
// brokers prints every record up to the end offsets, each run. Before, the end test read the
// prefetch cursor, so a fetch from one broker that had landed but not yet been polled counted
// as printed, and some runs stopped without that broker's partitions, exit 0 (the SDK's
// TestPositionCountsOnlyPolled pins the cause deterministically).
func TestCLIConsumeToEndOnTwoBrokers(t *testing.T) {
	zk := brokertest.StartZooKeeper(t)
	c := brokertest.StartCluster(t, 2, zk.Connect("/firsthour"), map[string]string{"num.partitions": "1"})
	addr := strings.Join(c.Addrs(), ",")
	ok(t, runCLI(t, addr, "", "topic", "create", "orders", "--partitions", "6", "--replication-factor", "1"))
	var in strings.Builder
	for i := range 200 {
		fmt.Fprintf(&in, "v%d\n", i)
	}
	ok(t, runCLI(t, addr, in.String(), "produce", "--topic", "orders", "--partitioner", "roundrobin"))
	r := ok(t, runCLI(t, addr, "", "topic", "describe", "orders", "--json"))
	leaders := map[string]bool{}
	for _, m := range regexp.MustCompile(`"leader":(\d+)`).FindAllStringSubmatch(r.stdout, -1) {
		leaders[m[1]] = true
	}
	if len(leaders) != 2 {
		t.Fatalf("want partitions led by both brokers: %s", r.stdout)
	}
	for run := range 5 {
		r := ok(t, runCLI(t, addr, "", "consume", "--topic", "orders", "--offset", "beginning", "-e"))
		if n := len(strings.Fields(r.stdout)); n != 200 {
			t.Fatalf("run %d: consume -e printed %d records of 200", run, n)
		}
	}
}

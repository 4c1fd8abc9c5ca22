package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spoolmq/spool/broker/brokertest"
)

// decode parses a command's --json output into v, failing the test on anything else.
func decode(t *testing.T, r result, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, r.stdout)
	}
}

// TestCLIJSONOutput parses every command's --json output back, and pins topic describe's
// human format.
func TestCLIJSONOutput(t *testing.T) {
	t.Parallel()
	b := brokertest.Start(t, brokertest.Options{})
	addr := b.Addr
	ok(t, runCLI(t, addr, "", "topic", "create", "j", "--partitions", "2", "--config", "retention.ms=1000"))
	ok(t, runCLI(t, addr, "k1=v1\nnokey\n=\n", "produce", "--topic", "j", "--partition", "1", "--key-separator", "=", "-H", "h=1"))

	var topics []topicJSON
	decode(t, ok(t, runCLI(t, addr, "", "topic", "list", "--json")), &topics)
	if len(topics) != 1 || topics[0].Name != "j" || topics[0].PartitionCount != 2 || topics[0].ReplicationFactor != 1 || topics[0].Partitions != nil {
		t.Fatalf("topic list --json: %+v", topics)
	}
	decode(t, ok(t, runCLI(t, addr, "", "topic", "describe", "j", "--json")), &topics)
	if len(topics) != 1 || len(topics[0].Partitions) != 2 || topics[0].Partitions[1].HighWatermark != 3 ||
		topics[0].Partitions[1].LogStartOffset != 0 || topics[0].Configs["retention.ms"] != "1000" || len(topics[0].Configs) != 1 {
		t.Fatalf("topic describe --json: %+v", topics)
	}
	// The size is the leader's segment files, as DescribeLogDirs reports them.
	size := topics[0].Partitions[1].Size
	if onDisk := logFileBytes(t, filepath.Join(b.DataDir, "j-1")); size != onDisk || size <= 61 || topics[0].Partitions[0].Size != 0 {
		t.Fatalf("topic describe --json sizes %d and %d, want 0 and %d (the .log files of j-1)", topics[0].Partitions[0].Size, size, onDisk)
	}
	human := ok(t, runCLI(t, addr, "", "topic", "describe", "j")).stdout
	want := "topic j partitions 2\n" +
		"  PARTITION  LEADER  REPLICAS  ISR  LOG-START  HIGH-WATERMARK  RECORDS  SIZE\n" +
		"  0          0       0         0    0          0               0        0\n" +
		fmt.Sprintf("  1          0       0         0    0          3               3        %d\n", size) +
		"  config retention.ms=1000\n"
	if human != want {
		t.Fatalf("topic describe:\n%s\nwant:\n%s", human, want)
	}

	r := ok(t, runCLI(t, addr, "", "consume", "--topic", "j", "--offset", "beginning", "-e", "--json"))
	var recs []recordJSON
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var rec recordJSON
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("consume --json line %q: %v", line, err)
		}
		recs = append(recs, rec)
	}
	if len(recs) != 3 || *recs[0].Key != "k1" || *recs[0].Value != "v1" || recs[1].Key != nil || *recs[2].Key != "" ||
		recs[2].Partition != 1 || recs[2].Offset != 2 || recs[0].Timestamp == 0 || len(recs[0].Headers) != 1 || recs[0].Headers[0] != (headerJSON{"h", "1"}) {
		t.Fatalf("consume --json: %s", r.stdout)
	}

	ok(t, runCLI(t, addr, "", "consume", "--topic", "j", "--group", "gj", "--offset", "beginning", "--count", "3"))
	// The human tables, byte for byte: columns two spaces apart, no trailing blanks.
	for _, golden := range []struct {
		args []string
		want string
	}{
		{[]string{"topic", "list", "--internal"}, "" +
			"NAME                PARTITIONS  REPLICAS\n" +
			"__consumer_offsets  50          1\n" +
			"j                   2           1\n"},
		{[]string{"group", "list"}, "" +
			"GROUP  STATE  PROTOCOL-TYPE  COORDINATOR  MEMBERS  LAG\n" +
			"gj     Empty  consumer       0            0        0\n"},
		{[]string{"group", "describe", "gj"}, "" +
			"group gj state Empty protocol-type consumer protocol - members 0\n" +
			"\n" +
			"TOPIC  PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  CONSUMER-ID  HOST  CLIENT-ID\n" +
			"j      1          3               3               0    -            -     -\n"},
		{[]string{"cluster", "info"}, "" +
			"cluster id: " + clusterID(t, addr) + "\n" +
			"controller: 0\n" +
			"brokers:\n" +
			"  ID  ADDRESS" + strings.Repeat(" ", len(addr)-len("ADDRESS")+2) + "RACK\n" +
			"  0   " + addr + "  -\n"},
	} {
		if got := ok(t, runCLI(t, addr, "", golden.args...)).stdout; got != golden.want {
			t.Errorf("%v:\n%s\nwant:\n%s", golden.args, got, golden.want)
		}
	}

	var groups []groupJSON
	decode(t, ok(t, runCLI(t, addr, "", "group", "list", "--json")), &groups)
	if len(groups) != 1 || groups[0].Group != "gj" || groups[0].Members == nil || *groups[0].Members != 0 || groups[0].Lag == nil || *groups[0].Lag != 0 {
		t.Fatalf("group list --json: %s", r.stdout)
	}
	var gd groupDescribeJSON
	decode(t, ok(t, runCLI(t, addr, "", "group", "describe", "gj", "--json")), &gd)
	found := false
	for _, o := range gd.Offsets {
		if o.Topic == "j" && o.Partition == 1 {
			found = o.Committed != nil && *o.Committed == 3 && *o.End == 3 && *o.Lag == 0
		}
	}
	if gd.Group != "gj" || len(gd.Members) != 0 || !found {
		t.Fatalf("group describe --json: %+v", gd)
	}

	var ci clusterJSON
	decode(t, ok(t, runCLI(t, addr, "", "cluster", "info", "--json")), &ci)
	if ci.ClusterID == "" || len(ci.Brokers) != 1 || !strings.HasSuffix(addr, ":"+strconv.Itoa(int(ci.Brokers[0].Port))) {
		t.Fatalf("cluster info --json: %+v (broker at %s)", ci, addr)
	}
	var bc brokerConfigsJSON
	decode(t, ok(t, runCLI(t, addr, "", "cluster", "configs", "--json")), &bc)
	cfg := map[string]configJSON{}
	for _, c := range bc.Configs {
		cfg[c.Name] = c
	}
	if c := cfg["num.io.threads"]; c.Value == nil || *c.Value != "8" || c.Source != "DEFAULT_CONFIG" {
		t.Errorf("num.io.threads: %+v", c)
	}
	if c := cfg["ssl.keystore.password"]; c.Value != nil || !c.Sensitive {
		t.Errorf("a password is shown: %+v", c)
	}
	if r := runCLI(t, addr, "", "consume", "--topic", "j", "--json", "--format", "%v"); r.code != 2 || !strings.Contains(r.stderr, "not both") {
		t.Errorf("--json with --format: exit %d %q", r.code, r.stderr)
	}
}

// clusterID is the cluster id that cluster info --json reports.
func clusterID(t *testing.T, addr string) string {
	t.Helper()
	var ci clusterJSON
	decode(t, ok(t, runCLI(t, addr, "", "cluster", "info", "--json")), &ci)
	return ci.ClusterID
}

// logFileBytes sums the .log files of a partition directory.
func logFileBytes(t *testing.T, dir string) int64 {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no segment files in %s: %v", dir, err)
	}
	var n int64
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	spool "github.com/spoolmq/spool/sdk-go"
)

// TestCLIConsumeStartAndEnd covers consume's kcat-like positioning: --partition, --offset
// (beginning, N, -N, @time), --from-timestamp and -e, each ending by itself.
func TestCLIConsumeStartAndEnd(t *testing.T) {
	t.Parallel()
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	ok(t, runCLI(t, addr, "", "topic", "create", "pos", "--partitions", "2"))
	ok(t, runCLI(t, addr, "a\nb\nc\nd\n", "produce", "--topic", "pos", "--partition", "0"))
	ok(t, runCLI(t, addr, "x\ny\n", "produce", "--topic", "pos", "-p", "1"))
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-e"}, "0:0:a 0:1:b 0:2:c 0:3:d 1:0:x 1:1:y"}, // the default start is the beginning, as kcat's
		{[]string{"--offset", "beginning", "-e", "--partition", "0"}, "0:0:a 0:1:b 0:2:c 0:3:d"},
		{[]string{"--from-beginning", "--exit-at-end", "-p", "1"}, "1:0:x 1:1:y"},
		{[]string{"--offset", "2", "-e", "-p", "0"}, "0:2:c 0:3:d"},
		{[]string{"--offset", "-1", "-e"}, "0:3:d 1:1:y"},
		{[]string{"--offset", "-10", "-e", "-p", "1"}, "1:0:x 1:1:y"},
		{[]string{"--offset", "@0", "-e", "-p", "1"}, "1:0:x 1:1:y"},
		{[]string{"--from-timestamp", "2100-01-01T00:00:00Z", "-e"}, ""},
		{[]string{"--offset", "beginning", "-e", "--count", "1", "-p", "0"}, "0:0:a"},
	}
	for _, tc := range cases {
		args := append([]string{"consume", "--topic", "pos", "--format", `%p:%o:%v\n`}, tc.args...)
		r := ok(t, runCLI(t, addr, "", args...))
		lines := strings.Fields(r.stdout)
		// Partitions interleave in any order; each partition's records are in offset order.
		sortByPartition(lines)
		if got := strings.Join(lines, " "); got != tc.want {
			t.Errorf("consume %v: %q, want %q", tc.args, got, tc.want)
		}
	}
}

func sortByPartition(lines []string) {
	for i := 1; i < len(lines); i++ {
		for j := i; j > 0 && lines[j][0] < lines[j-1][0]; j-- {
			lines[j], lines[j-1] = lines[j-1], lines[j]
		}
	}
}

// TestCLIProduceRecordShape covers produce's headers, tombstones (-Z), null keys and a line
// larger than the default batch, read back with the size verbs and --null.
func TestCLIProduceRecordShape(t *testing.T) {
	t.Parallel()
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	ok(t, runCLI(t, addr, "", "topic", "create", "shape", "--partitions", "1", "--config", "max.message.bytes=3000000"))
	ok(t, runCLI(t, addr, "k1=v1\nk2=\n=v3\nnokey\n", "produce", "--topic", "shape", "--key-separator", "=", "-Z",
		"-H", "trace=1", "--header", "src=cli", "--header", "trace=2"))
	ok(t, runCLI(t, addr, "k4=\n", "produce", "--topic", "shape", "--key-separator", "="))
	r := ok(t, runCLI(t, addr, "", "consume", "--topic", "shape", "--offset", "beginning", "-e", "--format", `%k|%v|%K|%S|%h\n`, "--null", "(null)"))
	want := "k1|v1|2|2|trace=1,src=cli,trace=2\n" +
		"k2|(null)|2|-1|trace=1,src=cli,trace=2\n" + // a tombstone
		"(null)|v3|-1|2|trace=1,src=cli,trace=2\n" +
		"(null)|nokey|-1|5|trace=1,src=cli,trace=2\n" +
		"k4||2|0|\n" // without -Z an empty value is empty, not null
	if r.stdout != want {
		t.Fatalf("consumed\n%s\nwant\n%s", r.stdout, want)
	}

	// A 2 MB line: the producer's batch grows to hold it (the topic allows 3 MB).
	big := strings.Repeat("x", 2<<20)
	ok(t, runCLI(t, addr, big+"\n", "produce", "--topic", "shape"))
	r = ok(t, runCLI(t, addr, "", "consume", "--topic", "shape", "--offset", "-1", "-e", "--format", `%S\n`))
	if r.stdout != strconv.Itoa(len(big))+"\n" {
		t.Fatalf("2 MB record: sizes %q", r.stdout)
	}
	r = runCLI(t, addr, big+"\n", "produce", "--topic", "shape", "--max-message-bytes", "1000")
	if r.code != 1 || !strings.Contains(r.stderr, "line 1 is longer than --max-message-bytes 1000") {
		t.Fatalf("line over --max-message-bytes: exit %d %q", r.code, r.stderr)
	}
}

// TestCLITopicAdmin covers topic list's counts, describe's offsets, alter-config and
// add-partitions.
func TestCLITopicAdmin(t *testing.T) {
	t.Parallel()
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	ok(t, runCLI(t, addr, "", "topic", "create", "adm", "--partitions", "2"))
	ok(t, runCLI(t, addr, "a\nb\nc\n", "produce", "--topic", "adm", "--partition", "1"))
	r := ok(t, runCLI(t, addr, "", "topic", "list"))
	if !regexp.MustCompile(`(?m)^NAME\s+PARTITIONS\s+REPLICAS\n(.*\n)*adm\s+2\s+1$`).MatchString(r.stdout) {
		t.Fatalf("list: %q", r.stdout)
	}
	ok(t, runCLI(t, addr, "", "topic", "alter-config", "adm", "--set", "retention.ms=1000", "--set", "compression.type=zstd"))
	ok(t, runCLI(t, addr, "", "topic", "alter-config", "adm", "--delete", "compression.type"))
	ok(t, runCLI(t, addr, "", "topic", "add-partitions", "adm", "--num", "2"))
	r = ok(t, runCLI(t, addr, "", "topic", "describe", "adm"))
	for _, want := range []string{`topic adm partitions 4`, `(?m)^\s+1\s+0\s+0\s+0\s+0\s+3\s+3\s+[1-9][0-9]+$`, `(?m)^\s+3\s+0\s+0\s+0\s+0\s+0\s+0\s+0$`,
		`config retention.ms=1000`} {
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("describe does not match %s:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "compression.type") {
		t.Errorf("the deleted override is still shown:\n%s", r.stdout)
	}
}

// TestCLINewGroupHint: a new group starts at the end, and consume says so on stderr.
func TestCLINewGroupHint(t *testing.T) {
	t.Parallel()
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	ok(t, runCLI(t, addr, "old\n", "produce", "--topic", "hint"))
	done := make(chan result, 1)
	go func() { done <- runCLI(t, addr, "", "consume", "--topic", "hint", "--group", "fresh", "--count", "1") }()
	cl, err := spool.NewClient(spool.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The group's start is only fixed once it has joined, so keep producing until it reads one.
	for {
		if err := cl.ProduceSync(ctx, spool.StringRecord("hint", "new")); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-done:
			if r.code != 0 || r.stdout != "new\n" || !strings.Contains(r.stderr, "group fresh has no committed offsets for hint: it starts at the end") {
				t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
			}
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestCLIKcatBadInput: each new flag's misuse exits 2 naming what was wrong.
func TestCLIKcatBadInput(t *testing.T) {
	t.Parallel()
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	ok(t, runCLI(t, addr, "", "topic", "create", "t", "--partitions", "1"))
	cases := []struct {
		args []string
		code int
		says string
	}{
		{[]string{"consume", "--topic", "t", "--format", "%z"}, 2, "unknown verb %z"},
		{[]string{"consume", "--topic", "t", "--format", "50%"}, 2, "lone %"},
		{[]string{"consume", "--topic", "t", "--offset", "middle"}, 2, `--offset "middle": want beginning, end`},
		{[]string{"consume", "--topic", "t", "--offset", "1", "--from-beginning"}, 2, "give one of --offset"},
		{[]string{"consume", "--topic", "t", "--from-timestamp", "yesterday"}, 2, `--from-timestamp "yesterday"`},
		{[]string{"consume", "--topic", "t", "--group", "g", "-p", "0"}, 2, "--partition reads chosen partitions"},
		{[]string{"consume", "--topic", "t", "--group", "g", "-e"}, 2, "--exit-at-end works without --group"},
		{[]string{"consume", "--topic", "t", "-p", "x"}, 2, `want partition numbers like 0,1,2, got "x"`},
		{[]string{"consume", "--topic", "t", "-p", "5", "-e"}, 1, "topic t has no partition 5 (it has 1)"},
		{[]string{"consume", "--topic", "t", "stray"}, 2, `consume: takes no arguments, got "stray"`},
		{[]string{"produce", "--topic", "t", "-H", "novalue"}, 2, `want KEY=VALUE, got "novalue"`},
		{[]string{"produce", "--topic", "t", "--partition", "-3"}, 2, "--partition must be a partition number"},
		{[]string{"produce", "--topic", "t", "--partition", "0", "--partitioner", "hash"}, 2, "not both"},
		{[]string{"produce", "--topic", "t", "--max-message-bytes", "0"}, 2, "--max-message-bytes must be from 1"},
		{[]string{"topic", "alter-config", "t"}, 2, "give --set k=v or --delete NAME"},
		{[]string{"topic", "alter-config", "t", "--set", "compression.type=brotli"}, 1, "INVALID_CONFIG"},
		{[]string{"topic", "add-partitions", "t"}, 2, "--num must be from 1"},
		{[]string{"topic", "list", "extra"}, 2, `topic list: takes no arguments, got "extra"`},
		{[]string{"bench", "produce", "--topic", "t", "[--json]"}, 2, `bench produce: takes no arguments, got "[--json]"`},
		{[]string{"produce", "--topic", "t", "--partition", "5"}, 1, "topic t has no partition 5 (it has 1)"},
	}
	for _, tc := range cases {
		r := runCLI(t, addr, "", tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.says) {
			t.Errorf("spool %v: exit %d, want %d saying %q:\n%s", tc.args, r.code, tc.code, tc.says, r.stderr)
		}
	}
}

// TestCLIErrorsSayItOnce: an error from the broker names its code once (the broker's message
// starts with it too), and the topic.
func TestCLIErrorsSayItOnce(t *testing.T) {
	t.Parallel()
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	for _, args := range [][]string{
		{"topic", "delete", "nosuch"},
		{"topic", "alter-config", "nosuch", "--set", "retention.ms=1"},
		{"topic", "describe", "nosuch"},
	} {
		r := runCLI(t, addr, "", args...)
		if r.code != 1 || strings.Count(r.stderr, "UNKNOWN_TOPIC_OR_PARTITION") != 1 || !strings.Contains(r.stderr, "nosuch") {
			t.Errorf("spool %v: exit %d, want the code once and the topic:\n%s", args, r.code, r.stderr)
		}
	}
}

// TestCLIGlobalFlagsHelpVersion: --brokers after the subcommand, spool help [COMMAND], and
// spool --version.
func TestCLIGlobalFlagsHelpVersion(t *testing.T) {
	t.Parallel()
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	const down = "127.0.0.1:1" // $SPOOL_BROKERS; --brokers must win wherever it is
	ok(t, runCLI(t, down, "", "topic", "create", "g1", "--brokers", addr))
	ok(t, runCLI(t, down, "", "topic", "describe", "--brokers="+addr, "g1"))
	if r := ok(t, runCLI(t, down, "", "--brokers", addr, "topic", "list")); !strings.Contains(r.stdout, "g1") {
		t.Fatalf("list: %q", r.stdout)
	}
	if r := runCLI(t, down, "", "topic", "list", "--brokers"); r.code != 2 || !strings.Contains(r.stderr, "flag needs an argument: --brokers") {
		t.Fatalf("--brokers without a value: exit %d %q", r.code, r.stderr)
	}
	for args, want := range map[string]string{
		"help":                     "commands:",
		"help topic":               "subcommands:",
		"help topic alter-config":  "usage: spool [--brokers HOST:PORT,...] topic alter-config NAME...",
		"--version":                "spool ",
		"help consume --brokers x": "usage: spool [--brokers HOST:PORT,...] consume",
	} {
		r := runCLI(t, down, "", strings.Fields(args)...)
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("spool %s: exit %d, stdout does not say %q:\n%s%s", args, r.code, want, r.stdout, r.stderr)
		}
	}
	if r := runCLI(t, down, "", "help", "nosuch"); r.code != 2 || !strings.Contains(r.stderr, "unknown command nosuch") {
		t.Errorf("help nosuch: exit %d %q", r.code, r.stderr)
	}
}

// TestCLIProduceFilesAndJSON: --file produces whole files, --key keys every record, and
// consume --json | produce --json copies records (keys, null values, headers, timestamps).
func TestCLIProduceFilesAndJSON(t *testing.T) {
	t.Parallel()
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.bin")
	if err := os.WriteFile(a, []byte("line 1\nline 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte{}, 0o644); err != nil {
		t.Fatal(err)
	}
	ok(t, runCLI(t, addr, "", "topic", "create", "src", "--partitions", "1"))
	ok(t, runCLI(t, addr, "", "produce", "--topic", "src", "--file", a, "--file", b, "--key", "doc", "-Z", "-H", "n=1"))
	r := ok(t, runCLI(t, addr, "", "consume", "--topic", "src", "--offset", "beginning", "-e", "--format", `%k|%S|%v$`))
	if r.stdout != "doc|14|line 1\nline 2\n$doc|-1|NULL$" {
		t.Fatalf("files: %q", r.stdout)
	}
	src := ok(t, runCLI(t, addr, "", "consume", "--topic", "src", "--offset", "beginning", "-e", "--json")).stdout
	ok(t, runCLI(t, addr, "", "topic", "create", "dst", "--partitions", "1"))
	ok(t, runCLI(t, addr, src, "produce", "--topic", "dst", "--json"))
	dst := ok(t, runCLI(t, addr, "", "consume", "--topic", "dst", "--offset", "beginning", "-e", "--json")).stdout
	if want := strings.ReplaceAll(src, `"topic":"src"`, `"topic":"dst"`); dst != want || strings.Count(dst, "\n") != 2 {
		t.Fatalf("copied with --json:\n%s\nwant\n%s", dst, want)
	}
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"produce", "--topic", "src", "--json"}, 1, "line 1: invalid character"},
		{[]string{"produce", "--topic", "src", "--file", filepath.Join(dir, "absent")}, 1, "--file: stat"},
		{[]string{"produce", "--topic", "src", "--file", a, "--max-message-bytes", "5"}, 1, "14 bytes, more than --max-message-bytes 5"},
		{[]string{"produce", "--topic", "src", "--json", "--key-separator", ":"}, 2, "give one of --file, --json and --key-separator"},
		{[]string{"produce", "--topic", "src", "--json", "--key", "k"}, 2, "--key sets every record's key"},
	} {
		r := runCLI(t, addr, "not json\n", tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.says) {
			t.Errorf("spool %v: exit %d, want %d saying %q:\n%s", tc.args, r.code, tc.code, tc.says, r.stderr)
		}
	}
}

// TestCLIProfile: the profile's brokers= is the default after $SPOOL_BROKERS; a bad profile
// is bad usage naming the file and line.
func TestCLIProfile(t *testing.T) {
	t.Parallel()
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	dir := t.TempDir()
	profile := filepath.Join(dir, "config")
	if err := os.WriteFile(profile, []byte("# spool profile\n\nbrokers = "+addr+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ok(t, runCLIEnv(t, []string{"SPOOL_BROKERS=", "SPOOL_CONFIG=" + profile}, "", "topic", "create", "from-profile"))
	// $SPOOL_BROKERS wins over the profile, --brokers over both.
	if r := runCLIEnv(t, []string{"SPOOL_BROKERS=127.0.0.1:1", "SPOOL_CONFIG=" + profile}, "", "topic", "list"); r.code != 1 || !strings.Contains(r.stderr, "127.0.0.1:1") {
		t.Fatalf("$SPOOL_BROKERS did not win: exit %d %q", r.code, r.stderr)
	}
	if r := ok(t, runCLIEnv(t, []string{"SPOOL_BROKERS=127.0.0.1:1", "SPOOL_CONFIG=" + profile}, "", "topic", "list", "--brokers", addr)); !strings.Contains(r.stdout, "from-profile") {
		t.Fatalf("list: %q", r.stdout)
	}
	// The default location is under the user's config directory.
	xdg := t.TempDir()
	if err := os.MkdirAll(filepath.Join(xdg, "spool"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(xdg, "spool", "config"), []byte("brokers="+addr+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := ok(t, runCLIEnv(t, []string{"SPOOL_BROKERS=", "SPOOL_CONFIG=", "XDG_CONFIG_HOME=" + xdg}, "", "topic", "list")); !strings.Contains(r.stdout, "from-profile") {
		t.Fatalf("default profile: %q", r.stdout)
	}
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte("brokers=x\nbrokerz=y\n"), 0o644)
	for path, says := range map[string]string{
		bad:                          bad + `:2: unknown key "brokerz" (known: brokers, tls, tls-ca,`,
		filepath.Join(dir, "absent"): "profile ($SPOOL_CONFIG): open " + filepath.Join(dir, "absent"),
	} {
		if r := runCLIEnv(t, []string{"SPOOL_BROKERS=", "SPOOL_CONFIG=" + path}, "", "topic", "list"); r.code != 2 || !strings.Contains(r.stderr, says) {
			t.Errorf("profile %s: exit %d, want 2 saying %q: %q", path, r.code, says, r.stderr)
		}
	}
}

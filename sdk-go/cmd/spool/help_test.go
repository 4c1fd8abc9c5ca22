package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spoolmq/spool/broker/brokertest"
)

// subcommandFlags is every command's flags, written out here rather than read from the code,
// so a flag that loses its help line, or a help that lists another command's flags, fails.
var subcommandFlags = map[string][]string{
	"topic create":          {"partitions", "replication-factor", "config"},
	"topic list":            {"json", "internal"},
	"topic describe":        {"json"},
	"topic alter-config":    {"set", "delete"},
	"topic add-partitions":  {"num"},
	"topic delete":          nil,
	"produce":               {"topic", "key-separator", "key", "file", "json", "partitioner", "partition", "header", "null-empty", "max-message-bytes", "acks", "compression", "compression-level", "transactional-id", "txn-size", "abort"},
	"consume":               {"topic", "group", "partition", "offset", "from-timestamp", "from-beginning", "exit-at-end", "count", "format", "null", "json", "isolation"},
	"group list":            {"json"},
	"group describe":        {"json"},
	"group delete":          nil,
	"group seek":            {"topic", "to", "create", "partitions"},
	"group delete-offsets":  {"topic", "partitions"},
	"completion":            nil,
	"cluster info":          {"json"},
	"cluster configs":       {"json"},
	"cluster rebalance":     {"plan", "execute", "throttle"},
	"cluster decommission":  {"plan", "throttle"},
	"cluster elect-leaders": {"topic", "unclean"},
	"cluster reassignments": {"cancel"},
	"bench produce":         {"topic", "records", "duration", "size", "rate", "acks", "compression", "partitions", "linger", "batch-bytes", "max-in-flight", "idempotence", "json"},
	"bench consume":         {"topic", "records", "duration", "size", "timeout", "json"},
	"acl create":            {"allow-principal", "deny-principal", "operation", "host", "topic", "group", "transactional-id", "cluster", "resource-pattern-type"},
	"acl list":              {"principal", "operation", "host", "topic", "group", "transactional-id", "cluster", "resource-pattern-type", "json"},
	"acl delete":            {"allow-principal", "deny-principal", "operation", "host", "topic", "group", "transactional-id", "cluster", "resource-pattern-type", "json"},
	"user create":           {"mechanism", "iterations", "password"},
	"user list":             {"json"},
	"user delete":           {"mechanism"},
	"bench e2e":             {"topic", "records", "duration", "size", "rate", "acks", "compression", "partitions", "linger", "batch-bytes", "max-in-flight", "idempotence", "json"},
}

// flagLine is one flag of a usage: "  --name [TYPE]  description".
var flagLine = regexp.MustCompile(`(?m)^  --([a-z-]+)(?: \S+)?  +(\S.*)$`)

// TestCLISubcommandHelp checks that --help and -h on every subcommand print its own usage on
// stdout with exit 0: its synopsis, then exactly its flags, each with a description, and
// defaults where they are not zero. No broker is contacted (the address is closed).
func TestCLISubcommandHelp(t *testing.T) {
	t.Parallel()
	if len(subcommandFlags) != len(docs) {
		t.Fatalf("%d subcommands documented, %d tested", len(docs), len(subcommandFlags))
	}
	for name, want := range subcommandFlags {
		for _, h := range []string{"--help", "-h"} {
			r := runCLI(t, "127.0.0.1:1", "", append(strings.Fields(name), h)...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("%s %s: exit %d stderr %q", name, h, r.code, r.stderr)
			}
			if !strings.HasPrefix(r.stdout, "usage: spool [--brokers HOST:PORT,...] "+name) {
				t.Fatalf("%s %s: not its usage:\n%s", name, h, r.stdout)
			}
			got := map[string]string{}
			for _, m := range flagLine.FindAllStringSubmatch(r.stdout, -1) {
				got[m[1]] = m[2]
			}
			for _, f := range want {
				if got[f] == "" {
					t.Errorf("%s %s: no help line for --%s:\n%s", name, h, f, r.stdout)
				}
				delete(got, f)
			}
			if len(got) > 0 {
				t.Errorf("%s %s: flags it does not take: %v", name, h, got)
			}
		}
	}
	// Defaults as the flag package prints them, and the ones the help text explains.
	r := ok(t, runCLI(t, "127.0.0.1:1", "", "bench", "consume", "--help"))
	for _, s := range []string{"(default 100000)", "(default 10s)", "--timeout duration"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("bench consume --help lacks %q:\n%s", s, r.stdout)
		}
	}
	r = ok(t, runCLI(t, "127.0.0.1:1", "", "produce", "--help"))
	if !strings.Contains(r.stdout, "(default all)") || !strings.Contains(r.stdout, "(default hash)") {
		t.Errorf("produce --help lacks its defaults:\n%s", r.stdout)
	}
}

// TestCLICommandHelp checks the overview and each command's list of its subcommands.
func TestCLICommandHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--help"}, {"-h"}} {
		r := ok(t, runCLI(t, "127.0.0.1:1", "", args...))
		for name := range subcommandFlags {
			if !strings.Contains(r.stdout, "  "+name+" ") && !strings.Contains(r.stdout, "  "+name+"\n") {
				t.Errorf("%v: overview lacks %q:\n%s", args, name, r.stdout)
			}
		}
	}
	for _, cmd := range []string{"topic", "group", "cluster", "bench"} {
		for _, h := range []string{"--help", "-h"} {
			r := runCLI(t, "127.0.0.1:1", "", cmd, h)
			if r.code != 0 || r.stderr != "" || !strings.HasPrefix(r.stdout, "usage: spool [--brokers HOST:PORT,...] "+cmd+" SUBCOMMAND") {
				t.Fatalf("%s %s: exit %d stdout %q stderr %q", cmd, h, r.code, r.stdout, r.stderr)
			}
			for name := range subcommandFlags {
				sub, ok := strings.CutPrefix(name, cmd+" ")
				if ok && !strings.Contains(r.stdout, "\n  "+sub+" ") && !strings.Contains(r.stdout, "\n  "+sub+"\n") {
					t.Errorf("%s %s lacks %q:\n%s", cmd, h, sub, r.stdout)
				}
			}
		}
		// A missing or unknown subcommand is bad usage, answered with the command's usage.
		for _, args := range [][]string{{cmd}, {cmd, "nosuch", "--help"}} {
			r := runCLI(t, "127.0.0.1:1", "", args...)
			if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "usage: spool [--brokers HOST:PORT,...] "+cmd+" SUBCOMMAND") {
				t.Errorf("%v: exit %d stdout %q stderr %q", args, r.code, r.stdout, r.stderr)
			}
		}
	}
}

// TestCLIBadFlagUsage checks that an unknown flag on every subcommand exits 2 with that
// subcommand's usage on stderr, before any broker is contacted.
func TestCLIBadFlagUsage(t *testing.T) {
	t.Parallel()
	for name, flags := range subcommandFlags {
		args := append(strings.Fields(name), "--no-such-flag")
		r := runCLI(t, "127.0.0.1:1", "", args...)
		if r.code != 2 || r.stdout != "" {
			t.Fatalf("%v: exit %d stdout %q stderr %q", args, r.code, r.stdout, r.stderr)
		}
		// One line, pointing at --help, not the whole usage.
		if r.stderr != "spool: "+name+": flag provided but not defined: -no-such-flag; 'spool "+name+" --help' lists the flags\n" {
			t.Fatalf("%v: stderr %q", args, r.stderr)
		}
		for _, f := range flags {
			if len(f) < 4 {
				continue
			}
			typo := f[:len(f)-1] // the last letter left out
			r := runCLI(t, "127.0.0.1:1", "", append(strings.Fields(name), "--"+typo)...)
			if r.code != 2 || !strings.Contains(r.stderr, "(did you mean --") || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("%v --%s: exit %d stderr %q, want one line with a suggestion", name, typo, r.code, r.stderr)
			}
		}
	}
}

// TestBenchConsumeStopsAtEnd checks that bench consume --records N on a topic holding fewer
// than N records fails with a clear error once it has read them all and nothing new arrives,
// instead of waiting forever, and that a topic holding exactly N ends with them.
func TestBenchConsumeStopsAtEnd(t *testing.T) {
	t.Parallel()
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	ok(t, runCLI(t, addr, "", "bench", "produce", "--topic", "short", "--partitions", "3", "--records", "50", "--acks", "1"))
	r := runCLI(t, addr, "", "bench", "consume", "--topic", "short", "--records", "1000", "--timeout", "3s", "--json")
	if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "read 50 of --records 1000") ||
		!strings.Contains(r.stderr, "held 50 records at start") || !strings.Contains(r.stderr, "--timeout 3s") {
		t.Fatalf("short topic: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	// An empty topic: nothing to catch up with, the idle bound applies at once.
	ok(t, runCLI(t, addr, "", "topic", "create", "empty", "--partitions", "2"))
	r = runCLI(t, addr, "", "bench", "consume", "--topic", "empty", "--records", "10", "--timeout", "100ms")
	if r.code != 1 || !strings.Contains(r.stderr, "read 0 of --records 10") || !strings.Contains(r.stderr, "held 0 records") {
		t.Fatalf("empty topic: exit %d stderr %q", r.code, r.stderr)
	}
	// Exactly the records there: it ends with them, the timeout never matters.
	res := benchJSON(t, addr, "consume", "--topic", "short", "--records", "50", "--timeout", "1h")
	if res.Records != 50 {
		t.Fatalf("consume of all 50: %+v", res)
	}
}

// complete runs the bash completion function on a command line whose last word is being
// typed, in shell (bash, or zsh through bashcompinit), and returns the candidates.
func complete(t *testing.T, shell string, words ...string) []string {
	t.Helper()
	script := fmt.Sprintf(`source <(%q completion %s)
COMP_WORDS=(%s); COMP_CWORD=%d; _spool; print_reply() { printf '%%s\n' "${COMPREPLY[@]}"; }; print_reply`,
		bin, shell, strings.Join(append([]string{bin}, quoteAll(words)...), " "), len(words))
	out, err := exec.Command(shell, "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("%s completion of %q: %v\n%s", shell, words, err, out)
	}
	// zsh's compgen (bashcompinit) leaves matching the typed prefix to compadd, as zsh's
	// completion system does; do it here.
	var got []string
	for _, w := range strings.Fields(string(out)) {
		if strings.HasPrefix(w, words[len(words)-1]) {
			got = append(got, w)
		}
	}
	return got
}

func quoteAll(ws []string) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = fmt.Sprintf("%q", w)
	}
	return out
}

// TestCLICompletion: the bash and zsh scripts complete commands, subcommands and flags.
func TestCLICompletion(t *testing.T) {
	t.Parallel()
	shells := []string{brokertest.NeedTool(t, "/usr/bin/bash", "bash")}
	if _, err := os.Stat("/usr/bin/zsh"); err == nil || os.Getenv("CI") == "true" {
		shells = append(shells, brokertest.NeedTool(t, "/usr/bin/zsh", "zsh"))
	}
	for _, sh := range shells {
		shell := filepath.Base(sh)
		for _, tc := range []struct {
			words []string
			want  string
		}{
			{[]string{"to"}, "topic"},
			{[]string{"topic", "al"}, "alter-config"},
			{[]string{"consume", "--exit"}, "--exit-at-end"},
			{[]string{"topic", "add-partitions", "orders", "--n"}, "--num"},
			{[]string{"--brokers", "x", "gr"}, "group"},
		} {
			got := complete(t, shell, tc.words...)
			if len(got) != 1 || got[0] != tc.want {
				t.Errorf("%s: completing %q: %q, want %q", shell, tc.words, got, tc.want)
			}
		}
	}
	if r := runCLI(t, "127.0.0.1:1", "", "completion", "fish"); r.code != 2 || !strings.Contains(r.stderr, `want bash or zsh, got "fish"`) {
		t.Errorf("completion fish: exit %d %q", r.code, r.stderr)
	}
}

package server_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spoolmq/spool/broker/brokertest"
)

// TestReadmeInOrder follows the README top to bottom on one machine, as a reader does: every
// section that starts brokers runs its block, in the README's order, each in a shell of its own
// whose background processes (make run's broker, ZooKeeper and the cluster, the security
// examples' brokers, ...) stay up while the later sections run. The README's ports are mapped
// to free ones one to one, so two sections that share a port in the README share it here too
// and the later one fails: a port collision in the README fails this test. `make` is the repository's
// Makefile with the build already done (the test's binaries), so `make run`'s PORT and DATA
// are the real ones.
func TestReadmeInOrder(t *testing.T) {
	heavy(t)
	brokertest.NeedTool(t, "/usr/bin/kcat", "kcat")
	brokertest.NeedTool(t, "/usr/bin/openssl", "openssl")
	brokertest.NeedTool(t, "/usr/bin/curl", "curl")
	brokertest.NeedTool(t, "/usr/bin/make", "make")
	brokertest.NeedTool(t, "/usr/share/java/zookeeper.jar", "zookeeper")
	const readme = "../../../README.md"
	type section struct {
		heading string
		all     bool     // every block; else the first (the others are Kafka users' alternatives)
		want    []string // in the section's output
		more    string   // a section continuing this one in the same shell ("Continuing the quick start")
	}
	sections := []section{
		{"### Using it with any Kafka client", false, []string{"k1 hello\nk2 world\n"}, ""},
		{"### Cluster mode", false, []string{`topic "orders" with 6 partitions`, "partitions moved in"}, "#### Growing and shrinking a cluster"},
		{"### Security", false, []string{"hello-ssl\nhello-sasl\n"}, ""},
		{"#### SCRAM users", false, []string{"hello-scram\n", "wrong password refused"}, ""},
		{"#### Authorization (ACLs)", false, []string{"first-order\n", "bob refused"}, ""},
		{"#### Client settings (`spool`, the Go SDK, the C ABI)", false, []string{"\npaid\n", "wrong password refused"}, ""},
		{"### Operations", false, []string{"ready\n", `spool_topic_records_in_total{messaging_destination_name="orders"} 1`}, ""},
		{"#### The web console", false, []string{`"previous":3,"offset":1`}, ""},
		{"## The `spool` CLI", true, nil, ""},
	}
	data, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	// The README's order, which the reader follows.
	slices.SortStableFunc(sections, func(a, b section) int {
		return strings.Index(string(data), "\n"+a.heading+"\n") - strings.Index(string(data), "\n"+b.heading+"\n")
	})

	dir := readmeDir(t)
	repo, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(brokertest.CLI(t), filepath.Join(dir, "bin", "spool")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(repo, "README.md"), filepath.Join(dir, "README.md")); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home") // a fresh user: no spool profile
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}

	// README ports to free ones, one to one, each from loopport (claimed across test processes);
	// a port written with the loop's $n (127.0.0.1:910$n) reads an array of the decade's ports.
	ports := map[string]int{}
	port := func(readmePort string) int {
		p, ok := ports[readmePort]
		if !ok {
			p = freePortT(t)
			ports[readmePort] = p
		}
		return p
	}
	addr := regexp.MustCompile(`127\.0\.0\.1([:/])(\d{3})(\d|\$n)\b`)
	makePort := port("9092") // make run's default
	mapPorts := func(block string) string {
		if m := regexp.MustCompile(`127\.0\.0\.1:\d{5}`).FindString(block); m != "" {
			t.Fatalf("README port %s: the test maps four-digit ports", m)
		}
		var arrays strings.Builder
		block = addr.ReplaceAllStringFunc(block, func(s string) string {
			m := addr.FindStringSubmatch(s)
			if m[3] != "$n" {
				return fmt.Sprintf("127.0.0.1%s%d", m[1], port(m[2]+m[3]))
			}
			fmt.Fprintf(&arrays, "ports_%s=(", m[2])
			for d := range 10 {
				fmt.Fprintf(&arrays, " %d", port(fmt.Sprint(m[2], d)))
			}
			arrays.WriteString(" )\n")
			return fmt.Sprintf("127.0.0.1%s${ports_%s[$n]}", m[1], m[2])
		})
		zk := fmt.Sprint(port("2181"))
		return arrays.String() + strings.NewReplacer("clientPort=2181", "clientPort="+zk, ":2181/", ":"+zk+"/",
			"/tmp/spool-", filepath.Join(dir, "tmp-spool-")).Replace(block)
	}
	// make: the repository's Makefile, build already done; PORT defaults to the mapped 9092.
	makeDir := filepath.Join(dir, "make-shim")
	if err := os.Mkdir(makeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	shim := fmt.Sprintf("#!/bin/sh\nfor a; do [ \"$a\" = build ] && exit 0; done\nexec /usr/bin/make --no-print-directory -f %s -o build PORT=%d \"$@\"\n", filepath.Join(repo, "Makefile"), makePort)
	if err := os.WriteFile(filepath.Join(makeDir, "make"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}

	for i, sec := range sections {
		blocks := brokertest.ReadmeBlocks(t, readme, sec.heading)
		if !sec.all {
			blocks = blocks[:1]
		}
		if sec.more != "" {
			blocks = append(blocks, brokertest.ReadmeBlocks(t, readme, sec.more)[0])
		}
		script := mapPorts(strings.Join(blocks, ""))
		env := []string{"PATH=" + makeDir + ":" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
			"SPOOL_CONFIG=", "SPOOL_SASL_PASSWORD=", "SPOOL_BROKERS="}
		if sec.heading == "## The `spool` CLI" {
			// "against a broker on 127.0.0.1:9092 (make run in another terminal)": the CLI's
			// default address, here the one 9092 maps to.
			env = append(env, fmt.Sprintf("SPOOL_BROKERS=127.0.0.1:%d", makePort))
		}
		text, err := runReadmeScriptAs(t, dir, fmt.Sprintf("section-%d", i), env, script)
		if err != nil {
			t.Fatalf("following the README in order, %q failed: %v\n--- script\n%s\n--- output\n%s", sec.heading, err, script, text)
		}
		for _, want := range sec.want {
			if !strings.Contains(text, want) {
				t.Errorf("%q: output lacks %q:\n%s", sec.heading, want, text)
			}
		}
	}
}

package server_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoolmq/spool/broker/brokertest"
)

// TestReadmeConsole runs the README's web console block as a user pastes it, on ports and a
// data directory of its own, and checks what its console API calls print: the last two
// records, the key filter, the topic created and configured, the group reset, and the action
// refused without the console header.
func TestReadmeConsole(t *testing.T) {
	heavy(t)
	brokertest.NeedTool(t, "/usr/bin/kcat", "kcat")
	brokertest.NeedTool(t, "/usr/bin/curl", "curl")
	blocks := brokertest.ReadmeBlocks(t, "../../../README.md", "#### The web console")
	dir := readmeDir(t)
	base := freeRun(t, 2)
	script := strings.NewReplacer(
		"127.0.0.1:9161", fmt.Sprintf("127.0.0.1:%d", base),
		"127.0.0.1:9162", fmt.Sprintf("127.0.0.1:%d", base+1),
		"/tmp/spool-console", filepath.Join(dir, "data"),
	).Replace(blocks[0])
	text, err := runReadmeScript(t, dir, script)
	if err != nil {
		t.Fatalf("README block failed: %v\n--- script\n%s\n--- output\n%s", err, script, text)
	}
	for _, want := range []string{
		`"start":1,"next":3,`, `"value":"eyJvcmRlciI6Mn0="`, `"value":"eyJvcmRlciI6M30="`, // {"order":2}, {"order":3}
		"\"offset\":1\n",
		`{"name":"invoices","partitions":3,"replicationFactor":1}`,
		`{"configs":{"retention.ms":"3600000"},"topic":"invoices"}`,
		`{"group":"auditors","offsets":[{"topic":"orders","partition":0,"previous":3,"offset":1}]}`,
		`{"error":"console actions need the X-Spool-Console header`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the console block's output lacks %q:\n%s", want, text)
		}
	}
}

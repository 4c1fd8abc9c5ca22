package server_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoolmq/spool/broker/brokertest"
)

// TestReadmeOperations runs the README's Operations block as a user pastes it, on ports and a
// data directory of its own, and checks the health answers and the metrics it prints.
func TestReadmeOperations(t *testing.T) {
	heavy(t)
	brokertest.NeedTool(t, "/usr/bin/kcat", "kcat")
	brokertest.NeedTool(t, "/usr/bin/curl", "curl")
	block := readmeBlock(t, "### Operations")
	dir := readmeDir(t)
	base := freeRun(t, 5)
	script := strings.NewReplacer(
		"make build\n", "",
		"127.0.0.1:9151", fmt.Sprintf("127.0.0.1:%d", base+2),
		"127.0.0.1:9152", fmt.Sprintf("127.0.0.1:%d", base+5),
		"/tmp/spool-ops", filepath.Join(dir, "data"),
	).Replace(block)
	text, err := runReadmeScript(t, dir, script)
	if err != nil {
		t.Fatalf("README block failed: %v\n--- script\n%s\n--- output\n%s", err, script, text)
	}
	for _, want := range []string{"spoold ", "ready\n", "ok\n", "hello\n",
		`spool_topic_records_in_total{messaging_destination_name="orders"} 1`,
		`spool_partition_high_watermark{messaging_destination_name="orders",messaging_destination_partition_id="0"} 1`,
		// The group read the one record and committed after it: no lag.
		`spool_group_lag{messaging_consumer_group_name="readers",messaging_destination_name="orders",messaging_destination_partition_id="0"} 0`,
		`spool_groups{spool_group_state="Empty"} 1`,
		`{"broker":{"nodeId":0,`} {
		if !strings.Contains(text, want) {
			t.Errorf("Operations block output lacks %q:\n%s", want, text)
		}
	}
}

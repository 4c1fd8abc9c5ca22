package server_test

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
)

// TestTxnConfluentKafkaPython runs librdkafka's transactional producer through
// python3-confluent-kafka (testdata/txn_confluent_kafka.py): commit, abort, offsets sent to the
// transaction, and a read_committed consumer.
func TestTxnConfluentKafkaPython(t *testing.T) {
	heavy(t)
	brokertest.NeedTool(t, "/usr/bin/python3", "python3")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := startBroker(t, nil)
	createTopicKadm(t, ctx, b.Addr, "pytxn", 2)
	cmd := exec.CommandContext(ctx, "/usr/bin/python3", "testdata/txn_confluent_kafka.py", b.Addr, "pytxn", "pytxn-group")
	cmd.Stderr = testWriter{t}
	out, err := cmd.Output()
	if err != nil || !slices.Contains(strings.Split(string(out), "\n"), "OK") {
		t.Fatalf("txn_confluent_kafka.py: %v\n%s", err, out)
	}
}

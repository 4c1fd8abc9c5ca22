package main

import (
	"strings"
	"testing"

	"github.com/spoolmq/spool/broker/brokertest"
)

// TestProduceTransactional: produce --transactional-id commits a transaction per --txn-size
// records, --abort writes and aborts, and consume --isolation tells the two apart.
func TestProduceTransactional(t *testing.T) {
	t.Parallel()
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	ok(t, runCLI(t, addr, "", "topic", "create", "pay", "--partitions", "1", "--replication-factor", "1"))
	r := ok(t, runCLI(t, addr, "1\n2\n3\n4\n5\n", "produce", "--topic", "pay", "--transactional-id", "pay-1", "--txn-size", "2"))
	if !strings.Contains(r.stderr, "produced 5 records in 3 committed transactions") {
		t.Fatalf("produce --txn-size 2 of 5 records: stderr %q", r.stderr)
	}
	r = ok(t, runCLI(t, addr, "x\ny\n", "produce", "--topic", "pay", "--transactional-id", "pay-1", "--abort"))
	if !strings.Contains(r.stderr, "produced 2 records in 1 aborted transaction") {
		t.Fatalf("produce --abort: stderr %q", r.stderr)
	}
	ok(t, runCLI(t, addr, "6\n", "produce", "--topic", "pay", "--transactional-id", "pay-1"))
	r = ok(t, runCLI(t, addr, "", "consume", "--topic", "pay", "--isolation", "read_committed", "--exit-at-end"))
	if got := strings.Fields(r.stdout); strings.Join(got, ",") != "1,2,3,4,5,6" {
		t.Errorf("read_committed: %q, want 1..6", got)
	}
	r = ok(t, runCLI(t, addr, "", "consume", "--topic", "pay", "--exit-at-end"))
	if got := strings.Fields(r.stdout); strings.Join(got, ",") != "1,2,3,4,5,x,y,6" {
		t.Errorf("read_uncommitted: %q, want 1..5, x, y, 6", got)
	}
	// A record the broker refuses fails the run, and its transaction is aborted rather than
	// left open (which would hold read_committed readers back until the transaction timeout).
	ok(t, runCLI(t, addr, "", "topic", "create", "small", "--partitions", "1", "--replication-factor", "1", "--config", "max.message.bytes=2000"))
	r = runCLI(t, addr, "fits\n"+strings.Repeat("x", 5000)+"\n", "produce", "--topic", "small", "--transactional-id", "small-1")
	if r.code != 1 || !strings.Contains(r.stderr, "MESSAGE_TOO_LARGE") {
		t.Fatalf("produce of a record over max.message.bytes: exit %d, stderr %q; want 1 and MESSAGE_TOO_LARGE", r.code, r.stderr)
	}
	ok(t, runCLI(t, addr, "later\n", "produce", "--topic", "small", "--transactional-id", "small-2"))
	r = ok(t, runCLI(t, addr, "", "consume", "--topic", "small", "--isolation", "read_committed", "--exit-at-end"))
	if got := strings.Fields(r.stdout); strings.Join(got, ",") != "later" {
		t.Errorf("read_committed after the failed run: %q, want only later", got)
	}
	for _, bad := range [][]string{
		{"produce", "--topic", "pay", "--txn-size", "2"},
		{"produce", "--topic", "pay", "--abort"},
		{"produce", "--topic", "pay", "--transactional-id", "p", "--acks", "1"},
		{"produce", "--topic", "pay", "--transactional-id", "p", "--txn-size", "-1"},
		{"consume", "--topic", "pay", "--isolation", "committed"},
	} {
		if r := runCLI(t, addr, "", bad...); r.code != 2 {
			t.Errorf("%q: exit %d, want 2 (bad usage)\nstderr: %s", bad, r.code, r.stderr)
		}
	}
}

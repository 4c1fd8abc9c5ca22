package server_test

import (
	"context"
	"testing"
	"time"
)

// TestTxnJavaClient runs the Java client's transactional producer (kafka-clients, testdata/
// txn_Transactions.java): commits and aborts with offsets sent to the transaction, fencing
// by a second instance, read_committed and read_uncommitted consumers, and the group's offsets
// as the committed transaction left them.
func TestTxnJavaClient(t *testing.T) {
	heavy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := startBroker(t, nil)
	createTopicKadm(t, ctx, b.Addr, "jtxn", 2)
	runJavaProgram(t, ctx, "testdata/txn_Transactions.java", "Transactions", b.Addr, "jtxn", "jtxn-group")
}

package server

import (
	"io"
	"log/slog"
	"testing"

	"github.com/spoolmq/spool/broker/internal/config"
)

// In cluster mode max.connections does not bind the inter-broker listener, but the listener's
// own listener.name.<listener>.max.connections does (KIP-402), so replication can be capped
// without a client flood being able to starve it.
func TestInterBrokerListenerOwnLimit(t *testing.T) {
	conf, err := config.Load([]string{"--set", "listeners=CLIENT://127.0.0.1:9092,REPLICATION://127.0.0.1:9093",
		"--set", "listener.security.protocol.map=CLIENT:PLAINTEXT,REPLICATION:PLAINTEXT",
		"--set", "inter.broker.listener.name=REPLICATION",
		"--set", "max.connections=1", "--set", "listener.name.replication.max.connections=2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	l, err := newConnLimits(conf, true, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if !l.admit("CLIENT", "10.0.0.1") || l.admit("CLIENT", "10.0.0.2") {
		t.Fatal("CLIENT: want one connection admitted by max.connections=1, and the second refused")
	}
	for i := range 2 {
		if !l.admit("REPLICATION", "10.0.0.3") {
			t.Fatalf("REPLICATION connection %d refused: max.connections does not bind the inter-broker listener", i+1)
		}
	}
	if l.admit("REPLICATION", "10.0.0.4") {
		t.Fatal("a third REPLICATION connection admitted over listener.name.replication.max.connections=2")
	}
	if got := l.listeners["REPLICATION"].refused.Load(); got != 1 {
		t.Errorf("refused over the listener's limit: %d, want 1", got)
	}
	l.release("REPLICATION", "10.0.0.3")
	if !l.admit("REPLICATION", "10.0.0.4") {
		t.Error("a REPLICATION connection refused after one was released")
	}
}

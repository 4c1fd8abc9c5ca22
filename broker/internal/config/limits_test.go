package config

import (
	"io"
	"strings"
	"testing"
)

// listener.name.<listener>.max.connections (KIP-402) is a listener's own limit: it does not
// fall back to max.connections, and it takes max.connections' values.
func TestListenerMaxConnections(t *testing.T) {
	c, err := Load([]string{"--set", "listeners=CLIENT://127.0.0.1:9092,REPLICATION://127.0.0.1:9093",
		"--set", "listener.security.protocol.map=CLIENT:PLAINTEXT,REPLICATION:PLAINTEXT",
		"--set", "max.connections=100", "--set", "listener.name.CLIENT.max.connections=7"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := c.ListenerMaxConnections("CLIENT"); !ok || n != 7 {
		t.Errorf("CLIENT: %d, %v; want 7, true", n, ok)
	}
	if n, ok := c.ListenerMaxConnections("REPLICATION"); ok {
		t.Errorf("REPLICATION: %d, %v; want no limit of its own", n, ok)
	}
	if got := ListenerMaxConnectionsName("CLIENT"); got != "listener.name.client.max.connections" {
		t.Errorf("name %q", got)
	}
	for _, v := range []string{"-1", "many"} {
		_, err := Load([]string{"--set", "listener.name.plaintext.max.connections=" + v}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "listener.name.plaintext.max.connections") {
			t.Errorf("max.connections=%s: %v, want an error naming the property", v, err)
		}
	}
}

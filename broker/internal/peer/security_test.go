package peer_test

import (
	"context"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/broker/internal/peer"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

const plainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required user_broker="broker-secret";`

// A peer connection to a broker whose SASL sessions last connections.max.reauth.ms
// re-authenticates in place before each session ends (KIP-368), so its requests go on being
// served on the one connection; against a broker whose sessions do not end it never does.
func TestReauthentication(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reauth  string
		reauths int64 // at least, over the requests sent
	}{
		{"sessions of 300ms", "300", 3},
		{"sessions without end", "0", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := brokertest.Start(t, brokertest.Options{Props: map[string]string{
				"listeners":               "SASL_PLAINTEXT://127.0.0.1:0",
				"sasl.enabled.mechanisms": "PLAIN",
				"listener.name.sasl_plaintext.plain.sasl.jaas.config": plainJAAS,
				"connections.max.reauth.ms":                           tc.reauth,
			}})
			counts := &peer.AuthCounts{}
			sec := &peer.Security{Mechanism: "PLAIN", User: "broker", Password: "broker-secret", Counts: counts}
			c, err := peer.Dial(context.Background(), b.Addr, 5*time.Second, sec)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			// Metadata needs an authenticated session: after one ends without re-authentication,
			// the broker closes the connection instead of answering.
			metadata := func() error {
				req, resp := &wire.MetadataRequest{}, &wire.MetadataResponse{}
				req.Default()
				return c.RoundTrip(req, resp, 9, time.Now().Add(5*time.Second))
			}
			start := time.Now()
			brokertest.WaitForState(t, 10*time.Second, "four session lifetimes of requests", func() (bool, string) {
				if err := metadata(); err != nil {
					t.Fatalf("Metadata after %v on one connection: %v", time.Since(start), err)
				}
				return time.Since(start) > 1200*time.Millisecond, ""
			})
			if got := counts.Authentications.Load(); got != 1 {
				t.Errorf("%d first authentications, want the connection's one", got)
			}
			if got := counts.Reauthentications.Load(); got < tc.reauths || (tc.reauths == 0 && got != 0) {
				t.Errorf("%d re-authentications in four 300 ms session lifetimes, want at least %d", got, tc.reauths)
			}
		})
	}
}

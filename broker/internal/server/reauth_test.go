package server_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/spoolmq/spool/broker/brokertest"
)

// connectCounter counts the connections a franz-go client opens and the SaslAuthenticate
// requests it writes.
type connectCounter struct{ n, auths atomic.Int32 }

func (c *connectCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err == nil && key == 36 {
		c.auths.Add(1)
	}
}

func (c *connectCounter) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		c.n.Add(1)
	}
}

// KIP-368: with connections.max.reauth.ms franz-go re-authenticates on its connection as each
// session nears its end, so requests keep being served over the same connections for several
// session lifetimes.
func TestSASLReauthFranz(t *testing.T) {
	parallel(t)
	b := brokertest.Start(t, brokertest.Options{Props: map[string]string{
		"listeners":                 "SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms":   "PLAIN",
		"connections.max.reauth.ms": "1000",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": plainJAAS,
	}})
	counter := &connectCounter{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Listener(t, "SASL_PLAINTEXT")), kgo.WithHooks(counter),
		kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	metadata := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		return err
	}
	if err := metadata(); err != nil {
		t.Fatal(err)
	}
	if err := metadata(); err != nil { // the request to the discovered broker, not the seed
		t.Fatal(err)
	}
	opened, auths := counter.n.Load(), counter.auths.Load()
	start := time.Now()
	var failed error
	// Requests for three session lifetimes, each served without a new connection.
	brokertest.WaitFor(t, 30*time.Second, "three session lifetimes of requests", func() bool {
		if err := metadata(); err != nil && failed == nil {
			failed = err
		}
		return time.Since(start) > 3*time.Second
	})
	if failed != nil {
		t.Errorf("a request across re-authentications failed: %v", failed)
	}
	if n := counter.auths.Load(); n <= auths {
		t.Errorf("no re-authentication in three session lifetimes (%d SaslAuthenticate before, %d after)", auths, n)
	}
	if n := counter.n.Load(); n != opened {
		t.Errorf("%d connections opened after the first %d: sessions were not renewed in place", n-opened, opened)
	}
}

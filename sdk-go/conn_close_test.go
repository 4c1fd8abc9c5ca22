package spool

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// TestSendAfterCloseCompletes: a call queued while or after its connection closes gets an
// error on done, whoever drains it. send's select may pick the queue over the closed
// channel, and if the writer had already failed the queue and quit, such a call waited for
// ever (a producer pipe then waited on it for good: the rare hang of the idempotence tests).
func TestSendAfterCloseCompletes(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	c := &conn{addr: "pipe", nc: client, queue: make(chan *call, 64), inflight: make(chan *call, 1024),
		closing: make(chan struct{}), readDone: make(chan struct{})}
	go c.writeLoop()
	go c.readLoop()
	c.close(net.ErrClosed)
	<-c.readDone
	ctx := context.Background()
	for i := range 500 {
		req := &wire.MetadataRequest{}
		req.Default()
		cl := &call{key: req.APIKey(), req: req, resp: &wire.MetadataResponse{}, done: make(chan error, 1)}
		if err := c.send(ctx, cl); err != nil {
			continue // refused outright: fine
		}
		select {
		case err := <-cl.done:
			if err == nil {
				t.Fatalf("call %d on a closed connection succeeded", i)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("call %d, queued on a closed connection, never completed", i)
		}
	}
}

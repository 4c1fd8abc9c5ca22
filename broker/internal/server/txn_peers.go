package server

// The transaction paths' requests to other brokers: WriteTxnMarkers from a transaction
// coordinator to the leaders of a transaction's partitions (txn.go), and KIP-890's
// verify-only AddPartitionsToTxn from a partition leader to the transaction coordinator
// (00_produce.go).
//
// Ownership and concurrency: peerPool.mu (a leaf lock) guards only the idle connections. A
// connection is owned by one caller between get and put (peer.Conn is not safe for
// concurrent use); no lock is held across a round trip. A connection that failed is closed,
// never returned to the pool, so a broker restart costs one failed request per idle
// connection at most.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/spoolmq/spool/broker/internal/peer"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// peerRequestTimeout bounds one inter-broker round trip of the transaction paths.
const peerRequestTimeout = 30 * time.Second

// maxIdlePerPeer bounds the idle connections kept per broker.
const maxIdlePerPeer = 4

// peerPool keeps idle connections to the other brokers, by node id.
type peerPool struct {
	s    *Server
	sec  *peer.Security
	mu   sync.Mutex
	idle map[int32][]*peer.Conn
	shut bool
}

func newPeerPool(s *Server, sec *peer.Security) *peerPool {
	return &peerPool{s: s, sec: sec, idle: map[int32][]*peer.Conn{}}
}

// get returns an idle connection to broker id or dials one on the inter-broker listener.
func (p *peerPool) get(ctx context.Context, id int32) (*peer.Conn, error) {
	p.mu.Lock()
	if l := p.idle[id]; len(l) > 0 {
		c := l[len(l)-1]
		p.idle[id] = l[:len(l)-1]
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	addr, ok := p.s.brokerAddress(id)
	if !ok {
		return nil, fmt.Errorf("%w: broker %d is not registered", wire.ErrNotLeaderOrFollower, id)
	}
	return peer.Dial(ctx, addr, 5*time.Second, p.sec)
}

// put returns a healthy connection to the pool (or closes it when the pool is full or shut).
func (p *peerPool) put(id int32, c *peer.Conn) {
	p.mu.Lock()
	if !p.shut && len(p.idle[id]) < maxIdlePerPeer {
		p.idle[id] = append(p.idle[id], c)
		c = nil
	}
	p.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

// roundTrip sends req at version to broker id and decodes the answer into resp. The round
// trip ends at the context's deadline (at most peerRequestTimeout) or when it is cancelled.
func (p *peerPool) roundTrip(ctx context.Context, id int32, req, resp wire.Message, version int16) error {
	c, err := p.get(ctx, id)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(peerRequestTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	stop := context.AfterFunc(ctx, func() { c.Close() })
	err = c.RoundTrip(req, resp, version, deadline)
	if !stop() || err != nil {
		c.Close()
		if err == nil {
			err = ctx.Err()
		}
		return fmt.Errorf("broker %d: %w", id, err)
	}
	p.put(id, c)
	return nil
}

// close closes the idle connections; later puts close theirs.
func (p *peerPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.shut = true
	for id, l := range p.idle {
		for _, c := range l {
			c.Close()
		}
		delete(p.idle, id)
	}
}

package server

import (
	"context"
	"fmt"
	"sync"

	"github.com/spoolmq/spool/broker/internal/cluster"
)

// producerIDBlock is how many producer ids a broker reserves from the metadata store at once
// (Kafka's block size), so that the store is written once per block, not per producer.
const producerIDBlock = 1000

// producerIDs hands out idempotent producer ids from blocks the metadata store reserves for
// this broker: unique across restarts, and across the cluster in cluster mode.
type producerIDs struct {
	md   cluster.Metadata
	mu   sync.Mutex
	next int64 // next id to hand out
	end  int64 // ids below end belong to this broker's block
}

// allocate returns a new producer id.
func (p *producerIDs) allocate(ctx context.Context) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next >= p.end {
		start, err := p.md.AllocateProducerIDs(ctx, producerIDBlock)
		if err != nil {
			return 0, fmt.Errorf("reserving producer ids: %w", err)
		}
		p.next, p.end = start, start+producerIDBlock
	}
	id := p.next
	p.next++
	return id, nil
}

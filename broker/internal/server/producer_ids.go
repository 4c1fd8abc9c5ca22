package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/spoolmq/spool/broker/internal/fsutil"
)

// producerIDFile records the first producer id not yet handed out, rounded up to a block, so
// that ids never repeat across restarts while the file is written once per block, not per id.
const producerIDFile = "producer-id-block"

const producerIDBlock = 1000

// producerIDs hands out idempotent producer ids.
type producerIDs struct {
	path     string
	mu       sync.Mutex
	next     int64 // next id to hand out
	reserved int64 // ids below this are covered by the file
}

func openProducerIDs(dir string) (*producerIDs, error) {
	p := &producerIDs{path: filepath.Join(dir, producerIDFile)}
	b, err := os.ReadFile(p.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", p.path, err)
	default:
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%s holds %q, not a producer id", p.path, strings.TrimSpace(string(b)))
		}
		p.next, p.reserved = n, n
	}
	return p, nil
}

// allocate returns a new producer id.
func (p *producerIDs) allocate() (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next >= p.reserved {
		end := p.next + producerIDBlock
		if err := fsutil.WriteFileAtomic(p.path, []byte(strconv.FormatInt(end, 10)+"\n"), 0o644); err != nil {
			return 0, fmt.Errorf("reserving producer ids: %w", err)
		}
		p.reserved = end
	}
	id := p.next
	p.next++
	return id, nil
}

func (p *producerIDs) close() error { return nil }

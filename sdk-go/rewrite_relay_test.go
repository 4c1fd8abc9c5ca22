package spool_test

import (
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"testing"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// rewriteHooks see a relayed connection's messages, decoded with the generated codec. request
// observes each request; response may change a response and returns whether it did, in which
// case the relay encodes it again. Either may be nil. They run on the relay's goroutines.
type rewriteHooks struct {
	request  func(key, version int16, req wire.Message)
	response func(key, version int16, resp wire.Message) bool
}

// rewriteRelay forwards Kafka connections to a real broker and lets a test watch requests
// and change responses, so errors are injected into the broker's real answers (the request
// itself was served) rather than answered by a stand-in.
type rewriteRelay struct {
	*relay
	hooks rewriteHooks
	mu    sync.Mutex
	err   error // the first message the relay could not decode
}

func startRewriteRelay(t *testing.T, target string, hooks rewriteHooks) *rewriteRelay {
	rr := &rewriteRelay{hooks: hooks}
	rr.relay = startRelay(t, target, rr.serve)
	t.Cleanup(func() {
		rr.mu.Lock()
		defer rr.mu.Unlock()
		if rr.err != nil {
			t.Errorf("rewrite relay: %v", rr.err)
		}
	})
	return rr
}

func (rr *rewriteRelay) fail(err error) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if rr.err == nil {
		rr.err = err
	}
}

// sent is what a response needs from its request: responses carry only the correlation id.
type sent struct{ key, version int16 }

func (rr *rewriteRelay) serve(c, u net.Conn) {
	var (
		mu      sync.Mutex
		pending = map[int32]sent{}
	)
	go func() {
		defer c.Close()
		defer u.Close()
		for {
			f, err := readFrame(u)
			if err != nil || len(f) < 8 {
				return
			}
			corr := int32(binary.BigEndian.Uint32(f[4:]))
			mu.Lock()
			s, ok := pending[corr]
			delete(pending, corr)
			mu.Unlock()
			if ok {
				f = rr.response(f, s)
			}
			if _, err := c.Write(f); err != nil {
				return
			}
		}
	}()
	defer c.Close()
	defer u.Close()
	for {
		f, err := readFrame(c)
		if err != nil || len(f) < 12 {
			return
		}
		s := sent{int16(binary.BigEndian.Uint16(f[4:])), int16(binary.BigEndian.Uint16(f[6:]))}
		if api := wire.LookupAPI(s.key); api != nil && api.HasVersion(s.version) {
			rr.request(f, s, api)
			mu.Lock()
			pending[int32(binary.BigEndian.Uint32(f[8:]))] = s
			mu.Unlock()
		}
		if _, err := u.Write(f); err != nil {
			return
		}
	}
}

func (rr *rewriteRelay) request(f []byte, s sent, api *wire.API) {
	if rr.hooks.request == nil {
		return
	}
	r := wire.NewReader(f[4:])
	var h wire.RequestHeader
	h.ReadFrom(r, api.RequestHeaderVersion(s.version))
	req := api.NewRequest()
	req.ReadFrom(r, s.version)
	if err := r.Err(); err != nil {
		rr.fail(fmt.Errorf("decoding %s request v%d: %w", api.Name, s.version, err))
		return
	}
	rr.hooks.request(s.key, s.version, req)
}

// response returns frame f, or its re-encoding when the hook changed it.
func (rr *rewriteRelay) response(f []byte, s sent) []byte {
	if rr.hooks.response == nil {
		return f
	}
	api := wire.LookupAPI(s.key)
	hv := api.ResponseHeaderVersion(s.version)
	r := wire.NewReader(f[4:])
	var h wire.ResponseHeader
	h.ReadFrom(r, hv)
	resp := api.NewResponse()
	resp.ReadFrom(r, s.version)
	if err := r.Err(); err != nil {
		rr.fail(fmt.Errorf("decoding %s response v%d: %w", api.Name, s.version, err))
		return f
	}
	if !rr.hooks.response(s.key, s.version, resp) {
		return f
	}
	out := h.AppendTo(make([]byte, 4), hv)
	out = resp.AppendTo(out, s.version)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	return out
}

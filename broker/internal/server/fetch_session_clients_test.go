package server_test

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// fetchTap is a TCP proxy in front of the broker that decodes the Fetch traffic through it, so
// a test can see how a real client uses fetch sessions. The broker advertises the tap's
// address, so every connection of the client goes through it.
type fetchTap struct {
	ln net.Listener

	mu      sync.Mutex
	fetches []tappedFetch
	pending map[*net.TCPConn]map[int32]int // correlation id → index in fetches, per connection
}

type tappedFetch struct {
	version          int16
	sessionID, epoch int32 // the request's
	listed           int   // partitions listed
	respSessionID    int32
	respError        int16
	answered         bool
}

func newFetchTap(t *testing.T) *fetchTap {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return &fetchTap{ln: ln, pending: map[*net.TCPConn]map[int32]int{}}
}

func (tp *fetchTap) serve(t *testing.T, broker string) {
	go func() {
		for {
			c, err := tp.ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", broker)
			if err != nil {
				t.Errorf("tap: %v", err)
				c.Close()
				return
			}
			client := c.(*net.TCPConn)
			go pipeFrames(client, up, func(f []byte) { tp.request(client, f) })
			go pipeFrames(up, client, func(f []byte) { tp.response(client, f) })
		}
	}()
}

// pipeFrames copies size-prefixed frames from src to dst, showing each to inspect.
func pipeFrames(src, dst net.Conn, inspect func(frame []byte)) {
	defer src.Close()
	defer dst.Close()
	var size [4]byte
	for {
		if _, err := io.ReadFull(src, size[:]); err != nil {
			return
		}
		frame := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(src, frame); err != nil {
			return
		}
		inspect(frame)
		if _, err := dst.Write(append(size[:], frame...)); err != nil {
			return
		}
	}
}

func (tp *fetchTap) request(client *net.TCPConn, frame []byte) {
	if len(frame) < 8 || int16(binary.BigEndian.Uint16(frame)) != 1 {
		return
	}
	version := int16(binary.BigEndian.Uint16(frame[2:]))
	r := wire.NewReader(frame)
	var h wire.RequestHeader
	h.ReadFrom(r, wire.LookupAPI(1).RequestHeaderVersion(version))
	var req wire.FetchRequest
	req.ReadFrom(r, version)
	if r.Err() != nil {
		return
	}
	f := tappedFetch{version: version, sessionID: req.SessionId, epoch: req.SessionEpoch}
	for _, t := range req.Topics {
		f.listed += len(t.Partitions)
	}
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if tp.pending[client] == nil {
		tp.pending[client] = map[int32]int{}
	}
	tp.pending[client][h.CorrelationId] = len(tp.fetches)
	tp.fetches = append(tp.fetches, f)
}

func (tp *fetchTap) response(client *net.TCPConn, frame []byte) {
	if len(frame) < 4 {
		return
	}
	corr := int32(binary.BigEndian.Uint32(frame))
	tp.mu.Lock()
	defer tp.mu.Unlock()
	i, ok := tp.pending[client][corr]
	if !ok {
		return
	}
	delete(tp.pending[client], corr)
	f := &tp.fetches[i]
	r := wire.NewReader(frame)
	var h wire.ResponseHeader
	h.ReadFrom(r, wire.LookupAPI(1).ResponseHeaderVersion(f.version))
	var resp wire.FetchResponse
	resp.ReadFrom(r, f.version)
	if r.Err() != nil {
		return
	}
	f.respError, f.respSessionID, f.answered = resp.ErrorCode, resp.SessionId, true
}

func (tp *fetchTap) snapshot() []tappedFetch {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return append([]tappedFetch(nil), tp.fetches...)
}

// franz-go, which uses fetch sessions by default, gets one from us and keeps fetching
// incrementally in it: later fetches carry the session id with rising epochs and list fewer
// partitions than the session holds, with no session errors, and every record arrives.
func TestFranzGoUsesFetchSessions(t *testing.T) {
	parallel(t)
	tap := newFetchTap(t)
	b := brokertest.Start(t, brokertest.Options{Props: map[string]string{"advertised.listeners": tap.ln.Addr().String()}})
	tap.serve(t, b.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	c := dial(t, b.Addr)
	const topic, parts = "sessions", 4
	createTopic(t, c, topic, parts, nil)
	for p := int32(0); p < parts; p++ {
		produce(t, c, topic, p, buildBatch(t, 5, nil))
	}

	cons, err := kgo.NewClient(kgo.SeedBrokers(tap.ln.Addr().String()), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := 0
	for round := 1; round <= 3; round++ {
		for got < round*parts*5 {
			fs := cons.PollFetches(ctx)
			if err := fs.Err(); err != nil {
				t.Fatalf("poll: %v (have %d records)", err, got)
			}
			got += fs.NumRecords()
		}
		if round < 3 {
			// New records on one partition only: an incremental fetch answers just that one.
			produce(t, c, topic, int32(round), buildBatch(t, parts*5, nil))
		}
	}

	fetches := tap.snapshot()
	var opened int32
	incremental, partial := 0, 0
	lastEpoch := int32(0)
	for i, f := range fetches {
		if !f.answered {
			continue
		}
		if f.respError != 0 {
			t.Fatalf("fetch %d (session %d epoch %d): error %v", i, f.sessionID, f.epoch, wire.ErrorForCode(f.respError))
		}
		switch {
		case f.sessionID == 0 && f.epoch == 0 && opened == 0:
			opened = f.respSessionID
			if opened == 0 {
				t.Fatalf("fetch %d opened no session", i)
			}
		case opened != 0 && f.sessionID == opened:
			if f.epoch != lastEpoch+1 {
				t.Fatalf("fetch %d in session %d at epoch %d after %d", i, opened, f.epoch, lastEpoch)
			}
			lastEpoch = f.epoch
			incremental++
			if f.listed < parts {
				partial++
			}
			if f.respSessionID != opened {
				t.Fatalf("incremental fetch %d answered session %d, want %d", i, f.respSessionID, opened)
			}
		}
	}
	if opened == 0 || incremental < 2 || partial == 0 {
		t.Fatalf("franz-go did not fetch incrementally: session %d, %d incremental fetches (%d listing fewer than %d partitions) of %d",
			opened, incremental, partial, parts, len(fetches))
	}
}

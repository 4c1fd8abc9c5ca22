package conformance_test

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// startRewriteProxy listens on loopback and forwards each connection to target, rewriting
// every Produce response's partition error code from to into to: a broker that returns a
// wrong error code. Requests that get no response (Produce with acks=0) would confuse it; the
// cases run through it do not send any.
func startRewriteProxy(t *testing.T, target string, from, to int16) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			broker, err := net.Dial("tcp", target)
			if err != nil {
				client.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, client, broker)
			mu.Unlock()
			type sent struct{ key, version int16 }
			pending := make(chan sent, 4096)
			wg.Add(2)
			go func() { // client to broker: note each request's API and version
				defer wg.Done()
				defer broker.Close()
				for {
					frame, err := readFrame(client)
					if err != nil {
						return
					}
					if len(frame) >= 8 {
						pending <- sent{int16(binary.BigEndian.Uint16(frame[4:])), int16(binary.BigEndian.Uint16(frame[6:]))}
					}
					if _, err := broker.Write(frame); err != nil {
						return
					}
				}
			}()
			go func() { // broker to client: rewrite Produce responses
				defer wg.Done()
				defer client.Close()
				for {
					frame, err := readFrame(broker)
					if err != nil {
						return
					}
					s := <-pending
					if s.key == wire.KeyProduce {
						frame = rewriteProduce(frame, s.version, from, to)
					}
					if _, err := client.Write(frame); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 256<<20 {
		return nil, errors.New("frame too large")
	}
	frame := make([]byte, 4+n)
	copy(frame, size[:])
	_, err := io.ReadFull(r, frame[4:])
	return frame, err
}

// rewriteProduce decodes a Produce response frame, replaces the error code from with to in
// every partition, and encodes it again.
func rewriteProduce(frame []byte, v, from, to int16) []byte {
	hv := wire.LookupAPI(wire.KeyProduce).ResponseHeaderVersion(v)
	r := wire.NewReader(frame[4:])
	var h wire.ResponseHeader
	h.ReadFrom(r, hv)
	var resp wire.ProduceResponse
	if r.Err() != nil || resp.Decode(r.Rest(), v) != nil {
		return frame
	}
	for i := range resp.Responses {
		for j := range resp.Responses[i].PartitionResponses {
			if p := &resp.Responses[i].PartitionResponses[j]; p.ErrorCode == from {
				p.ErrorCode = to
			}
		}
	}
	out := h.AppendTo(make([]byte, 4), hv)
	out = resp.AppendTo(out, v)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	return out
}

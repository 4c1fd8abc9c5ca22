package wire_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/spoolmq/spool/protocol-spec/internal/randfill"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// splicedMessage is a message with zero-copy records fields and the way to list them.
type splicedMessage struct {
	msg interface {
		wire.Message
		AppendToSpliced(b []byte, v int16, sp *wire.Splices) []byte
	}
	records func() [][]byte
}

func splicedMessages() map[string]func() splicedMessage {
	return map[string]func() splicedMessage{
		"Produce": func() splicedMessage {
			m := &wire.ProduceRequest{}
			return splicedMessage{m, func() [][]byte {
				var out [][]byte
				for _, t := range m.TopicData {
					for _, p := range t.PartitionData {
						out = append(out, p.Records)
					}
				}
				return out
			}}
		},
		"Fetch": func() splicedMessage {
			m := &wire.FetchResponse{}
			return splicedMessage{m, func() [][]byte {
				var out [][]byte
				for _, t := range m.Responses {
					for _, p := range t.Partitions {
						out = append(out, p.Records)
					}
				}
				return out
			}}
		},
	}
}

// TestSplicedEqualsAppendTo checks, for every message with zero-copy fields at every version,
// that the encoding with the records left out, with the records put back where the Splices
// say, is byte for byte the plain encoding: what a sender writing with writev or sendfile
// puts on the wire is what AppendTo would have.
func TestSplicedEqualsAppendTo(t *testing.T) {
	for name, mk := range splicedMessages() {
		api := wire.LookupAPI(mk().msg.APIKey())
		for v := api.MinVersion; v <= api.MaxVersion; v++ {
			t.Run(fmt.Sprintf("%s/v%d", name, v), func(t *testing.T) {
				for seed := uint64(1); seed <= 20; seed++ {
					sm := mk()
					randfill.New(seed).Fill(sm.msg)
					recs := sm.records()
					if seed == 1 && len(recs) > 0 {
						recs[0] = nil // a null records field
					}
					want := sm.msg.AppendTo([]byte("hdr"), v)
					sp := wire.Splices{}
					for _, r := range recs {
						n := len(r)
						if r == nil {
							n = -1
						}
						sp.Lens = append(sp.Lens, n)
					}
					enc := sm.msg.AppendToSpliced([]byte("hdr"), v, &sp)
					if len(sp.At) != len(recs) {
						t.Fatalf("seed %d: %d places for %d records fields", seed, len(sp.At), len(recs))
					}
					var got []byte
					prev := 0
					for i, at := range sp.At {
						got = append(got, enc[prev:at]...)
						got = append(got, recs[i]...)
						prev = at
					}
					got = append(got, enc[prev:]...)
					if !bytes.Equal(got, want) {
						t.Fatalf("seed %d: spliced encoding differs\n got %x\nwant %x", seed, got, want)
					}
				}
			})
		}
	}
}

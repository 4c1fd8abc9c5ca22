package wire_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spoolmq/spool/protocol-spec/internal/randfill"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// kmsgCodec is the part of kmsg's message interface the cross-check uses.
type kmsgCodec interface {
	SetVersion(int16)
	AppendTo([]byte) []byte
	ReadFrom([]byte) error
}

func pairs(api *wire.API) []struct {
	side   string
	ours   func() wire.Message
	theirs func() kmsgCodec
} {
	return []struct {
		side   string
		ours   func() wire.Message
		theirs func() kmsgCodec
	}{
		{"request", api.NewRequest, func() kmsgCodec { return kmsg.RequestForKey(api.Key) }},
		{"response", api.NewResponse, func() kmsgCodec { return kmsg.ResponseForKey(api.Key) }},
	}
}

const crossCheckRounds = 25

// TestKmsgAgreement proves byte-for-byte agreement with franz-go's kmsg (an implementation we
// did not write, itself checked against Apache Kafka) for randomly populated messages of every
// API at every version of the window, in both directions.
func TestKmsgAgreement(t *testing.T) {
	if len(wire.APIs) != len(designWindow) {
		t.Fatalf("the window has %d APIs, want %d", len(wire.APIs), len(designWindow))
	}
	for i := range wire.APIs {
		api := &wire.APIs[i]
		for _, p := range pairs(api) {
			if p.theirs() == nil {
				t.Fatalf("kmsg has no %s for key %d", p.side, api.Key)
			}
			for v := api.MinVersion; v <= api.MaxVersion; v++ {
				t.Run(fmt.Sprintf("%s/%s/v%d", api.Name, p.side, v), func(t *testing.T) {
					for round := range crossCheckRounds {
						seed := uint64(api.Key)<<32 | uint64(v)<<16 | uint64(round)
						oursToKmsg(t, p.ours, p.theirs, v, seed)
						kmsgToOurs(t, p.ours, p.theirs, v, seed)
					}
				})
			}
		}
	}
}

// oursToKmsg encodes a random message of ours, decodes it with kmsg and checks that kmsg
// encodes it back to the same bytes.
func oursToKmsg(t *testing.T, ours func() wire.Message, theirs func() kmsgCodec, v int16, seed uint64) {
	t.Helper()
	m := ours()
	randfill.New(seed).Fill(m)
	b := m.AppendTo(nil, v)
	k := theirs()
	k.SetVersion(v)
	if err := k.ReadFrom(b); err != nil {
		t.Fatalf("seed %d: kmsg cannot decode our encoding: %v\n%x", seed, err, b)
	}
	if back := k.AppendTo(nil); !bytes.Equal(back, b) {
		t.Fatalf("seed %d: kmsg re-encodes our message differently\nours: %x\nkmsg: %x", seed, b, back)
	}
	// Our own round trip must be stable too.
	m2 := ours()
	if err := m2.Decode(b, v); err != nil {
		t.Fatalf("seed %d: we cannot decode our own encoding: %v", seed, err)
	}
	if again := m2.AppendTo(nil, v); !bytes.Equal(again, b) {
		t.Fatalf("seed %d: our round trip changed the bytes\nfirst:  %x\nsecond: %x", seed, b, again)
	}
}

// kmsgToOurs encodes a random kmsg message, decodes it with ours and checks that we encode it
// back to the same bytes.
func kmsgToOurs(t *testing.T, ours func() wire.Message, theirs func() kmsgCodec, v int16, seed uint64) {
	t.Helper()
	k := theirs()
	randfill.New(seed ^ 0xabcdef).Fill(k)
	k.SetVersion(v)
	b := k.AppendTo(nil)
	m := ours()
	if err := m.Decode(b, v); err != nil {
		t.Fatalf("seed %d: we cannot decode kmsg's encoding: %v\n%x", seed, err, b)
	}
	if back := m.AppendTo(nil, v); !bytes.Equal(back, b) {
		t.Fatalf("seed %d: we re-encode kmsg's message differently\nkmsg: %x\nours: %x", seed, b, back)
	}
}

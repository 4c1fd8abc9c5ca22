package server_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// saslFrame is one request frame with a v1 header (client id "x"): the header of
// SaslHandshake v0-1 and SaslAuthenticate v0-1.
func saslFrame(key, version int16, correlation int32, body []byte) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, key)
	binary.Write(&b, binary.BigEndian, version)
	binary.Write(&b, binary.BigEndian, correlation)
	b.Write([]byte{0, 1, 'x'})
	b.Write(body)
	return append(binary.BigEndian.AppendUint32(nil, uint32(b.Len())), b.Bytes()...)
}

// kafkaString is a non-nullable STRING; kafkaBytes a BYTES field; raw a bare SASL token frame.
func kafkaString(s string) []byte {
	return append(binary.BigEndian.AppendUint16(nil, uint16(len(s))), s...)
}
func kafkaBytes(b []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}
func raw(b []byte) []byte { return kafkaBytes(b) }

// FuzzSASLSession sends arbitrary bytes to a SASL_PLAINTEXT listener, where the handshake,
// the tokens (framed by SaslAuthenticate after a v1 handshake, bare after a v0 one) and the
// requests after them belong: the broker never panics, closes the connection once the client
// stops, and goes on authenticating real clients.
func FuzzSASLSession(f *testing.F) {
	b, _ := saslBroker(f)
	addr := b.Listener(f, "SASL_PLAINTEXT")
	token := []byte("\x00alice\x00alice-secret")
	v1 := append(saslFrame(17, 1, 1, kafkaString("PLAIN")), saslFrame(36, 0, 2, kafkaBytes(token))...)
	v0 := append(saslFrame(17, 0, 1, kafkaString("PLAIN")), raw(token)...)
	f.Add(v1)
	f.Add(append(bytes.Clone(v1), saslFrame(3, 1, 3, []byte{0, 0, 0, 0})...)) // then Metadata v1, no topics
	f.Add(v0)
	f.Add(append(bytes.Clone(v0), saslFrame(3, 1, 3, []byte{0, 0, 0, 0})...))
	f.Add(append(saslFrame(17, 0, 1, kafkaString("PLAIN")), 0x7f, 0xff, 0xff, 0xff)) // a raw token claiming 2 GiB
	f.Add(saslFrame(36, 1, 1, kafkaBytes(token)))                                    // a token before the handshake
	f.Add(append(saslFrame(17, 1, 1, kafkaString("SCRAM-SHA-512")), saslFrame(36, 1, 2, kafkaBytes([]byte("n,,n=alice,r=abc")))...))
	f.Add(v1[:len(v1)-3])
	f.Fuzz(func(t *testing.T, data []byte) {
		sendAndClose(t, addr, data)
		// The listener still authenticates a real client, and still refuses a wrong password.
		if err := metadataErr(t, kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())); err != nil {
			t.Fatalf("a real SASL client after %x: %v", data[:min(len(data), 16)], err)
		}
		if err := metadataErr(t, kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: "alice", Pass: "guess"}.AsMechanism())); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("a wrong password after %x: %v, want SASL_AUTHENTICATION_FAILED", data[:min(len(data), 16)], err)
		}
	})
}

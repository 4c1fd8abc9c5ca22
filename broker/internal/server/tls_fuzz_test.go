package server_test

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/broker/brokertest/testca"
)

// clientHello is the first flight of a real TLS client: what the broker's SSL listener reads
// before anything else.
func clientHello(t testing.TB, ca *testca.CA) []byte {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go tls.Client(a, &tls.Config{ServerName: "127.0.0.1", RootCAs: ca.Pool()}).Handshake()
	b.SetReadDeadline(time.Now().Add(10 * time.Second))
	var hdr [5]byte
	if _, err := io.ReadFull(b, hdr[:]); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, binary.BigEndian.Uint16(hdr[3:]))
	if _, err := io.ReadFull(b, body); err != nil {
		t.Fatal(err)
	}
	return append(hdr[:], body...)
}

// FuzzTLSHandshake sends arbitrary bytes where a TLS ClientHello belongs: the broker's SSL
// listener answers with TLS records only (a handshake or an alert, never a Kafka response),
// closes the connection once the client stops, and goes on serving real TLS clients.
func FuzzTLSHandshake(f *testing.F) {
	ca := testca.New(f)
	b := brokertest.Start(f, brokertest.Options{Props: sslProps(ca, ca.Server(f, "broker"))})
	addr := b.Listener(f, "SSL")
	hello := clientHello(f, ca)
	f.Add(hello)
	f.Add(hello[:len(hello)/2])
	f.Add(append(bytes.Clone(hello), hello...))
	f.Add([]byte{0, 0, 0, 11, 0, 18, 0, 0, 0, 0, 0, 7, 0, 1, 'x'}) // a plaintext ApiVersions
	f.Add([]byte{22, 3, 1, 0xff, 0xff})                            // a record header claiming 64 KiB
	f.Add([]byte{21, 3, 3, 0, 2, 2, 40})                           // an alert first
	f.Fuzz(func(t *testing.T, data []byte) {
		got := sendAndClose(t, addr, data)
		// TLS record types: change_cipher_spec 20, alert 21, handshake 22.
		if len(got) > 0 && (got[0] < 20 || got[0] > 22) {
			t.Errorf("answered %x to %x: not a TLS record", got[:min(len(got), 16)], data[:min(len(data), 16)])
		}
		// The listener still serves a real client.
		tc, err := tls.DialWithDialer(&net.Dialer{Timeout: 30 * time.Second}, "tcp", addr, &tls.Config{ServerName: "127.0.0.1", RootCAs: ca.Pool()})
		if err != nil {
			t.Fatalf("a real TLS client after %x: %v", data[:min(len(data), 16)], err)
		}
		tc.Close()
	})
}

// sendAndClose sends data on a new connection to addr, half-closes it, and returns what the
// broker answered before closing its side; a broker that does not close within a minute fails
// the test.
func sendAndClose(t *testing.T, addr string, data []byte) []byte {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write(data) // the broker may close before reading it all
	c.(*net.TCPConn).CloseWrite()
	c.SetReadDeadline(time.Now().Add(time.Minute)) // a bound on a hang, not on speed
	got, err := io.ReadAll(c)
	if err != nil && !isReset(err) {
		t.Fatalf("the broker did not close the connection: %v (read %x)", err, got[:min(len(got), 16)])
	}
	return got
}

// isReset says whether err is the peer resetting the connection (it closed with our bytes
// unread), which is a close too.
func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && strings.Contains(op.Err.Error(), "reset")
}

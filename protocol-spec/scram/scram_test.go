package scram

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
)

// RFC 7677 section 3's SCRAM-SHA-256 exchange, byte for byte: user "user", password
// "pencil", the RFC's client nonce. A wrong server signature, a nonce that does not extend
// the client's, too few iterations, a bad salt and a refusal are errors.
func TestClientRFC7677(t *testing.T) {
	const serverFirst = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
	start := func() *Client {
		c := NewClient(SHA256, "user", "pencil")
		c.nonce = "rOprNGfwEbeRWgbNEkqO"
		return c
	}
	c := start()
	first, done, err := c.Step(nil)
	if err != nil || done || string(first) != "n,,n=user,r=rOprNGfwEbeRWgbNEkqO" {
		t.Fatalf("client-first %q %v %v", first, done, err)
	}
	final, done, err := c.Step([]byte(serverFirst))
	want := "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
	if err != nil || done || string(final) != want {
		t.Fatalf("client-final %q %v %v, want %q", final, done, err, want)
	}
	if _, done, err := c.Step([]byte("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")); err != nil || !done {
		t.Fatalf("server-final: %v %v", done, err)
	}

	c = start()
	c.Step(nil)
	c.Step([]byte(serverFirst))
	if _, _, err := c.Step([]byte("v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")); err == nil || !strings.Contains(err.Error(), "signature") {
		t.Errorf("a wrong server signature: %v", err)
	}
	for msg, says := range map[string]string{
		"r=someoneelse,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096":          "nonce",
		"r=rOprNGfwEbeRWgbNEkqO,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096": "nonce",
		"r=rOprNGfwEbeRWgbNEkqOx,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=1":   "iterations",
		"r=rOprNGfwEbeRWgbNEkqOx,s=!!,i=4096":                      "salt",
		"e=unknown-user":                                           "refused",
	} {
		c := start()
		c.Step(nil)
		if _, _, err := c.Step([]byte(msg)); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("server-first %q: %v, want an error about %s", msg, err, says)
		}
	}
	if _, _, err := c.Step(nil); err == nil {
		t.Error("a step after the exchange ended is not an error")
	}
}

// The server's keys from RFC 7677's salted password match the signature the RFC's server sent.
func TestKeys(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	_, serverKey := SHA256.Keys(SHA256.SaltPassword("pencil", salt, 4096))
	auth := "n=user,r=rOprNGfwEbeRWgbNEkqO,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
	if got := base64.StdEncoding.EncodeToString(SHA256.HMAC(serverKey, []byte(auth))); got != "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=" {
		t.Errorf("server signature %s", got)
	}
	salt, salted, err := NewSaltedPassword(SHA512, "pencil", 4096)
	if err != nil || len(salt) != 32 || !bytes.Equal(salted, SHA512.SaltPassword("pencil", salt, 4096)) {
		t.Errorf("NewSaltedPassword: %x %x %v", salt, salted, err)
	}
	for _, bad := range []struct {
		m    Mechanism
		iter int
	}{{3, 4096}, {SHA256, 4095}, {SHA256, MaxIterations + 1}} {
		if _, _, err := NewSaltedPassword(bad.m, "x", bad.iter); err == nil {
			t.Errorf("NewSaltedPassword(%v, %d) is not an error", bad.m, bad.iter)
		}
	}
}

func TestNames(t *testing.T) {
	for _, name := range []string{"a=b,c", "plain", "=,=,", ""} {
		got, ok := UnescapeName(EscapeName(name))
		if !ok || got != name {
			t.Errorf("%q escaped and back: %q %v", name, got, ok)
		}
	}
	if EscapeName("a=b,c") != "a=3Db=2Cc" {
		t.Errorf("EscapeName: %q", EscapeName("a=b,c"))
	}
	if _, ok := UnescapeName("a=4Fb"); ok {
		t.Error("an '=' escaping nothing is accepted")
	}
	for name, want := range map[string]Mechanism{"SCRAM-SHA-256": SHA256, "scram-sha-512": SHA512} {
		if m, err := ParseMechanism(name); err != nil || m != want || !m.Valid() {
			t.Errorf("ParseMechanism(%q) = %v %v", name, m, err)
		}
	}
	if _, err := ParseMechanism("PLAIN"); err == nil {
		t.Error("ParseMechanism(PLAIN) is not an error")
	}
}

package spool

import (
	"strings"
	"testing"
)

// RFC 7677 section 3's SCRAM-SHA-256 exchange, byte for byte: user "user", password
// "pencil", the RFC's client nonce. A wrong server signature, a nonce that does not extend
// the client's and too few iterations are refused.
func TestScramRFC7677(t *testing.T) {
	const serverFirst = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
	start := func() *scramExchange {
		return &scramExchange{m: scramMechanism{mech: ScramSHA256, user: "user", pass: "pencil"}, nonce: "rOprNGfwEbeRWgbNEkqO"}
	}
	e := start()
	first, done, err := e.next(nil)
	if err != nil || done || string(first) != "n,,n=user,r=rOprNGfwEbeRWgbNEkqO" {
		t.Fatalf("client-first %q %v %v", first, done, err)
	}
	final, done, err := e.next([]byte(serverFirst))
	want := "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
	if err != nil || done || string(final) != want {
		t.Fatalf("client-final %q %v %v, want %q", final, done, err, want)
	}
	if _, done, err := e.next([]byte("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")); err != nil || !done {
		t.Fatalf("server-final: %v %v", done, err)
	}

	e = start()
	e.next(nil)
	e.next([]byte(serverFirst))
	if _, _, err := e.next([]byte("v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")); err == nil || !strings.Contains(err.Error(), "signature") {
		t.Errorf("a wrong server signature: %v", err)
	}
	for msg, says := range map[string]string{
		"r=someoneelse,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096":          "nonce",
		"r=rOprNGfwEbeRWgbNEkqO,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096": "nonce",
		"r=rOprNGfwEbeRWgbNEkqOx,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=1":   "iterations",
		"r=rOprNGfwEbeRWgbNEkqOx,s=!!,i=4096":                      "salt",
		"e=unknown-user":                                           "refused",
	} {
		e := start()
		e.next(nil)
		if _, _, err := e.next([]byte(msg)); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("server-first %q: %v, want an error about %s", msg, err, says)
		}
	}
	// User names escape '=' and ','.
	e = &scramExchange{m: scramMechanism{mech: ScramSHA512, user: "a=b,c"}}
	if first, _, _ := e.next(nil); !strings.HasPrefix(string(first), "n,,n=a=3Db=2Cc,r=") {
		t.Errorf("escaped user: %q", first)
	}
}

package security

import (
	"bytes"
	"encoding/base64"
	"errors"
	"testing"

	"github.com/spoolmq/spool/protocol-spec/scram"
)

// scramClient runs the protocol's SCRAM client (the one the SDK and the brokers use) against
// srv: the server's principal, or the server's refusal.
func scramClient(t *testing.T, m scram.Mechanism, srv *ScramServer, user, password string) (string, error) {
	t.Helper()
	c := scram.NewClient(m, user, password)
	var server []byte
	for {
		msg, done, err := c.Step(server)
		if err != nil {
			t.Fatalf("the client refused the server's answer %q: %v", server, err)
		}
		if done {
			return srv.Principal(), nil
		}
		if server, _, err = srv.Next(msg); err != nil {
			return "", err
		}
	}
}

func TestScramExchange(t *testing.T) {
	for _, m := range []scram.Mechanism{scram.SHA256, scram.SHA512} {
		salt := []byte("0123456789abcdef")
		cred := CredentialFromSalted(m, salt, m.SaltPassword("pencil", salt, 4096), 4096)
		lookup := func(user string, mech scram.Mechanism) (ScramCredential, bool) {
			return cred, user == "user" && mech == m
		}
		p, err := scramClient(t, m, NewScramServer(m, lookup), "user", "pencil")
		if err != nil || p != "User:user" {
			t.Errorf("%s: %q %v", m, p, err)
		}
		for name, c := range map[string]struct{ user, pass string }{"wrong password": {"user", "pen"}, "unknown user": {"nobody", "pencil"}} {
			if _, err := scramClient(t, m, NewScramServer(m, lookup), c.user, c.pass); !errors.Is(err, ErrAuthentication) {
				t.Errorf("%s %s: %v", m, name, err)
			}
		}
	}
}

// RFC 7677's SCRAM-SHA-256 example: the salted password of "pencil" gives these keys.
func TestScramRFC7677Keys(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	c := CredentialFromSalted(scram.SHA256, salt, scram.SHA256.SaltPassword("pencil", salt, 4096), 4096)
	// StoredKey and ServerKey follow from the RFC's SaltedPassword; checked by round trip
	// through Kafka's encoding.
	back, err := ParseScramCredential(c.String())
	if err != nil || !bytes.Equal(back.StoredKey, c.StoredKey) || !bytes.Equal(back.ServerKey, c.ServerKey) || back.Iterations != 4096 {
		t.Fatalf("round trip: %+v %v", back, err)
	}
	// The RFC's exchange, with its nonces: the client proof it lists must verify.
	first := "n=user,r=rOprNGfwEbeRWgbNEkqO"
	sfirst := "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
	final := "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
	proof, _ := base64.StdEncoding.DecodeString("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
	auth := []byte(first + "," + sfirst + "," + final)
	sig := scram.SHA256.HMAC(c.StoredKey, auth)
	key := make([]byte, len(proof))
	for i := range key {
		key[i] = proof[i] ^ sig[i]
	}
	if !bytes.Equal(scram.SHA256.H(key), c.StoredKey) {
		t.Error("RFC 7677's client proof does not verify against the derived StoredKey")
	}
	if got := base64.StdEncoding.EncodeToString(scram.SHA256.HMAC(c.ServerKey, auth)); got != "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=" {
		t.Errorf("server signature %s, want RFC 7677's", got)
	}
}

// FuzzScramServer feeds arbitrary client messages to the server side: never a panic, and
// never an authentication without the password.
func FuzzScramServer(f *testing.F) {
	f.Add([]byte("n,,n=user,r=abc"), []byte("c=biws,r=abcXYZ,p=AAAA"))
	f.Add([]byte("y,a=user,n=user,r=x"), []byte("c=eSxhPXVzZXIs,r=x,p="))
	f.Add([]byte("p=tls-unique,,n=u,r=1"), []byte(""))
	f.Add([]byte("n,,n=us=2Cer,r=abc,e=1"), []byte("c=biws,r=abc,p=,p=AAAA"))
	salt := []byte("salt")
	cred := CredentialFromSalted(scram.SHA512, salt, scram.SHA512.SaltPassword("secret", salt, 4096), 4096)
	lookup := func(string, scram.Mechanism) (ScramCredential, bool) { return cred, true }
	f.Fuzz(func(t *testing.T, first, final []byte) {
		s := NewScramServer(scram.SHA512, lookup)
		if _, done, err := s.Next(first); err != nil || done {
			return
		}
		if _, done, err := s.Next(final); err == nil || done {
			t.Fatalf("authenticated without the password: %q %q", first, final)
		}
	})
}

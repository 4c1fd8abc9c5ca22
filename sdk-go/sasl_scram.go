package spool

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// SCRAM (RFC 5802; SHA-256 from RFC 7677, SHA-512 as Kafka names it), client side, without
// channel binding ("n,,"), as Kafka's ScramSaslClient. The password is used as given (Kafka
// does not apply SASLprep either).

// ScramMechanism is a SCRAM mechanism, numbered as AlterUserScramCredentials numbers it.
type ScramMechanism int8

// The SCRAM mechanisms.
const (
	ScramSHA256 ScramMechanism = 1
	ScramSHA512 ScramMechanism = 2
)

// Kafka's bounds on the iteration count of a SCRAM credential. The client refuses a server
// asking for fewer than the minimum: a broker that cheap to fool is not one to trust.
const (
	ScramMinIterations = 4096
	ScramMaxIterations = 16384
)

func (m ScramMechanism) String() string {
	switch m {
	case ScramSHA256:
		return "SCRAM-SHA-256"
	case ScramSHA512:
		return "SCRAM-SHA-512"
	}
	return fmt.Sprintf("ScramMechanism(%d)", int8(m))
}

// ParseScramMechanism reads SCRAM-SHA-256 or SCRAM-SHA-512 (case-insensitive).
func ParseScramMechanism(s string) (ScramMechanism, error) {
	switch strings.ToUpper(s) {
	case "SCRAM-SHA-256":
		return ScramSHA256, nil
	case "SCRAM-SHA-512":
		return ScramSHA512, nil
	}
	return 0, fmt.Errorf("unknown SCRAM mechanism %q (want SCRAM-SHA-256 or SCRAM-SHA-512)", s)
}

func (m ScramMechanism) hash() func() hash.Hash {
	if m == ScramSHA512 {
		return sha512.New
	}
	return sha256.New
}

func (m ScramMechanism) hmac(key []byte, msg string) []byte {
	h := hmac.New(m.hash(), key)
	h.Write([]byte(msg))
	return h.Sum(nil)
}

// saltedPassword is Hi(password, salt, iterations): PBKDF2 with the mechanism's HMAC.
func (m ScramMechanism) saltedPassword(pass string, salt []byte, iterations int) ([]byte, error) {
	return pbkdf2.Key(m.hash(), pass, salt, iterations, m.hash()().Size())
}

type scramMechanism struct {
	mech       ScramMechanism
	user, pass string
}

// SASLScram is SASL SCRAM-SHA-256 or SCRAM-SHA-512 with a user and password. The password
// never crosses the network, and the broker proves it holds the user's credential.
func SASLScram(m ScramMechanism, user, pass string) SASLMechanism {
	return scramMechanism{mech: m, user: user, pass: pass}
}

func (m scramMechanism) Name() string        { return m.mech.String() }
func (m scramMechanism) User() string        { return m.user }
func (m scramMechanism) start() saslExchange { return &scramExchange{m: m} }

type scramExchange struct {
	m           scramMechanism
	step        int
	nonce       string
	clientFirst string // client-first-message-bare
	serverKey   []byte
	authMessage string
}

// scramName escapes a user name for the n= attribute (RFC 5802 section 5.1).
func scramName(s string) string {
	return strings.NewReplacer("=", "=3D", ",", "=2C").Replace(s)
}

func (e *scramExchange) next(server []byte) ([]byte, bool, error) {
	e.step++
	switch e.step {
	case 1:
		var b [24]byte
		rand.Read(b[:])
		e.nonce = base64.RawStdEncoding.EncodeToString(b[:])
		e.clientFirst = "n=" + scramName(e.m.user) + ",r=" + e.nonce
		return []byte("n,," + e.clientFirst), false, nil
	case 2:
		final, err := e.final(string(server))
		return []byte(final), false, err
	case 3:
		return nil, true, e.verify(string(server))
	}
	return nil, false, errors.New("SCRAM: message after the exchange ended")
}

// attrs splits a SCRAM message into its attributes; the first of each name counts.
func scramAttrs(msg string) map[byte]string {
	out := map[byte]string{}
	for _, a := range strings.Split(msg, ",") {
		if len(a) >= 2 && a[1] == '=' {
			if _, ok := out[a[0]]; !ok {
				out[a[0]] = a[2:]
			}
		}
	}
	return out
}

// final answers server-first-message (r=nonce,s=salt,i=iterations) with client-final-message.
func (e *scramExchange) final(serverFirst string) (string, error) {
	a := scramAttrs(serverFirst)
	if msg, ok := a['e']; ok {
		return "", fmt.Errorf("SCRAM: the broker refused: %s", msg)
	}
	nonce, salt64, iter := a['r'], a['s'], a['i']
	if !strings.HasPrefix(nonce, e.nonce) || len(nonce) == len(e.nonce) {
		return "", errors.New("SCRAM: the broker's nonce does not extend the client's")
	}
	salt, err := base64.StdEncoding.DecodeString(salt64)
	if err != nil || len(salt) == 0 {
		return "", fmt.Errorf("SCRAM: bad salt %q from the broker", salt64)
	}
	n, err := strconv.Atoi(iter)
	if err != nil || n < ScramMinIterations || n > 1<<20 {
		return "", fmt.Errorf("SCRAM: the broker asks for %q iterations (want at least %d)", iter, ScramMinIterations)
	}
	salted, err := e.m.mech.saltedPassword(e.m.pass, salt, n)
	if err != nil {
		return "", fmt.Errorf("SCRAM: %w", err)
	}
	withoutProof := "c=biws,r=" + nonce // biws: base64 of the GS2 header "n,,"
	e.authMessage = e.clientFirst + "," + serverFirst + "," + withoutProof
	clientKey := e.m.mech.hmac(salted, "Client Key")
	h := e.m.mech.hash()()
	h.Write(clientKey)
	storedKey := h.Sum(nil)
	signature := e.m.mech.hmac(storedKey, e.authMessage)
	proof := make([]byte, len(clientKey))
	subtle.XORBytes(proof, clientKey, signature)
	e.serverKey = e.m.mech.hmac(salted, "Server Key")
	return withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof), nil
}

// verify checks server-final-message: the broker proves it knows the credential.
func (e *scramExchange) verify(serverFinal string) error {
	a := scramAttrs(serverFinal)
	if msg, ok := a['e']; ok {
		return fmt.Errorf("SCRAM: the broker refused: %s", msg)
	}
	got, err := base64.StdEncoding.DecodeString(a['v'])
	if err != nil || !hmac.Equal(got, e.m.mech.hmac(e.serverKey, e.authMessage)) {
		return errors.New("SCRAM: the broker's signature is wrong: it does not hold this user's credential")
	}
	return nil
}

// newScramCredential is what AlterUserScramCredentials sends for a user: a random salt and
// the salted password, never the password itself.
func newScramCredential(m ScramMechanism, pass string, iterations int) (salt, salted []byte, err error) {
	if m != ScramSHA256 && m != ScramSHA512 {
		return nil, nil, fmt.Errorf("unknown SCRAM mechanism %d", m)
	}
	if iterations < ScramMinIterations || iterations > ScramMaxIterations {
		return nil, nil, fmt.Errorf("iterations %d outside [%d, %d]", iterations, ScramMinIterations, ScramMaxIterations)
	}
	salt = make([]byte, 32)
	rand.Read(salt)
	salted, err = m.saltedPassword(pass, salt, iterations)
	return salt, salted, err
}

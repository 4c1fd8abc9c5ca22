// Package scram is SASL SCRAM as Kafka speaks it (RFC 5802; SHA-256 from RFC 7677, and
// SHA-512 under the same rules): the mechanisms with the numbers the SCRAM-credential APIs
// give them, Kafka's iteration bounds, the key derivation, RFC 5802's escaping of user names,
// and the client side of an exchange.
//
// It is the one implementation the Go SDK (its SASL option and the SCRAM user admin calls),
// the broker's connections to its peers and the broker's server side
// (broker/internal/security, which keeps salted credentials only) share. As in Kafka, no
// channel binding ("n,,") and no SASLprep: a password is used as given.
package scram

import (
	"bytes"
	"crypto/hmac"
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

// Mechanism is a SCRAM mechanism, numbered as DescribeUserScramCredentials and
// AlterUserScramCredentials number it.
type Mechanism int8

// The mechanisms Kafka offers.
const (
	SHA256 Mechanism = 1
	SHA512 Mechanism = 2
)

// Kafka's bounds on a credential's iteration count. A client refuses a server asking for
// fewer than MinIterations: a credential that cheap to guess is not one to prove.
const (
	MinIterations = 4096
	MaxIterations = 16384
)

func (m Mechanism) String() string {
	switch m {
	case SHA256:
		return "SCRAM-SHA-256"
	case SHA512:
		return "SCRAM-SHA-512"
	}
	return fmt.Sprintf("SCRAM(%d)", int8(m))
}

// Valid says whether m is one of the mechanisms.
func (m Mechanism) Valid() bool { return m == SHA256 || m == SHA512 }

// ParseMechanism reads a mechanism's SASL name, SCRAM-SHA-256 or SCRAM-SHA-512, in any case.
func ParseMechanism(name string) (Mechanism, error) {
	switch strings.ToUpper(name) {
	case "SCRAM-SHA-256":
		return SHA256, nil
	case "SCRAM-SHA-512":
		return SHA512, nil
	}
	return 0, fmt.Errorf("unknown SCRAM mechanism %q (want SCRAM-SHA-256 or SCRAM-SHA-512)", name)
}

func (m Mechanism) newHash() hash.Hash {
	if m == SHA512 {
		return sha512.New()
	}
	return sha256.New()
}

// HMAC is RFC 5802's HMAC(key, msg) with the mechanism's hash.
func (m Mechanism) HMAC(key, msg []byte) []byte {
	h := hmac.New(m.newHash, key)
	h.Write(msg)
	return h.Sum(nil)
}

// H is RFC 5802's H(msg), the mechanism's hash.
func (m Mechanism) H(msg []byte) []byte {
	h := m.newHash()
	h.Write(msg)
	return h.Sum(nil)
}

// SaltPassword is RFC 5802's Hi(password, salt, iterations): PBKDF2 with the mechanism's HMAC,
// one block long.
func (m Mechanism) SaltPassword(password string, salt []byte, iterations int) []byte {
	u := m.HMAC([]byte(password), append(bytes.Clone(salt), 0, 0, 0, 1))
	out := bytes.Clone(u)
	for i := 1; i < iterations; i++ {
		u = m.HMAC([]byte(password), u)
		subtle.XORBytes(out, out, u)
	}
	return out
}

// Keys derives what a server keeps from a salted password: StoredKey = H(HMAC(salted,
// "Client Key")) and ServerKey = HMAC(salted, "Server Key").
func (m Mechanism) Keys(salted []byte) (storedKey, serverKey []byte) {
	return m.H(m.HMAC(salted, []byte("Client Key"))), m.HMAC(salted, []byte("Server Key"))
}

// NewSaltedPassword is what AlterUserScramCredentials carries for a new password: a random
// 32-byte salt and the salted password, never the password itself.
func NewSaltedPassword(m Mechanism, password string, iterations int) (salt, salted []byte, err error) {
	if !m.Valid() {
		return nil, nil, fmt.Errorf("unknown SCRAM mechanism %d", m)
	}
	if iterations < MinIterations || iterations > MaxIterations {
		return nil, nil, fmt.Errorf("iterations %d outside [%d, %d]", iterations, MinIterations, MaxIterations)
	}
	salt = make([]byte, 32)
	rand.Read(salt)
	return salt, m.SaltPassword(password, salt, iterations), nil
}

// EscapeName writes a user name as RFC 5802's saslname ('=' as "=3D", ',' as "=2C").
func EscapeName(s string) string {
	return strings.NewReplacer("=", "=3D", ",", "=2C").Replace(s)
}

// UnescapeName reads a saslname; false when it holds an '=' that escapes nothing.
func UnescapeName(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}

// Client is the client side of one exchange: client-first, client-final, then the check of the
// server's signature. It is not safe for concurrent use; one Client serves one exchange.
type Client struct {
	mech        Mechanism
	user, pass  string
	step        int
	nonce       string
	clientFirst string // client-first-message-bare
	serverKey   []byte
	authMessage string
}

// NewClient starts an exchange for user with password.
func NewClient(m Mechanism, user, password string) *Client {
	return &Client{mech: m, user: user, pass: password}
}

// Step takes the server's last message (nil at first) and returns the client's next one;
// done reports that the server proved it holds the user's credential, after which there is
// nothing more to send. A server's refusal (e=...) or a broken answer is an error.
func (c *Client) Step(server []byte) (msg []byte, done bool, err error) {
	c.step++
	switch c.step {
	case 1:
		if c.nonce == "" {
			var b [24]byte
			rand.Read(b[:])
			c.nonce = base64.RawStdEncoding.EncodeToString(b[:])
		}
		c.clientFirst = "n=" + EscapeName(c.user) + ",r=" + c.nonce
		return []byte("n,," + c.clientFirst), false, nil
	case 2:
		final, err := c.final(string(server))
		return []byte(final), false, err
	case 3:
		return nil, true, c.verify(string(server))
	}
	return nil, false, errors.New("SCRAM: message after the exchange ended")
}

// attrs splits a SCRAM message into its attributes; the first of each name counts.
func attrs(msg string) map[byte]string {
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
func (c *Client) final(serverFirst string) (string, error) {
	a := attrs(serverFirst)
	if msg, ok := a['e']; ok {
		return "", fmt.Errorf("SCRAM: the server refused: %s", msg)
	}
	nonce, salt64, iter := a['r'], a['s'], a['i']
	if !strings.HasPrefix(nonce, c.nonce) || len(nonce) == len(c.nonce) {
		return "", errors.New("SCRAM: the server's nonce does not extend the client's")
	}
	salt, err := base64.StdEncoding.DecodeString(salt64)
	if err != nil || len(salt) == 0 {
		return "", fmt.Errorf("SCRAM: bad salt %q from the server", salt64)
	}
	// Above Kafka's maximum is refused too: a server could otherwise make the client spin.
	n, err := strconv.Atoi(iter)
	if err != nil || n < MinIterations || n > 1<<20 {
		return "", fmt.Errorf("SCRAM: the server asks for %q iterations (want at least %d)", iter, MinIterations)
	}
	salted := c.mech.SaltPassword(c.pass, salt, n)
	withoutProof := "c=biws,r=" + nonce // biws: base64 of the GS2 header "n,,"
	c.authMessage = c.clientFirst + "," + serverFirst + "," + withoutProof
	clientKey := c.mech.HMAC(salted, []byte("Client Key"))
	signature := c.mech.HMAC(c.mech.H(clientKey), []byte(c.authMessage))
	proof := make([]byte, len(clientKey))
	subtle.XORBytes(proof, clientKey, signature)
	c.serverKey = c.mech.HMAC(salted, []byte("Server Key"))
	return withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof), nil
}

// verify checks server-final-message: the server proves it knows the credential.
func (c *Client) verify(serverFinal string) error {
	a := attrs(serverFinal)
	if msg, ok := a['e']; ok {
		return fmt.Errorf("SCRAM: the server refused: %s", msg)
	}
	got, err := base64.StdEncoding.DecodeString(a['v'])
	if err != nil || !hmac.Equal(got, c.mech.HMAC(c.serverKey, []byte(c.authMessage))) {
		return errors.New("SCRAM: the server's signature is wrong: it does not hold this user's credential")
	}
	return nil
}

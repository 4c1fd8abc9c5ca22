package security

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

// SCRAM (RFC 5802, with RFC 7677's SHA-256 and Kafka's SHA-512), server side, as Kafka's
// ScramSaslServer: salted credentials only (salt, StoredKey, ServerKey, iterations), never a
// password; no channel binding; iterations from 4096 to 16384.

// ScramMechanism is a SCRAM mechanism, numbered as AlterUserScramCredentials numbers it.
type ScramMechanism int8

// The mechanisms.
const (
	ScramSHA256 ScramMechanism = 1
	ScramSHA512 ScramMechanism = 2
)

// Iteration bounds of Kafka's ScramMechanism.
const (
	MinScramIterations = 4096
	MaxScramIterations = 16384
)

// ScramMechanisms by their SASL names.
var ScramMechanisms = map[string]ScramMechanism{"SCRAM-SHA-256": ScramSHA256, "SCRAM-SHA-512": ScramSHA512}

func (m ScramMechanism) String() string {
	switch m {
	case ScramSHA256:
		return "SCRAM-SHA-256"
	case ScramSHA512:
		return "SCRAM-SHA-512"
	}
	return fmt.Sprintf("ScramMechanism(%d)", int8(m))
}

func (m ScramMechanism) hash() func() hash.Hash {
	if m == ScramSHA512 {
		return sha512.New
	}
	return sha256.New
}

// ScramCredential is what the broker keeps of a user's password for one mechanism.
type ScramCredential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int
}

func (m ScramMechanism) hmac(key, msg []byte) []byte {
	h := hmac.New(m.hash(), key)
	h.Write(msg)
	return h.Sum(nil)
}

func (m ScramMechanism) h(msg []byte) []byte {
	h := m.hash()()
	h.Write(msg)
	return h.Sum(nil)
}

// CredentialFromSalted derives the stored credential from a salted password (what
// AlterUserScramCredentials carries): StoredKey = H(HMAC(SaltedPassword, "Client Key")),
// ServerKey = HMAC(SaltedPassword, "Server Key").
func (m ScramMechanism) CredentialFromSalted(salt, salted []byte, iterations int) ScramCredential {
	return ScramCredential{Salt: bytes.Clone(salt), Iterations: iterations,
		StoredKey: m.h(m.hmac(salted, []byte("Client Key"))), ServerKey: m.hmac(salted, []byte("Server Key"))}
}

// SaltPassword is RFC 5802's Hi(password, salt, iterations) (PBKDF2 with HMAC).
func (m ScramMechanism) SaltPassword(password string, salt []byte, iterations int) []byte {
	u := m.hmac([]byte(password), append(bytes.Clone(salt), 0, 0, 0, 1))
	out := bytes.Clone(u)
	for i := 1; i < iterations; i++ {
		u = m.hmac([]byte(password), u)
		for j := range out {
			out[j] ^= u[j]
		}
	}
	return out
}

// String is Kafka's encoding of a credential in ZooKeeper's /config/users/<user>:
// salt=<base64>,stored_key=<base64>,server_key=<base64>,iterations=<n>.
func (c ScramCredential) String() string {
	b := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("salt=%s,stored_key=%s,server_key=%s,iterations=%d", b(c.Salt), b(c.StoredKey), b(c.ServerKey), c.Iterations)
}

// ParseScramCredential reads ScramCredential.String's format.
func ParseScramCredential(s string) (ScramCredential, error) {
	var c ScramCredential
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return c, fmt.Errorf("SCRAM credential: %q is not key=value", kv)
		}
		var err error
		switch k {
		case "salt":
			c.Salt, err = base64.StdEncoding.DecodeString(v)
		case "stored_key":
			c.StoredKey, err = base64.StdEncoding.DecodeString(v)
		case "server_key":
			c.ServerKey, err = base64.StdEncoding.DecodeString(v)
		case "iterations":
			c.Iterations, err = strconv.Atoi(v)
		}
		if err != nil {
			return c, fmt.Errorf("SCRAM credential %s: %w", k, err)
		}
	}
	if len(c.Salt) == 0 || len(c.StoredKey) == 0 || len(c.ServerKey) == 0 || c.Iterations < MinScramIterations {
		return c, errors.New("SCRAM credential: missing salt, keys or iterations")
	}
	return c, nil
}

// ScramLookup finds a user's credential for a mechanism.
type ScramLookup func(user string, m ScramMechanism) (ScramCredential, bool)

// ScramServer is the server side of one SCRAM exchange: two client messages, two answers.
type ScramServer struct {
	mech   ScramMechanism
	lookup ScramLookup
	step   int
	user   string
	cred   ScramCredential
	gs2    string // the client's GS2 header, echoed in c=
	nonce  string // client nonce + server nonce
	first  string // client-first-message-bare
	sfirst string // server-first-message
}

// NewScramServer starts an exchange for mechanism m.
func NewScramServer(m ScramMechanism, lookup ScramLookup) *ScramServer {
	return &ScramServer{mech: m, lookup: lookup}
}

// Principal is the authenticated principal once Next reported done.
func (s *ScramServer) Principal() string { return "User:" + s.user }

// Next takes one client message and returns the answer; done is true once the client is
// authenticated. Every failure is ErrAuthentication (which says nothing of why).
func (s *ScramServer) Next(msg []byte) (resp []byte, done bool, err error) {
	s.step++
	switch s.step {
	case 1:
		return s.clientFirst(string(msg))
	case 2:
		return s.clientFinal(string(msg))
	}
	return nil, false, ErrAuthentication
}

func (s *ScramServer) clientFirst(msg string) ([]byte, bool, error) {
	// gs2-header: "n,," or "y,," (no channel binding), optionally with "a=authzid".
	parts := strings.SplitN(msg, ",", 3)
	if len(parts) != 3 || (parts[0] != "n" && parts[0] != "y") {
		return nil, false, ErrAuthentication
	}
	s.gs2 = parts[0] + "," + parts[1] + ","
	s.first = parts[2]
	attrs := strings.Split(s.first, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") || len(attrs[1]) < 3 {
		return nil, false, ErrAuthentication
	}
	user, ok := saslName(attrs[0][2:])
	if !ok || user == "" {
		return nil, false, ErrAuthentication
	}
	if authz := parts[1]; authz != "" && authz != "a="+attrs[0][2:] {
		return nil, false, ErrAuthentication
	}
	s.user = user
	cred, ok := s.lookup(user, s.mech)
	if !ok {
		return nil, false, ErrAuthentication
	}
	s.cred = cred
	var nb [24]byte
	rand.Read(nb[:])
	s.nonce = attrs[1][2:] + base64.RawURLEncoding.EncodeToString(nb[:])
	s.sfirst = fmt.Sprintf("r=%s,s=%s,i=%d", s.nonce, base64.StdEncoding.EncodeToString(cred.Salt), cred.Iterations)
	return []byte(s.sfirst), false, nil
}

func (s *ScramServer) clientFinal(msg string) ([]byte, bool, error) {
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return nil, false, ErrAuthentication
	}
	withoutProof, proofB64 := msg[:i], msg[i+3:]
	attrs := strings.Split(withoutProof, ",")
	// The nonce must end with the one sent, as Kafka checks it: librdkafka sends its client
	// nonce again in front of the server's nonce (which already starts with it).
	if len(attrs) < 2 || attrs[0] != "c="+base64.StdEncoding.EncodeToString([]byte(s.gs2)) || !strings.HasPrefix(attrs[1], "r=") ||
		!strings.HasSuffix(attrs[1], s.nonce) {
		return nil, false, ErrAuthentication
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	if err != nil || len(proof) != len(s.cred.StoredKey) {
		return nil, false, ErrAuthentication
	}
	auth := []byte(s.first + "," + s.sfirst + "," + withoutProof)
	sig := s.mech.hmac(s.cred.StoredKey, auth)
	key := make([]byte, len(proof))
	for j := range key {
		key[j] = proof[j] ^ sig[j]
	}
	if subtle.ConstantTimeCompare(s.mech.h(key), s.cred.StoredKey) != 1 {
		return nil, false, ErrAuthentication
	}
	return []byte("v=" + base64.StdEncoding.EncodeToString(s.mech.hmac(s.cred.ServerKey, auth))), true, nil
}

// saslName decodes RFC 5802's saslname (",=" escaped as "=2C" and "=3D").
func saslName(s string) (string, bool) {
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

// ScramStore persists SCRAM credentials: the embedded metadata store on a single node,
// ZooKeeper's /config/users/<user> in a cluster.
type ScramStore interface {
	// ScramCredentials reads every user's credentials.
	ScramCredentials() (map[string]map[ScramMechanism]ScramCredential, error)
	// UpdateScramCredentials replaces one user's credentials by update's result from the
	// current ones (none left: the user is removed).
	UpdateScramCredentials(user string, update func(cur map[ScramMechanism]ScramCredential) map[ScramMechanism]ScramCredential) error
}

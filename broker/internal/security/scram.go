package security

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spoolmq/spool/protocol-spec/scram"
)

// SCRAM (RFC 5802, with RFC 7677's SHA-256 and Kafka's SHA-512), server side, as Kafka's
// ScramSaslServer: salted credentials only (salt, StoredKey, ServerKey, iterations), never a
// password; no channel binding; iterations from 4096 to 16384. The mechanisms, the key
// derivation and the client side are protocol-spec/scram's, shared with the SDK.

// ScramMechanisms by their SASL names.
var ScramMechanisms = map[string]scram.Mechanism{"SCRAM-SHA-256": scram.SHA256, "SCRAM-SHA-512": scram.SHA512}

// ScramCredential is what the broker keeps of a user's password for one mechanism.
type ScramCredential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int
}

// CredentialFromSalted derives the stored credential from a salted password (what
// AlterUserScramCredentials carries): the salt, the iterations, and scram's StoredKey and
// ServerKey.
func CredentialFromSalted(m scram.Mechanism, salt, salted []byte, iterations int) ScramCredential {
	stored, server := m.Keys(salted)
	return ScramCredential{Salt: bytes.Clone(salt), Iterations: iterations, StoredKey: stored, ServerKey: server}
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
	if len(c.Salt) == 0 || len(c.StoredKey) == 0 || len(c.ServerKey) == 0 || c.Iterations < scram.MinIterations {
		return c, errors.New("SCRAM credential: missing salt, keys or iterations")
	}
	return c, nil
}

// ScramLookup finds a user's credential for a mechanism.
type ScramLookup func(user string, m scram.Mechanism) (ScramCredential, bool)

// ScramServer is the server side of one SCRAM exchange: two client messages, two answers.
type ScramServer struct {
	mech   scram.Mechanism
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
func NewScramServer(m scram.Mechanism, lookup ScramLookup) *ScramServer {
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
	user, ok := scram.UnescapeName(attrs[0][2:])
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
	sig := s.mech.HMAC(s.cred.StoredKey, auth)
	key := make([]byte, len(proof))
	for j := range key {
		key[j] = proof[j] ^ sig[j]
	}
	if subtle.ConstantTimeCompare(s.mech.H(key), s.cred.StoredKey) != 1 {
		return nil, false, ErrAuthentication
	}
	return []byte("v=" + base64.StdEncoding.EncodeToString(s.mech.HMAC(s.cred.ServerKey, auth))), true, nil
}

// ScramStore persists SCRAM credentials: the embedded metadata store on a single node,
// ZooKeeper's /config/users/<user> in a cluster.
type ScramStore interface {
	// ScramCredentials reads every user's credentials.
	ScramCredentials() (map[string]map[scram.Mechanism]ScramCredential, error)
	// UpdateScramCredentials replaces one user's credentials by update's result from the
	// current ones (none left: the user is removed).
	UpdateScramCredentials(user string, update func(cur map[scram.Mechanism]ScramCredential) map[scram.Mechanism]ScramCredential) error
}

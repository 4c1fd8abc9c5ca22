package security

import (
	"bytes"
	"crypto/subtle"
	"errors"
)

// ErrAuthentication is every failed authentication: it says nothing of whether the user
// exists, as Kafka's message does not.
var ErrAuthentication = errors.New("Authentication failed: Invalid username or password")

// Plain checks a SASL PLAIN message (RFC 4616: authzid NUL authcid NUL password) against
// users and returns the principal. An authorization id other than empty or the user fails,
// as in Kafka.
func Plain(users map[string]string, msg []byte) (string, error) {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 {
		return "", ErrAuthentication
	}
	authz, user, pass := string(parts[0]), string(parts[1]), parts[2]
	if user == "" || (authz != "" && authz != user) {
		return "", ErrAuthentication
	}
	want, ok := users[user]
	// Compared in constant time, and compared even for an unknown user, so that timing says
	// nothing about which users exist.
	if subtle.ConstantTimeCompare([]byte(want), pass) != 1 || !ok {
		return "", ErrAuthentication
	}
	return "User:" + user, nil
}

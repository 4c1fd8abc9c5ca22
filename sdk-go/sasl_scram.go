package spool

import (
	"github.com/spoolmq/spool/protocol-spec/scram"
)

// SCRAM for the SASL option and the SCRAM user admin calls; the exchange itself is the
// protocol's one implementation in protocol-spec/scram, which the broker shares.

// ScramMechanism is a SCRAM mechanism, numbered as AlterUserScramCredentials numbers it.
type ScramMechanism = scram.Mechanism

// The SCRAM mechanisms.
const (
	ScramSHA256 = scram.SHA256
	ScramSHA512 = scram.SHA512
)

// Kafka's bounds on the iteration count of a SCRAM credential. The client refuses a broker
// asking for fewer than the minimum: a broker that cheap to fool is not one to trust.
const (
	ScramMinIterations = scram.MinIterations
	ScramMaxIterations = scram.MaxIterations
)

// ParseScramMechanism reads SCRAM-SHA-256 or SCRAM-SHA-512 (case-insensitive).
func ParseScramMechanism(s string) (ScramMechanism, error) { return scram.ParseMechanism(s) }

type scramMechanism struct {
	mech       ScramMechanism
	user, pass string
}

// SASLScram is SASL SCRAM-SHA-256 or SCRAM-SHA-512 with a user and password. The password
// never crosses the network, and the broker proves it holds the user's credential.
func SASLScram(m ScramMechanism, user, pass string) SASLMechanism {
	return scramMechanism{mech: m, user: user, pass: pass}
}

func (m scramMechanism) Name() string { return m.mech.String() }
func (m scramMechanism) User() string { return m.user }
func (m scramMechanism) start() saslExchange {
	return scramExchange{scram.NewClient(m.mech, m.user, m.pass)}
}

// scramExchange is a scram.Client as a saslExchange.
type scramExchange struct{ c *scram.Client }

func (e scramExchange) next(server []byte) ([]byte, bool, error) { return e.c.Step(server) }

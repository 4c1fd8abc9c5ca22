package main

import (
	"flag"

	spool "github.com/spoolmq/spool/sdk-go"
	"github.com/spoolmq/spool/sdk-go/clientflags"
)

// The global flags (and profile keys of the same names) that make every connection of the
// CLI speak TLS and SASL are clientflags', which spool-conformance shares.

// securityFlagNames are the global security flags; all but tls take a value.
var securityFlagNames = clientflags.Names

const securityHelp = "--tls (system roots), --tls-ca FILE, --tls-cert FILE --tls-key FILE (mutual TLS) connect over TLS;\n" +
	"--sasl-mechanism PLAIN|SCRAM-SHA-256|SCRAM-SHA-512 --sasl-username U --sasl-password P (else\n" +
	"$SPOOL_SASL_PASSWORD) authenticate with SASL. Each may also be set in the profile (tls-ca=FILE, ...).\n"

type securityFlags struct{ *clientflags.Security }

// addSecurityFlags defines the flags on g, their defaults from the profile (and the password
// from $SPOOL_SASL_PASSWORD before the profile).
func addSecurityFlags(g *flag.FlagSet, profile map[string]string) securityFlags {
	return securityFlags{clientflags.Add(g, profile)}
}

// opts are the SDK options the flags stand for; a bad value or combination is bad usage.
func (s securityFlags) opts() ([]spool.Opt, error) {
	keys, err := s.Keys()
	if err != nil {
		return nil, usageError{msg: err.Error()}
	}
	if keys == nil {
		return nil, nil
	}
	conf, err := spool.NewConfFromMap(keys) // checked by Keys
	if err != nil {
		return nil, usageError{msg: errorText(err)}
	}
	return conf.Opts(), nil
}

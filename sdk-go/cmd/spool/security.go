package main

import (
	"flag"
	"os"
	"strings"

	spool "github.com/spoolmq/spool/sdk-go"
)

// securityFlags are the global flags (and profile keys of the same names) that make every
// connection of the CLI speak TLS and SASL. They become librdkafka's keys of the SDK's one
// table (security.protocol, ssl.*, sasl.*), which checks them.
type securityFlags struct {
	tls                       *bool
	ca, cert, key             *string
	mechanism, user, password *string
}

// securityFlagNames are the global security flags; all but tls take a value.
var securityFlagNames = []string{"tls", "tls-ca", "tls-cert", "tls-key", "sasl-mechanism", "sasl-username", "sasl-password"}

const securityHelp = "--tls (system roots), --tls-ca FILE, --tls-cert FILE --tls-key FILE (mutual TLS) connect over TLS;\n" +
	"--sasl-mechanism PLAIN|SCRAM-SHA-256|SCRAM-SHA-512 --sasl-username U --sasl-password P (else\n" +
	"$SPOOL_SASL_PASSWORD) authenticate with SASL. Each may also be set in the profile (tls-ca=FILE, ...).\n"

// addSecurityFlags defines the flags on g, their defaults from the profile (and the password
// from $SPOOL_SASL_PASSWORD before the profile).
func addSecurityFlags(g *flag.FlagSet, profile map[string]string) *securityFlags {
	pass := os.Getenv("SPOOL_SASL_PASSWORD")
	if pass == "" {
		pass = profile["sasl-password"]
	}
	return &securityFlags{
		tls:       g.Bool("tls", profile["tls"] == "true", ""),
		ca:        g.String("tls-ca", profile["tls-ca"], ""),
		cert:      g.String("tls-cert", profile["tls-cert"], ""),
		key:       g.String("tls-key", profile["tls-key"], ""),
		mechanism: g.String("sasl-mechanism", profile["sasl-mechanism"], ""),
		user:      g.String("sasl-username", profile["sasl-username"], ""),
		password:  g.String("sasl-password", pass, ""),
	}
}

// opts are the SDK options the flags stand for; a bad value or combination is bad usage.
func (s *securityFlags) opts() ([]spool.Opt, error) {
	useTLS := *s.tls || *s.ca != "" || *s.cert != "" || *s.key != ""
	useSASL := *s.mechanism != ""
	if !useSASL && (*s.user != "" || *s.password != "" && os.Getenv("SPOOL_SASL_PASSWORD") == "") {
		return nil, usageError{msg: "--sasl-username and --sasl-password need --sasl-mechanism"}
	}
	if useSASL && *s.user == "" {
		return nil, usageError{msg: "--sasl-mechanism needs --sasl-username"}
	}
	keys := map[string]string{}
	switch {
	case useTLS && useSASL:
		keys["security.protocol"] = spool.ProtocolSASLSSL
	case useTLS:
		keys["security.protocol"] = spool.ProtocolSSL
	case useSASL:
		keys["security.protocol"] = spool.ProtocolSASLPlaintext
	default:
		return nil, nil
	}
	for k, v := range map[string]string{"ssl.ca.location": *s.ca, "ssl.certificate.location": *s.cert, "ssl.key.location": *s.key,
		"sasl.mechanisms": *s.mechanism, "sasl.username": *s.user, "sasl.password": *s.password} {
		if v != "" {
			keys[k] = v
		}
	}
	conf, err := spool.NewConfFromMap(keys)
	if err == nil {
		err = conf.Check()
	}
	if err != nil {
		// Name the flags, not the keys they became.
		msg := errorText(err)
		for flagName, key := range map[string]string{"--tls-ca": "ssl.ca.location", "--tls-cert": "ssl.certificate.location",
			"--tls-key": "ssl.key.location", "--sasl-mechanism": "sasl.mechanisms", "--sasl-username": "sasl.username"} {
			msg = strings.ReplaceAll(msg, key, flagName)
		}
		return nil, usageError{msg: msg}
	}
	return conf.Opts(), nil
}

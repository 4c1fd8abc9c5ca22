// Package clientflags defines the command-line flags of a Kafka client's TLS and SASL
// settings (--tls, --tls-ca, --tls-cert, --tls-key, --sasl-mechanism, --sasl-username,
// --sasl-password or $SPOOL_SASL_PASSWORD), shared by the spool CLI and spool-conformance so
// the two read them alike. They become librdkafka's keys of the SDK's one table
// (security.protocol, ssl.*, sasl.*), which checks them.
package clientflags

import (
	"flag"
	"os"
	"strings"

	spool "github.com/spoolmq/spool/sdk-go"
)

// PasswordEnv is the environment variable the SASL password is read from when
// --sasl-password is not given (keeping it out of the process list).
const PasswordEnv = "SPOOL_SASL_PASSWORD"

// Names are the flags' names; all but tls take a value.
var Names = []string{"tls", "tls-ca", "tls-cert", "tls-key", "sasl-mechanism", "sasl-username", "sasl-password"}

// Help describes the flags, for a command's usage text.
const Help = "--tls (system roots), --tls-ca FILE, --tls-cert FILE --tls-key FILE (mutual TLS) connect over TLS;\n" +
	"--sasl-mechanism PLAIN|SCRAM-SHA-256|SCRAM-SHA-512 --sasl-username U --sasl-password P (else\n" +
	"$" + PasswordEnv + ") authenticate with SASL.\n"

// Security holds the flags' values once the flag set is parsed.
type Security struct {
	tls                       *bool
	ca, cert, key             *string
	mechanism, user, password *string
	defaultPassword           string // defaults["sasl-password"]
}

// Add defines the flags on fs. defaults holds a value per flag name (a profile file's, say);
// the password defaults to $SPOOL_SASL_PASSWORD before defaults["sasl-password"], read by
// Keys, so that no usage text shows it.
func Add(fs *flag.FlagSet, defaults map[string]string) *Security {
	return &Security{
		defaultPassword: defaults["sasl-password"],
		tls:             fs.Bool("tls", defaults["tls"] == "true", "connect over TLS, verifying the broker with the system's roots"),
		ca:              fs.String("tls-ca", defaults["tls-ca"], "connect over TLS, verifying the broker with the CA certificates of PEM `FILE`"),
		cert:            fs.String("tls-cert", defaults["tls-cert"], "client certificate chain, PEM `FILE` (mutual TLS; with --tls-key)"),
		key:             fs.String("tls-key", defaults["tls-key"], "client certificate's key, PEM `FILE` (mutual TLS)"),
		mechanism:       fs.String("sasl-mechanism", defaults["sasl-mechanism"], "authenticate with SASL `MECHANISM`: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"),
		user:            fs.String("sasl-username", defaults["sasl-username"], "SASL user `NAME`"),
		password:        fs.String("sasl-password", "", "SASL `PASSWORD` (default $"+PasswordEnv+")"),
	}
}

// Keys are librdkafka's keys the flags stand for (security.protocol, ssl.ca.location,
// ssl.certificate.location, ssl.key.location, sasl.mechanisms, sasl.username,
// sasl.password), checked by the SDK's table; nil when no flag asks for TLS or SASL. A bad
// value or combination is an error that names the flags.
func (s *Security) Keys() (map[string]string, error) {
	useTLS := *s.tls || *s.ca != "" || *s.cert != "" || *s.key != ""
	useSASL := *s.mechanism != ""
	password, env := *s.password, os.Getenv(PasswordEnv)
	if password == "" {
		password = env
	}
	if password == "" {
		password = s.defaultPassword
	}
	// A password from the environment alone asks for nothing; one given here or in the
	// defaults does.
	if !useSASL && (*s.user != "" || *s.password != "" || env == "" && s.defaultPassword != "") {
		return nil, flagError("--sasl-username and --sasl-password need --sasl-mechanism")
	}
	if useSASL && *s.user == "" {
		return nil, flagError("--sasl-mechanism needs --sasl-username")
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
		"sasl.mechanisms": *s.mechanism, "sasl.username": *s.user} {
		if v != "" {
			keys[k] = v
		}
	}
	if useSASL && password != "" {
		keys["sasl.password"] = password
	}
	conf, err := spool.NewConfFromMap(keys)
	if err == nil {
		err = conf.Check()
	}
	if err != nil {
		// Name the flags, not the keys they became.
		msg := strings.ReplaceAll(strings.TrimPrefix(err.Error(), "spool: "), ": spool: ", ": ")
		for flagName, key := range map[string]string{"--tls-ca": "ssl.ca.location", "--tls-cert": "ssl.certificate.location",
			"--tls-key": "ssl.key.location", "--sasl-mechanism": "sasl.mechanisms", "--sasl-username": "sasl.username"} {
			msg = strings.ReplaceAll(msg, key, flagName)
		}
		return nil, flagError(msg)
	}
	return keys, nil
}

// flagError is a bad flag value or combination: a usage error of the command.
type flagError string

func (e flagError) Error() string { return string(e) }

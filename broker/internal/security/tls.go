// Package security holds the broker's transport security: TLS for SSL listeners, from Kafka's
// ssl.* properties with PEM keystores, and the principals connections authenticate as.
package security

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spoolmq/spool/broker/internal/config"
)

// Anonymous is the principal of a connection that did not authenticate, as in Kafka.
const Anonymous = "User:ANONYMOUS"

// TLS serves the TLS setup of SSL listeners. Keystore and truststore files are checked at
// every handshake (a stat each) and reloaded when they change; a file that no longer loads
// is reported and the last good setup kept, so a half-written file never takes the
// listener down.
type TLS struct {
	ssl config.SSL
	log *slog.Logger

	mu         sync.Mutex
	cfg        *tls.Config // the current setup
	keyStamp   stamp
	trustStamp stamp
}

// stamp identifies a version of a file: a file replaced by a rename (as certificate managers
// do) has a new inode, one rewritten in place a new modification time or size.
type stamp struct {
	mod  time.Time
	size int64
	ino  uint64
}

func statFile(path string) stamp {
	if path == "" {
		return stamp{}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return stamp{}
	}
	st := stamp{mod: fi.ModTime(), size: fi.Size()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = sys.Ino
	}
	return st
}

// NewTLS loads the keystore and truststore; a bad file is an error naming it.
func NewTLS(ssl config.SSL, log *slog.Logger) (*TLS, error) {
	t := &TLS{ssl: ssl, log: log}
	ks, ts := statFile(ssl.KeystoreLocation), statFile(ssl.TruststoreLocation)
	cfg, err := t.load()
	if err != nil {
		return nil, err
	}
	t.cfg, t.keyStamp, t.trustStamp = cfg, ks, ts
	return t, nil
}

// Config is the tls.Config of a listener: each handshake gets the current setup.
func (t *TLS) Config() *tls.Config {
	return &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return t.current(), nil }}
}

// current reloads the files when they changed since the last load.
func (t *TLS) current() *tls.Config {
	t.mu.Lock()
	defer t.mu.Unlock()
	ks, ts := statFile(t.ssl.KeystoreLocation), statFile(t.ssl.TruststoreLocation)
	if ks == t.keyStamp && ts == t.trustStamp {
		return t.cfg
	}
	t.keyStamp, t.trustStamp = ks, ts
	cfg, err := t.load()
	if err != nil {
		t.log.Error("reloading TLS certificates failed; keeping the previous ones", "err", err)
		return t.cfg
	}
	t.log.Info("TLS certificates reloaded", "keystore", t.ssl.KeystoreLocation, "truststore", t.ssl.TruststoreLocation)
	t.cfg = cfg
	return cfg
}

// load builds a tls.Config from the settings and files.
func (t *TLS) load() (*tls.Config, error) {
	s := t.ssl
	chain, key := []byte(normalizePEM(s.CertificateChain)), []byte(normalizePEM(s.Key))
	what := "ssl.keystore.certificate.chain/ssl.keystore.key"
	if s.KeystoreLocation != "" {
		b, err := os.ReadFile(s.KeystoreLocation)
		if err != nil {
			return nil, fmt.Errorf("ssl.keystore.location: %w", err)
		}
		chain, key, what = b, b, "ssl.keystore.location "+s.KeystoreLocation
	}
	if bytes.Contains(key, []byte("ENCRYPTED PRIVATE KEY")) {
		return nil, fmt.Errorf("%s: the private key is encrypted; Spool reads unencrypted PKCS#8 keys", what)
	}
	cert, err := tls.X509KeyPair(chain, key)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13, MaxVersion: tls.VersionTLS12}
	for _, p := range s.Protocols {
		v := config.TLSVersions[p]
		cfg.MinVersion, cfg.MaxVersion = min(cfg.MinVersion, v), max(cfg.MaxVersion, v)
	}
	for _, name := range s.CipherSuites {
		if id, ok := config.CipherSuite(name); ok {
			cfg.CipherSuites = append(cfg.CipherSuites, id)
		}
	}
	trust, what := []byte(normalizePEM(s.TruststoreCertificates)), "ssl.truststore.certificates"
	if s.TruststoreLocation != "" {
		if trust, err = os.ReadFile(s.TruststoreLocation); err != nil {
			return nil, fmt.Errorf("ssl.truststore.location: %w", err)
		}
		what = "ssl.truststore.location " + s.TruststoreLocation
	}
	if len(trust) > 0 {
		cfg.ClientCAs = x509.NewCertPool()
		if !cfg.ClientCAs.AppendCertsFromPEM(trust) {
			return nil, fmt.Errorf("%s: no PEM certificate in it", what)
		}
	}
	switch s.ClientAuth {
	case "requested":
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	case "required":
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

var pemBlock = regexp.MustCompile(`(?s)-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END ([A-Z0-9 ]+)-----`)

// normalizePEM rebuilds PEM text given inline in a properties file, where Java's line
// continuations have dropped the line breaks (Kafka reads it so) or "\n" stands for them.
func normalizePEM(v string) string {
	v = strings.ReplaceAll(v, `\n`, "\n")
	var out []byte
	for _, m := range pemBlock.FindAllStringSubmatch(v, -1) {
		body := strings.Join(strings.Fields(m[2]), "")
		der, err := base64.StdEncoding.DecodeString(body)
		if err != nil {
			return v // not base64: left to the PEM parser to report
		}
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: m[1], Bytes: der})...)
	}
	if len(out) == 0 {
		return v
	}
	return string(out)
}

// ClientConfig is the client side of the setup, for a broker connecting to the others on its
// inter-broker listener, as Kafka uses the listener's stores: the truststore checks the peer's
// certificate and the keystore's certificate is offered when the peer asks for one. It is
// the current setup at each call (the files are reloaded as for the listener).
func (t *TLS) ClientConfig() *tls.Config {
	cur := t.current()
	return &tls.Config{RootCAs: cur.ClientCAs, Certificates: cur.Certificates,
		MinVersion: cur.MinVersion, MaxVersion: cur.MaxVersion, CipherSuites: cur.CipherSuites}
}

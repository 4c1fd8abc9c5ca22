package config

import (
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// SSL is the TLS setup of SSL listeners, from Kafka's ssl.* properties (PEM only).
type SSL struct {
	KeystoreLocation       string // PEM: certificate chain and PKCS#8 key
	CertificateChain, Key  string // inline PEM, instead of KeystoreLocation
	TruststoreLocation     string // PEM CA certificates
	TruststoreCertificates string // inline PEM, instead of TruststoreLocation
	ClientAuth             string // none, requested or required
	Protocols              []string
	CipherSuites           []string
}

// SSL returns a listener's ssl.* settings (listener.name.<l>.ssl.* over ssl.*); resolve has
// checked them for every listener using TLS.
func (c *Config) SSL(listener string) SSL {
	v := func(name string) string { return c.ListenerValue(listener, name) }
	return SSL{
		KeystoreLocation:       v("ssl.keystore.location"),
		CertificateChain:       v("ssl.keystore.certificate.chain"),
		Key:                    v("ssl.keystore.key"),
		TruststoreLocation:     v("ssl.truststore.location"),
		TruststoreCertificates: v("ssl.truststore.certificates"),
		ClientAuth:             strings.ToLower(v("ssl.client.auth")),
		Protocols:              SplitList(v("ssl.enabled.protocols")),
		CipherSuites:           SplitList(v("ssl.cipher.suites")),
	}
}

// SplitList splits a comma-separated list value, dropping blanks.
func SplitList(v string) []string {
	var out []string
	for _, x := range strings.Split(v, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// TLS tells whether the listener's connections run over TLS (SSL, SASL_SSL).
func (l Listener) TLS() bool { return l.Protocol == "SSL" || l.Protocol == "SASL_SSL" }

// SASL tells whether the listener's connections authenticate with SASL.
func (l Listener) SASL() bool { return strings.HasPrefix(l.Protocol, "SASL_") }

// ListenerValue is a property for one listener: Kafka's listener.name.<listener>.<name>
// override when set, else the broker-wide value.
func (c *Config) ListenerValue(listener, name string) string {
	if v, ok := c.values[listenerPrefix(listener)+name]; ok {
		return v
	}
	return c.values[name]
}

func listenerPrefix(listener string) string {
	return "listener.name." + strings.ToLower(listener) + "."
}

// Mechanisms Spool serves.
var saslMechanisms = map[string]bool{"PLAIN": true, "SCRAM-SHA-256": true, "SCRAM-SHA-512": true}

// SASL is a SASL listener's setup.
type SASL struct {
	Mechanisms []string          // sasl.enabled.mechanisms
	PlainUsers map[string]string // PLAIN's users and passwords, from the listener's JAAS config
}

// SASL returns a listener's SASL setup; resolve has checked it.
func (c *Config) SASL(listener string) SASL {
	s := SASL{Mechanisms: SplitList(c.ListenerValue(listener, "sasl.enabled.mechanisms"))}
	if v := c.values[listenerPrefix(listener)+"plain.sasl.jaas.config"]; v != "" {
		if j, err := ParseJAAS(v); err == nil {
			s.PlainUsers = j.Users()
		}
	}
	return s
}

// resolveSASL checks each SASL listener's mechanisms and users.
func (c *Config) resolveSASL() error {
	var errs []error
	for _, l := range c.listeners {
		if !l.SASL() {
			continue
		}
		mechs := SplitList(c.ListenerValue(l.Name, "sasl.enabled.mechanisms"))
		for _, m := range mechs {
			if !saslMechanisms[m] {
				errs = append(errs, fmt.Errorf("listener %s: sasl.enabled.mechanisms=%s: %s is not supported; Spool serves PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512",
					l.Name, strings.Join(mechs, ","), m))
			}
		}
		if len(mechs) == 0 {
			errs = append(errs, fmt.Errorf("listener %s: sasl.enabled.mechanisms is empty; set it to PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", l.Name))
		}
		if !slices.Contains(mechs, "PLAIN") {
			continue
		}
		key := listenerPrefix(l.Name) + "plain.sasl.jaas.config"
		v := c.values[key]
		if v == "" {
			errs = append(errs, fmt.Errorf("listener %s: PLAIN needs its users: set %s=org.apache.kafka.common.security.plain.PlainLoginModule required user_NAME=\"PASSWORD\";", l.Name, key))
			continue
		}
		j, err := ParseJAAS(v)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		case j.Module != plainLoginModule:
			errs = append(errs, fmt.Errorf("%s: login module %s; PLAIN's is %s", key, j.Module, plainLoginModule))
		case len(j.Users()) == 0:
			errs = append(errs, fmt.Errorf("%s: no user_NAME=\"PASSWORD\" option, so nobody could log in", key))
		}
	}
	return errors.Join(errs...)
}

// TLSVersions maps ssl.enabled.protocols names to crypto/tls versions.
var TLSVersions = map[string]uint16{"TLSv1.2": tls.VersionTLS12, "TLSv1.3": tls.VersionTLS13}

// CipherSuite finds a TLS 1.2 cipher suite by Go's (IANA) name.
func CipherSuite(name string) (uint16, bool) {
	for _, cs := range tls.CipherSuites() {
		if cs.Name == name {
			return cs.ID, true
		}
	}
	return 0, false
}

// resolveSSL checks the ssl.* properties of every listener that uses TLS.
func (c *Config) resolveSSL() error {
	var errs []error
	for _, l := range c.listeners {
		if l.TLS() {
			if err := c.resolveListenerSSL(l.Name); err != nil {
				errs = append(errs, fmt.Errorf("listener %s: %w", l.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

func (c *Config) resolveListenerSSL(listener string) error {
	s := c.SSL(listener)
	var errs []error
	inline := s.CertificateChain != "" || s.Key != ""
	switch {
	case s.KeystoreLocation == "" && !inline:
		errs = append(errs, errors.New("an SSL listener needs a certificate: set ssl.keystore.location (a PEM file with the chain and the PKCS#8 key) or ssl.keystore.certificate.chain and ssl.keystore.key"))
	case s.KeystoreLocation != "" && inline:
		errs = append(errs, errors.New("ssl.keystore.location and the inline ssl.keystore.certificate.chain/ssl.keystore.key are both set; give one"))
	case inline && (s.CertificateChain == "" || s.Key == ""):
		errs = append(errs, errors.New("ssl.keystore.certificate.chain and ssl.keystore.key go together; set both"))
	}
	if t := c.ListenerValue(listener, "ssl.keystore.type"); !strings.EqualFold(t, "PEM") {
		errs = append(errs, fmt.Errorf("ssl.keystore.type=%s: Spool reads PEM keystores only; set ssl.keystore.type=PEM", t))
	}
	if c.ListenerValue(listener, "ssl.key.password") != "" {
		errs = append(errs, errors.New("ssl.key.password is set: Spool reads unencrypted PKCS#8 keys only; leave it unset"))
	}
	trust := s.TruststoreLocation != "" || s.TruststoreCertificates != ""
	if s.TruststoreLocation != "" && s.TruststoreCertificates != "" {
		errs = append(errs, errors.New("ssl.truststore.location and ssl.truststore.certificates are both set; give one"))
	}
	if t := c.ListenerValue(listener, "ssl.truststore.type"); trust && !strings.EqualFold(t, "PEM") {
		errs = append(errs, fmt.Errorf("ssl.truststore.type=%s: Spool reads PEM truststores only; set ssl.truststore.type=PEM", t))
	}
	switch s.ClientAuth {
	case "none":
	case "requested", "required":
		if !trust {
			errs = append(errs, fmt.Errorf("ssl.client.auth=%s needs the CAs to check client certificates against: set ssl.truststore.location", s.ClientAuth))
		}
	default:
		errs = append(errs, fmt.Errorf("ssl.client.auth=%s: want none, requested or required", s.ClientAuth))
	}
	if len(s.Protocols) == 0 {
		errs = append(errs, errors.New("ssl.enabled.protocols is empty: want TLSv1.2, TLSv1.3 or both"))
	}
	for _, p := range s.Protocols {
		if _, ok := TLSVersions[p]; !ok {
			errs = append(errs, fmt.Errorf("ssl.enabled.protocols: %s is not supported; want TLSv1.2, TLSv1.3 or both", p))
		}
	}
	for _, cs := range s.CipherSuites {
		if _, ok := CipherSuite(cs); !ok {
			errs = append(errs, fmt.Errorf("ssl.cipher.suites: unknown or insecure cipher suite %s (TLS 1.3 suites are not configurable)", cs))
		}
	}
	return errors.Join(errs...)
}

// AuthorizerClassNames are the authorizer.class.name values that turn Spool's ACL authorizer
// on: Kafka's ZooKeeper-era AclAuthorizer, its predecessor SimpleAclAuthorizer, KRaft's
// StandardAuthorizer (all ACLs with the same semantics), and Spool's own name.
var AuthorizerClassNames = []string{
	"kafka.security.authorizer.AclAuthorizer",
	"kafka.security.auth.SimpleAclAuthorizer",
	"org.apache.kafka.metadata.authorizer.StandardAuthorizer",
	"spool.acl",
}

// Authorization is the authorizer's setup.
type Authorization struct {
	Enabled      bool     // authorizer.class.name names an authorizer
	SuperUsers   []string // super.users, split on ';'
	AllowIfNoACL bool     // allow.everyone.if.no.acl.found
}

// Authorization returns the authorizer's setup.
func (c *Config) Authorization() Authorization {
	a := Authorization{Enabled: c.values[AuthorizerClassName] != "", AllowIfNoACL: c.Bool(AllowEveryoneIfNoACLFound)}
	for _, u := range strings.Split(c.values[SuperUsers], ";") {
		if u = strings.TrimSpace(u); u != "" {
			a.SuperUsers = append(a.SuperUsers, u)
		}
	}
	return a
}

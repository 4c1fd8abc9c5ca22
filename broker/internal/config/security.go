package config

import (
	"crypto/tls"
	"errors"
	"fmt"
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

// SSL returns the ssl.* settings; resolve has checked them when a listener uses SSL.
func (c *Config) SSL() SSL {
	return SSL{
		KeystoreLocation:       c.values["ssl.keystore.location"],
		CertificateChain:       c.values["ssl.keystore.certificate.chain"],
		Key:                    c.values["ssl.keystore.key"],
		TruststoreLocation:     c.values["ssl.truststore.location"],
		TruststoreCertificates: c.values["ssl.truststore.certificates"],
		ClientAuth:             strings.ToLower(c.values["ssl.client.auth"]),
		Protocols:              splitList(c.values["ssl.enabled.protocols"]),
		CipherSuites:           splitList(c.values["ssl.cipher.suites"]),
	}
}

func splitList(v string) []string {
	var out []string
	for _, x := range strings.Split(v, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
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

// resolveSSL checks the ssl.* properties when a listener uses SSL.
func (c *Config) resolveSSL() error {
	used := false
	for _, l := range c.listeners {
		used = used || l.Protocol == "SSL"
	}
	if !used {
		return nil
	}
	s := c.SSL()
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
	if t := c.values["ssl.keystore.type"]; !strings.EqualFold(t, "PEM") {
		errs = append(errs, fmt.Errorf("ssl.keystore.type=%s: Spool reads PEM keystores only; set ssl.keystore.type=PEM", t))
	}
	if c.values["ssl.key.password"] != "" {
		errs = append(errs, errors.New("ssl.key.password is set: Spool reads unencrypted PKCS#8 keys only; leave it unset"))
	}
	trust := s.TruststoreLocation != "" || s.TruststoreCertificates != ""
	if s.TruststoreLocation != "" && s.TruststoreCertificates != "" {
		errs = append(errs, errors.New("ssl.truststore.location and ssl.truststore.certificates are both set; give one"))
	}
	if t := c.values["ssl.truststore.type"]; trust && !strings.EqualFold(t, "PEM") {
		errs = append(errs, fmt.Errorf("ssl.truststore.type=%s: Spool reads PEM truststores only; set ssl.truststore.type=PEM", t))
	}
	switch s.ClientAuth {
	case "none":
	case "requested", "required":
		if !trust {
			errs = append(errs, fmt.Errorf("ssl.client.auth=%s needs the CAs to check client certificates against: set ssl.truststore.location", s.ClientAuth))
		}
	default:
		errs = append(errs, fmt.Errorf("ssl.client.auth=%s: want none, requested or required", c.values["ssl.client.auth"]))
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

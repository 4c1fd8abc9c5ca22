// Package testca makes certificate authorities and certificates for tests with crypto/x509:
// keys live in the test's temporary directory only, nothing is committed.
package testca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a test certificate authority made with crypto/x509; its keys live in the test's
// temporary directory only.
type CA struct {
	// File is the CA certificate in PEM (a truststore, or a client's ssl.ca.location).
	File string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	dir  string
	next int64
}

// Issued is a certificate issued by a CA.
type Issued struct {
	// File is a keystore: the certificate chain and the PKCS#8 key, in PEM (Kafka's
	// ssl.keystore.type=PEM ssl.keystore.location).
	File string
	// CertFile and KeyFile hold the certificate and the key apart (kcat's ssl.certificate.location
	// and ssl.key.location).
	CertFile, KeyFile string
	// ChainPEM and KeyPEM are the same in memory (Kafka's inline ssl.keystore.* values).
	ChainPEM, KeyPEM string
	Cert             tls.Certificate
	Leaf             *x509.Certificate
}

// New makes a CA in t.TempDir().
func New(t testing.TB) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Spool test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &CA{cert: cert, key: key, dir: t.TempDir(), next: 2}
	ca.File = filepath.Join(ca.dir, "ca.pem")
	writeFile(t, ca.File, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	return ca
}

// Pool is a cert pool holding the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// Server issues a server certificate for 127.0.0.1 and localhost.
func (ca *CA) Server(t testing.TB, name string) *Issued {
	t.Helper()
	return ca.issue(t, name, pkix.Name{CommonName: "localhost", Organization: []string{"Spool"}}, x509.ExtKeyUsageServerAuth)
}

// Client issues a client certificate with the given subject.
func (ca *CA) Client(t testing.TB, name string, subject pkix.Name) *Issued {
	t.Helper()
	return ca.issue(t, name, subject, x509.ExtKeyUsageClientAuth)
}

// Broker issues a broker's certificate with the given subject: for 127.0.0.1 and localhost,
// and usable both as a server certificate and as a client one, as a Kafka broker's keystore
// is when the inter-broker listener has ssl.client.auth=required (the broker presents it
// when it connects to the others; its subject is the broker's principal).
func (ca *CA) Broker(t testing.TB, name string, subject pkix.Name) *Issued {
	t.Helper()
	return ca.issue(t, name, subject, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
}

func (ca *CA) issue(t testing.TB, name string, subject pkix.Name, usage ...x509.ExtKeyUsage) *Issued {
	key := newKey(t)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(ca.next), Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: usage,
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	ca.next++
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	chain := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk})
	is := &Issued{File: filepath.Join(ca.dir, name+".pem"), CertFile: filepath.Join(ca.dir, name+".crt"),
		KeyFile: filepath.Join(ca.dir, name+".key"), ChainPEM: string(chain), KeyPEM: string(keyPEM)}
	writeFile(t, is.CertFile, chain)
	writeFile(t, is.KeyFile, keyPEM)
	writeFile(t, is.File, append(append([]byte{}, chain...), keyPEM...))
	if is.Cert, err = tls.X509KeyPair(chain, keyPEM); err != nil {
		t.Fatal(err)
	}
	is.Leaf = is.Cert.Leaf
	return is
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func writeFile(t testing.TB, path string, b []byte) {
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

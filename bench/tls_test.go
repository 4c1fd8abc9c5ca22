package main

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"os"
	"strings"
	"testing"
)

// TestTLSCerts: the harness's throwaway keystore is what both brokers read (the chain, then a
// PKCS#8 key) and a client trusting only its CA completes a TLS handshake with it at
// 127.0.0.1; the Java tools' client.properties names that CA as a PEM truststore.
func TestTLSCerts(t *testing.T) {
	c, err := genTLSCerts(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ks, err := os.ReadFile(c.keystore)
	if err != nil {
		t.Fatal(err)
	}
	if i, j := strings.Index(string(ks), "BEGIN CERTIFICATE"), strings.Index(string(ks), "BEGIN PRIVATE KEY"); i < 0 || j < i {
		t.Fatalf("keystore is not the chain then a PKCS#8 key:\n%s", ks)
	}
	pair, err := tls.X509KeyPair(ks, ks)
	if err != nil {
		t.Fatalf("keystore does not load: %v", err)
	}
	if len(pair.Certificate) != 2 {
		t.Errorf("keystore chain has %d certificates, want the server's and the CA's", len(pair.Certificate))
	}
	caPEM, err := os.ReadFile(c.ca)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("ca.crt holds no certificate")
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() { // every connection: the handshake (failed or not), "ok", closed
		for {
			s, err := l.Accept()
			if err != nil {
				return
			}
			io.WriteString(s, "ok")
			s.Close()
		}
	}()
	conn, err := tls.Dial("tcp", l.Addr().String(), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatalf("handshake with a client trusting only the CA: %v", err)
	}
	got, _ := io.ReadAll(conn)
	conn.Close()
	if string(got) != "ok" {
		t.Errorf("read %q over TLS", got)
	}
	if _, err := tls.Dial("tcp", l.Addr().String(), &tls.Config{RootCAs: x509.NewCertPool(), ServerName: "127.0.0.1"}); err == nil {
		t.Error("a client trusting another CA completed the handshake")
	}
	props, err := os.ReadFile(c.client)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"security.protocol=SSL\n", "ssl.truststore.type=PEM\n", "ssl.truststore.location=" + c.ca + "\n"} {
		if !strings.Contains(string(props), want) {
			t.Errorf("client.properties lacks %q:\n%s", want, props)
		}
	}
	if sp := c.serverProps(); !strings.Contains(sp, "ssl.keystore.location="+c.keystore) || !strings.Contains(sp, "ssl.keystore.type=PEM") {
		t.Errorf("server properties: %s", sp)
	}
}

// TestTLSSectionSpliced: a TLS-only run puts its section before the cluster section of an
// existing report and later replaces it, keeping the rest.
func TestTLSSectionSpliced(t *testing.T) {
	dir := t.TempDir()
	old := "# B\n\n## Results\n\nW1 row\n\n" + clusterHeading + ": c\n\nclusters\n\n## Workloads\n\n- W1\n"
	if err := os.WriteFile(dir+"/benchmarks.md", []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &report{h: &harness{benchDir: "."}, systems: systems[:2], lgs: []loadgen{spoolBench{}}, reps: 1, mode: "full", outDir: dir,
		res: map[string]map[string]map[string][]result{},
		tls: newTLSResults(quickTLSSizes, 0)}
	for _, sys := range []string{"kafka", "spool"} {
		for _, c := range quickTLSSizes.cases() {
			// CPU: 2 ms per 10^6 bytes moved over PLAINTEXT; over SSL Kafka 8, Spool 4.
			mb := float64(c.Records) * float64(c.Size) / 1e6
			r.tls.add("spool bench", sys, c.String(), protoPlain, result{Records: c.Records, RecPerSec: 1000, CPU: 0.002 * mb, ClientCPU: 0.001 * mb})
			r.tls.add("spool bench", sys, c.String(), protoSSL, result{Records: c.Records, RecPerSec: map[string]float64{"kafka": 400, "spool": 800}[sys],
				CPU: map[string]float64{"kafka": 0.008, "spool": 0.004}[sys] * mb, ClientCPU: 0.003 * mb})
		}
	}
	for range 2 {
		if err := r.write(); err != nil {
			t.Fatal(err)
		}
	}
	doc, err := os.ReadFile(dir + "/benchmarks.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	if strings.Count(s, tlsHeading) != 1 || !strings.HasPrefix(s, "# B\n\n## Results\n\nW1 row\n\n"+tlsHeading) || !strings.Contains(s, "\n\n"+clusterHeading+": c\n\nclusters\n\n## Workloads") {
		t.Fatalf("report after two TLS-only writes:\n%s", s)
	}
	for _, want := range []string{"| produce 100 B | spool bench | spool | 1.0 k | 800 | 0.80× |", "| produce 100 B | spool bench | kafka | 1.0 k | 400 | 0.40× |",
		"| fetch 1 KiB | spool bench | spool | 2.00× | 1.00× | 2.00× | 1.00× |",
		"| produce 100 B | spool bench | kafka | 2.0 | 8.0 | 4.00× | 125 | 1.0 | 3.0 |",
		"| fetch 1 KiB | spool bench | spool | 2.0 | 4.0 | 2.00× | 250 | 1.0 | 3.0 |"} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
}

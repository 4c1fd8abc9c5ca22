package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The TLS workload: each broker with a PLAINTEXT and an SSL listener (the same throwaway CA
// and server certificate for both brokers), produce and fetch at 100 B and 1 KiB over each
// listener with the same load generator, so the report can give Spool TLS / Kafka TLS and
// TLS / plaintext per broker.
const tlsID = "TLS"

// tlsHeading starts the TLS workload's section of the report.
const tlsHeading = "## TLS (" + tlsID + ")"

// tlsSizes are the record counts of the TLS workload's phases.
type tlsSizes struct{ produce100, produce1k, fetch100, fetch1k int64 }

// fullTLSSizes: a phase of Kafka's tools lasts a few seconds on a 2-core machine.
var fullTLSSizes = tlsSizes{produce100: 500_000, produce1k: 150_000, fetch100: 1_000_000, fetch1k: 300_000}
var quickTLSSizes = tlsSizes{produce100: 20_000, produce1k: 5_000, fetch100: 20_000, fetch1k: 5_000}

// spoolBenchTLSFactor multiplies the record counts when spool bench is the load generator: it
// moves data several times faster than Kafka's tools, and phases of half a second on Spool
// were mostly noise on a shared machine.
const spoolBenchTLSFactor = 4

// forLoadgen is the sizes lg runs with.
func (s tlsSizes) forLoadgen(lg loadgen) tlsSizes {
	if _, ok := lg.(spoolBench); ok {
		return s.scaled(spoolBenchTLSFactor)
	}
	return s
}

func (s tlsSizes) scaled(f float64) tlsSizes {
	m := func(n int64) int64 { return max(1, int64(float64(n)*f)) }
	return tlsSizes{m(s.produce100), m(s.produce1k), m(s.fetch100), m(s.fetch1k)}
}

// tlsCase is one row of the TLS table: an operation at a record size.
type tlsCase struct {
	Op      string // "produce" or "fetch"
	Size    int
	Records int64
}

func (c tlsCase) String() string {
	size := "100 B"
	if c.Size == 1024 {
		size = "1 KiB"
	}
	return c.Op + " " + size
}

func (s tlsSizes) cases() []tlsCase {
	return []tlsCase{{"produce", 100, s.produce100}, {"produce", 1024, s.produce1k}, {"fetch", 100, s.fetch100}, {"fetch", 1024, s.fetch1k}}
}

// Listener names of the TLS workload's results.
const (
	protoPlain = "PLAINTEXT"
	protoSSL   = "SSL"
)

// tlsResults are the TLS workload's runs by load generator, system, case and listener: each
// with its records/s, the broker's CPU seconds and the load generator's over the phase.
type tlsResults struct {
	sizes tlsSizes
	runs  map[string]map[string]map[string]map[string][]result
	est   time.Duration
}

func newTLSResults(sz tlsSizes, est time.Duration) *tlsResults {
	return &tlsResults{sizes: sz, runs: map[string]map[string]map[string]map[string][]result{}, est: est}
}

func (t *tlsResults) add(lg, sys, c, proto string, r result) {
	if t.runs[lg] == nil {
		t.runs[lg] = map[string]map[string]map[string][]result{}
	}
	if t.runs[lg][sys] == nil {
		t.runs[lg][sys] = map[string]map[string][]result{}
	}
	if t.runs[lg][sys][c] == nil {
		t.runs[lg][sys][c] = map[string][]result{}
	}
	t.runs[lg][sys][c][proto] = append(t.runs[lg][sys][c][proto], r)
}

// medOf is the median of f over the runs, 0 when there is none.
func (t *tlsResults) medOf(lg, sys, c, proto string, f func(result) float64) float64 {
	rs := t.runs[lg][sys][c][proto]
	xs := make([]float64, 0, len(rs))
	for _, r := range rs {
		xs = append(xs, f(r))
	}
	return median(xs)
}

// med is the median records/s, 0 when there is no run.
func (t *tlsResults) med(lg, sys, c, proto string) float64 {
	return t.medOf(lg, sys, c, proto, func(r result) float64 { return r.RecPerSec })
}

// cpuPerMB is the median CPU milliseconds per MB (10^6 bytes of record values) moved: the
// broker's, or with client the load generator's. 0 when there is no run.
func (t *tlsResults) cpuPerMB(lg, sys string, c tlsCase, proto string, client bool) float64 {
	return t.medOf(lg, sys, c.String(), proto, func(r result) float64 {
		cpu := r.CPU
		if client {
			cpu = r.ClientCPU
		}
		return 1000 * cpu / (float64(r.Records) * float64(c.Size) / 1e6)
	})
}

// efficiency is the broker's MB moved per broker CPU-second (median over runs): independent
// of how fast the load generator is. 0 when there is no run or no CPU was counted.
func (t *tlsResults) efficiency(lg, sys string, c tlsCase, proto string) float64 {
	return t.medOf(lg, sys, c.String(), proto, func(r result) float64 {
		if r.CPU == 0 {
			return 0
		}
		return float64(r.Records) * float64(c.Size) / 1e6 / r.CPU
	})
}

// cpuRatio is a/b, or "–" when either is 0: a phase too short for one clock tick (10 ms) of
// CPU has no CPU figure.
func cpuRatio(a, b float64) string {
	if a == 0 {
		return "–"
	}
	return ratio(a, b)
}

// tlsCerts are the PEM files of a throwaway CA and a server certificate for 127.0.0.1, made
// per harness run in the work dir (never committed).
type tlsCerts struct {
	ca       string // the CA certificate: both brokers' truststore and the clients' CA
	keystore string // the server certificate, the CA's, then the PKCS#8 key: Kafka's PEM keystore
	client   string // client.properties for Kafka's tools: security.protocol=SSL, PEM truststore
}

// serverProps are the ssl.* properties of both brokers, Kafka's names.
func (c *tlsCerts) serverProps() string {
	return fmt.Sprintf("ssl.keystore.type=PEM\nssl.keystore.location=%s\nssl.truststore.type=PEM\nssl.truststore.location=%s\n", c.keystore, c.ca)
}

// genTLSCerts makes an ECDSA P-256 CA and a server certificate it signs, valid for 127.0.0.1
// and localhost for a day, into dir.
func genTLSCerts(dir string) (*tlsCerts, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "spool-bench-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("server certificate: %w", err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	block := func(typ string, b []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}) }
	c := &tlsCerts{ca: filepath.Join(dir, "ca.crt"), keystore: filepath.Join(dir, "broker.pem"), client: filepath.Join(dir, "client.properties")}
	keystore := slices.Concat(block("CERTIFICATE", der), block("CERTIFICATE", caDER), block("PRIVATE KEY", pkcs8))
	client := fmt.Sprintf("security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=%s\n", c.ca)
	for path, data := range map[string][]byte{c.ca: block("CERTIFICATE", caDER), c.keystore: keystore, c.client: []byte(client)} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// withTLS is lg speaking TLS to the SSL listener with certs.
func withTLS(lg loadgen, certs *tlsCerts) loadgen {
	switch g := lg.(type) {
	case kafkaTools:
		g.clientConfig = certs.client
		return g
	case spoolBench:
		g.tlsCA = certs.ca
		return g
	}
	return lg
}

// tlsEstimate is the TLS workload's time: per repetition, system and load generator a broker
// start, and per case a topic and a phase over each listener (plus a fill for fetch), TLS
// taken as costing nothing.
func tlsEstimate(sz tlsSizes, chosen []system, lgs []loadgen, reps int) time.Duration {
	var d time.Duration
	for _, s := range chosen {
		for _, lg := range lgs {
			d += startCost[s.Kind]
			for _, c := range sz.forLoadgen(lg).cases() {
				op := c.Op
				if op == "fetch" {
					op = "consume"
					d += toolCost["SB"] + phase{op: "produce", records: c.Records, size: c.Size}.duration("SB", s.Kind)
				}
				d += toolCost[lg.Short()] + 2*(toolCost[lg.Short()]+phase{op: op, records: c.Records, size: c.Size}.duration(lg.Short(), s.Kind))
			}
		}
	}
	return time.Duration(reps) * d
}

// runTLSReport runs the TLS workload into r.tls and writes the report.
func (h *harness) runTLSReport(ctx context.Context, r *report, sz tlsSizes, est time.Duration) error {
	began, before := time.Now(), r.elapsed
	r.tls = newTLSResults(sz, est)
	r.partial = fmt.Sprintf("the run is still going or was killed: the TLS workload %s was not finished", tlsID)
	if err := r.write(); err != nil {
		return err
	}
	certs, err := genTLSCerts(filepath.Join(h.workDir, "tls"))
	if err != nil {
		return fmt.Errorf("TLS certificates: %w", err)
	}
	w := workload{ID: tlsID, Title: "produce and fetch over PLAINTEXT and SSL"}
	for rep := 1; rep <= r.reps && err == nil; rep++ {
		order := slices.Clone(r.systems)
		if rep%2 == 0 {
			slices.Reverse(order)
		}
		for _, sys := range order {
			for _, lg := range r.lgs {
				if err = h.runTLSOne(ctx, r, w, sys, lg, certs, rep); err != nil && ctx.Err() == nil {
					r.failures = append(r.failures, h.recordFailure(w, sys, lg, rep, err))
					err = nil
				}
				if ctx.Err() != nil {
					err = ctx.Err()
				}
				if err != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
	}
	r.elapsed = before + time.Since(began)
	if err != nil {
		r.partial = fmt.Sprintf("the run stopped during %s: %s", tlsID, firstLine(err.Error()))
		if werr := r.write(); werr != nil {
			logf("writing the partial report: %v", werr)
		}
		return fmt.Errorf("interrupted by a signal during %s: %w", tlsID, err)
	}
	logf("%s took %s (estimated %s)", tlsID, time.Since(began).Round(time.Second), est.Round(time.Second))
	r.partial = ""
	return r.write()
}

// runTLSOne starts one broker of sys with both listeners and measures every case over each
// with lg; the listener that goes first alternates by repetition. Fetch reads one topic,
// filled once by spool bench over PLAINTEXT, from each listener.
func (h *harness) runTLSOne(ctx context.Context, r *report, w workload, sys system, lg loadgen, certs *tlsCerts, rep int) error {
	dir := h.runDir(w, sys, lg, rep)
	b, err := h.startBrokerTLS(ctx, sys, dir, certs)
	if err != nil {
		return err
	}
	defer b.Stop()
	secure := withTLS(lg, certs)
	protos := []string{protoPlain, protoSSL}
	if rep%2 == 0 {
		slices.Reverse(protos)
	}
	fail := func(err error) error {
		if aerr := b.Alive(); aerr != nil {
			return aerr
		}
		return fmt.Errorf("%w\n%s\n%s", err, brokerOutputHeader, b.logTail())
	}
	for _, c := range r.tls.sizes.forLoadgen(lg).cases() {
		fetchTopic := fmt.Sprintf("tls-fetch-%d", c.Size)
		if c.Op == "fetch" {
			if err := lg.CreateTopic(ctx, b.addr, fetchTopic, 6); err != nil {
				return fail(err)
			}
			if _, err := lg.Produce(ctx, b.addr, produceSpec{Topic: fetchTopic, Records: c.Records, Size: c.Size, Acks: "1", Throughput: -1, Fill: true}); err != nil {
				return fail(fmt.Errorf("fill: %w", err))
			}
		}
		for _, proto := range protos {
			g, addr := lg, b.addr
			if proto == protoSSL {
				g, addr = secure, b.tlsAddr
			}
			topic := fmt.Sprintf("tls-produce-%d-%s", c.Size, strings.ToLower(proto))
			if c.Op == "produce" {
				if err := lg.CreateTopic(ctx, b.addr, topic, 6); err != nil {
					return fail(err)
				}
			}
			// The phase's CPU: the broker process's utime+stime, and the load generator's
			// (a child that has ended by the time the phase returns).
			c0, err := b.CPUSeconds()
			if err != nil {
				return fail(fmt.Errorf("broker CPU: %w", err))
			}
			l0 := childrenCPUSeconds()
			var res result
			if c.Op == "produce" {
				res, err = g.Produce(ctx, addr, produceSpec{Topic: topic, Records: c.Records, Size: c.Size, Acks: "1", Throughput: -1})
			} else {
				res, err = g.Consume(ctx, addr, fetchTopic, c.Records)
			}
			if err != nil {
				return fail(fmt.Errorf("%s over %s: %w", c, proto, err))
			}
			c1, err := b.CPUSeconds()
			if err != nil {
				return fail(fmt.Errorf("broker CPU: %w", err))
			}
			res.CPU, res.ClientCPU = c1-c0, childrenCPUSeconds()-l0
			if res.Records == 0 {
				res.Records = c.Records
			}
			r.tls.add(lg.Name(), sys.Name, c.String(), proto, res)
			mb := float64(res.Records) * float64(c.Size) / 1e6
			logf("  %-4s %-14s %-2s rep %d: %-13s %-9s %10.0f rec/s %8.1f MB/s  broker CPU %5.2f s (%4.1f ms/MB)  client CPU %5.2f s", tlsID, sys.Name, lg.Short(), rep, c, proto,
				res.RecPerSec, res.MBPerSec, res.CPU, 1000*res.CPU/mb, res.ClientCPU)
		}
	}
	if err := b.Stop(); err != nil {
		return err
	}
	if !h.keep {
		removeAll(dir)
	}
	return nil
}

// tlsMarkdown is the TLS workload's section of the report ("" when it did not run).
func (r *report) tlsMarkdown() string {
	t := r.tls
	if t == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString(tlsHeading + ": produce and fetch over PLAINTEXT and over SSL\n\n")
	fmt.Fprintf(&b, "Run %s UTC, %s mode, %d repetition(s) per system and load generator, interleaved, medians; load average (1, 5, 15 min) %s at the start of the whole run, %s when this section was written (2 cores: above 2, other work competed, so read the ratios, not the rates). `cd bench && GOWORK=off go run . %s`\n\n",
		time.Now().UTC().Format("2006-01-02 15:04"), r.mode, r.reps, r.loadStart, loadAverage(), strings.Join(r.args, " "))
	fmt.Fprintf(&b, "Each broker runs with a PLAINTEXT and an SSL listener on loopback, both brokers with the same throwaway CA and server certificate (ECDSA P-256, made by the harness with crypto/x509 for 127.0.0.1) as `ssl.keystore.type=PEM` (the chain and the PKCS#8 key in one file) and `ssl.truststore.type=PEM`; TLS 1.3 as both ends negotiate by default. "+
		"The same load generator drives both listeners of both brokers: Kafka's ProducerPerformance and ConsumerPerformance with `--producer.config`/`--consumer.config` holding `security.protocol=SSL` and the PEM truststore, and `spool bench --tls-ca`. "+
		"Produce: %d records of 100 B and %d of 1 KiB, acks=1, unthrottled, into a fresh 6-partition topic per listener. "+
		"Fetch: one 6-partition topic per size, filled once over PLAINTEXT by spool bench (%d records of 100 B, %d of 1 KiB), read from the start over each listener (ConsumerPerformance's fetch.* figures; spool bench consume). "+
		"With spool bench as the load generator every count is %d× that, so that its phases too last seconds. The listener that goes first alternates by repetition.\n\n",
		t.sizes.produce100, t.sizes.produce1k, t.sizes.fetch100, t.sizes.fetch1k, spoolBenchTLSFactor)
	b.WriteString("| case | load generator | broker | PLAINTEXT records/s | SSL records/s | SSL / PLAINTEXT |\n|---|---|---|---:|---:|---:|\n")
	cases := t.sizes.cases()
	for _, lg := range r.lgs {
		for _, c := range cases {
			for _, s := range r.systems {
				p, q := t.med(lg.Name(), s.Name, c.String(), protoPlain), t.med(lg.Name(), s.Name, c.String(), protoSSL)
				if p == 0 && q == 0 {
					fmt.Fprintf(&b, "| %s | %s | %s | failed | failed | – |\n", c, lg.Name(), s.Name)
					continue
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", c, lg.Name(), s.Name, fmtRate(p), fmtRate(q), ratio(q, p))
			}
		}
	}
	b.WriteString("\nCPU per MB moved (10^6 bytes of record values), medians of per-run figures: the broker process's utime+stime over the phase (/proc/<pid>/stat), and the load generator's (its process, a JVM's start included). " +
		"MB per broker CPU-second is the broker's efficiency, whatever the client's speed (Kafka's includes its JVM's JIT compiler and GC threads; each repetition starts a fresh broker). " +
		"CPU is counted in clock ticks of 10 ms, so a figure from phases under a second is coarse.\n\n")
	b.WriteString("| case | load generator | broker | broker CPU ms/MB PLAINTEXT | broker CPU ms/MB SSL | SSL / PLAINTEXT broker CPU | MB per broker CPU-s SSL | client CPU ms/MB PLAINTEXT | client CPU ms/MB SSL |\n|---|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, lg := range r.lgs {
		for _, c := range cases {
			for _, s := range r.systems {
				if t.med(lg.Name(), s.Name, c.String(), protoPlain) == 0 && t.med(lg.Name(), s.Name, c.String(), protoSSL) == 0 {
					continue
				}
				bp, bq := t.cpuPerMB(lg.Name(), s.Name, c, protoPlain, false), t.cpuPerMB(lg.Name(), s.Name, c, protoSSL, false)
				cp, cq := t.cpuPerMB(lg.Name(), s.Name, c, protoPlain, true), t.cpuPerMB(lg.Name(), s.Name, c, protoSSL, true)
				fmt.Fprintf(&b, "| %s | %s | %s | %.1f | %.1f | %s | %.0f | %.1f | %.1f |\n", c, lg.Name(), s.Name, bp, bq, cpuRatio(bq, bp),
					t.efficiency(lg.Name(), s.Name, c, protoSSL), cp, cq)
			}
		}
	}
	if r.hasKafka() {
		b.WriteString("\nSpool / Kafka under the same load generator (medians; > 1: Spool is faster, or moves more MB per broker CPU-second):\n\n")
		b.WriteString("| case | load generator | Spool | SSL: Spool / Kafka | PLAINTEXT: Spool / Kafka | SSL MB per broker CPU-s: Spool / Kafka | PLAINTEXT MB per broker CPU-s: Spool / Kafka |\n|---|---|---|---:|---:|---:|---:|\n")
		for _, lg := range r.lgs {
			for _, c := range cases {
				kp, kq := t.med(lg.Name(), "kafka", c.String(), protoPlain), t.med(lg.Name(), "kafka", c.String(), protoSSL)
				ep, eq := t.efficiency(lg.Name(), "kafka", c, protoPlain), t.efficiency(lg.Name(), "kafka", c, protoSSL)
				for _, s := range r.systems {
					if s.Name == "kafka" {
						continue
					}
					sp, sq := t.med(lg.Name(), s.Name, c.String(), protoPlain), t.med(lg.Name(), s.Name, c.String(), protoSSL)
					fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", c, lg.Name(), s.Name, ratio(sq, kq), ratio(sp, kp),
						cpuRatio(t.efficiency(lg.Name(), s.Name, c, protoSSL), eq), cpuRatio(t.efficiency(lg.Name(), s.Name, c, protoPlain), ep))
				}
			}
		}
	}
	b.WriteString("\n")
	return b.String()
}

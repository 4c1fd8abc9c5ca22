package server_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/broker/brokertest/testca"
	spoolscram "github.com/spoolmq/spool/protocol-spec/scram"
)

// securityBroker has an SSL, a SASL_SSL and a SASL_PLAINTEXT listener, both SASL listeners
// with PLAIN (plainJAAS: admin, alice) and SCRAM-SHA-512 (carol / carol-secret, made through
// AlterUserScramCredentials). It returns the CA of the listeners' certificate and an admin
// client (admin over SASL_PLAINTEXT with PLAIN).
func securityBroker(t *testing.T) (*brokertest.Broker, *testca.CA, *kadm.Client) {
	t.Helper()
	ca := testca.New(t)
	b := brokertest.Start(t, brokertest.Options{Props: map[string]string{
		"listeners":               "SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"ssl.keystore.type":       "PEM",
		"ssl.keystore.location":   ca.Server(t, "broker").File,
		"sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": plainJAAS,
		"listener.name.sasl_ssl.plain.sasl.jaas.config":       plainJAAS,
	}})
	adm := scramAdmin(t, b)
	alterSCRAM(t, adm, nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "carol-secret"}})
	return b, ca, adm
}

// securityCell is one listener of securityBroker as a client sees it: where it is, whether
// it is TLS (trusting caFile), and the SASL mechanism and credentials ("" without SASL).
type securityCell struct {
	name, protocol, addr, caFile string
	mechanism, user, pass        string
}

func (c securityCell) tls() bool { return strings.HasSuffix(c.protocol, "SSL") }

// withPassword is the cell with another password (a wrong one).
func (c securityCell) withPassword(pass string) securityCell {
	c.pass = pass
	return c
}

// securityRecord is a record as produced and as consumed back, compared byte for byte.
type securityRecord struct{ key, value []byte }

func (r securityRecord) String() string { return fmt.Sprintf("%q=%q", r.key, r.value) }

// securityRecords are what each cell produces: keyed, with UTF-8 beyond ASCII, punctuation and
// a 2 KiB value, and neither a newline nor '|' (kcat reads lines, its key delimiter is '|').
func securityRecords() []securityRecord {
	return []securityRecord{
		{[]byte("key-0"), []byte("plain ascii")},
		{[]byte("kéy-1"), []byte("ünïcödé ✓, spaces; colons: and = signs")},
		{[]byte("key-2"), bytes.Repeat([]byte("0123456789abcdef"), 128)},
		{[]byte("key-0"), []byte("the same key again")},
		{[]byte("k"), []byte("{\"json\": [1, 2.5, null]}")},
	}
}

// securityClient is one client of the matrix.
type securityClient struct {
	name string
	// need checks that the client is installed (brokertest.NeedTool's rules).
	need func(t *testing.T)
	// roundTrip produces recs to topic through the cell and returns what it then consumed
	// from the topic's beginning; a failure fails the test.
	roundTrip func(t *testing.T, c securityCell, topic string, recs []securityRecord) []securityRecord
	// refused connects through the cell (which has a wrong password) and returns nil when the
	// client reports the refusal as an authentication failure, else what happened instead.
	refused func(t *testing.T, c securityCell) error
}

// kcat, confluent-kafka-python (librdkafka), kafka-python, franz-go and sarama each produce
// keyed records and consume them back byte for byte over SSL, SASL_SSL with SCRAM-SHA-512 and
// SASL_PLAINTEXT with PLAIN, all against one broker; on both SASL listeners the same client
// with a wrong password is refused, and says it was an authentication failure (kafka-python,
// whose SaslHandshake v0 exchange has no error to carry, sees the broker close the connection
// in the middle of the SASL exchange). The Java client's row is TestJavaClientSecurity.
func TestClientSecurityMatrix(t *testing.T) {
	heavy(t)
	b, ca, adm := securityBroker(t)
	cells := []securityCell{
		{name: "ssl", protocol: "SSL", addr: b.Listener(t, "SSL"), caFile: ca.File},
		{name: "sasl-ssl-scram-sha-512", protocol: "SASL_SSL", addr: b.Listener(t, "SASL_SSL"), caFile: ca.File,
			mechanism: "SCRAM-SHA-512", user: "carol", pass: "carol-secret"},
		{name: "sasl-plaintext-plain", protocol: "SASL_PLAINTEXT", addr: b.Listener(t, "SASL_PLAINTEXT"),
			mechanism: "PLAIN", user: "alice", pass: "alice-secret"},
	}
	clients := []securityClient{kcatSecurity(), pythonSecurity("confluent-kafka", "confluent_kafka", "python3-confluent-kafka"),
		pythonSecurity("kafka-python", "kafka", "python3-kafka"), franzSecurity(ca), saramaSecurity(ca)}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var topics []string
	for _, cl := range clients {
		for _, c := range cells {
			topics = append(topics, "sec-"+cl.name+"-"+c.name)
		}
	}
	// One partition each: the records come back in the order produced.
	created, err := adm.CreateTopics(ctx, 1, 1, nil, topics...)
	if err == nil {
		err = created.Error()
	}
	if err != nil {
		t.Fatalf("creating the topics: %v", err)
	}
	want := securityRecords()
	for _, cl := range clients {
		t.Run(cl.name, func(t *testing.T) {
			cl.need(t)
			for _, c := range cells {
				t.Run(c.name, func(t *testing.T) {
					got := cl.roundTrip(t, c, "sec-"+cl.name+"-"+c.name, want)
					if !slices.EqualFunc(got, want, func(a, b securityRecord) bool {
						return bytes.Equal(a.key, b.key) && bytes.Equal(a.value, b.value)
					}) {
						t.Errorf("consumed %v\nproduced %v", got, want)
					}
					if c.mechanism == "" {
						return // no password to get wrong
					}
					if err := cl.refused(t, c.withPassword("guess")); err != nil {
						t.Errorf("a wrong password: %v", err)
					}
				})
			}
		})
	}
}

// boundedRun runs a client that may hang, with one line on its standard input (a record for
// kcat -P), for at most a minute (a bound on a hang, not on the broker's speed), and returns
// its standard output and error and whether it was stopped for hanging.
func boundedRun(name string, args ...string) (stdout, stderr string, err error, hung bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader("refused\n")
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err, ctx.Err() != nil
}

func kcatSecurity() securityClient {
	var kcat string
	args := func(c securityCell) []string {
		a := []string{"-b", c.addr, "-X", "security.protocol=" + strings.ToLower(c.protocol)}
		if c.tls() {
			a = append(a, "-X", "ssl.ca.location="+c.caFile)
		}
		if c.mechanism != "" {
			a = append(a, "-X", "sasl.mechanisms="+c.mechanism, "-X", "sasl.username="+c.user, "-X", "sasl.password="+c.pass)
		}
		return a
	}
	return securityClient{
		name: "kcat",
		need: func(t *testing.T) { kcat = brokertest.NeedTool(t, "/usr/bin/kcat", "kcat") },
		roundTrip: func(t *testing.T, c securityCell, topic string, recs []securityRecord) []securityRecord {
			var in strings.Builder
			for _, r := range recs {
				fmt.Fprintf(&in, "%s|%s\n", r.key, r.value)
			}
			run(t, in.String(), kcat, append(args(c), "-P", "-t", topic, "-K", "|")...)
			out := run(t, "", kcat, append(args(c), "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%k|%s\n")...)
			var got []securityRecord
			for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				k, v, _ := strings.Cut(line, "|")
				got = append(got, securityRecord{[]byte(k), []byte(v)})
			}
			return got
		},
		refused: func(t *testing.T, c securityCell) error {
			// librdkafka reports the broker's SASL_AUTHENTICATION_FAILED and kcat gives up.
			_, stderr, err, hung := boundedRun(kcat, append(args(c), "-P", "-t", "sec-refused")...)
			if err == nil || hung || !strings.Contains(stderr, "Authentication failed") {
				return fmt.Errorf("kcat exited with %v (hung: %v), want an authentication failure:\n%s", err, hung, stderr)
			}
			return nil
		},
	}
}

// pythonSecurity runs testdata/security_<name, with underscores>.py, which drives the Python
// module of Debian package pkg, with that client's own names for the settings.
func pythonSecurity(name, module, pkg string) securityClient {
	script := "testdata/security_" + strings.ReplaceAll(name, "-", "_") + ".py"
	settings := func(c securityCell) string {
		s := map[string]string{}
		if name == "kafka-python" {
			s["security_protocol"] = c.protocol
			if c.tls() {
				s["ssl_cafile"] = c.caFile
			}
			if c.mechanism != "" {
				s["sasl_mechanism"], s["sasl_plain_username"], s["sasl_plain_password"] = c.mechanism, c.user, c.pass
			}
		} else {
			s["security.protocol"] = c.protocol
			if c.tls() {
				s["ssl.ca.location"] = c.caFile
			}
			if c.mechanism != "" {
				s["sasl.mechanisms"], s["sasl.username"], s["sasl.password"] = c.mechanism, c.user, c.pass
			}
		}
		b, _ := json.Marshal(s)
		return string(b)
	}
	return securityClient{
		name: name,
		need: func(t *testing.T) { brokertest.NeedPython(t, module, pkg) },
		roundTrip: func(t *testing.T, c securityCell, topic string, recs []securityRecord) []securityRecord {
			in := make([][2]string, len(recs))
			for i, r := range recs {
				in[i] = [2]string{hex.EncodeToString(r.key), hex.EncodeToString(r.value)}
			}
			stdin, _ := json.Marshal(in)
			out := run(t, string(stdin), "/usr/bin/python3", script, c.addr, topic, "ok", settings(c))
			var pairs [][2]string
			if err := json.Unmarshal([]byte(out), &pairs); err != nil {
				t.Fatalf("%s printed %q: %v", script, out, err)
			}
			var got []securityRecord
			for _, p := range pairs {
				k, err1 := hex.DecodeString(p[0])
				v, err2 := hex.DecodeString(p[1])
				if err := errors.Join(err1, err2); err != nil {
					t.Fatalf("%s printed %q: %v", script, p, err)
				}
				got = append(got, securityRecord{k, v})
			}
			return got
		},
		refused: func(t *testing.T, c securityCell) error {
			out, stderr, err, hung := boundedRun("/usr/bin/python3", script, c.addr, "sec-refused", "refused", settings(c))
			if err != nil || hung {
				return fmt.Errorf("%s refused: %v (hung: %v)\n%s%s", script, err, hung, out, stderr)
			}
			var r struct {
				States    []string    `json:"states"`
				Errors    [][2]string `json:"errors"` // [name, text]
				Delivered bool        `json:"delivered"`
			}
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				return fmt.Errorf("%s printed %q: %v", script, out, err)
			}
			if name == "kafka-python" {
				// Raw SASL tokens carry no error: the broker closes the connection in the
				// middle of the exchange (not a timeout, not before it).
				closed := slices.ContainsFunc(r.Errors, func(e [2]string) bool {
					return e[0] == "ConnectionError" && strings.Contains(e[1], "Connection reset during recv")
				})
				if !slices.Contains(r.States, "<authenticating>") || slices.Contains(r.States, "<connected>") || !closed {
					return fmt.Errorf("states %v, errors %q; want the connection closed while authenticating", r.States, r.Errors)
				}
				return nil
			}
			if len(r.Errors) == 0 || r.Errors[0][0] != "_AUTHENTICATION" || r.Delivered {
				return fmt.Errorf("librdkafka reported %q (record delivered: %v), want _AUTHENTICATION first", r.Errors, r.Delivered)
			}
			return nil
		},
	}
}

func franzSecurity(ca *testca.CA) securityClient {
	opts := func(c securityCell) []kgo.Opt {
		o := []kgo.Opt{kgo.SeedBrokers(c.addr)}
		if c.tls() {
			o = append(o, kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool()}))
		}
		var m sasl.Mechanism
		switch c.mechanism {
		case "PLAIN":
			m = plain.Auth{User: c.user, Pass: c.pass}.AsMechanism()
		case "SCRAM-SHA-512":
			m = scram.Auth{User: c.user, Pass: c.pass}.AsSha512Mechanism()
		}
		if m != nil {
			o = append(o, kgo.SASL(m))
		}
		return o
	}
	return securityClient{
		name: "franz-go",
		need: func(*testing.T) {},
		roundTrip: func(t *testing.T, c securityCell, topic string, recs []securityRecord) []securityRecord {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cl, err := kgo.NewClient(append(opts(c), kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			var out []*kgo.Record
			for _, r := range recs {
				out = append(out, &kgo.Record{Key: r.key, Value: r.value})
			}
			if err := cl.ProduceSync(ctx, out...).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			var got []securityRecord
			for len(got) < len(recs) {
				fs := cl.PollFetches(ctx)
				if err := fs.Err0(); err != nil {
					t.Fatalf("consume: %v", err)
				}
				fs.EachRecord(func(r *kgo.Record) { got = append(got, securityRecord{r.Key, r.Value}) })
			}
			return got
		},
		refused: func(t *testing.T, c securityCell) error {
			if err := metadataErr(t, opts(c)...); !errors.Is(err, kerr.SaslAuthenticationFailed) {
				return fmt.Errorf("%v, want SASL_AUTHENTICATION_FAILED", err)
			}
			return nil
		},
	}
}

// saramaSCRAM is sarama's SCRAMClient over the protocol's one SCRAM client
// (protocol-spec/scram): sarama brings none of its own.
type saramaSCRAM struct {
	c    *spoolscram.Client
	done bool
}

func (s *saramaSCRAM) Begin(user, pass, _ string) error {
	s.c = spoolscram.NewClient(spoolscram.SHA512, user, pass)
	return nil
}

func (s *saramaSCRAM) Step(challenge string) (string, error) {
	msg, done, err := s.c.Step([]byte(challenge))
	s.done = done
	return string(msg), err
}

func (s *saramaSCRAM) Done() bool { return s.done }

func saramaSecurity(ca *testca.CA) securityClient {
	config := func(c securityCell) *sarama.Config {
		cfg := sarama.NewConfig()
		cfg.ClientID = "sarama-security"
		cfg.Net.TLS.Enable = c.tls()
		cfg.Net.TLS.Config = &tls.Config{RootCAs: ca.Pool()}
		if c.mechanism != "" {
			cfg.Net.SASL.Enable = true
			cfg.Net.SASL.Mechanism = sarama.SASLMechanism(c.mechanism)
			cfg.Net.SASL.User, cfg.Net.SASL.Password = c.user, c.pass
			cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{} }
		}
		cfg.Producer.RequiredAcks = sarama.WaitForAll
		cfg.Producer.Return.Successes = true
		cfg.Metadata.Retry.Max = 0
		return cfg
	}
	return securityClient{
		name: "sarama",
		need: func(*testing.T) {},
		roundTrip: func(t *testing.T, c securityCell, topic string, recs []securityRecord) []securityRecord {
			client, err := sarama.NewClient([]string{c.addr}, config(c))
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			producer, err := sarama.NewSyncProducerFromClient(client)
			if err != nil {
				t.Fatal(err)
			}
			var msgs []*sarama.ProducerMessage
			for _, r := range recs {
				msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Key: sarama.ByteEncoder(r.key), Value: sarama.ByteEncoder(r.value)})
			}
			if err := producer.SendMessages(msgs); err != nil {
				t.Fatalf("produce: %v", err)
			}
			if err := producer.Close(); err != nil {
				t.Fatal(err)
			}
			consumer, err := sarama.NewConsumerFromClient(client)
			if err != nil {
				t.Fatal(err)
			}
			defer consumer.Close()
			pc, err := consumer.ConsumePartition(topic, 0, sarama.OffsetOldest)
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			timeout := time.After(time.Minute) // a bound on a hang, not on the broker's speed
			var got []securityRecord
			for len(got) < len(recs) {
				select {
				case m := <-pc.Messages():
					got = append(got, securityRecord{m.Key, m.Value})
				case err := <-pc.Errors():
					t.Fatalf("consume: %v", err)
				case <-timeout:
					t.Fatalf("consumed %d of %d records in a minute", len(got), len(recs))
				}
			}
			return got
		},
		refused: func(t *testing.T, c securityCell) error {
			client, err := sarama.NewClient([]string{c.addr}, config(c))
			if err == nil {
				client.Close()
			}
			if !errors.Is(err, sarama.ErrSASLAuthenticationFailed) {
				return fmt.Errorf("%v, want SASL_AUTHENTICATION_FAILED", err)
			}
			return nil
		},
	}
}

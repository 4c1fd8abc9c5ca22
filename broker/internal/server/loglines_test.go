package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/spoolmq/spool/broker/brokertest"
)

// TestLogHygiene reads the broker's info log (JSON) while a user is refused, a producer sends
// to a topic that does not exist, and clients connect: each denial kind and each missing topic
// gets an info line with who, what and on which resource, at most once per
// spool.log.summary.interval.ms, and the repeats left out are counted in later lines, so
// that every event is accounted for; connections are not logged one by one at info, but in a
// periodic summary with the client software.
func TestLogHygiene(t *testing.T) {
	parallel(t)
	const interval = time.Second
	cmd := exec.Command(brokertest.Binary(t), "--log-format", "json", "--data-dir", t.TempDir(),
		"--set", "listeners=SASL_PLAINTEXT://127.0.0.1:0",
		"--set", "sasl.enabled.mechanisms=PLAIN",
		"--set", `listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret" user_bob="bob-secret";`,
		"--set", "authorizer.class.name=kafka.security.authorizer.AclAuthorizer",
		"--set", "super.users=User:admin",
		"--set", "auto.create.topics.enable=false",
		"--set", "spool.log.summary.interval.ms=1000")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	addr := ""
	for addr == "" && sc.Scan() {
		addr, _ = strings.CutPrefix(sc.Text(), "spoold listening on ")
	}
	if addr == "" {
		t.Fatalf("no listening line; stderr:\n%s", stderr.String())
	}
	go func() {
		for sc.Scan() {
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := func(user string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	admin, bob := client("admin"), client("bob")
	if _, err := kadm.NewClient(admin).CreateTopic(ctx, 1, 1, nil, "orders-eu"); err != nil {
		t.Fatal(err)
	}

	// bob may not describe orders-eu: n Metadata requests, n denials.
	const n = 40
	start := time.Now()
	for range n {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("orders-eu")
		req.Topics = append(req.Topics, rt)
		resp, err := bob.SeedBrokers()[0].Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if code := resp.(*kmsg.MetadataResponse).Topics[0].ErrorCode; code != 29 { // TOPIC_AUTHORIZATION_FAILED
			t.Fatalf("bob's Metadata for orders-eu: error %d, want 29", code)
		}
	}
	// The admin produces to a topic that does not exist (and is not auto-created): n refusals.
	for range n {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = 1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "ghost"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = []byte{0} // never read: the topic is looked up first
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := admin.SeedBrokers()[0].Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 3 { // UNKNOWN_TOPIC_OR_PARTITION
			t.Fatalf("produce to ghost: error %d, want 3", code)
		}
	}
	elapsed := time.Since(start)
	// Connections that come and go.
	const conns = 5
	for range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}

	type tally struct {
		lines, events int // lines of the event itself; events accounted for (lines + repeats)
	}
	var denied, missing tally
	var opened, closed int
	var software string
	var connectedAtInfo int
	read := func() {
		denied, missing, opened, closed, software, connectedAtInfo = tally{}, tally{}, 0, 0, "", 0
		for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) != nil {
				continue
			}
			repeats, _ := rec["repeats"].(float64)
			switch msg, _ := rec["msg"].(string); {
			case msg == "authorization denied" && rec["principal"] == "User:bob" && rec["operation"] == "Describe" &&
				rec["resource_type"] == "Topic" && rec["resource_name"] == "orders-eu":
				denied.lines++
				denied.events += 1 + int(repeats)
				if rec["host"] != "127.0.0.1" || rec["api"] != "Metadata" || rec["level"] != "INFO" {
					t.Errorf("denial line without host, API or at another level: %s", line)
				}
			case msg == "authorization denied, repeats" && rec["principal"] == "User:bob" && rec["resource_name"] == "orders-eu":
				denied.events += int(repeats)
			case strings.HasPrefix(msg, "produce to a topic that does not exist refused") && rec["topic"] == "ghost":
				if strings.HasSuffix(msg, ", repeats") {
					missing.events += int(repeats)
				} else {
					missing.lines++
					missing.events += 1 + int(repeats)
				}
			case msg == "client connections":
				o, _ := rec["opened"].(float64)
				c, _ := rec["closed"].(float64)
				opened += int(o)
				closed += int(c)
				s, _ := rec["software"].(string)
				software += s
			case msg == "client connected":
				connectedAtInfo++
			}
		}
	}
	brokertest.WaitForState(t, 30*time.Second, "every denial, refusal and connection accounted for in the log", func() (bool, string) {
		read()
		return denied.events == n && missing.events == n && opened >= conns+2 && closed >= conns,
			fmt.Sprintf("denials %d, missing-topic refusals %d, connections opened %d, closed %d", denied.events, missing.events, opened, closed)
	})
	// At most one line per key per interval, over the time the requests took.
	most := 1 + int(elapsed/interval) + 1
	if denied.lines < 1 || denied.lines > most {
		t.Errorf("%d denial lines for %d denials in %v; want 1 to %d (one per %v)", denied.lines, n, elapsed, most, interval)
	}
	if missing.lines < 1 || missing.lines > most {
		t.Errorf("%d missing-topic lines for %d refusals in %v; want 1 to %d", missing.lines, n, elapsed, most)
	}
	if !strings.Contains(software, "kgo") {
		t.Errorf("the connection summaries name no client software (franz-go's kgo): %q", software)
	}
	if connectedAtInfo > 0 {
		t.Errorf("%d connections logged one by one at info; want debug only", connectedAtInfo)
	}
	if denied.events != n || missing.events != n {
		t.Errorf("events accounted for: %d denials and %d refusals, want %d each", denied.events, missing.events, n)
	}
}

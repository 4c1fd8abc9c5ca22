package config_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/broker/internal/config"
)

// spoolDefaults are the properties whose default in Spool is not Kafka's, each with the reason.
// An entry that no longer differs fails the test, so the table cannot go stale.
var spoolDefaults = map[string]string{
	"listeners":                       "one node on loopback by default (--listen), not every interface",
	"log.dirs":                        "./data (--data-dir); Kafka leaves it unset and falls back to log.dir",
	"log.retention.ms":                "Kafka leaves it unset and reads log.retention.hours (168); Spool resolves the same precedence into the value in force",
	"log.roll.ms":                     "resolved from log.roll.hours likewise",
	"log.flush.interval.ms":           "Kafka leaves it unset; spool.fsync=interval flushes every second so its loss window is bounded",
	"node.id":                         "0: a single node needs no id to be given",
	"zookeeper.connection.timeout.ms": "Kafka leaves it unset (then zookeeper.session.timeout.ms); Spool names the 18 s it waits for a session at startup",
	"broker.heartbeat.interval.ms":    "the controller probes each broker's liveness every 100 ms",
	"broker.session.timeout.ms":       "3 s: a killed broker is seen at once by its closed connection, the timeout only catches a hung one",
	"queued.max.request.bytes":        "256 MiB, not unbounded, so that half-sent requests cannot exhaust memory",
	"replica.fetch.backoff.ms":        "a follower's fetcher pauses 100 ms after an error, not 1 s",
}

// Every property of Kafka 3.9's broker configuration, read from Kafka's own ConfigDef in its
// jars (fetched as make bench-compare fetches them), is known to spoold with Kafka's type and,
// except where spoolDefaults says why, Kafka's default; every topic config of Kafka's LogConfig
// is one of TopicDefs with Kafka's type, and TopicDefs has no other.
func TestEveryKafkaBrokerPropertyIsKnown(t *testing.T) {
	classpath := brokertest.KafkaJars(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "java", "-cp", classpath, "testdata/KafkaConfigDef.java").Output()
	if err != nil {
		t.Fatalf("listing Kafka's broker properties: %v\n%s", err, out)
	}
	types := map[string]config.Type{"BOOLEAN": config.Boolean, "STRING": config.String, "INT": config.Int, "SHORT": config.Short,
		"LONG": config.Long, "DOUBLE": config.Double, "LIST": config.List, "CLASS": config.Class, "PASSWORD": config.Password}
	topicDefs := map[string]config.TopicDef{}
	for _, d := range config.TopicDefs {
		topicDefs[d.Name] = d
	}
	differ := map[string]bool{}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			t.Fatalf("unexpected line %q", line)
		}
		if f[0] == "topic" {
			name, typ := f[1], f[2]
			if d, ok := topicDefs[name]; !ok {
				t.Errorf("%s: Kafka's topic config is not one of TopicDefs", name)
			} else if d.Type != types[typ] {
				t.Errorf("topic config %s: type %d, Kafka's is %s", name, d.Type, typ)
			}
			delete(topicDefs, name)
			continue
		}
		name, typ, def := f[0], f[1], f[2]
		n++
		d := config.LookupBroker(name)
		if d == nil {
			t.Errorf("%s: Kafka's broker property is unknown to spoold", name)
			continue
		}
		if d.Type != types[typ] {
			t.Errorf("%s: type %d, Kafka's is %s", name, d.Type, typ)
		}
		if def == "<none>" || def == "null" {
			def = ""
		}
		if d.Default != def {
			differ[name] = true
			if _, ok := spoolDefaults[name]; !ok {
				t.Errorf("%s: default %q, Kafka's is %q", name, d.Default, def)
			}
		}
	}
	if n < 300 {
		t.Fatalf("Kafka listed %d broker properties; want Kafka 3.9's (over 300)", n)
	}
	for name := range topicDefs {
		t.Errorf("topic config %s is not one of Kafka's", name)
	}
	if len(config.TopicDefs) < 36 {
		t.Errorf("%d topic configs, Kafka 3.9 has 36", len(config.TopicDefs))
	}
	for name := range spoolDefaults {
		if !differ[name] {
			t.Errorf("%s: listed in spoolDefaults but its default is Kafka's", name)
		}
	}
}

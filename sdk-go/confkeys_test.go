package spool_test

import (
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/spoolmq/spool/broker/brokertest"
	spool "github.com/spoolmq/spool/sdk-go"
)

func TestConfEveryKeyTakesItsDefault(t *testing.T) {
	keys := spool.ConfKeys()
	if len(keys) < 30 {
		t.Fatalf("only %d keys in the table", len(keys))
	}
	for _, k := range keys {
		if k.Default == "" {
			continue // group.id, group.instance.id: no default
		}
		var c spool.Conf
		if err := c.Set(k.Name, k.Default); err != nil {
			t.Errorf("%s=%s (its default): %v", k.Name, k.Default, err)
			continue
		}
		if got, _ := c.Get(k.Name); got != k.Default {
			t.Errorf("%s: default %q reads back as %q", k.Name, k.Default, got)
		}
		for _, a := range k.Aliases {
			if got, ok := c.Get(a); !ok || got != k.Default {
				t.Errorf("%s: alias %s reads %q, %v", k.Name, a, got, ok)
			}
			if lk, ok := spool.LookupConfKey(a); !ok || lk.Name != k.Name {
				t.Errorf("alias %s looks up %q", a, lk.Name)
			}
		}
		if err := c.Check(); err != nil {
			t.Errorf("%s=%s: Check: %v", k.Name, k.Default, err)
		}
	}
}

func TestConfCanonicalValues(t *testing.T) {
	for _, tc := range []struct{ key, in, want string }{
		{"acks", "-1", "all"},
		{"request.required.acks", "1", "1"},
		{"auto.offset.reset", "smallest", "earliest"},
		{"auto.offset.reset", "largest", "latest"},
		{"auto.offset.reset", "none", "error"},
		{"enable.auto.commit", "0", "false"},
		{"compression.codec", "uncompressed", "none"},
		{"queue.buffering.max.ms", "7", "7"},
		{"bootstrap.servers", " a:1 , b:2", "a:1,b:2"},
		{"partition.assignment.strategy", "roundrobin, range", "roundrobin,range"},
		{"partitioner", "consistent_random", "consistent_random"},
	} {
		var c spool.Conf
		if err := c.Set(tc.key, tc.in); err != nil {
			t.Errorf("%s=%q: %v", tc.key, tc.in, err)
			continue
		}
		k, _ := spool.LookupConfKey(tc.key)
		if got, _ := c.Get(k.Name); got != tc.want {
			t.Errorf("%s=%q reads back %q, want %q", tc.key, tc.in, got, tc.want)
		}
	}
}

func TestConfRejectsUnknownKeysAndBadValues(t *testing.T) {
	var c spool.Conf
	err := c.Set("linger.msec", "5")
	if !errors.Is(err, spool.ErrUnknownConfKey) || !strings.Contains(err.Error(), "linger.msec") {
		t.Errorf("unknown key: %v", err)
	}
	for _, kv := range [][2]string{
		{"acks", "2"},
		{"linger.ms", "-1"},
		{"linger.ms", "5ms"},
		{"batch.size", "10"},
		{"enable.idempotence", "yes please"},
		{"compression.type", "brotli"},
		{"partitioner", "fnv1a"},
		{"auto.offset.reset", "middle"},
		{"isolation.level", "serializable"},
		{"bootstrap.servers", "no-port"},
		{"bootstrap.servers", ""},
		{"group.id", ""},
		{"partition.assignment.strategy", "range,range"},
		{"partition.assignment.strategy", "sticky"},
		{"session.timeout.ms", "0"},
		{"metadata.max.age.ms", "10"}, // below 1000
	} {
		err := c.Set(kv[0], kv[1])
		if !errors.Is(err, spool.ErrBadConfValue) || !strings.Contains(err.Error(), kv[0]) {
			t.Errorf("%s=%q: %v", kv[0], kv[1], err)
		}
	}
	if _, ok := c.Get("linger.ms"); ok {
		t.Error("a refused value was recorded")
	}
}

func TestConfCheckCombinations(t *testing.T) {
	for _, tc := range []struct {
		conf map[string]string
		bad  string // part of the error, "" for none
	}{
		{map[string]string{"group.id": "g"}, ""},
		{map[string]string{"enable.auto.commit": "false", "session.timeout.ms": "100"}, ""}, // no group: ignored
		{map[string]string{"group.id": "g", "session.timeout.ms": "3000", "heartbeat.interval.ms": "3000"}, "HeartbeatInterval"},
		{map[string]string{"retry.backoff.ms": "2000"}, "retry.backoff.max.ms"},
		{map[string]string{"acks": "1", "enable.idempotence": "true"}, "Idempotence(true)"},
		{map[string]string{"acks": "1"}, ""},
	} {
		c, err := spool.NewConfFromMap(tc.conf)
		if err != nil {
			t.Fatalf("%v: %v", tc.conf, err)
		}
		err = c.Check()
		if tc.bad == "" && err != nil || tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)) {
			t.Errorf("%v: Check = %v, want an error containing %q", tc.conf, err, tc.bad)
		}
	}
}

// librdkafkaPartitions produces, through confluent-kafka-python (librdkafka underneath), one
// record per "k<hex key>" line of input to topic with the given partitioner, and prints the
// partition of each.
const librdkafkaPartitions = `
import sys
from confluent_kafka import Producer
addr, topic, partitioner = sys.argv[1:4]
p = Producer({"bootstrap.servers": addr, "partitioner": partitioner})
keys = [bytes.fromhex(l.strip()[1:]) for l in sys.stdin]
got = [None] * len(keys)
def report(i):
    def cb(err, msg):
        if err is not None:
            raise SystemExit(str(err))
        got[i] = msg.partition()
    return cb
for i, k in enumerate(keys):
    p.produce(topic, b"v", key=k, on_delivery=report(i))
p.flush(30)
print("\n".join(str(g) for g in got))
`

// TestConfPartitionersAgreeWithLibrdkafka produces the same keys through librdkafka and
// through a client configured by the table, with each hashing partitioner, to a real broker,
// and compares the partitions.
func TestConfPartitionersAgreeWithLibrdkafka(t *testing.T) {
	t.Parallel()
	python := brokertest.NeedPython(t, "confluent_kafka", "python3-confluent-kafka")
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	ctx := testCtx(t)
	var keys [][]byte
	for i := range 60 {
		keys = append(keys, []byte(strconv.Itoa(i*7919)+strings.Repeat("k", i%9)))
	}
	for _, name := range []string{spool.PartitionerMurmur2, spool.PartitionerMurmur2Random, spool.PartitionerConsistent, spool.PartitionerConsistentRandom} {
		t.Run(name, func(t *testing.T) {
			keys := keys
			if name != spool.PartitionerConsistentRandom {
				keys = append(keys, []byte{}) // hashed; consistent_random places it at random
			}
			cl := confClient(t, map[string]string{"bootstrap.servers": addr, "partitioner": name, "linger.ms": "0"})
			topic := createTopic(t, cl, 7)
			var in strings.Builder
			for _, k := range keys {
				fmt.Fprintf(&in, "k%x\n", k)
			}
			cmd := exec.CommandContext(ctx, python, "-c", librdkafkaPartitions, addr, topic, name)
			cmd.Stdin = strings.NewReader(in.String())
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("librdkafka: %v\n%s", err, stderr.String())
			}
			theirs := strings.Fields(string(out))
			if len(theirs) != len(keys) {
				t.Fatalf("librdkafka placed %d of %d records", len(theirs), len(keys))
			}
			spread := map[int32]bool{}
			for i, k := range keys {
				r := &spool.Record{Topic: topic, Key: k, Value: []byte("v")}
				if err := cl.ProduceSync(ctx, r); err != nil {
					t.Fatal(err)
				}
				spread[r.Partition] = true
				if want, _ := strconv.Atoi(theirs[i]); int(r.Partition) != want {
					t.Errorf("key %q: ours partition %d, librdkafka %d", k, r.Partition, want)
				}
			}
			if len(spread) < 5 {
				t.Errorf("%d keys went to only %d of 7 partitions", len(keys), len(spread))
			}
		})
	}
}

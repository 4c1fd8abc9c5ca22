package spool_test

import (
	"github.com/spoolmq/spool/broker/brokertest"

	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	spool "github.com/spoolmq/spool/sdk-go"
)

// kafkaPythonPartitions asks kafka-python's DefaultPartitioner (murmur2) where each
// "k<hex key> partitions" line of input goes (the k keeps an empty key a field). Debian's python3-kafka installs for /usr/bin/python3.
const kafkaPythonPartitions = `
import sys
from kafka.partitioner.default import DefaultPartitioner
p = DefaultPartitioner()
for line in sys.stdin:
    key, n = line.split()
    print(p(bytes.fromhex(key[1:]), list(range(int(n))), []))
`

// TestPartitionerAgreesWithKafkaPython checks that keyed records land where kafka-python
// puts them, for keys of every length up to 40 bytes (ASCII and arbitrary bytes) and
// partition counts from 1 to 100.
func TestPartitionerAgreesWithKafkaPython(t *testing.T) {
	t.Parallel()
	python := brokertest.NeedPython(t, "kafka.partitioner.default", "python3-kafka")
	rng := rand.New(rand.NewPCG(1, 2))
	type probe struct {
		key []byte
		n   int
	}
	var probes []probe
	for i := range 400 {
		key := make([]byte, i%41)
		for j := range key {
			if i%2 == 0 {
				key[j] = byte('a' + rng.IntN(26))
			} else {
				key[j] = byte(rng.Uint32())
			}
		}
		probes = append(probes, probe{key, 1 + rng.IntN(100)})
	}
	var in strings.Builder
	for _, p := range probes {
		fmt.Fprintf(&in, "k%s %d\n", hex.EncodeToString(p.key), p.n)
	}
	cmd := exec.Command(python, "-c", kafkaPythonPartitions)
	cmd.Stdin = strings.NewReader(in.String())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kafka-python: %v\n%s", err, stderr.String())
	}
	lines := strings.Fields(string(out))
	if len(lines) != len(probes) {
		t.Fatalf("kafka-python answered %d of %d keys", len(lines), len(probes))
	}
	for i, p := range probes {
		want, err := strconv.Atoi(lines[i])
		if err != nil {
			t.Fatalf("kafka-python line %d: %q", i, lines[i])
		}
		if got := spool.KafkaPartition(p.key, p.n); got != want {
			t.Errorf("key %x over %d partitions: ours %d, kafka-python %d", p.key, p.n, got, want)
		}
	}
}

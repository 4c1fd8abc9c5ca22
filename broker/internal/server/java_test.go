package server_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

// murmur2 is Java's Utils.murmur2 (seed 0x9747b28c), the hash behind Kafka's default keyed
// partitioning: see shared/reference/client-compat.md §4.
func murmur2(data []byte) int32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	h := seed ^ uint32(len(data))
	n := len(data) / 4
	for i := 0; i < n; i++ {
		k := binary.LittleEndian.Uint32(data[4*i:])
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := data[4*n:]
	switch len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// TestJavaMurmur2Vectors checks murmur2 against Kafka's UtilsTest vectors and our extra ones
// (shared/reference/murmur2-vectors.md).
func TestJavaMurmur2Vectors(t *testing.T) {
	for _, v := range []struct {
		key         string
		hash        int32
		p3, p6, p10 int32
	}{
		{"21", -973932308, 0, 0, 0},
		{"foobar", -790332482, 0, 0, 6},
		{"a-little-bit-long-string", -985981536, 2, 2, 2},
		{"a-little-bit-longer-string", -1486304829, 2, 5, 9},
		{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971, 2, 5, 7},
		{"abc", 479470107, 0, 3, 7},
		{"key1", 28543940, 2, 2, 0},
		{"key2", 1674751211, 2, 5, 1},
		{"key3", -1745673403, 1, 1, 5},
		{"hello", 2132663229, 0, 3, 9},
		{"", 275646681, 0, 3, 1},
		{"a", -1563381124, 1, 4, 4},
	} {
		k := []byte(v.key)
		if got := murmur2(k); got != v.hash {
			t.Errorf("murmur2(%q) = %d, want %d", v.key, got, v.hash)
		}
		if p3, p6, p10 := javaPartition(k, 3), javaPartition(k, 6), javaPartition(k, 10); p3 != v.p3 || p6 != v.p6 || p10 != v.p10 {
			t.Errorf("partitions of %q: %d %d %d, want %d %d %d", v.key, p3, p6, p10, v.p3, v.p6, v.p10)
		}
	}
}

// TestJavaClient runs the Apache Kafka Java client (kafka-clients 3.9.2 from Maven Central,
// testdata/java) with its defaults: Admin create/describe/incrementalAlter/delete, an
// idempotent acks=all producer in every codec, keyed and unkeyed, and a group-less consumer
// that checks every record byte for byte. Keyed records must sit where murmur2 says.
func TestJavaClient(t *testing.T) {
	heavy(t)
	start := time.Now()
	java, cp := buildJavaMember(t)
	t.Logf("java build (or its cache): %v", time.Since(start).Round(time.Millisecond))

	b := startBroker(t, nil)
	const topic = "java"
	jctx, jcancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer jcancel()
	start = time.Now()
	cmd := exec.CommandContext(jctx, java, "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", cp, "Main", b.Addr, topic)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("java client: %v", time.Since(start).Round(time.Millisecond))
	if err == nil && stderr.Len() > 0 {
		t.Logf("java client warnings:\n%s", stderr.String())
	}
	if err != nil || !slices.Contains(strings.Split(stdout.String(), "\n"), "OK") {
		t.Fatalf("java Main: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}

	// Java's partitioner put each keyed record where our murmur2 says.
	keyed := 0
	for _, line := range strings.Split(stdout.String(), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "KEYED" {
			continue
		}
		key, err := hex.DecodeString(f[1])
		if err != nil {
			t.Fatalf("bad line %q: %v", line, err)
		}
		p, err := strconv.Atoi(f[2])
		if err != nil {
			t.Fatalf("bad line %q: %v", line, err)
		}
		if want := javaPartition(key, 3); int32(p) != want {
			t.Errorf("key %q: Java chose partition %d, murmur2 says %d", key, p, want)
		}
		keyed++
	}
	if keyed != 5*30 {
		t.Errorf("java reported %d keyed records, want %d", keyed, 5*30)
	}

	requireAllCodecs(t, "java", b.Addr, topic, 3)
	// Idempotence is on by default: every stored batch carries a producer id.
	c := dial(t, b.Addr)
	for p := int32(0); p < 3; p++ {
		pd := fetch(t, c, 12, fetchRequest(topic, p, 0, 0, 0, 64<<20))
		sc := batch.NewScanner(pd.Records)
		for sc.Next() {
			if raw := batch.Raw(sc.Batch()); raw.ProducerID() < 0 {
				t.Errorf("partition %d offset %d: batch without a producer id: Java's idempotent default was not used", p, raw.BaseOffset())
			}
		}
	}
}

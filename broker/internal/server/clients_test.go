package server_test

import (
	"github.com/spoolmq/spool/broker/brokertest"

	"bytes"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/spoolmq/spool/protocol-spec/wire/batch"
	"github.com/spoolmq/spool/protocol-spec/wire/compress"
)

func run(t *testing.T, stdin string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstderr:\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// codecsStored returns the compression codecs of the batches stored in a topic partition.
func codecsStored(t *testing.T, addr, topic string, partitions int32) map[compress.Codec]bool {
	t.Helper()
	seen := map[compress.Codec]bool{}
	c := dial(t, addr)
	for p := int32(0); p < partitions; p++ {
		pd := fetch(t, c, 12, fetchRequest(topic, p, 0, 0, 0, 64<<20))
		sc := batch.NewScanner(pd.Records)
		for sc.Next() {
			seen[batch.Raw(sc.Batch()).Attributes().Codec()] = true
		}
	}
	return seen
}

// lines returns n distinct compressible payload lines tagged with a prefix.
func lines(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%04d-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", prefix, i)
	}
	return out
}

// TestKcat is librdkafka 2.0.2 through Debian's kcat: metadata, produce keyed and unkeyed in
// every codec (idempotent), and consume everything back byte for byte.
func TestKcat(t *testing.T) {
	heavy(t)
	kcat := brokertest.NeedTool(t, "/usr/bin/kcat", "kcat")
	b := startBroker(t, map[string]string{"num.partitions": "3"})
	c := dial(t, b.Addr)
	createTopic(t, c, "kcat", 3, nil)
	if out := run(t, "", kcat, "-b", b.Addr, "-L"); !strings.Contains(out, `topic "kcat" with 3 partitions`) {
		t.Fatalf("kcat -L:\n%s", out)
	}
	var want []string
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		keyed := lines("k-"+codec, 50)
		var in strings.Builder
		for i, l := range keyed {
			fmt.Fprintf(&in, "key%d:%s\n", i%5, l)
			want = append(want, fmt.Sprintf("key%d:%s", i%5, l))
		}
		run(t, in.String(), kcat, "-b", b.Addr, "-P", "-t", "kcat", "-K:", "-z", codec,
			"-X", "enable.idempotence=true", "-X", "partitioner=murmur2_random", "-X", "linger.ms=50")
		unkeyed := lines("u-"+codec, 50)
		run(t, strings.Join(unkeyed, "\n")+"\n", kcat, "-b", b.Addr, "-P", "-t", "kcat", "-z", codec, "-X", "linger.ms=50")
		for _, l := range unkeyed {
			want = append(want, ":"+l)
		}
	}
	out := run(t, "", kcat, "-b", b.Addr, "-C", "-t", "kcat", "-o", "beginning", "-e", "-q", "-f", "%k:%s\n")
	got := strings.Split(strings.TrimSpace(out), "\n")
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("consumed %d records, produced %d; first differences:\n%s", len(got), len(want), firstDiff(got, want))
	}
	seen := codecsStored(t, b.Addr, "kcat", 3)
	for _, codec := range []compress.Codec{compress.None, compress.Gzip, compress.Snappy, compress.LZ4, compress.Zstd} {
		if !seen[codec] {
			t.Errorf("librdkafka sent no %v batch: compression was silently disabled", codec)
		}
	}
}

// TestPythonClients runs kafka-python 2.0.2 and confluent-kafka (librdkafka) from Debian.
func TestPythonClients(t *testing.T) {
	heavy(t)
	brokertest.NeedTool(t, "/usr/bin/python3", "python3")
	for _, tc := range []struct {
		name, module, pkg string
		codecs            []string
	}{
		{"kafka-python", "kafka", "python3-kafka", []string{"none", "gzip", "snappy", "lz4", "zstd"}},
		{"confluent-kafka", "confluent_kafka", "python3-confluent-kafka", []string{"none", "gzip", "snappy", "lz4", "zstd"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			brokertest.NeedPython(t, tc.module, tc.pkg)
			for _, m := range []string{"snappy", "lz4.frame", "zstandard"} {
				brokertest.NeedPython(t, m, "python3-"+strings.Split(m, ".")[0])
			}
			b := startBroker(t, map[string]string{"num.partitions": "3"})
			script := "testdata/drive_" + strings.ReplaceAll(tc.name, "-", "_") + ".py"
			out := run(t, "", "/usr/bin/python3", script, b.Addr, "py", strings.Join(tc.codecs, ","))
			if !strings.Contains(out, "OK") {
				t.Fatalf("%s said:\n%s", script, out)
			}
			seen := codecsStored(t, b.Addr, "py", 3)
			for _, codec := range []compress.Codec{compress.None, compress.Gzip, compress.Snappy, compress.LZ4, compress.Zstd} {
				if !seen[codec] {
					t.Errorf("%s sent no %v batch", tc.name, codec)
				}
			}
		})
	}
}

func firstDiff(got, want []string) string {
	var sb strings.Builder
	for i := 0; i < max(len(got), len(want)) && sb.Len() < 2000; i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			fmt.Fprintf(&sb, "  #%d got %q want %q\n", i, g, w)
		}
	}
	return sb.String()
}

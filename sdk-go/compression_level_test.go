package spool_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/protocol-spec/wire/batch"
	"github.com/spoolmq/spool/protocol-spec/wire/compress"
	spool "github.com/spoolmq/spool/sdk-go"
)

// CompressionLevel: the producer's batches are compressed at the level given for the codec,
// read back from the broker's log file (compression.type=producer keeps them byte for byte);
// out-of-range levels and levels for codecs without them fail NewClient.
func TestCompressionLevel(t *testing.T) {
	t.Parallel()
	br := brokertest.Start(t, brokertest.Options{})
	ctx := testCtx(t)
	words := strings.Fields("spool kafka record batch offset level topic leader replica group member commit")
	var value []byte
	for x := uint32(1); len(value) < 64<<10; {
		x = x*1664525 + 1013904223
		value = fmt.Appendf(value, "%s %d ", words[x>>24%uint32(len(words))], x>>16&0xff)
	}
	for _, tc := range []struct {
		codec  compress.Codec
		lo, hi int
	}{
		{compress.Gzip, 1, 9},
		{compress.LZ4, 1, 17},
		{compress.Zstd, -5, 19},
	} {
		// Another codec's level changes nothing for this one.
		other := spool.CompressionLevel(compress.Gzip, 2)
		if tc.codec == compress.Gzip {
			other = spool.CompressionLevel(compress.Zstd, 1)
		}
		size := map[int]int{}
		for _, level := range []int{tc.lo, tc.hi} {
			topic := fmt.Sprintf("level-%s-%d", tc.codec, level)
			cl := newClient(t, br.Addr, other, spool.Compression(tc.codec), spool.CompressionLevel(tc.codec, level))
			if err := cl.Admin().CreateTopic(ctx, topic, 1, 1, nil); err != nil {
				t.Fatal(err)
			}
			if err := cl.ProduceSync(ctx, &spool.Record{Topic: topic, Value: value}); err != nil {
				t.Fatal(err)
			}
			seg, err := os.ReadFile(filepath.Join(br.DataDir, topic+"-0", "00000000000000000000.log"))
			if err != nil {
				t.Fatal(err)
			}
			raw := batch.Raw(seg)
			if raw.Attributes().Codec() != tc.codec {
				t.Fatalf("%s: stored codec %s", topic, raw.Attributes().Codec())
			}
			stored := seg[batch.HeaderSize:raw.TotalSize()]
			recs, err := compress.Decompress(nil, stored, tc.codec, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if want, _ := compress.CompressLevel(nil, recs, tc.codec, level); !bytes.Equal(stored, want) {
				t.Errorf("%s: the batch (%d bytes) is not compressed at level %d (%d bytes)", topic, len(stored), level, len(want))
			}
			size[level] = len(stored)
		}
		if size[tc.hi] >= size[tc.lo] {
			t.Errorf("%s: level %d gives %d bytes, level %d %d", tc.codec, tc.hi, size[tc.hi], tc.lo, size[tc.lo])
		}
	}
	for _, bad := range []spool.Opt{spool.CompressionLevel(compress.Gzip, 0), spool.CompressionLevel(compress.LZ4, 18),
		spool.CompressionLevel(compress.Zstd, 23), spool.CompressionLevel(compress.Snappy, 1)} {
		if _, err := spool.NewClient(spool.SeedBrokers(br.Addr), bad); err == nil || !strings.Contains(err.Error(), "CompressionLevel") {
			t.Errorf("bad level: %v", err)
		}
	}
}

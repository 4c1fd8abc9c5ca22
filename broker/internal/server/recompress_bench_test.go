package server

import (
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/internal/partition"
	"github.com/spoolmq/spool/broker/internal/replication"
	"github.com/spoolmq/spool/broker/internal/storage"
	"github.com/spoolmq/spool/protocol-spec/wire/batch"
	"github.com/spoolmq/spool/protocol-spec/wire/compress"
)

// BenchmarkRecompressAppend measures the leader's append of one produced batch (100 records
// of ~100 bytes of JSON-like text, as a producer sends them) with and without recompression:
// "keep" is compression.type=producer, the reference every other case is a ratio of.
//
//	go test ./broker/internal/server -run '^$' -bench RecompressAppend -benchtime 2s
//
// MB/s counts the records' uncompressed bytes; fsync is off, so the numbers are CPU only.
func BenchmarkRecompressAppend(b *testing.B) {
	for _, tc := range []struct{ from, to string }{
		{"none", "producer"}, {"none", "lz4"}, {"none", "snappy"}, {"none", "zstd"}, {"none", "gzip"},
		{"lz4", "producer"}, {"lz4", "zstd"}, {"snappy", "lz4"}, {"zstd", "lz4"}, {"gzip", "zstd"}, {"zstd", "uncompressed"},
	} {
		name := fmt.Sprintf("%s-to-%s", tc.from, tc.to)
		if tc.to == "producer" {
			name = tc.from + "-keep"
		}
		b.Run(name, func(b *testing.B) {
			src, _ := compress.ParseCodec(tc.from)
			bb := batch.NewBuilder()
			bb.SetCodec(src)
			bb.SetProducer(-1, -1, -1)
			now := time.Now().UnixMilli()
			raw := 0
			for i := 0; i < 100; i++ {
				v := []byte(fmt.Sprintf(`{"id":%d,"user":"user-%d","event":"page_view","path":"/products/%d","ms":%d}`, i, i%17, i%50, now+int64(i)))
				raw += len(v)
				bb.Append(now, nil, v, nil)
			}
			produced, err := bb.Finish()
			if err != nil {
				b.Fatal(err)
			}
			cfg := storage.DefaultLogConfig()
			cfg.Fsync = storage.FsyncNever
			cfg.CompressionType = tc.to
			l, err := storage.Open(b.TempDir(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			part := partition.New("bench", 0, l, &replication.Settings{Self: 1, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
			buf := make([]byte, len(produced))
			b.SetBytes(int64(raw))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				copy(buf, produced) // what a request would carry
				out, rc, err := recompress(part, buf)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := l.Append(out, storage.AppendOptions{AssignOffsets: true, LeaderEpoch: 0}); err != nil {
					b.Fatal(err)
				}
				rc.release()
			}
		})
	}
}

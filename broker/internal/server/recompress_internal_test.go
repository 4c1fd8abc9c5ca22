package server

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/spoolmq/spool/broker/internal/partition"
	"github.com/spoolmq/spool/broker/internal/replication"
	"github.com/spoolmq/spool/broker/internal/storage"
	"github.com/spoolmq/spool/protocol-spec/wire/batch"
	"github.com/spoolmq/spool/protocol-spec/wire/compress"
)

// recordsOf decodes a batch's records as key/value/headers triples, or reports failure.
func recordsOf(b []byte) ([]string, bool) {
	var it batch.Iterator
	if it.Reset(b, 64<<20) != nil {
		return nil, false
	}
	var out []string
	for it.Next() {
		r := it.Record()
		var hs []byte
		for _, h := range r.AppendHeaders(nil) {
			hs = append(append(append(hs, h.Key...), '='), h.Value...)
		}
		out = append(out, fmt.Sprintf("%q|%q|%q|%d|null=%v", r.Key, r.Value, hs, r.Timestamp, r.Value == nil))
	}
	return out, it.Err() == nil
}

// FuzzRecompress: whatever a producer sends, recompress never panics; a batch it rebuilds is
// valid, in the topic's codec, and holds the records sent; a batch it cannot read is passed on
// unchanged (for the log to refuse).
func FuzzRecompress(f *testing.F) {
	for _, c := range []compress.Codec{compress.None, compress.Gzip, compress.Snappy, compress.LZ4, compress.Zstd} {
		bb := batch.NewBuilder()
		bb.SetCodec(c)
		bb.SetProducer(7, 1, 3)
		bb.Append(1000, []byte("k"), []byte("value value value"), []batch.RecordHeader{{Key: []byte("h"), Value: []byte("v")}})
		bb.Append(1001, nil, nil, nil)
		b, err := bb.Finish()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(bytes.Clone(b), uint8(c))
	}
	logs := map[compress.Codec]*partition.Partition{}
	for _, c := range []compress.Codec{compress.None, compress.Gzip, compress.Snappy, compress.LZ4, compress.Zstd} {
		cfg := storage.DefaultLogConfig()
		cfg.Fsync = storage.FsyncNever
		cfg.CompressionType = c.String()
		l, err := storage.Open(f.TempDir(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			f.Fatal(err)
		}
		f.Cleanup(func() { l.Close() })
		logs[c] = partition.New("fuzz", 0, l, &replication.Settings{Self: 1, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}
	f.Fuzz(func(t *testing.T, data []byte, target uint8) {
		if checkProduceBatch(data) != nil {
			return // the handler refuses it before recompression
		}
		codec := compress.Codec(target % 5)
		in := bytes.Clone(data)
		out, rc, err := recompress(logs[codec], in)
		defer rc.release()
		if err != nil {
			t.Fatalf("recompress: %v", err)
		}
		if rc == nil {
			if !bytes.Equal(out, data) {
				t.Fatal("a batch passed on unchanged was modified")
			}
			return
		}
		h, err := batch.Validate(out)
		if err != nil || h.Attributes.Codec() != codec {
			t.Fatalf("rebuilt batch: %v, codec %s, want a valid %s batch", err, h.Attributes.Codec(), codec)
		}
		want, ok1 := recordsOf(data)
		got, ok2 := recordsOf(out)
		if !ok1 || !ok2 || len(got) != len(want) {
			t.Fatalf("records: sent %d (%v), rebuilt %d (%v)", len(want), ok1, len(got), ok2)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("record %d: sent %q, rebuilt %q", i, want[i], got[i])
			}
		}
		src := batch.Raw(data)
		if h.ProducerID != src.ProducerID() || h.ProducerEpoch != src.ProducerEpoch() || h.BaseSequence != src.BaseSequence() {
			t.Fatalf("producer fields changed: %+v from %d/%d/%d", h, src.ProducerID(), src.ProducerEpoch(), src.BaseSequence())
		}
	})
}

package storage

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire/batch"
	"github.com/spoolmq/spool/protocol-spec/wire/compress"
)

// testLogger logs through t.Log at debug level when -v, so failures show the log's story.
func testLogger(t testing.TB) *slog.Logger {
	if !testing.Verbose() {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// smallConfig is a configuration with small segments and dense indexes, so that tests cover
// rolls and index lookups with little data.
func smallConfig() LogConfig {
	cfg := DefaultLogConfig()
	cfg.SegmentBytes = 4096
	cfg.IndexIntervalBytes = 256
	cfg.MaxIndexBytes = 4096
	cfg.RetentionMs = -1
	return cfg
}

func openLog(t testing.TB, dir string, cfg LogConfig) *Log {
	t.Helper()
	l, err := Open(dir, cfg, testLogger(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// rec is a record for tests.
type rec struct {
	Offset    int64
	Timestamp int64
	Key       string
	Value     string
	Null      bool // a null value (tombstone)
}

// batchSpec describes a batch to build.
type batchSpec struct {
	recs     []rec // Offset is ignored
	codec    compress.Codec
	pid      int64 // -1: not idempotent
	epoch    int16
	seq      int32
	noKey    bool
	baseOffs int64 // for follower appends
}

func buildBatch(t testing.TB, s batchSpec) []byte {
	t.Helper()
	b := batch.NewBuilder()
	b.SetCodec(s.codec)
	if s.pid >= 0 {
		b.SetProducer(s.pid, s.epoch, s.seq)
	}
	b.SetBaseOffset(s.baseOffs)
	for _, r := range s.recs {
		var k, v []byte
		if !s.noKey {
			k = []byte(r.Key)
		}
		if !r.Null {
			v = []byte(r.Value)
		}
		b.Append(r.Timestamp, k, v, nil)
	}
	out, err := b.Finish()
	if err != nil {
		t.Fatalf("building batch: %v", err)
	}
	return bytes.Clone(out)
}

// simpleBatch builds an uncompressed batch of n records "k<i>" = "v<i>-<tag>" at timestamp ts.
func simpleBatch(t testing.TB, n int, ts int64, tag string) []byte {
	recs := make([]rec, n)
	for i := range recs {
		recs[i] = rec{Timestamp: ts, Key: fmt.Sprintf("k%d", i), Value: fmt.Sprintf("v%d-%s", i, tag)}
	}
	return buildBatch(t, batchSpec{recs: recs, pid: -1})
}

var t0 = time.UnixMilli(1_700_000_000_000)

func leaderAppend(t testing.TB, l *Log, records []byte) AppendResult {
	t.Helper()
	res, err := l.Append(records, AppendOptions{AssignOffsets: true, LeaderEpoch: 0, Now: t0})
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return res
}

// decodeAll parses concatenated batches into records, checking every batch.
func decodeAll(t testing.TB, data []byte) []rec {
	t.Helper()
	var out []rec
	var it batch.Iterator
	s := batch.NewScanner(data)
	for s.Next() {
		if err := it.Reset(s.Batch(), 1<<30); err != nil {
			t.Fatalf("invalid batch at %d: %v", s.Position(), err)
		}
		for it.Next() {
			r := it.Record()
			out = append(out, rec{Offset: r.Offset, Timestamp: r.Timestamp, Key: string(r.Key), Value: string(r.Value), Null: r.Value == nil})
		}
		if err := it.Err(); err != nil {
			t.Fatalf("invalid records at %d: %v", s.Position(), err)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("scanning: %v", err)
	}
	return out
}

// readAll reads every record from the log start to the log end.
func readAll(t testing.TB, l *Log) []rec {
	t.Helper()
	var out []rec
	off := l.LogStartOffset()
	for off < l.LogEndOffset() {
		data, err := l.ReadBytes(off, 1<<20, l.LogEndOffset())
		if err != nil {
			t.Fatalf("ReadBytes(%d): %v", off, err)
		}
		if len(data) == 0 {
			t.Fatalf("ReadBytes(%d) returned nothing below the log end %d", off, l.LogEndOffset())
		}
		recs := decodeAll(t, data)
		s := batch.NewScanner(data)
		var next int64
		for s.Next() {
			next = batch.Raw(s.Batch()).LastOffset() + 1
		}
		for _, r := range recs {
			if r.Offset >= off {
				out = append(out, r)
			}
		}
		off = next
	}
	return out
}

// crash simulates kill -9: descriptors and mappings go away with no flush, no index trim and no
// snapshot. Written data stays, as it does in the page cache when a process dies.
func (l *Log) crash() {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.bgMu.Lock()
	l.closed.Store(true)
	l.bgMu.Unlock()
	l.bgWG.Wait()
	l.flushSem <- struct{}{}
	defer func() { <-l.flushSem }()
	l.segMu.Lock()
	defer l.segMu.Unlock()
	for _, s := range l.segs {
		s.oidx.close(false)
		s.tidx.close(false)
		s.file.Close()
	}
	l.segs = nil
}

// segmentFiles lists the base offsets of the .log files in dir.
func segmentFiles(t testing.TB, dir string) []int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, e := range ents {
		if b, ok := parseSegmentName(e.Name(), logSuffix); ok {
			out = append(out, b)
		}
	}
	return out
}

func lastSegmentPath(t testing.TB, dir string) string {
	segs := segmentFiles(t, dir)
	if len(segs) == 0 {
		t.Fatal("no segments")
	}
	return filepath.Join(dir, fmt.Sprintf("%020d.log", segs[len(segs)-1]))
}

// waitFor waits until cond holds, polling on ch-less conditions with a deadline; used only
// where no channel exists to wait on.
func waitClosed(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatalf("timed out waiting for %s", what)
	}
}

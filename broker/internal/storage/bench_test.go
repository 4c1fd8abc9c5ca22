package storage

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

const (
	benchBatchBytes = 16 << 10 // a producer's default batch.size
	benchOpBytes    = 1 << 20  // one benchmark op appends this much
)

// benchBatch builds an uncompressed batch of about benchBatchBytes holding records with
// valueSize-byte values and no key; it returns the batch and its record count.
func benchBatch(tb testing.TB, valueSize int, pid int64) ([]byte, int) {
	bld := batch.NewBuilder()
	if pid >= 0 {
		bld.SetProducer(pid, 0, 0)
	}
	value := bytes.Repeat([]byte("x"), valueSize)
	for bld.Size()+valueSize+16 <= benchBatchBytes {
		bld.Append(t0.UnixMilli(), nil, value, nil)
	}
	out, err := bld.Finish()
	if err != nil {
		tb.Fatal(err)
	}
	return bytes.Clone(out), bld.NumRecords()
}

func benchLog(b *testing.B, mode FsyncMode) *Log {
	cfg := DefaultLogConfig()
	cfg.SegmentBytes = 64 << 20
	cfg.RetentionBytes = 256 << 20 // bounds the disk a long run uses
	cfg.Fsync = mode
	l, err := Open(b.TempDir(), cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	return l
}

// retainer runs retention every 64 ops, off the appenders' path.
type retainer struct {
	l   *Log
	ops atomic.Int64
}

func (r *retainer) op() {
	if r.ops.Add(1)%64 == 0 {
		go r.l.EnforceRetention(time.Now())
	}
}

// BenchmarkAppend appends 1 MiB per op as 16 KiB batches of 100 B or 1 KiB records, each batch
// its own Append (one produce request per batch). "never" appends without fsync; "always"
// waits for durability after each append (acks=all, fsync before ack), from one appender and
// from 16 concurrent ones, which share fsyncs through group commit.
func BenchmarkAppend(b *testing.B) {
	for _, size := range []int{100, 1024} {
		b.Run(fmt.Sprintf("%dB/never", size), func(b *testing.B) {
			l := benchLog(b, FsyncNever)
			buf, n := benchBatch(b, size, -1)
			per := benchOpBytes / len(buf)
			ret := retainer{l: l}
			b.SetBytes(int64(per * len(buf)))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				for range per {
					if _, err := l.Append(buf, AppendOptions{AssignOffsets: true}); err != nil {
						b.Fatal(err)
					}
				}
				ret.op()
			}
			b.ReportMetric(float64(b.N*per*n)/b.Elapsed().Seconds(), "records/s")
		})
		b.Run(fmt.Sprintf("%dB/always-serial", size), func(b *testing.B) {
			l := benchLog(b, FsyncAlways)
			buf, n := benchBatch(b, size, -1)
			per := benchOpBytes / len(buf)
			ret := retainer{l: l}
			b.SetBytes(int64(per * len(buf)))
			b.ReportAllocs()
			ctx := context.Background()
			flushes := l.flushCount.Load()
			b.ResetTimer()
			for b.Loop() {
				for range per {
					res, err := l.Append(buf, AppendOptions{AssignOffsets: true})
					if err != nil {
						b.Fatal(err)
					}
					if err := l.WaitDurable(ctx, res.LastOffset+1); err != nil {
						b.Fatal(err)
					}
				}
				ret.op()
			}
			b.ReportMetric(float64(b.N*per*n)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(float64(l.flushCount.Load()-flushes)/float64(b.N*per), "fsyncs/append")
		})
		b.Run(fmt.Sprintf("%dB/always-parallel16", size), func(b *testing.B) {
			l := benchLog(b, FsyncAlways)
			probe, n := benchBatch(b, size, -1)
			per := benchOpBytes / len(probe)
			ret := retainer{l: l}
			b.SetBytes(int64(per * len(probe)))
			b.SetParallelism(8) // 16 appenders on 2 cores
			b.ReportAllocs()
			ctx := context.Background()
			flushes := l.flushCount.Load()
			var ops atomic.Int64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				buf := bytes.Clone(probe)
				for pb.Next() {
					for range per {
						res, err := l.Append(buf, AppendOptions{AssignOffsets: true})
						if err != nil {
							b.Error(err)
							return
						}
						if err := l.WaitDurable(ctx, res.LastOffset+1); err != nil {
							b.Error(err)
							return
						}
					}
					ops.Add(1)
					ret.op()
				}
			})
			b.ReportMetric(float64(ops.Load()*int64(per*n))/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(float64(l.flushCount.Load()-flushes)/float64(ops.Load()*int64(per)), "fsyncs/append")
		})
	}
}

// BenchmarkRead reads 1 MiB per op from a 64 MiB log of 1 KiB records: "chunks" computes the
// file ranges only (what a sendfile fetch costs in the log), "copy" also reads the bytes from
// the page cache (the read+write fetch path).
func BenchmarkRead(b *testing.B) {
	l := benchLog(b, FsyncNever)
	buf, _ := benchBatch(b, 1024, -1)
	for l.LogEndOffset() == 0 || l.segmentCount() == 1 || int64(l.segmentCount())*64<<20 < 64<<20 {
		for range 4096 {
			if _, err := l.Append(buf, AppendOptions{AssignOffsets: true}); err != nil {
				b.Fatal(err)
			}
		}
	}
	end := l.LogEndOffset()
	out := make([]byte, 2<<20)
	for _, mode := range []string{"chunks", "copy"} {
		b.Run(mode, func(b *testing.B) {
			off := int64(0)
			var total int64
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				r, err := l.Read(off, benchOpBytes, end)
				if err != nil {
					b.Fatal(err)
				}
				if mode == "copy" {
					p := out
					for _, c := range r.Chunks {
						if _, err := c.File.ReadAt(p[:c.Len], c.Pos); err != nil {
							b.Fatal(err)
						}
						p = p[c.Len:]
					}
				}
				total += r.Size
				last := r.Chunks[len(r.Chunks)-1]
				var hdr [batch.HeaderSize]byte
				if _, err := last.File.ReadAt(hdr[:], last.Pos+last.Len-int64(len(buf))); err != nil {
					b.Fatal(err)
				}
				off = batch.Raw(hdr[:]).LastOffset() + 1
				if off >= end {
					off = 0
				}
				r.Release()
			}
			b.SetBytes(total / int64(b.N))
		})
	}
}

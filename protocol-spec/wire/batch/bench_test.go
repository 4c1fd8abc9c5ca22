package batch

import (
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/spoolmq/spool/protocol-spec/wire/compress"
)

// benchBatch builds a batch of about 1 MiB of records with valueSize-byte values.
func benchBatch(b *testing.B, c compress.Codec, valueSize int) []byte {
	b.Helper()
	bl := NewBuilder()
	bl.SetCodec(c)
	value := make([]byte, valueSize)
	for i := range value {
		value[i] = "spool kafka record batch "[i%25]
	}
	key := []byte("key-000000")
	for i := 0; bl.Size() < 1<<20-valueSize-30; i++ {
		copy(key[4:], fmt.Sprintf("%06d", i))
		copy(value, key)
		bl.Append(t0+int64(i), key, value, nil)
	}
	out, err := bl.Finish()
	if err != nil {
		b.Fatal(err)
	}
	return append([]byte(nil), out...)
}

var benchSizes = []struct {
	name string
	size int
}{{"100B", 100}, {"1KiB", 1024}}

func BenchmarkCRC32C(b *testing.B) {
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		crc32.Checksum(buf, castagnoli)
	}
}

// BenchmarkValidate is the broker's produce path: framing, counts and CRC, no record parsing.
func BenchmarkValidate(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			raw := benchBatch(b, compress.None, s.size)
			n := Raw(raw).RecordsCount()
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Validate(raw); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkValidateRecords parses every record as well.
func BenchmarkValidateRecords(b *testing.B) {
	for _, c := range []compress.Codec{compress.None, compress.Snappy, compress.LZ4, compress.Zstd, compress.Gzip} {
		for _, s := range benchSizes {
			if c != compress.None && s.size != 1024 {
				continue
			}
			b.Run(c.String()+"/"+s.name, func(b *testing.B) {
				raw := benchBatch(b, c, s.size)
				n := Raw(raw).RecordsCount()
				uncompressed := benchBatch(b, compress.None, s.size)
				b.SetBytes(int64(len(uncompressed)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := ValidateRecords(raw, 4<<20); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
			})
		}
	}
}

// BenchmarkIterate reads every record and header of an uncompressed batch (the consumer side,
// after Reset's CRC check).
func BenchmarkIterate(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			raw := benchBatch(b, compress.None, s.size)
			n := Raw(raw).RecordsCount()
			var it Iterator
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			sum := 0
			for b.Loop() {
				if err := it.Reset(raw, 0); err != nil {
					b.Fatal(err)
				}
				for it.Next() {
					r := it.Record()
					sum += len(r.Value)
					for h := r.Headers(); h.Next(); {
						sum += len(h.Header().Value)
					}
				}
				if it.Err() != nil {
					b.Fatal(it.Err())
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

func BenchmarkBuild(b *testing.B) {
	for _, c := range []compress.Codec{compress.None, compress.LZ4} {
		for _, s := range benchSizes {
			b.Run(c.String()+"/"+s.name, func(b *testing.B) {
				value := make([]byte, s.size)
				key := []byte("key-000000")
				bl := NewBuilder()
				n := (1 << 20) / (s.size + 20)
				b.SetBytes(int64(n * (s.size + len(key))))
				b.ReportAllocs()
				for b.Loop() {
					bl.Reset()
					bl.SetCodec(c)
					for i := range n {
						bl.Append(t0+int64(i), key, value, nil)
					}
					if _, err := bl.Finish(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
			})
		}
	}
}

func BenchmarkScan(b *testing.B) {
	one := benchBatch(b, compress.None, 100)
	var region []byte
	for range 16 {
		region = append(region, one[:]...)
	}
	b.SetBytes(int64(len(region)))
	b.ReportAllocs()
	var s Scanner
	for b.Loop() {
		s.Reset(region)
		for s.Next() {
			if _, err := Validate(s.Batch()); err != nil {
				b.Fatal(err)
			}
		}
	}
}

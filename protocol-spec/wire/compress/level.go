package compress

import (
	"fmt"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Compression levels, in Kafka's terms (KIP-390: compression.gzip.level, compression.lz4.level,
// compression.zstd.level, as topic, broker and producer configs). Level 0 means the codec's
// default everywhere in this package: Kafka never accepts 0 for gzip or LZ4, and zstd itself
// reads 0 as its default.
//
//	codec  range              default  how it is applied
//	gzip   1..9, or -1        -1 (6)   deflate's level
//	lz4    1..17              9        9: LZ4's fast mode, as Kafka (lz4-java's fast compressor);
//	                                   any other level: high-compression mode, search depth
//	                                   Level((n+1)/2) of github.com/pierrec/lz4 (1,2→1 ... 17→9)
//	zstd   -131072..22        3        zstd's level, by github.com/klauspost/compress's mapping:
//	                                   below 3 fastest, 3-5 default, 6-9 better, 10-22 best
//
// snappy and none have no levels: any level is ignored.

// LevelRange is the range Kafka accepts for a codec's level and its default: ok is false for
// a codec without levels (none, snappy).
func LevelRange(c Codec) (lo, hi, def int, ok bool) {
	switch c {
	case Gzip:
		return -1, 9, -1, true // -1, then 1 to 9: CheckLevel refuses 0
	case LZ4:
		return 1, 17, 9, true
	case Zstd:
		return -131072, 22, 3, true
	}
	return 0, 0, 0, false
}

// CheckLevel reports whether Kafka accepts level for codec c, with the range in the error.
// Codecs without levels accept any.
func CheckLevel(c Codec, level int) error {
	lo, hi, _, ok := LevelRange(c)
	if !ok {
		return nil
	}
	if level < lo || level > hi || (c == Gzip && level == 0) {
		if c == Gzip {
			return fmt.Errorf("compress: gzip level %d is not from 1 to 9 or -1", level)
		}
		return fmt.Errorf("compress: %s level %d is not from %d to %d", c, level, lo, hi)
	}
	return nil
}

// CompressLevel is Compress at a Kafka compression level (0: the codec's default). A level
// outside Kafka's range (CheckLevel) is an error.
func CompressLevel(dst, src []byte, c Codec, level int) ([]byte, error) {
	if level == 0 {
		return Compress(dst, src, c)
	}
	if err := CheckLevel(c, level); err != nil {
		return dst, err
	}
	switch c {
	case Gzip:
		return compressGzipLevel(dst, src, level)
	case LZ4:
		return compressLZ4Level(dst, src, lz4Level(level))
	case Zstd:
		return zstdEncoderAt(zstdLevel(level)).EncodeAll(src, dst), nil
	}
	return Compress(dst, src, c)
}

// gzipLevelEncoders pools gzip writers per deflate level 1..9 (index level-1); -1 is the
// default pool of gzip.go.
var gzipLevelEncoders [9]sync.Pool

func compressGzipLevel(dst, src []byte, level int) ([]byte, error) {
	if level == gzip.DefaultCompression {
		return compressGzip(dst, src)
	}
	pool := &gzipLevelEncoders[level-1]
	e, _ := pool.Get().(*gzipEncoder)
	if e == nil {
		e = new(gzipEncoder)
		w, err := gzip.NewWriterLevel(&e.out, level)
		if err != nil {
			return dst, fmt.Errorf("compress: gzip level %d: %w", level, err)
		}
		e.w = w
	}
	defer pool.Put(e)
	return e.compress(dst, src)
}

// lz4Level maps a Kafka LZ4 level to the encoder's: Kafka's default (9) is the fast mode, as
// in Kafka; the other levels pick a high-compression depth, monotonic in the level.
func lz4Level(level int) lz4.CompressionLevel {
	if level == 9 {
		return lz4.Fast
	}
	return lz4.Level1 << ((level+1)/2 - 1)
}

// lz4LevelEncoders pools LZ4 writers per high-compression depth (index: Level1 << i).
var lz4LevelEncoders [9]sync.Pool

func compressLZ4Level(dst, src []byte, level lz4.CompressionLevel) ([]byte, error) {
	if level == lz4.Fast {
		return compressLZ4(dst, src)
	}
	i := 0
	for lz4.Level1<<i != level {
		i++
	}
	pool := &lz4LevelEncoders[i]
	e, _ := pool.Get().(*lz4Encoder)
	if e == nil {
		e = new(lz4Encoder)
		e.w = lz4.NewWriter(&e.out)
		opts, _ := LZ4Frame{}.options(0)
		if err := e.w.Apply(append(opts, lz4.CompressionLevelOption(level))...); err != nil {
			return dst, fmt.Errorf("compress: lz4 level: %w", err)
		}
	}
	out, err := e.compress(dst, src)
	if err == nil {
		pool.Put(e)
	}
	return out, err
}

// zstdLevel maps a Kafka zstd level (zstd's own numbering) to the encoder's speed.
func zstdLevel(level int) zstd.EncoderLevel { return zstd.EncoderLevelFromZstd(level) }

// zstdEncoders holds one shared encoder per speed, made on first use (EncodeAll is safe for
// concurrent use); the default speed is zstdEncoder's.
var zstdEncoders [zstd.SpeedBestCompression + 1]struct {
	once sync.Once
	e    *zstd.Encoder
}

func zstdEncoderAt(l zstd.EncoderLevel) *zstd.Encoder {
	if l == zstd.SpeedDefault {
		return zstdEncoder()
	}
	z := &zstdEncoders[l]
	z.once.Do(func() { z.e = newZstdEncoder(l) })
	return z.e
}

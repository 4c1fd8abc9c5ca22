// Package compress implements the compression codecs of Kafka record batches: gzip, snappy, LZ4
// and zstd, numbered as in bits 0-2 of a batch's attributes.
//
// Compress appends the compressed form of src to dst in the framing Spool's producers emit:
//
//	gzip    an RFC 1952 member, default level, no name and no modification time
//	snappy  one raw snappy block (as librdkafka and franz-go send it)
//	lz4     an LZ4 frame with 64 KiB independent blocks and no checksums (FLG 0x60, BD 0x40),
//	        as librdkafka and the Java client send it
//	zstd    one standard zstd frame with its content size
//
// Decompress accepts every framing that real clients send: any gzip stream (several members
// too), snappy as a raw block or in the xerial framing of snappy-java (Java, sarama, kafka-go,
// kafka-python), any LZ4 frame (content size, content checksum, block checksums, blocks from
// 64 KiB to 4 MiB) and any zstd stream. It never produces more than a caller-given limit, so a
// small hostile input cannot expand into a large allocation, and malformed input is reported as
// an error wrapping ErrCorrupt, never as a panic.
//
// Encoders and decoders are pooled or shared: after warm-up, Compress and Decompress allocate
// little besides the growth of dst (snappy and LZ4 nothing, gzip and zstd a few small objects).
package compress

import (
	"errors"
	"fmt"
	"io"
	"slices"
)

// Codec is a record batch compression codec, the value of attributes bits 0-2.
type Codec int8

// The codecs Kafka defines.
const (
	None   Codec = 0
	Gzip   Codec = 1
	Snappy Codec = 2
	LZ4    Codec = 3
	Zstd   Codec = 4
)

// String returns Kafka's name of the codec (the compression.type value), or "codec(N)" for a
// value Kafka does not define.
func (c Codec) String() string {
	switch c {
	case None:
		return "none"
	case Gzip:
		return "gzip"
	case Snappy:
		return "snappy"
	case LZ4:
		return "lz4"
	case Zstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}

// Valid reports whether c is one of the five codecs Kafka defines.
func (c Codec) Valid() bool { return c >= None && c <= Zstd }

// ParseCodec maps a compression.type name ("none", "uncompressed", "gzip", "snappy", "lz4",
// "zstd") to its codec.
func ParseCodec(s string) (Codec, error) {
	switch s {
	case "none", "uncompressed":
		return None, nil
	case "gzip":
		return Gzip, nil
	case "snappy":
		return Snappy, nil
	case "lz4":
		return LZ4, nil
	case "zstd":
		return Zstd, nil
	}
	return None, fmt.Errorf("%w: %q", ErrUnknownCodec, s)
}

var (
	// ErrUnknownCodec is returned for a codec number or name Kafka does not define.
	ErrUnknownCodec = errors.New("compress: unknown codec")
	// ErrLimit is returned when decompressed data would exceed the caller's limit.
	ErrLimit = errors.New("compress: decompressed size exceeds limit")
	// ErrCorrupt is wrapped by every error about malformed compressed input.
	ErrCorrupt = errors.New("compress: corrupt input")
)

// recoverPanics turns a panic inside a third-party decoder into an ErrCorrupt error, so that a
// decoder bug met on hostile input cannot bring a broker down. Tests switch it off to see them.
var recoverPanics = true

// Compress appends src compressed with c to dst and returns the extended slice. None appends
// src unchanged.
func Compress(dst, src []byte, c Codec) ([]byte, error) {
	switch c {
	case None:
		return append(dst, src...), nil
	case Gzip:
		return compressGzip(dst, src)
	case Snappy:
		return compressSnappy(dst, src)
	case LZ4:
		return compressLZ4(dst, src)
	case Zstd:
		return compressZstd(dst, src), nil
	}
	return dst, fmt.Errorf("compress: %w %d", ErrUnknownCodec, int8(c))
}

// Decompress appends the decompression of src with codec c to dst and returns the extended
// slice. It fails with an error wrapping ErrLimit, before producing the excess, when the output
// would be longer than limit bytes (dst's existing contents do not count), and with an error
// wrapping ErrCorrupt when src is not a valid stream of the codec. On error the returned slice
// is dst truncated to its original length (its spare capacity may hold garbage).
func Decompress(dst, src []byte, c Codec, limit int) (out []byte, err error) {
	if limit < 0 {
		return dst, fmt.Errorf("compress: negative limit %d", limit)
	}
	start := len(dst)
	if recoverPanics {
		defer func() {
			if p := recover(); p != nil {
				out = dst[:start]
				err = fmt.Errorf("%w: %s decoder panicked: %v", ErrCorrupt, c, p)
			}
		}()
	}
	switch c {
	case None:
		if len(src) > limit {
			return dst, limitError(c, limit)
		}
		return append(dst, src...), nil
	case Gzip:
		out, err = decompressGzip(dst, src, limit)
	case Snappy:
		out, err = decompressSnappy(dst, src, limit)
	case LZ4:
		out, err = decompressLZ4(dst, src, limit)
	case Zstd:
		out, err = decompressZstd(dst, src, limit)
	default:
		return dst, fmt.Errorf("compress: %w %d", ErrUnknownCodec, int8(c))
	}
	if err != nil {
		return out[:start], err
	}
	return out, nil
}

func limitError(c Codec, limit int) error {
	return fmt.Errorf("%s: %w of %d bytes", c, ErrLimit, limit)
}

func corrupt(c Codec, err error) error {
	if errors.Is(err, ErrCorrupt) || errors.Is(err, ErrLimit) {
		return err
	}
	return fmt.Errorf("%w: %s: %w", ErrCorrupt, c, err)
}

// appendWriter is an io.Writer appending to a slice.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// limitWriter is an io.Writer appending to a slice, at most max bytes beyond start.
type limitWriter struct {
	b     []byte
	start int
	max   int
	c     Codec
}

func (w *limitWriter) Write(p []byte) (int, error) {
	if len(p) > w.max-(len(w.b)-w.start) {
		return 0, limitError(w.c, w.max)
	}
	w.b = append(w.b, p...)
	return len(p), nil
}

// readLimited appends everything r yields to dst, failing once more than limit bytes come.
// hint, when positive, is the expected output size, used to size dst once.
func readLimited(dst []byte, r io.Reader, limit, hint int, c Codec) ([]byte, error) {
	start := len(dst)
	if hint > 0 {
		dst = slices.Grow(dst, min(hint, limit)+1)
	}
	for empty := 0; ; {
		if len(dst) == cap(dst) {
			// Grow by doubling, never beyond what the limit allows plus the one byte that
			// proves the limit exceeded.
			want := min(max(cap(dst)-start, 4096), limit+1-(len(dst)-start))
			dst = slices.Grow(dst, want)
		}
		window := dst[len(dst):min(cap(dst), start+limit+1)]
		n, err := r.Read(window)
		dst = dst[:len(dst)+n]
		if len(dst)-start > limit {
			return dst, limitError(c, limit)
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, corrupt(c, err)
		}
		if n > 0 {
			empty = 0
		} else if empty++; empty > 100 {
			return dst, corrupt(c, io.ErrNoProgress)
		}
	}
}

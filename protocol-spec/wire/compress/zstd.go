package compress

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// zstdMaxWindow bounds the window a frame may ask the decoder to keep. Kafka clients compress
// at level 3 (a few MiB of window at most); 64 MiB leaves room for high levels without letting
// a hostile header reserve gigabytes.
const zstdMaxWindow = 64 << 20

// zstdWindow is the encoder window: 2 MiB, what the reference library uses at level 3.
const zstdWindow = 2 << 20

// zstdEncoder is the shared encoder at zstd's default level (3).
var zstdEncoder = sync.OnceValue(func() *zstd.Encoder { return newZstdEncoder(zstd.SpeedDefault) })

// newZstdEncoder makes an encoder at speed l; EncodeAll on it is safe for concurrent use.
func newZstdEncoder(l zstd.EncoderLevel) *zstd.Encoder {
	e, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(l),
		zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)),
		zstd.WithZeroFrames(true),
		zstd.WithWindowSize(zstdWindow),
	)
	if err != nil {
		panic("compress: zstd encoder: " + err.Error()) // constant options cannot fail
	}
	return e
}

func compressZstd(dst, src []byte) []byte {
	return zstdEncoder().EncodeAll(src, dst)
}

// zstdDecoder decodes whole frames whose content size is declared, into exactly that much
// room: the common case (franz-go, Spool and librdkafka declare it), done without copying.
var zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(0),
		zstd.WithDecoderMaxWindow(zstdMaxWindow),
		zstd.WithDecodeAllCapLimit(true),
	)
	if err != nil {
		panic("compress: zstd decoder: " + err.Error())
	}
	return d
})

type zstdStream struct {
	d   *zstd.Decoder
	src bytes.Reader
}

// zstdStreams decode frames without a declared size, and multi-frame inputs, as streams
// bounded by the limit. Concurrency 1 keeps them synchronous: no goroutine behind them.
var zstdStreams = sync.Pool{New: func() any {
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxWindow(zstdMaxWindow),
		zstd.WithDecodeBuffersBelow(0),
	)
	if err != nil {
		panic("compress: zstd decoder: " + err.Error())
	}
	return &zstdStream{d: d}
}}

func decompressZstd(dst, src []byte, limit int) ([]byte, error) {
	var h zstd.Header
	if err := h.Decode(src); err != nil {
		return dst, corrupt(Zstd, err)
	}
	start := len(dst)
	if h.HasFCS && !h.Skippable {
		if h.FrameContentSize > uint64(limit) {
			return dst, limitError(Zstd, limit)
		}
		n := int(h.FrameContentSize)
		dst = slices.Grow(dst, n)
		out, err := zstdDecoder().DecodeAll(src, dst[:start:start+n])
		switch {
		case err == nil:
			if len(out) == start {
				return dst[:start], nil
			}
			if cap(dst) > start && &out[start] == &dst[:start+1][start] {
				// Decoded in place: keep dst's full capacity for the caller's next use.
				return dst[:len(out)], nil
			}
			// Not expected: the decoder found the room too small and allocated.
			return append(dst[:start], out[start:]...), nil
		case !errors.Is(err, zstd.ErrDecoderSizeExceeded):
			return dst, corrupt(Zstd, err)
		}
		// More frames follow the first one: decode as a stream below.
	}
	s := zstdStreams.Get().(*zstdStream)
	s.src.Reset(src)
	if err := s.d.Reset(&s.src); err != nil {
		return dst, corrupt(Zstd, err)
	}
	out, err := readLimited(dst[:start], s.d, limit, 0, Zstd)
	s.src.Reset(nil)
	if err := s.d.Reset(nil); err != nil {
		return out, fmt.Errorf("compress: zstd: %w", err)
	}
	zstdStreams.Put(s)
	return out, err
}

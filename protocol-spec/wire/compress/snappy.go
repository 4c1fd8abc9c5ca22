package compress

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/golang/snappy"
)

// xerialMagic starts a snappy-java (xerial) stream: 0x82 "SNAPPY" 0x00.
var xerialMagic = [8]byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// xerialHeaderLen is the magic, an int32 version and an int32 minimum compatible version.
const xerialHeaderLen = 16

// DefaultXerialBlockSize is snappy-java's default chunk size, which kafka-python also uses.
const DefaultXerialBlockSize = 32 << 10

func compressSnappy(dst, src []byte) ([]byte, error) {
	n := snappy.MaxEncodedLen(len(src))
	if n < 0 {
		return dst, fmt.Errorf("compress: snappy input of %d bytes is too large", len(src))
	}
	dst = slices.Grow(dst, n)
	enc := snappy.Encode(dst[len(dst):len(dst)+n], src)
	return dst[:len(dst)+len(enc)], nil
}

// AppendXerial appends src compressed as a snappy-java (xerial) stream: the 16-byte header
// (magic 82 53 4E 41 50 50 59 00, version 1, compatible version 1) and then, for each chunk of
// at most blockSize bytes of src, a big-endian int32 length and one raw snappy block. A
// blockSize <= 0 means DefaultXerialBlockSize. Spool's producers send raw blocks; this exists
// so tests can produce what Java, sarama, kafka-go and kafka-python send.
func AppendXerial(dst, src []byte, blockSize int) []byte {
	if blockSize <= 0 {
		blockSize = DefaultXerialBlockSize
	}
	blockSize = min(blockSize, 1<<30) // keeps each chunk within snappy's block limit
	dst = append(dst, xerialMagic[:]...)
	dst = binary.BigEndian.AppendUint32(dst, 1)
	dst = binary.BigEndian.AppendUint32(dst, 1)
	for len(src) > 0 {
		chunk := src[:min(blockSize, len(src))]
		src = src[len(chunk):]
		at := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		dst, _ = compressSnappy(dst, chunk) // cannot fail: chunks are at most 1 GiB
		binary.BigEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
	}
	return dst
}

// IsXerial reports whether src starts with the xerial magic.
func IsXerial(src []byte) bool {
	return len(src) >= len(xerialMagic) && bytes.Equal(src[:len(xerialMagic)], xerialMagic[:])
}

func decompressSnappy(dst, src []byte, limit int) ([]byte, error) {
	if !IsXerial(src) {
		return snappyBlock(dst, src, limit, limit)
	}
	if len(src) < xerialHeaderLen {
		return dst, fmt.Errorf("%w: snappy: xerial header truncated to %d bytes", ErrCorrupt, len(src))
	}
	start := len(dst)
	rest := src[xerialHeaderLen:]
	for len(rest) > 0 {
		if len(rest) < 4 {
			return dst, fmt.Errorf("%w: snappy: xerial chunk length truncated at byte %d", ErrCorrupt, len(src)-len(rest))
		}
		n := binary.BigEndian.Uint32(rest)
		rest = rest[4:]
		if uint64(n) > uint64(len(rest)) {
			return dst, fmt.Errorf("%w: snappy: xerial chunk of %d bytes at byte %d, %d remain", ErrCorrupt, n, len(src)-len(rest)-4, len(rest))
		}
		var err error
		dst, err = snappyBlock(dst, rest[:n], limit-(len(dst)-start), limit)
		if err != nil {
			return dst, err
		}
		rest = rest[n:]
	}
	return dst, nil
}

// snappyBlock appends the decoding of one raw block, refusing to grow beyond room bytes.
func snappyBlock(dst, block []byte, room, limit int) ([]byte, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return dst, corrupt(Snappy, err)
	}
	if n > room {
		return dst, limitError(Snappy, limit)
	}
	dst = slices.Grow(dst, n)
	out, err := snappy.Decode(dst[len(dst):len(dst)+n], block)
	if err != nil {
		return dst, corrupt(Snappy, err)
	}
	if len(out) != n {
		return dst, fmt.Errorf("%w: snappy: block decoded to %d bytes, header said %d", ErrCorrupt, len(out), n)
	}
	return dst[:len(dst)+n], nil
}

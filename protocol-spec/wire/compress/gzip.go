package compress

import (
	"bytes"
	"encoding/binary"
	"sync"

	"github.com/klauspost/compress/gzip"
)

type gzipEncoder struct {
	w   *gzip.Writer
	out appendWriter
}

var gzipEncoders = sync.Pool{New: func() any {
	e := new(gzipEncoder)
	w, err := gzip.NewWriterLevel(&e.out, gzip.DefaultCompression)
	if err != nil {
		panic("compress: gzip writer: " + err.Error()) // cannot happen with a valid level
	}
	e.w = w
	return e
}}

func compressGzip(dst, src []byte) ([]byte, error) {
	e := gzipEncoders.Get().(*gzipEncoder)
	defer gzipEncoders.Put(e)
	return e.compress(dst, src)
}

// compress appends src as one gzip member at e's level to dst.
func (e *gzipEncoder) compress(dst, src []byte) ([]byte, error) {
	e.out.b = dst
	e.w.Reset(&e.out)
	_, err := e.w.Write(src)
	if err == nil {
		err = e.w.Close()
	}
	out := e.out.b
	e.out.b = nil
	if err != nil {
		return dst, corrupt(Gzip, err)
	}
	return out, nil
}

type gzipDecoder struct {
	r   gzip.Reader
	src bytes.Reader
}

var gzipDecoders = sync.Pool{New: func() any { return new(gzipDecoder) }}

// gzipRatio bounds the expansion of deflate (about 1032:1); it keeps the size hint taken from
// a hostile trailer from turning into a large allocation.
const gzipRatio = 1032

func decompressGzip(dst, src []byte, limit int) ([]byte, error) {
	d := gzipDecoders.Get().(*gzipDecoder)
	defer gzipDecoders.Put(d)
	d.src.Reset(src)
	defer d.src.Reset(nil)
	if err := d.r.Reset(&d.src); err != nil {
		return dst, corrupt(Gzip, err)
	}
	d.r.Multistream(true)
	// The trailer's ISIZE is the last member's size modulo 2^32: a good first guess for the
	// usual single-member stream.
	hint := 0
	if len(src) >= 18 {
		hint = int(binary.LittleEndian.Uint32(src[len(src)-4:]))
		hint = min(hint, len(src)*gzipRatio)
	}
	return readLimited(dst, &d.r, limit, hint, Gzip)
}
